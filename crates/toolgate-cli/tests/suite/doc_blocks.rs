//! The fenced blocks of README.md and docs/*.md, and how a block showing
//! output is compared with the output a test produced.
//!
//! A block that shows what a command (or a client) prints is marked on the
//! line before its fence with `<!-- output: NAME -->`; `doc_examples.rs`
//! has one test per NAME that produces the output again. A block without a
//! language is output, so it must be marked: an example nobody checks
//! cannot be added by mistake.
//!
//! Where the output legitimately varies, the block says so in the one way
//! the comparison reads: a line `...` stands for any number of lines
//! (none included), and a line ending in `...` for any line that begins
//! with what precedes it. Anything else that varies (a port, a temporary
//! path, a token) is replaced by the test that produced the output, which
//! says why.

use std::path::{Path, PathBuf};

/// One fenced block of a document.
#[derive(Debug)]
pub(super) struct Block {
    /// The document, relative to the repository.
    pub(super) file: String,
    /// The 1-based line of its opening fence.
    pub(super) line: usize,
    /// Its language (the fence's info string), empty when none.
    pub(super) language: String,
    /// The NAME of the `<!-- output: NAME -->` line before its fence.
    pub(super) output: Option<String>,
    /// Its lines, without the fences.
    pub(super) text: String,
}

/// The repository's root.
pub(super) fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The documents: README.md, then docs/*.md by name.
fn documents() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(repository().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    docs.insert(0, "README.md".to_owned());
    docs
}

/// Every fenced block of every document.
pub(super) fn blocks() -> Vec<Block> {
    let mut blocks = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(repository().join(&file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut at = 0;
        while at < lines.len() {
            let Some(language) = lines[at].trim_start().strip_prefix("```") else {
                at += 1;
                continue;
            };
            let indent = lines[at].len() - lines[at].trim_start().len();
            let end = (at + 1..lines.len())
                .find(|&line| lines[line].trim() == "```")
                .unwrap_or_else(|| panic!("{file}:{}: a fence that does not close", at + 1));
            let output = at
                .checked_sub(1)
                .and_then(|before| lines[before].trim().strip_prefix("<!-- output: "))
                .and_then(|rest| rest.strip_suffix(" -->"))
                .map(str::to_owned);
            let body: Vec<&str> = lines[at + 1..end]
                .iter()
                .map(|line| line.get(indent..).unwrap_or(line.trim_start()))
                .collect();
            blocks.push(Block {
                file: file.clone(),
                line: at + 1,
                language: language.trim().to_owned(),
                output,
                text: body.iter().map(|line| format!("{line}\n")).collect(),
            });
            at = end + 1;
        }
    }
    blocks
}

/// The block marked `<!-- output: name -->`.
pub(super) fn shown(name: &str) -> Block {
    let mut found = blocks()
        .into_iter()
        .filter(|block| block.output.as_deref() == Some(name));
    let block = found
        .next()
        .unwrap_or_else(|| panic!("no block is marked `<!-- output: {name} -->`"));
    assert!(found.next().is_none(), "two blocks are marked {name}");
    block
}

/// Fails unless `actual` reads as the block `name` shows it (see the
/// module's comment for `...`), saying where the block is.
pub(super) fn assert_shows(name: &str, actual: &str) {
    let block = shown(name);
    // Blank lines at the end are not compared: a block cannot end in one.
    let actual = actual.trim_end_matches('\n').to_owned() + "\n";
    let expected: Vec<&str> = block.text.lines().collect();
    let produced: Vec<&str> = actual.lines().collect();
    if !matches(&expected, &produced) {
        pretty_assertions::assert_eq!(
            block.text,
            actual,
            "{}:{}: the output shown (left) is not what the build prints (right)",
            block.file,
            block.line
        );
        panic!(
            "{}:{}: the output shown does not match what the build prints:\n{actual}",
            block.file, block.line
        );
    }
}

/// Whether `actual` reads as `shown`, line by line.
fn matches(shown: &[&str], actual: &[&str]) -> bool {
    match shown.split_first() {
        None => actual.is_empty(),
        Some((&"...", rest)) => (0..=actual.len()).any(|skip| matches(rest, &actual[skip..])),
        Some((line, rest)) => match actual.split_first() {
            Some((first, after)) => line_matches(line, first) && matches(rest, after),
            None => false,
        },
    }
}

fn line_matches(shown: &str, actual: &str) -> bool {
    match shown.strip_suffix("...") {
        Some(start) if !start.trim().is_empty() => actual.starts_with(start),
        _ => shown == actual,
    }
}

#[test]
fn elisions_read_as_the_blocks_mean_them() {
    assert!(matches(&["a", "...", "d"], &["a", "b", "c", "d"]));
    assert!(matches(&["a", "...", "d"], &["a", "d"]));
    assert!(matches(&["x, y, ..."], &["x, y, z"]));
    assert!(!matches(&["x, y, ..."], &["x, z"]));
    assert!(!matches(&["a", "d"], &["a", "b", "d"]));
    assert!(!matches(&["a"], &["a", "b"]));
}
