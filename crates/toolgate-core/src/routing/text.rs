//! Terms for lexical matching: lowercase words, identifiers split at `_`,
//! `-`, `.` and camelCase humps, common English endings folded, stop words
//! dropped. `getWeatherForecast`, `get_weather_forecasts` and "weather
//! forecast" all give `weather forecast`. Chinese, Japanese and Korean
//! text, which does not space its words, is matched by overlapping pairs of
//! characters: "天气预报" gives `天气`, `气预`, `预报`.

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
/// `search`, `person`. A run of CJK characters gives its overlapping pairs
/// ([`cjk_pairs`]). Nothing dropped, nothing folded.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .flat_map(split_camel)
        .flat_map(cjk_pairs)
        .map(str::to_lowercase)
        .filter(|word| !word.is_empty())
}

/// `word` with each run of CJK characters replaced by the run's
/// overlapping pairs of characters (a run of one stays as it is), the way
/// search engines index these scripts (Lucene's CJK bigrams): they do not
/// space their words, so a whole sentence would otherwise be one word that
/// no query repeats. `查询天气` gives `查询`, `询天`, `天气`; `iPhone手机`
/// gives `iPhone`, `手机`. Every part is a slice of `word`.
fn cjk_pairs(word: &str) -> Vec<&str> {
    if !word.chars().any(is_cjk) {
        return vec![word];
    }
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let end_of = |i: usize| chars.get(i).map_or(word.len(), |(at, _)| *at);
    let mut parts = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let cjk = is_cjk(chars[i].1);
        let run = chars[i..]
            .iter()
            .take_while(|(_, c)| is_cjk(*c) == cjk)
            .count();
        if cjk && run > 1 {
            parts.extend((i..i + run - 1).map(|j| &word[chars[j].0..end_of(j + 2)]));
        } else {
            parts.push(&word[chars[i].0..end_of(i + run)]);
        }
        i += run;
    }
    parts
}

/// Whether `c` is matched by pairs of characters: Han ideographs, Hiragana
/// and Katakana, written without spaces, and Hangul, whose spaced words
/// carry their particles and endings with them (as Lucene's CJK analyzer
/// treats them).
fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'      // Hiragana, Katakana
        | '\u{3400}'..='\u{4DBF}'    // Han, extension A
        | '\u{4E00}'..='\u{9FFF}'    // Han
        | '\u{AC00}'..='\u{D7AF}'    // Hangul syllables
        | '\u{F900}'..='\u{FAFF}'    // Han compatibility
        | '\u{FF66}'..='\u{FF9F}'    // halfwidth Katakana
        | '\u{20000}'..='\u{2FA1F}') // Han, extensions B onwards
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
