//! The readable text of an HTML page, in one pass over its bytes.
//!
//! A page is outside input of up to [`MAX_BODY_BYTES`](super::MAX_BODY_BYTES),
//! so every loop here is linear in it: the scanner moves forward only, and
//! looks ahead a bounded number of bytes (a character reference is at most
//! [`ENTITY_MAX_LENGTH`] bytes; the end of a `<script>` is found by a forward
//! scan, never a search restarted from each `<`). An unclosed comment, tag,
//! quoted attribute value or `<script>` swallows the rest of the page, as a
//! browser does, in one scan. Nesting keeps no stack, so depth costs
//! nothing. The work done is counted in [`PageText::steps`] (at most
//! [`MAX_STEPS_PER_BYTE`] per byte, which the fuzz target checks), and the
//! same count decides when to look at the cancellation, so a call past its
//! deadline stops converting within [`CHECK_EVERY_STEPS`] steps.
//!
//! Tokenizing follows the HTML standard's states where it decides what is
//! text: `<` starts a tag only before a letter, `/` or `!` (`a < b` stays
//! text), `>` inside a quoted attribute value does not end the tag, and
//! character references are decoded with the standard's table
//! ([`htmlize::ENTITIES`], all 2,231 names), its legacy names without `;`,
//! and its numeric rules (`&#0;`, surrogates and values past U+10FFFF become
//! U+FFFD; 0x80 to 0x9F are read as windows-1252). What it keeps from the
//! converter it replaces: the content of `script`, `style`, `noscript`,
//! `template` and `svg` is left out, block elements put their text on lines
//! of its own, and white space is collapsed with blank lines dropped. Table
//! cells are separated by a space.

use std::sync::LazyLock;

use htmlize::{BARE_ENTITY_MAX_LENGTH, ENTITIES, ENTITY_MAX_LENGTH};
use tokio_util::sync::CancellationToken;

/// Elements whose content a reader does not see.
const SKIPPED: [&[u8]; 5] = [b"script", b"style", b"noscript", b"template", b"svg"];

/// Elements whose text stands on lines of its own.
const BLOCKS: [&[u8]; 38] = [
    b"p",
    b"div",
    b"br",
    b"li",
    b"ul",
    b"ol",
    b"dl",
    b"dt",
    b"dd",
    b"tr",
    b"table",
    b"caption",
    b"h1",
    b"h2",
    b"h3",
    b"h4",
    b"h5",
    b"h6",
    b"section",
    b"article",
    b"aside",
    b"header",
    b"footer",
    b"nav",
    b"main",
    b"pre",
    b"blockquote",
    b"figure",
    b"figcaption",
    b"address",
    b"details",
    b"summary",
    b"form",
    b"fieldset",
    b"legend",
    b"option",
    b"title",
    b"hr",
];

/// Elements whose text is a separate word from its neighbours'.
const CELLS: [&[u8]; 2] = [b"td", b"th"];

/// Steps between two looks at the cancellation.
pub const CHECK_EVERY_STEPS: u64 = 64 * 1024;

/// Most steps one byte of a page costs, whatever the page: the bound the
/// fuzz target holds the converter to. A step is one iteration of a loop
/// over the page's bytes or one lookup in the entity table, each a constant
/// amount of work.
pub const MAX_STEPS_PER_BYTE: u64 = 4;

/// Longest name between `&` and `;` in the entity table.
const MAX_NAME: usize = ENTITY_MAX_LENGTH - 2;

/// Longest name of an entity written without `;` (`&copy`, `&amp`).
const MAX_BARE_NAME: usize = BARE_ENTITY_MAX_LENGTH - 1;

/// Room for a whole entity, `&` and `;` included, when looking it up.
const KEY_CAPACITY: usize = 64;
const _: () = assert!(ENTITY_MAX_LENGTH <= KEY_CAPACITY);

/// A page's text and the work that making it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageText {
    /// The readable text.
    pub text: String,
    /// Steps the conversion took: at most [`MAX_STEPS_PER_BYTE`] per byte of
    /// the page, plus one.
    pub steps: u64,
}

/// The conversion stopped because its call was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConversionCancelled;

