//! Texts from outside, cut to a bound before they are echoed in an answer,
//! logged or kept: a client's session id, method name or `clientInfo`, a
//! token's subject. A leaf: it imports nothing of this crate, so every file
//! that bounds a text can use it.

use std::borrow::Cow;

/// `text`, cut to at most `max` bytes (on a character boundary) with `…`.
pub(crate) fn bounded(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return text.into();
    }
    format!("{}…", &text[..char_floor(text, max)]).into()
}

/// Cuts `text` to at most `max` bytes, on a character boundary, with no
/// mark.
pub(crate) fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        text.truncate(char_floor(text, max));
    }
}

/// The largest character boundary of `text` at or below `max`.
fn char_floor(text: &str, max: usize) -> usize {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

#[cfg(test)]
#[path = "bounded_tests.rs"]
mod tests;
