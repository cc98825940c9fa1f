//! Terms for lexical matching: lowercase words, identifiers split at `_`,
//! `-`, `.` and camelCase humps, common English endings folded, stop words
//! dropped. `getWeatherForecast`, `get_weather_forecasts` and "weather
//! forecast" all give `weather forecast`.

use crate::tool::ToolDefinition;

/// The weighted terms a tool is matched by: its name (twice as telling as
/// the rest), its description, and its parameters' names and, at half
/// weight, their descriptions. Parameters carry evidence a description
/// often leaves out (`repo`, `owner`, `currency`).
pub fn tool_terms(tool: &ToolDefinition) -> Vec<(String, f64)> {
    let weighted = |text: &str, weight: f64| {
        terms(text)
            .into_iter()
            .map(move |term| (term, weight))
            .collect::<Vec<_>>()
    };
    let mut out = weighted(tool.name.as_str(), 2.0);
    out.extend(weighted(&tool.description, 1.0));
    if let Some(serde_json::Value::Object(properties)) = tool.input_schema.get("properties") {
        for (name, property) in properties {
            out.extend(weighted(name, 1.0));
            if let Some(description) = property.get("description").and_then(|d| d.as_str()) {
                out.extend(weighted(description, 0.5));
            }
        }
    }
    out
}

/// Words too common to say anything about a tool.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could",
    "do", "for", "from", "get", "give", "has", "have", "how", "i", "if", "in", "into", "is", "it",
    "its", "let", "me", "my", "of", "on", "or", "our", "please", "provide", "s", "so", "some",
    "that", "the", "their", "them", "then", "there", "these", "this", "to", "us", "want", "was",
    "we", "what", "when", "which", "will", "with", "would", "you", "your",
];

/// The terms of `text`, in order.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .filter(|word| !is_stop_word(word))
        .map(|word| stem(&word))
        .collect()
}

/// Whether a lowercase word is too common to say anything about a tool.
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// The lowercase words of `text`, in order, split at anything not a letter
/// or digit and at camelCase humps: `GET_searchPerson` gives `get`,
/// `search`, `person`. Nothing dropped, nothing folded.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .flat_map(split_camel)
        .map(str::to_lowercase)
        .filter(|word| !word.is_empty())
}

/// `getWeatherForecast` -> `get`, `Weather`, `Forecast`; `HTTPServer` -> `HTTP`, `Server`.
fn split_camel(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let previous = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = (c.is_uppercase() && previous.is_lowercase())
            || (c.is_uppercase() && previous.is_uppercase() && next_lower)
            || (c.is_ascii_digit() != previous.is_ascii_digit());
        if boundary {
            parts.push(&word[start..at]);
            start = at;
        }
    }
    parts.push(&word[start..]);
    parts
}

/// Folds common English endings: `forecasts` -> `forecast`, `searching` ->
/// `search`, `queries` -> `query`, `created` -> `creat`.
fn stem(word: &str) -> String {
    let n = word.chars().count();
    if n <= 3 || !word.is_ascii() {
        return word.to_owned();
    }
    if let Some(base) = word.strip_suffix("ies") {
        return format!("{base}y");
    }
    for (suffix, min) in [("ing", 6), ("ed", 5), ("es", 5), ("s", 4)] {
        if n >= min
            && let Some(base) = word.strip_suffix(suffix)
            && !base.ends_with('s')
        {
            return base.to_owned();
        }
    }
    word.to_owned()
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