/// The readable text of an HTML page: tags dropped, scripts and styles left
/// out, block elements on their own lines, character references decoded,
/// white space collapsed and blank lines dropped.
///
/// ```
/// let html = "<h1>Fish &amp; chips</h1><p>Hot&nbsp;and <b>fresh</b><script>x()</script></p>";
/// assert_eq!(toolgate_tools::html_to_text(html), "Fish & chips\nHot and fresh");
/// ```
pub fn html_to_text(html: &str) -> String {
    // A token nobody holds is never cancelled.
    html_to_text_until(html, &CancellationToken::new())
        .map(|page| page.text)
        .unwrap_or_default()
}

/// [`html_to_text`], stopping with [`ConversionCancelled`] within
/// [`CHECK_EVERY_STEPS`] steps once `cancel` is cancelled; with the work it
/// took.
pub fn html_to_text_until(
    html: &str,
    cancel: &CancellationToken,
) -> Result<PageText, ConversionCancelled> {
    let mut scanner = Scanner {
        html,
        bytes: html.as_bytes(),
        position: 0,
        steps: 0,
        next_check: 0,
        cancel,
        text: TextSink {
            text: String::with_capacity(html.len() / 2),
            gap: Gap::Start,
        },
    };
    scanner.count(0)?;
    while scanner.position < scanner.bytes.len() {
        match scanner.bytes[scanner.position] {
            b'<' => scanner.markup()?,
            b'&' => scanner.reference()?,
            _ => scanner.text_run()?,
        }
    }
    Ok(PageText {
        text: scanner.text.text,
        steps: scanner.steps,
    })
}

/// Whether a tag opens or closes its element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TagKind {
    Start,
    End,
}

/// What the text written so far ends with, and what separates it from the
/// next word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gap {
    /// Nothing written yet: white space and line breaks are dropped.
    Start,
    /// The last character written belongs to a word.
    Word,
    /// A space goes before the next word.
    Space,
    /// A line break goes before the next word.
    Line,
}

/// The text being written, with white space collapsed as it comes.
struct TextSink {
    text: String,
    gap: Gap,
}

impl TextSink {
    fn push(&mut self, character: char) {
        if character.is_whitespace() {
            if self.gap == Gap::Word {
                self.gap = Gap::Space;
            }
            return;
        }
        match self.gap {
            Gap::Start | Gap::Word => {}
            Gap::Space => self.text.push(' '),
            Gap::Line => self.text.push('\n'),
        }
        self.gap = Gap::Word;
        self.text.push(character);
    }

    fn break_line(&mut self) {
        if matches!(self.gap, Gap::Word | Gap::Space) {
            self.gap = Gap::Line;
        }
    }
}

/// The conversion's state: where it is in the page, the work done, and the
/// text so far. Every method moves `position` forward (or leaves the page's
/// end) and counts what it looked at.
struct Scanner<'a> {
    html: &'a str,
    bytes: &'a [u8],
    position: usize,
    steps: u64,
    /// The step count at which the cancellation is looked at next.
    next_check: u64,
    cancel: &'a CancellationToken,
    text: TextSink,
}

