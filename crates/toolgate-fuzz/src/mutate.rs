//! Mutations of valid documents: as text (characters and syntax tokens
//! inserted, deleted, repeated, the text cut short) and as JSON values
//! (a node replaced by another value, removed, given a new key, wrapped).
//! A mutated valid document reaches code a random one never gets to.

use proptest::prelude::*;
use serde_json::Value;

use crate::json;

/// One edit of a text, at a position taken modulo its length.
#[derive(Clone, Debug)]
pub enum TextEdit {
    /// Insert text.
    Insert(usize, String),
    /// Delete up to `len` characters.
    Delete(usize, usize),
    /// Repeat up to `len` characters in place, `times` times.
    Repeat(usize, usize, usize),
    /// Cut the text here.
    Truncate(usize),
}

/// Up to `max` edits whose inserted text is syntax of the format (`tokens`)
/// or anything.
pub fn text_edits(
    tokens: &'static [&'static str],
    max: usize,
) -> impl Strategy<Value = Vec<TextEdit>> {
    let insert = prop_oneof![
        3 => prop::sample::select(tokens).prop_map(str::to_owned),
        1 => json::pattern("\\PC{1,4}"),
        1 => json::pattern("[\\x00-\\x7f]{1,4}"),
        1 => json::string(&[]),
    ];
    let edit = prop_oneof![
        4 => (any::<usize>(), insert).prop_map(|(at, text)| TextEdit::Insert(at, text)),
        3 => (any::<usize>(), 1..16usize).prop_map(|(at, len)| TextEdit::Delete(at, len)),
        1 => (any::<usize>(), 1..32usize, 1..64usize)
            .prop_map(|(at, len, times)| TextEdit::Repeat(at, len, times)),
        1 => any::<usize>().prop_map(TextEdit::Truncate),
    ];
    prop::collection::vec(edit, 1..=max.max(1))
}

/// `text` with `edits` applied in order, on character boundaries.
pub fn apply_text_edits(text: &str, edits: &[TextEdit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for edit in edits {
        let at = |position: usize| position % (chars.len() + 1);
        match edit {
            TextEdit::Insert(position, inserted) => {
                let at = at(*position);
                chars.splice(at..at, inserted.chars());
            }
            TextEdit::Delete(position, len) => {
                let at = at(*position);
                let end = (at + len).min(chars.len());
                chars.drain(at..end);
            }
            TextEdit::Repeat(position, len, times) => {
                let at = at(*position);
                let end = (at + len).min(chars.len());
                let piece: Vec<char> = chars[at..end].to_vec();
                let copies = piece.repeat(*times);
                chars.splice(end..end, copies);
            }
            TextEdit::Truncate(position) => {
                let at = at(*position);
                chars.truncate(at);
            }
        }
    }
    chars.into_iter().collect()
}

/// One of `seeds` (valid documents of the format) with up to `max` text
/// edits whose inserts lean on `tokens`.
pub fn mutated_text(
    seeds: Vec<String>,
    tokens: &'static [&'static str],
    max: usize,
) -> impl Strategy<Value = String> {
    (prop::sample::select(seeds), text_edits(tokens, max))
        .prop_map(|(seed, edits)| apply_text_edits(&seed, &edits))
}

/// Syntax tokens of JSON, for [`text_edits`].
pub const JSON_TOKENS: &[&str] = &[
    "{", "}", "[", "]", ",", ":", "\"", "\\", "null", "true", "0", "-1", "1e300", "-1e300",
    "1e400", "\\ud800", "\\u0000", "{}", "[]", "\"\"", " ", "\n",
];

/// One edit of a JSON value, at a node chosen by index among all nodes.
#[derive(Clone, Debug)]
pub enum ValueEdit {
    /// Put this value in the node's place.
    Replace(usize, Value),
    /// Take the node out of its parent.
    Remove(usize),
    /// Give the node (when an object) this key, or push the value (when an array).
    Insert(usize, String, Value),
    /// Put the node inside an array.
    Wrap(usize),
}

/// Up to `max` value edits whose keys and strings lean on `keys`.
pub fn value_edits(
    keys: &'static [&'static str],
    max: usize,
) -> impl Strategy<Value = Vec<ValueEdit>> {
    let edit = prop_oneof![
        4 => (any::<usize>(), json::value(keys)).prop_map(|(at, v)| ValueEdit::Replace(at, v)),
        2 => any::<usize>().prop_map(ValueEdit::Remove),
        3 => (any::<usize>(), json::string(keys), json::value(keys))
            .prop_map(|(at, k, v)| ValueEdit::Insert(at, k, v)),
        1 => any::<usize>().prop_map(ValueEdit::Wrap),
    ];
    prop::collection::vec(edit, 1..=max.max(1))
}

/// `value` with `edits` applied in order.
pub fn apply_value_edits(mut value: Value, edits: &[ValueEdit]) -> Value {
    for edit in edits {
        let pointers = node_pointers(&value);
        let pick = |index: usize| pointers[index % pointers.len()].clone();
        match edit {
            ValueEdit::Replace(at, replacement) => {
                if let Some(node) = value.pointer_mut(&pick(*at)) {
                    *node = replacement.clone();
                }
            }
            ValueEdit::Remove(at) => remove(&mut value, &pick(*at)),
            ValueEdit::Insert(at, key, inserted) => match value.pointer_mut(&pick(*at)) {
                Some(Value::Object(object)) => {
                    object.insert(key.clone(), inserted.clone());
                }
                Some(Value::Array(array)) => array.push(inserted.clone()),
                _ => {}
            },
            ValueEdit::Wrap(at) => {
                if let Some(node) = value.pointer_mut(&pick(*at)) {
                    *node = Value::Array(vec![node.take()]);
                }
            }
        }
    }
    value
}

/// One of `seeds` with up to `max` value edits.
pub fn mutated_value(
    seeds: Vec<Value>,
    keys: &'static [&'static str],
    max: usize,
) -> impl Strategy<Value = Value> {
    (prop::sample::select(seeds), value_edits(keys, max))
        .prop_map(|(seed, edits)| apply_value_edits(seed, &edits))
}

/// JSON pointers to every node of `value`, the root (`""`) first.
fn node_pointers(value: &Value) -> Vec<String> {
    let mut pointers = Vec::new();
    let mut stack = vec![(String::new(), value)];
    while let Some((pointer, node)) = stack.pop() {
        match node {
            Value::Object(object) => {
                for (key, child) in object {
                    stack.push((format!("{pointer}/{}", escape(key)), child));
                }
            }
            Value::Array(array) => {
                for (index, child) in array.iter().enumerate() {
                    stack.push((format!("{pointer}/{index}"), child));
                }
            }
            _ => {}
        }
        pointers.push(pointer);
    }
    pointers
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Removes the node at `pointer` from its parent (the root stays).
fn remove(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(object)) => {
            object.shift_remove(&key);
        }
        Some(Value::Array(array)) => {
            if let Ok(index) = key.parse::<usize>()
                && index < array.len()
            {
                array.remove(index);
            }
        }
        _ => {}
    }
}
