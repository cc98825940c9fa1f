//! The BERT uncased tokenizer (what `tokenizer.json` of all-MiniLM-L6-v2
//! describes), written out: the `BertNormalizer` (drop control characters,
//! whitespace to spaces, spaces around CJK ideographs, strip accents,
//! lowercase), the `BertPreTokenizer` (split on whitespace, every punctuation
//! character a word of its own), then greedy longest-match WordPiece with
//! `##` continuations, `[CLS]` ... `[SEP]` around, truncated to a maximum.
//!
//! It matches the Hugging Face `tokenizers` library token for token on the
//! test strings (`tokenizer_tests.rs`); only the parts of `tokenizer.json`
//! that BERT uncased uses are read, and any other setup is refused.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use crate::error::EmbedError;

/// Token id.
pub type TokenId = u32;

/// A WordPiece tokenizer for BERT uncased models.
#[derive(Debug, Clone)]
pub struct WordPiece {
    vocab: HashMap<String, TokenId>,
    unk: TokenId,
    cls: TokenId,
    sep: TokenId,
    prefix: String,
    max_word_chars: usize,
    lowercase: bool,
    strip_accents: bool,
}

/// The parts of `tokenizer.json` read.
#[derive(Deserialize)]
struct TokenizerJson {
    normalizer: Option<NormalizerJson>,
    pre_tokenizer: Option<TypeOnly>,
    model: ModelJson,
}

#[derive(Deserialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct NormalizerJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default = "yes")]
    clean_text: bool,
    #[serde(default = "yes")]
    handle_chinese_chars: bool,
    strip_accents: Option<bool>,
    #[serde(default = "yes")]
    lowercase: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct ModelJson {
    #[serde(rename = "type")]
    kind: String,
    vocab: HashMap<String, TokenId>,
    unk_token: String,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
}

impl WordPiece {
    /// Reads a BERT WordPiece `tokenizer.json`.
    pub fn from_file(path: &Path) -> Result<Self, EmbedError> {
        let bytes = std::fs::read(path).map_err(|source| EmbedError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&bytes).map_err(|reason| EmbedError::Invalid {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// Parses a BERT WordPiece `tokenizer.json`; the error says what in it is
    /// not supported.
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        let json: TokenizerJson = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if json.model.kind != "WordPiece" {
            return Err(format!("model type {:?}, not WordPiece", json.model.kind));
        }
        let normalizer = json
            .normalizer
            .ok_or_else(|| "no normalizer (BertNormalizer expected)".to_string())?;
        if normalizer.kind != "BertNormalizer" {
            return Err(format!(
                "normalizer {:?}, not BertNormalizer",
                normalizer.kind
            ));
        }
        if !normalizer.clean_text || !normalizer.handle_chinese_chars {
            return Err("BertNormalizer without clean_text or handle_chinese_chars".into());
        }
        match json.pre_tokenizer {
            Some(pre) if pre.kind == "BertPreTokenizer" => {}
            Some(pre) => {
                return Err(format!(
                    "pre-tokenizer {:?}, not BertPreTokenizer",
                    pre.kind
                ));
            }
            None => return Err("no pre-tokenizer (BertPreTokenizer expected)".into()),
        }
        let vocab = json.model.vocab;
        let id = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| format!("{token} is not in the vocabulary"))
        };
        Ok(Self {
            unk: id(&json.model.unk_token)?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            prefix: json.model.continuing_subword_prefix,
            max_word_chars: json.model.max_input_chars_per_word,
            lowercase: normalizer.lowercase,
            strip_accents: normalizer.strip_accents.unwrap_or(normalizer.lowercase),
            vocab,
        })
    }

    /// The ids of `text`: `[CLS]`, its word pieces (the first
    /// `max_tokens - 2`), `[SEP]`.
    pub fn encode(&self, text: &str, max_tokens: usize) -> Vec<TokenId> {
        let normalized = self.normalize(text);
        let keep = max_tokens.saturating_sub(2);
        let mut ids = vec![self.cls];
        for word in pre_tokenize(&normalized) {
            if ids.len() > keep {
                break;
            }
            self.word_pieces(word, &mut ids);
        }
        ids.truncate(keep + 1);
        ids.push(self.sep);
        ids
    }

    fn normalize(&self, text: &str) -> String {
        let mut cleaned = String::with_capacity(text.len());
        for c in text.chars() {
            if c == '\0' || c == '\u{fffd}' || is_control(c) {
                continue;
            }
            if is_whitespace(c) {
                cleaned.push(' ');
            } else if is_chinese_char(c) {
                cleaned.push(' ');
                cleaned.push(c);
                cleaned.push(' ');
            } else {
                cleaned.push(c);
            }
        }
        let stripped = if self.strip_accents {
            cleaned
                .nfd()
                .filter(|c| get_general_category(*c) != GeneralCategory::NonspacingMark)
                .collect()
        } else {
            cleaned
        };
        if self.lowercase {
            stripped.chars().flat_map(char::to_lowercase).collect()
        } else {
            stripped
        }
    }

    /// Greedy longest match; a word with a piece not in the vocabulary is
    /// one `[UNK]`.
    fn word_pieces(&self, word: &str, ids: &mut Vec<TokenId>) {
        if word.chars().count() > self.max_word_chars {
            ids.push(self.unk);
            return;
        }
        let start_len = ids.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str(&self.prefix);
                }
                piece.push_str(&word[start..end]);
                if let Some(id) = self.vocab.get(&piece) {
                    found = Some(*id);
                    break;
                }
                end = word[..end]
                    .char_indices()
                    .next_back()
                    .map_or(start, |(i, _)| i);
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(start_len);
                    ids.push(self.unk);
                    return;
                }
            }
        }
    }
}

/// Whitespace-separated words with each punctuation character a word.
fn pre_tokenize(text: &str) -> impl Iterator<Item = &str> {
    text.split(char::is_whitespace).flat_map(|chunk| {
        let mut words = Vec::new();
        let mut begin = 0;
        for (i, c) in chunk.char_indices() {
            if is_punctuation(c) {
                if begin < i {
                    words.push(&chunk[begin..i]);
                }
                words.push(&chunk[i..i + c.len_utf8()]);
                begin = i + c.len_utf8();
            }
        }
        if begin < chunk.len() {
            words.push(&chunk[begin..]);
        }
        words
    })
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control (`Cc`), format (`Cf`), unassigned (`Cn`) and private-use (`Co`)
/// characters, except tab, newline and carriage return.
fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::Unassigned
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
    )
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            GeneralCategory::ConnectorPunctuation
                | GeneralCategory::DashPunctuation
                | GeneralCategory::OpenPunctuation
                | GeneralCategory::ClosePunctuation
                | GeneralCategory::InitialPunctuation
                | GeneralCategory::FinalPunctuation
                | GeneralCategory::OtherPunctuation
        )
}

/// CJK ideographs, as BERT defines them.
fn is_chinese_char(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[cfg(test)]
#[path = "tokenizer_tests.rs"]
mod tests;