impl Scanner<'_> {
    /// Counts `steps` of work; looks at the cancellation every
    /// [`CHECK_EVERY_STEPS`].
    fn count(&mut self, steps: usize) -> Result<(), ConversionCancelled> {
        self.steps += steps as u64;
        if self.steps >= self.next_check {
            if self.cancel.is_cancelled() {
                return Err(ConversionCancelled);
            }
            self.next_check = self.steps + CHECK_EVERY_STEPS;
        }
        Ok(())
    }

    /// The first byte at or after `start` for which `stop` holds, or the
    /// end of the page; scanned a chunk at a time so a long scan (an
    /// unclosed comment, a long attribute value) still looks at the
    /// cancellation.
    fn scan(
        &mut self,
        start: usize,
        stop: impl Fn(u8) -> bool,
    ) -> Result<usize, ConversionCancelled> {
        let length = self.bytes.len();
        let mut at = start.min(length);
        loop {
            let chunk_end = at.saturating_add(CHECK_EVERY_STEPS as usize).min(length);
            match self.bytes[at..chunk_end].iter().position(|&b| stop(b)) {
                Some(offset) => {
                    self.count(offset + 1)?;
                    return Ok(at + offset);
                }
                None => {
                    self.count(chunk_end - at)?;
                    if chunk_end == length {
                        return Ok(length);
                    }
                    at = chunk_end;
                }
            }
        }
    }

    /// Text up to the next `<` or `&`, at most [`CHECK_EVERY_STEPS`] bytes
    /// of it (then to the next character boundary).
    fn text_run(&mut self) -> Result<(), ConversionCancelled> {
        let start = self.position;
        let limit = start.saturating_add(CHECK_EVERY_STEPS as usize);
        let mut end = start;
        while end < self.bytes.len()
            && !matches!(self.bytes[end], b'<' | b'&')
            && (end < limit || !self.html.is_char_boundary(end))
        {
            end += 1;
        }
        for character in self.html[start..end].chars() {
            self.text.push(character);
        }
        self.position = end;
        self.count(end - start)
    }

    /// At a `<`: a tag, a comment, a declaration, or a `<` that is text.
    fn markup(&mut self) -> Result<(), ConversionCancelled> {
        let at = self.position;
        self.count(2)?;
        match self.bytes.get(at + 1) {
            Some(b'!') if self.bytes[at..].starts_with(b"<!--") => self.comment(at + 4),
            Some(b'!' | b'?') => self.bogus_comment(at + 2),
            Some(b'/') => match self.bytes.get(at + 2) {
                Some(letter) if letter.is_ascii_alphabetic() => self.tag(at + 2, TagKind::End),
                // `</>` is dropped; `</` at the end is text.
                Some(b'>') => {
                    self.position = at + 3;
                    Ok(())
                }
                Some(_) => self.bogus_comment(at + 2),
                None => {
                    self.text.push('<');
                    self.text.push('/');
                    self.position = at + 2;
                    Ok(())
                }
            },
            Some(letter) if letter.is_ascii_alphabetic() => self.tag(at + 1, TagKind::Start),
            _ => {
                self.text.push('<');
                self.position = at + 1;
                Ok(())
            }
        }
    }

    /// A comment's content from `start`, up to `-->` (or `--!>`); `<!-->`
    /// and `<!--->` are empty comments.
    fn comment(&mut self, start: usize) -> Result<(), ConversionCancelled> {
        for shortcut in [&b">"[..], b"->"] {
            if self.bytes[start..].starts_with(shortcut) {
                self.position = start + shortcut.len();
                return Ok(());
            }
        }
        let mut at = start;
        loop {
            at = self.scan(at, |b| b == b'>')?;
            let before = &self.bytes[start..at];
            if at == self.bytes.len() || before.ends_with(b"--") || before.ends_with(b"--!") {
                break;
            }
            at += 1;
        }
        self.position = (at + 1).min(self.bytes.len());
        Ok(())
    }

    /// `<!DOCTYPE …>`, `<?xml …>`, `</ …>`: everything up to the next `>`.
    fn bogus_comment(&mut self, start: usize) -> Result<(), ConversionCancelled> {
        let end = self.scan(start, |b| b == b'>')?;
        self.position = (end + 1).min(self.bytes.len());
        Ok(())
    }

    /// A tag whose name starts at `name_start`: its name, then attributes
    /// up to the `>` that is outside a quoted value. A tag the page ends in
    /// is dropped with the rest of the page.
    fn tag(&mut self, name_start: usize, kind: TagKind) -> Result<(), ConversionCancelled> {
        let bytes = self.bytes;
        let mut at = self.scan(name_start, |b| is_tag_space(b) || matches!(b, b'/' | b'>'))?;
        let name = &bytes[name_start..at];
        let mut self_closing = false;
        let end = loop {
            let Some(&byte) = bytes.get(at) else {
                self.position = bytes.len();
                return Ok(());
            };
            match byte {
                b'>' => break at + 1,
                b'/' => {
                    self_closing = bytes.get(at + 1) == Some(&b'>');
                    at += 1;
                    self.count(1)?;
                }
                byte if is_tag_space(byte) => at = self.scan(at, |b| !is_tag_space(b))?,
                _ => at = self.attribute(at)?,
            }
        };
        self.position = end;
        let is = |names: &[&[u8]]| names.iter().any(|n| n.eq_ignore_ascii_case(name));
        // A self-closing `<svg/>` has no content; `<script/>` has, as in a
        // browser.
        let empty = self_closing && name.eq_ignore_ascii_case(b"svg");
        if kind == TagKind::Start && is(&SKIPPED) && !empty {
            return self.skip_content(name);
        }
        if is(&BLOCKS) {
            self.text.break_line();
        } else if is(&CELLS) {
            self.text.push(' ');
        }
        Ok(())
    }

    /// One attribute from `start` (its name, and `= value` if it has one);
    /// where the next one may start.
    fn attribute(&mut self, start: usize) -> Result<usize, ConversionCancelled> {
        let bytes = self.bytes;
        // A name's first character may be `=`; it ends at space, `/`, `>` or `=`.
        let name_end = self.scan(start + 1, |b| {
            is_tag_space(b) || matches!(b, b'/' | b'>' | b'=')
        })?;
        let mut at = self.scan(name_end, |b| !is_tag_space(b))?;
        if bytes.get(at) != Some(&b'=') {
            return Ok(at);
        }
        at = self.scan(at + 1, |b| !is_tag_space(b))?;
        match bytes.get(at) {
            Some(&quote @ (b'"' | b'\'')) => {
                let close = self.scan(at + 1, |b| b == quote)?;
                Ok((close + 1).min(bytes.len()))
            }
            _ => self.scan(at, |b| is_tag_space(b) || b == b'>'),
        }
    }

    /// Past the content of a skipped element, up to its end tag (left for
    /// the main loop to read) or the end of the page.
    fn skip_content(&mut self, name: &[u8]) -> Result<(), ConversionCancelled> {
        let bytes = self.bytes;
        let mut at = self.position;
        while at < bytes.len() {
            at = self.scan(at, |b| b == b'<')?;
            if bytes.get(at + 1) == Some(&b'/') {
                // Compared up to the first byte that differs: the bytes
                // looked at are letters, so no two `</` look at the same.
                let matched = bytes
                    .get(at + 2..)
                    .unwrap_or_default()
                    .iter()
                    .zip(name)
                    .take_while(|(byte, letter)| byte.eq_ignore_ascii_case(letter))
                    .count();
                self.count(matched + 2)?;
                let after = at + 2 + matched;
                if matched == name.len()
                    && bytes
                        .get(after)
                        .is_none_or(|&b| is_tag_space(b) || matches!(b, b'/' | b'>'))
                {
                    break;
                }
            }
            at += 1;
        }
        self.position = at.min(bytes.len());
        Ok(())
    }

    /// At a `&`: a character reference, or a `&` that is text.
    fn reference(&mut self) -> Result<(), ConversionCancelled> {
        let at = self.position;
        self.count(1)?;
        let decoded = if self.bytes.get(at + 1) == Some(&b'#') {
            self.numeric_reference(at)?
        } else {
            self.named_reference(at)?
        };
        if !decoded {
            self.text.push('&');
            self.position = at + 1;
        }
        Ok(())
    }

    /// `&#233;`, `&#xe9;` (the `;` may be missing); false when no digit
    /// follows.
    fn numeric_reference(&mut self, at: usize) -> Result<bool, ConversionCancelled> {
        let bytes = self.bytes;
        let (radix, digits_start) = match bytes.get(at + 2) {
            Some(b'x' | b'X') => (16, at + 3),
            _ => (10, at + 2),
        };
        let digits_end = self.scan(digits_start, |b| !char::from(b).is_digit(radix))?;
        if digits_end == digits_start {
            return Ok(false);
        }
        self.count(digits_end - digits_start)?;
        // Past U+10FFFF the value no longer matters: it becomes U+FFFD.
        let value = bytes[digits_start..digits_end]
            .iter()
            .filter_map(|&b| char::from(b).to_digit(radix))
            .fold(0u32, |value, digit| {
                value
                    .saturating_mul(radix)
                    .saturating_add(digit)
                    .min(0x11_0000)
            });
        self.text.push(numeric_character(value));
        self.position = match bytes.get(digits_end) {
            Some(b';') => digits_end + 1,
            _ => digits_end,
        };
        Ok(true)
    }

    /// `&amp;`, `&copy` and the rest of the table; false when no name
    /// matches. The longest name with `;` wins, else the longest legacy name
    /// without one (`&notit;` is `¬it;`).
    fn named_reference(&mut self, at: usize) -> Result<bool, ConversionCancelled> {
        let bytes = self.bytes;
        let name_start = at + 1;
        let mut name_end = name_start;
        while name_end < bytes.len()
            && name_end - name_start < MAX_NAME
            && bytes[name_end].is_ascii_alphanumeric()
        {
            name_end += 1;
        }
        self.count(name_end - name_start + 1)?;
        let name = &bytes[name_start..name_end];
        if name.is_empty() {
            return Ok(false);
        }
        let mut key = [0u8; KEY_CAPACITY];
        key[0] = b'&';
        key[1..=name.len()].copy_from_slice(name);
        if bytes.get(name_end) == Some(&b';') {
            key[name.len() + 1] = b';';
            self.count(1)?;
            if let Some(expansion) = ENTITIES.get(&key[..name.len() + 2]) {
                self.push_expansion(expansion);
                self.position = name_end + 1;
                return Ok(true);
            }
        }
        let (walked, found) = BARE_NAMES.longest_prefix(&name[..name.len().min(MAX_BARE_NAME)]);
        self.count(walked)?;
        if let Some((length, expansion)) = found {
            self.push_expansion(expansion);
            self.position = name_start + length;
            return Ok(true);
        }
        Ok(false)
    }

    fn push_expansion(&mut self, expansion: &[u8]) {
        // The table's expansions are UTF-8 (one or two characters).
        for character in String::from_utf8_lossy(expansion).chars() {
            self.text.push(character);
        }
    }
}

