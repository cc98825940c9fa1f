//! How long the `web` tool's HTML-to-text conversion takes on 10 MiB pages
//! (the most a fetch reads) of each adversarial shape, and on a normal page
//! repeated to the same size (divan).
//!
//! `cargo bench -p toolgate-tools --bench html`. The converter it replaced
//! (a search for `;` through the rest of the page after every `&`) is
//! measured beside it on 64 KiB and 256 KiB of `&`, where it still ends:
//! the quadratic shape shows in the ratio between the two.
#![expect(
    clippy::unwrap_used,
    reason = "benchmark setup: a broken fixture should abort loudly"
)]

use std::sync::LazyLock;

use divan::Bencher;
use divan::counter::BytesCount;
use toolgate_tools::html_to_text;

fn main() {
    divan::main();
}

/// The largest body a fetch reads.
const PAGE_BYTES: usize = 10 * 1024 * 1024;

/// A normal article: headings, paragraphs with entities and inline markup,
/// a list, a table, a script and a style.
const ARTICLE: &str = "<div class=\"post\"><h2>Caf&eacute; notes &mdash; part 3</h2>\
    <p>Fish &amp; chips, <b>hot</b> and <a href=\"/menu?a=1&amp;b=2\" title=\"menu\">fresh</a>.\
    It&rsquo;s 5&nbsp;&euro; &lt; 10&nbsp;&euro;.</p><ul><li>one</li><li>two &#x2014; three</li></ul>\
    <table><tr><th>k</th><td>v</td></tr></table><script>var x = '<p>' + 1;</script>\
    <style>.post{margin:0}</style><!-- a comment --></div>\n";

/// `shape` repeated to [`PAGE_BYTES`].
fn page(shape: &str) -> String {
    shape.repeat(PAGE_BYTES / shape.len())
}

/// The 10 MiB pages, by name.
static PAGES: LazyLock<Vec<(&'static str, String)>> = LazyLock::new(|| {
    vec![
        ("ampersands", page("&")),
        ("numeric_starts", page("&#")),
        ("named_without_semicolon", page("&amp")),
        ("unknown_names", page("&xxxxxx")),
        ("deep_nesting", {
            let depth = PAGE_BYTES / 2 / "<div><span>".len();
            format!(
                "{}deep{}",
                "<div><span>".repeat(depth),
                "</span></div>".repeat(depth)
            )
        }),
        ("unclosed_tags", page("<b><i><p class=x>")),
        ("unclosed_comment", format!("<!--{}", page("- > -- "))),
        (
            "unclosed_script",
            format!("<script>{}", page("</scrip</ <")),
        ),
        (
            "long_attribute_value",
            format!("<a title=\"{}\">link</a>", page("&gt;> ")),
        ),
        ("lone_angle_brackets", page("a < b ")),
        ("article", page(ARTICLE)),
    ]
});

fn shape(name: &str) -> &'static str {
    &PAGES.iter().find(|(n, _)| *n == name).unwrap().1
}

#[divan::bench(args = [
    "ampersands",
    "numeric_starts",
    "named_without_semicolon",
    "unknown_names",
    "deep_nesting",
    "unclosed_tags",
    "unclosed_comment",
    "unclosed_script",
    "long_attribute_value",
    "lone_angle_brackets",
    "article",
], sample_count = 10)]
fn convert_10_mib(bencher: Bencher, name: &str) {
    let page = shape(name);
    bencher
        .counter(BytesCount::of_str(page))
        .bench(|| html_to_text(divan::black_box(page)));
}

/// The converter's `&` handling before this one, kept here as the baseline.
mod replaced {
    /// Entity decoding as it was (`decode_entities`, which the old
    /// converter ran on each run of text): after every `&`, `find(';')`
    /// through the rest of the text.
    pub(crate) fn decode_entities(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(amp) = rest.find('&') {
            out.push_str(&rest[..amp]);
            rest = &rest[amp..];
            let decoded = rest[1..]
                .find(';')
                .filter(|&semi| semi <= 10)
                .and_then(|semi| {
                    let entity = &rest[1..=semi];
                    let character = match entity {
                        "amp" => Some('&'),
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "quot" => Some('"'),
                        "apos" | "#39" => Some('\''),
                        "nbsp" => Some(' '),
                        _ => entity
                            .strip_prefix("#x")
                            .or_else(|| entity.strip_prefix("#X"))
                            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                            .or_else(|| entity.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                            .and_then(char::from_u32),
                    }?;
                    Some((character, semi + 2))
                });
            match decoded {
                Some((character, length)) => {
                    out.push(character);
                    rest = &rest[length..];
                }
                None => {
                    out.push('&');
                    rest = &rest[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

#[divan::bench(args = [64 * 1024, 256 * 1024], sample_count = 3)]
fn replaced_ampersands(bencher: Bencher, bytes: usize) {
    let page = "&".repeat(bytes);
    bencher
        .counter(BytesCount::of_str(&page))
        .bench(|| replaced::decode_entities(divan::black_box(&page)));
}

#[divan::bench(args = [64 * 1024, 256 * 1024], sample_count = 10)]
fn ampersands(bencher: Bencher, bytes: usize) {
    let page = "&".repeat(bytes);
    bencher
        .counter(BytesCount::of_str(&page))
        .bench(|| html_to_text(divan::black_box(&page)));
}
