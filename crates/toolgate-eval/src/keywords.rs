//! [`keyword_query`]: the short query a model writes when it asks a search
//! for tools, made from the user's request without a model.
//!
//! Asked to search, models send a few words of what is to be done ("convert
//! currency EUR USD") rather than the request. This rewrite keeps the
//! request's first [`KEYWORDS`] words that are neither function words nor
//! shorter than three letters, in their order. It is a proxy: a model also
//! adds words of its own (a synonym, the kind of tool), which this cannot.

/// Words a rewrite keeps at most.
pub const KEYWORDS: usize = 8;

/// English function words and the polite frame of a request, which a
/// search query leaves out.
const STOPWORDS: &[&str] = &[
    "about", "above", "after", "again", "all", "also", "and", "any", "are", "because", "been",
    "before", "being", "below", "between", "both", "but", "can", "could", "did", "does", "doing",
    "down", "during", "each", "few", "for", "from", "further", "get", "give", "had", "has", "have",
    "having", "help", "her", "i'd", "i'll", "i'm", "i've", "it's", "let's", "don't", "can't",
    "here", "hers", "him", "his", "how", "into", "its", "just", "know", "let", "like", "may",
    "might", "more", "most", "must", "need", "needs", "nor", "not", "now", "off", "once", "only",
    "other", "our", "ours", "out", "over", "own", "please", "provide", "same", "she", "should",
    "show", "some", "such", "tell", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "through", "too", "under", "until", "use", "very", "want",
    "was", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
    "would", "you", "your", "yours",
];

/// The keyword rewrite of `request`: its first [`KEYWORDS`] content words,
/// lower-cased, space-separated; the request itself when it has none.
///
/// ```
/// use toolgate_eval::keyword_query;
///
/// assert_eq!(
///     keyword_query("Can you please tell me the weather forecast for Oslo tomorrow?"),
///     "weather forecast oslo tomorrow"
/// );
/// ```
pub fn keyword_query(request: &str) -> String {
    let words: Vec<String> = request
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|word| word.trim_matches('\'').to_lowercase())
        .filter(|word| word.chars().count() >= 3 && !STOPWORDS.contains(&word.as_str()))
        .take(KEYWORDS)
        .collect();
    if words.is_empty() {
        return request.trim().to_owned();
    }
    words.join(" ")
}

#[cfg(test)]
#[path = "keywords_tests.rs"]
mod tests;