/// The standard's legacy names, written without `;` (`&amp`, `&copy`: 106
/// of them), as a trie: the longest one a name starts with is found in one
/// walk along the name, which stops at the first byte no legacy name has
/// there.
struct BareNames {
    nodes: Vec<BareNode>,
}

#[derive(Default)]
struct BareNode {
    children: Vec<(u8, usize)>,
    expansion: Option<&'static [u8]>,
}

static BARE_NAMES: LazyLock<BareNames> = LazyLock::new(|| {
    let mut nodes = vec![BareNode::default()];
    for (key, expansion) in ENTITIES.entries() {
        let Some(name) = key.strip_prefix(b"&").filter(|name| !name.ends_with(b";")) else {
            continue;
        };
        let mut at = 0;
        for &byte in name {
            at = match nodes[at].children.iter().find(|(b, _)| *b == byte) {
                Some(&(_, next)) => next,
                None => {
                    nodes.push(BareNode::default());
                    let next = nodes.len() - 1;
                    nodes[at].children.push((byte, next));
                    next
                }
            };
        }
        nodes[at].expansion = Some(expansion);
    }
    BareNames { nodes }
});

impl BareNames {
    /// The bytes of `name` walked, and the longest legacy name it starts
    /// with: its length and expansion.
    fn longest_prefix(&self, name: &[u8]) -> (usize, Option<(usize, &'static [u8])>) {
        let mut at = 0;
        let mut found = None;
        let mut walked = 0;
        for (length, &byte) in name.iter().enumerate() {
            walked += 1;
            let Some(&(_, next)) = self.nodes[at].children.iter().find(|(b, _)| *b == byte) else {
                break;
            };
            at = next;
            if let Some(expansion) = self.nodes[at].expansion {
                found = Some((length + 1, expansion));
            }
        }
        (walked, found)
    }
}

/// White space between a tag's name and attributes.
fn is_tag_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// The character a numeric reference stands for, by the standard's rules.
fn numeric_character(value: u32) -> char {
    /// 0x80 to 0x9F as windows-1252 reads them; 0 where the value stays.
    const WINDOWS_1252: [u16; 32] = [
        0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
        0x0152, 0, 0x017D, 0, 0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC,
        0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
    ];
    let remapped = value
        .checked_sub(0x80)
        .and_then(|index| WINDOWS_1252.get(index as usize))
        .filter(|&&mapped| mapped != 0)
        .map_or(value, |&mapped| u32::from(mapped));
    match remapped {
        0 => char::REPLACEMENT_CHARACTER,
        other => char::from_u32(other).unwrap_or(char::REPLACEMENT_CHARACTER),
    }
}

#[cfg(test)]
#[path = "html_tests.rs"]
mod tests;
