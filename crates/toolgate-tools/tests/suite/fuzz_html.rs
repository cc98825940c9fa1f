//! Fuzz target of the `web` tool's HTML-to-text conversion
//! (`html_to_text_until`): arbitrary text and pages made of the markup that
//! moves the scanner between its states (tags, quotes, comments, skipped
//! elements, references, each sometimes repeated thousands of times), and
//! well-formed documents whose text a model of the conversion knows.
//!
//! Properties: no panic; the work is linear, counted rather than timed (at
//! most `MAX_STEPS_PER_BYTE` steps a byte); the text is collapsed (single
//! spaces, no blank line, only ` ` and `\n`) and is its own text once
//! escaped; a well-formed document gives exactly its visible text, and
//! nothing of its scripts, styles, comments or attribute values.
//!
//! Inputs: `TOOLGATE_FUZZ_CASES_HTML_TO_TEXT` or `PROPTEST_CASES`.

use proptest::prelude::*;
use tokio_util::sync::CancellationToken;
use toolgate_fuzz::{Target, fuzz};
use toolgate_tools::{MAX_STEPS_PER_BYTE, html_to_text_until};

/// Markup that changes what the scanner does next.
const TOKENS: &[&str] = &[
    "<p>",
    "</p>",
    "<div class=x>",
    "<br>",
    "<BR/>",
    "<td>",
    "</TH>",
    "<li>",
    "<h1>",
    "</h1>",
    "<b>",
    "</b>",
    "<a href=\"",
    "<a title='",
    "<A HREF=x>",
    "</a>",
    "<img src=a.png />",
    "<script>",
    "</script>",
    "</script ",
    "</scrip",
    "<style>",
    "</style >",
    "<svg>",
    "<svg/>",
    "</svg>",
    "<template>",
    "</template>",
    "<noscript>",
    "<!--",
    "-->",
    "--!>",
    "<!-->",
    "<!DOCTYPE html>",
    "<?xml",
    "<",
    ">",
    "</",
    "</>",
    "/>",
    "=",
    "'",
    "\"",
    "&",
    "&#",
    "&#x",
    ";",
    "&amp;",
    "&amp",
    "&AMP",
    "&lt;",
    "&notit;",
    "&notin;",
    "&nGg;",
    "&nbsp;",
    "&eacute",
    "&CounterClockwiseContourIntegral;",
    "&#128;",
    "&#xD800;",
    "&#0;",
    "&#99999999999;",
    "&#x1F600;",
    "&xxxxxx",
    " ",
    "  ",
    "\n",
    "\t",
    "\r\n",
    "\u{a0}",
    "\u{3000}",
    "\u{2028}",
    "é",
    "中",
    "😀",
    "\u{fffd}",
    "word",
    "x",
    "\0",
];

/// A page: tokens, short random markup and arbitrary text, each sometimes
/// repeated into a long run.
fn page() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => prop::sample::select(TOKENS).prop_map(str::to_owned),
        2 => "[a-z&#;<>/=\"' !x-]{1,12}",
        1 => any::<String>(),
    ];
    let run = prop_oneof![12 => Just(1usize), 1 => 2usize..4000];
    prop::collection::vec((piece, run), 0..48).prop_map(|pieces| {
        pieces
            .into_iter()
            .map(|(piece, times)| piece.repeat(times))
            .collect()
    })
}

