use pretty_assertions::assert_eq;
use serde::Deserialize;

use super::*;
use crate::test_model;

/// A tokenizer.json with a tiny vocabulary.
fn tiny() -> WordPiece {
    let vocab = [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "want", "##ed", "runn",
        "##ing", ",", "!", "cafe", "中", "a",
    ];
    let vocab: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), serde_json::json!(i)))
        .collect();
    let json = serde_json::json!({
        "normalizer": {"type": "BertNormalizer", "clean_text": true,
            "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": vocab},
    });
    WordPiece::from_json(json.to_string().as_bytes()).unwrap()
}

#[test]
fn splits_words_into_the_longest_pieces() {
    let t = tiny();
    assert_eq!(
        t.encode("UNwanted, running!", 64),
        vec![2, 1, 11, 9, 10, 12, 3]
    );
    assert_eq!(t.encode("unaffable", 64), vec![2, 4, 5, 6, 3]);
    assert_eq!(t.encode("wanted", 64), vec![2, 7, 8, 3]);
}

#[test]
fn strips_accents_splits_ideographs_and_drops_controls() {
    let t = tiny();
    assert_eq!(t.encode("Café\u{0}\u{200b}中a", 64), vec![2, 13, 14, 15, 3]);
}

#[test]
fn an_empty_text_is_cls_sep_and_long_texts_are_cut() {
    let t = tiny();
    assert_eq!(t.encode("", 64), vec![2, 3]);
    assert_eq!(t.encode("a a a a a a", 5), vec![2, 15, 15, 15, 3]);
}

#[test]
fn refuses_other_tokenizers() {
    let error = WordPiece::from_json(br#"{"model": {"type": "BPE"}}"#)
        .err()
        .unwrap();
    assert!(
        error.contains("missing field") || error.contains("BPE"),
        "{error}"
    );
}

#[derive(Deserialize)]
struct Case {
    text: String,
    ids: Vec<TokenId>,
}

/// `tests/fixtures/tokens.jsonl`: ids from the Hugging Face `tokenizers`
/// library (see `tests/fixtures/reference.py`).
#[test]
fn matches_the_reference_tokenizer_token_for_token() {
    let tokenizer = WordPiece::from_file(&test_model::model_dir().join("tokenizer.json")).unwrap();
    let fixture = include_str!("../tests/fixtures/tokens.jsonl");
    let mut count = 0;
    for line in fixture.lines() {
        let case: Case = serde_json::from_str(line).unwrap();
        assert_eq!(
            tokenizer.encode(&case.text, 256),
            case.ids,
            "{:?}",
            case.text
        );
        count += 1;
    }
    assert!(count >= 300, "{count} cases");
}
