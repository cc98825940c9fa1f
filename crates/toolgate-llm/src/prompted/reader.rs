//! Reads a prompted reply for tool calls, leniently: small models write a
//! call in whichever form their training favoured, so every common one is
//! read.
//!
//! - the whole reply one JSON step: `{"tool": "x", "arguments": {...}}`,
//!   `{"name": "x", "arguments": {...}}` or `{"answer": "..."}` (a list of
//!   calls too), doubled braces (`{{...}}`) forgiven;
//! - `<tool_call>...</tool_call>` blocks (Qwen's and Hermes' format; the
//!   closing tag may be missing at the end), `<tools>...</tools>` and
//!   `<function_call>...</function_call>` blocks;
//! - fenced code blocks holding a call;
//! - failing all of those, a JSON call of a tool offered, anywhere in the
//!   text;
//! - a reply that opens with a result it was never given
//!   (`Result of pdf_info: ...`): a call of that tool, without arguments.
//!   Small models imitate the transcript's result lines instead of calling;
//!   the tool's name is what they meant to call, and the gateway's answer
//!   to the call (its result, the hint to load it, or the arguments it
//!   takes) serves them better than their made-up result would serve the
//!   user.
//!
//! Whatever is not a call is the answer's text.

use serde_json::Value;

use super::RESULT_LABEL;

/// A reply, read.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Step {
    /// The answer's text.
    pub(super) text: String,
    /// The calls: the tool's name and its arguments as JSON text.
    pub(super) calls: Vec<(String, String)>,
}

/// Tags a call may be wrapped in.
const TAGS: [(&str, &str); 3] = [
    ("<tool_call>", "</tool_call>"),
    ("<tools>", "</tools>"),
    ("<function_call>", "</function_call>"),
];

/// `reply` read for calls; `tools` are the names offered.
pub(super) fn read(reply: &str, tools: &[String]) -> Step {
    let trimmed = reply.trim();
    if let Some(value) = json(unfenced(trimmed).unwrap_or(trimmed)) {
        if let Some(answer) = value.get("answer").and_then(Value::as_str) {
            return imitated_result(answer, tools).unwrap_or_else(|| Step {
                text: answer.to_owned(),
                calls: Vec::new(),
            });
        }
        let calls = calls(&value);
        if !calls.is_empty() {
            return Step {
                text: String::new(),
                calls,
            };
        }
    }
    let (text, calls) = blocks(trimmed);
    if !calls.is_empty() {
        return Step { text, calls };
    }
    if let Some((start, end, call)) = embedded_call(trimmed, tools) {
        let text = format!("{} {}", trimmed[..start].trim(), trimmed[end..].trim());
        return Step {
            text: text.trim().to_owned(),
            calls: vec![call],
        };
    }
    imitated_result(trimmed, tools).unwrap_or_else(|| Step {
        text: trimmed.to_owned(),
        calls: Vec::new(),
    })
}

/// A call of the tool whose result `answer` opens with, as the transcript
/// shows one: `Result of <tool>:`. The name must be a tool offered or look
/// like a tool's (`pdf_info`, `getWeather`, `v2`), so that a plain answer
/// such as "Result of testing: ..." stays one.
fn imitated_result(answer: &str, tools: &[String]) -> Option<Step> {
    let rest = answer.trim_start().strip_prefix(RESULT_LABEL)?;
    let (name, _) = rest.strip_prefix(' ')?.split_once(':')?;
    let identifier = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let tool_like = tools.iter().any(|tool| tool == name)
        || name
            .chars()
            .skip(1)
            .any(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'));
    (identifier && tool_like).then(|| Step {
        text: String::new(),
        calls: vec![(name.to_owned(), "{}".to_owned())],
    })
}

/// The inside of `text` when it is one fenced code block.
fn unfenced(text: &str) -> Option<&str> {
    let inner = text.strip_prefix("```")?.strip_suffix("```")?;
    // The info string (`json`) runs to the end of the first line.
    let (_, body) = inner.split_once('\n')?;
    (!body.contains("```")).then_some(body.trim())
}

/// `text` as JSON, forgiving one doubled pair of braces.
fn json(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok().or_else(|| {
        let inner = text.strip_prefix('{')?.strip_suffix('}')?.trim();
        (inner.starts_with('{') && inner.ends_with('}'))
            .then(|| serde_json::from_str(inner).ok())
            .flatten()
    })
}

/// The calls `value` holds: one call object, or a list of them.
fn calls(value: &Value) -> Vec<(String, String)> {
    match value {
        Value::Array(items) => {
            let calls: Vec<_> = items.iter().filter_map(call).collect();
            if calls.len() == items.len() {
                calls
            } else {
                Vec::new()
            }
        }
        other => call(other).into_iter().collect(),
    }
}

/// One call: a name under `tool`, `name` or `function` (or OpenAI's
/// `{"function": {"name", "arguments"}}`), its arguments under `arguments`,
/// `parameters`, `args` or `input` (an object, or JSON text); none is `{}`.
fn call(value: &Value) -> Option<(String, String)> {
    let object = value.as_object()?;
    if let Some(function) = object.get("function").filter(|f| f.is_object()) {
        return call(function);
    }
    let name = ["tool", "name", "function"]
        .iter()
        .find_map(|key| object.get(*key)?.as_str())?
        .trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|key| object.get(*key))
    {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    Some((name.to_owned(), arguments))
}

/// The calls in tagged and fenced blocks, and the text around them.
fn blocks(reply: &str) -> (String, Vec<(String, String)>) {
    let mut text = String::new();
    let mut found_calls = Vec::new();
    let mut rest = reply;
    while let Some((start, open, close)) = next_block(rest) {
        let inside = &rest[start + open.len()..];
        let (body, after) = match inside.find(close) {
            Some(end) => (&inside[..end], &inside[end + close.len()..]),
            // A call cut at the end of the reply, or an unclosed tag.
            None => (inside, ""),
        };
        let body_text = if open == "```" {
            body.split_once('\n').map_or(body, |(_, code)| code)
        } else {
            body
        };
        let found = json(body_text.trim())
            .map(|value| calls(&value))
            .unwrap_or_default();
        text.push_str(&rest[..start]);
        if found.is_empty() {
            // Not a call: it stays part of the answer.
            text.push_str(&rest[start..rest.len() - after.len()]);
        }
        found_calls.extend(found);
        rest = after;
    }
    text.push_str(rest);
    (text.trim().to_owned(), found_calls)
}

/// Where the next block starts, with its opening and closing marks.
fn next_block(text: &str) -> Option<(usize, &'static str, &'static str)> {
    TAGS.iter()
        .map(|(open, close)| (*open, *close))
        .chain([("```", "```")])
        .filter_map(|(open, close)| Some((text.find(open)?, open, close)))
        .min_by_key(|(start, _, _)| *start)
}

/// A JSON call of one of `tools` anywhere in `text`: where it starts and
/// ends, and the call.
fn embedded_call(text: &str, tools: &[String]) -> Option<(usize, usize, (String, String))> {
    for (start, _) in text.match_indices('{') {
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        let Some(Ok(value)) = values.next() else {
            continue;
        };
        let end = start + values.byte_offset();
        if let Some(call) = call(&value).filter(|(name, _)| tools.contains(name)) {
            return Some((start, end, call));
        }
    }
    None
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