/// A node of a well-formed document.
#[derive(Clone, Debug)]
enum Node {
    /// Words as written in HTML, and as read.
    Text(Vec<(&'static str, &'static str)>),
    /// An element, its name's case as written, quoted attributes, children.
    Element {
        name: &'static str,
        upper: bool,
        attributes: Vec<(String, char, String)>,
        children: Vec<Node>,
    },
    /// Content nobody reads: `script`, `style`, `noscript`, `template`,
    /// `svg` or a comment (empty name).
    Hidden { name: &'static str, content: String },
}

/// Words: (HTML, text). White space among them is white space.
const WORDS: &[(&str, &str)] = &[
    ("fish", "fish"),
    ("&amp;", "&"),
    ("AT&amp;T", "AT&T"),
    ("&lt;b&gt;", "<b>"),
    ("caf&eacute;", "café"),
    ("caf&eacute", "café"),
    ("&#x4e2d;&#25991;", "中文"),
    ("&mdash;", "\u{2014}"),
    ("&euro;5", "€5"),
    ("a&nbsp;b", "a\u{a0}b"),
    (" ", " "),
    ("\n", " "),
    (" \t ", " "),
    ("x", "x"),
    ("<3", "<3"),
];

const BLOCKS: &[&str] = &["p", "div", "li", "h2", "section", "tr", "blockquote"];
const INLINE: &[&str] = &["b", "i", "a", "span", "em", "code"];
const CELLS: &[&str] = &["td", "th"];
const HIDDEN: &[&str] = &["script", "style", "noscript", "template", "svg", ""];

fn attributes() -> impl Strategy<Value = Vec<(String, char, String)>> {
    prop::collection::vec(
        (
            "[a-z]{1,6}",
            prop::sample::select(vec!['"', '\'']),
            "[a-z <>&=;/'\"-]{0,12}",
        )
            .prop_map(|(name, quote, value)| (name, quote, value.replace(quote, ""))),
        0..3,
    )
}

fn document() -> impl Strategy<Value = Vec<Node>> {
    let text = prop::collection::vec(prop::sample::select(WORDS), 1..6).prop_map(Node::Text);
    let hidden =
        (prop::sample::select(HIDDEN), "[a-z <>&'\"=;/!]{0,16}").prop_map(|(name, content)| {
            Node::Hidden {
                name,
                // Nothing in it ends it early: no `</`, and in a comment no `>`.
                content: if name.is_empty() {
                    content.replace(['>', '-'], "")
                } else {
                    content.replace("</", "< /")
                },
            }
        });
    let leaf = prop_oneof![4 => text, 1 => hidden];
    let tree = leaf.prop_recursive(6, 64, 6, |inner| {
        let names = prop_oneof![
            prop::sample::select(BLOCKS),
            prop::sample::select(INLINE),
            prop::sample::select(CELLS),
        ];
        (
            names,
            any::<bool>(),
            attributes(),
            prop::collection::vec(inner, 0..6),
        )
            .prop_map(|(name, upper, attributes, children)| Node::Element {
                name,
                upper,
                attributes,
                children,
            })
    });
    prop::collection::vec(tree, 0..6)
}

/// Writes `nodes` as HTML, and as the text a reader sees before white space
/// is collapsed (`\n` where a block starts or ends, a space around cells).
fn render(nodes: &[Node], html: &mut String, seen: &mut String) {
    for node in nodes {
        match node {
            Node::Text(words) => {
                for (written, read) in words {
                    html.push_str(written);
                    seen.push_str(read);
                }
            }
            Node::Element {
                name,
                upper,
                attributes,
                children,
            } => {
                let tag = if *upper {
                    name.to_ascii_uppercase()
                } else {
                    (*name).to_owned()
                };
                let around = if BLOCKS.contains(name) {
                    "\n"
                } else if CELLS.contains(name) {
                    " "
                } else {
                    ""
                };
                html.push_str(&format!("<{tag}"));
                for (attribute, quote, value) in attributes {
                    html.push_str(&format!(" {attribute}={quote}{value}{quote}"));
                }
                html.push('>');
                seen.push_str(around);
                render(children, html, seen);
                html.push_str(&format!("</{tag}>"));
                seen.push_str(around);
            }
            Node::Hidden { name: "", content } => html.push_str(&format!("<!--{content}-->")),
            Node::Hidden { name, content } => {
                html.push_str(&format!("<{name}>{content}</{name}>"));
            }
        }
    }
}

/// Text collapsed as the converter promises: each line's words joined by
/// one space, blank lines dropped.
fn collapsed(text: &str) -> String {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn convert(html: &str) -> Result<String, TestCaseError> {
    let page = html_to_text_until(html, &CancellationToken::new())
        .map_err(|_| TestCaseError::fail("a token nobody cancels stopped the conversion"))?;
    let bound = MAX_STEPS_PER_BYTE * html.len() as u64 + 1;
    prop_assert!(
        page.steps <= bound,
        "{} steps for {} bytes: more than {MAX_STEPS_PER_BYTE} a byte",
        page.steps,
        html.len()
    );
    Ok(page.text)
}

#[derive(Clone, Debug)]
enum Input {
    Page(String),
    Document(Vec<Node>),
}

/// Any page converts within its step bound to collapsed text that is its
/// own text once escaped; a well-formed document converts to the text a
/// reader sees.
#[test]
fn fuzz_html_to_text() {
    let input = prop_oneof![
        3 => page().prop_map(Input::Page),
        2 => document().prop_map(Input::Document),
    ];
    fuzz(Target::new("html_to_text", 512), input, &[], |input| {
        let (html, expected) = match input {
            Input::Page(html) => (html, None),
            Input::Document(nodes) => {
                let (mut html, mut seen) = (String::new(), String::new());
                render(&nodes, &mut html, &mut seen);
                (html, Some(collapsed(&seen)))
            }
        };
        let text = convert(&html)?;
        prop_assert_eq!(&collapsed(&text), &text, "not collapsed: {:?}", html);
        prop_assert!(
            !text.contains(|c: char| c.is_whitespace() && c != ' ' && c != '\n'),
            "white space other than ' ' and '\\n': {text:?}"
        );
        for line in text.lines() {
            let escaped = line.replace('&', "&amp;").replace('<', "&lt;");
            prop_assert_eq!(convert(&escaped)?, line, "escaped line read back");
        }
        if let Some(expected) = expected {
            prop_assert_eq!(text, expected, "from {:?}", html);
        }
        Ok(())
    });
}
