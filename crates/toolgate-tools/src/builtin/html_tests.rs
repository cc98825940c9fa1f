use pretty_assertions::assert_eq;

use super::*;

fn steps(html: &str) -> u64 {
    html_to_text_until(html, &CancellationToken::new())
        .unwrap()
        .steps
}

#[test]
fn html_becomes_readable_text() {
    let html = "<html><head><title>T &amp; C</title><style>p{color:red}</style>\
        <script>var x = '<p>';</script></head><body><!-- hidden <p> -->\
        <h1>Hello&nbsp;World</h1><p>One  <b>two</b>\n three</p><ul><li>a &lt; b</li>\
        <li>&#233;&#x4e2d;</li></ul></body></html>";
    assert_eq!(
        html_to_text(html),
        "T & C\nHello World\nOne two three\na < b\n\u{e9}\u{4e2d}"
    );
}

#[test]
fn character_references_follow_the_standard() {
    for (html, text) in [
        // The whole table, with and without `;` where the standard allows it.
        (
            "&mdash; &hellip; &rsquo;&euro;",
            "\u{2014} \u{2026} \u{2019}\u{20ac}",
        ),
        ("&copy2024 &amp &AMP; &lt;p&gt;", "\u{a9}2024 & & <p>"),
        ("&notin; &notit;", "\u{2209} \u{ac}it;"),
        ("&nGg;", "\u{22d9}\u{338}"),
        // Not references: left as they are.
        (
            "&unknown; & &; &#; &#x; &#xg;",
            "&unknown; & &; &#; &#x; &#xg;",
        ),
        ("AT&T R&D", "AT&T R&D"),
        // Numeric: `;` optional, out-of-range and surrogates replaced,
        // 0x80-0x9F read as windows-1252, long runs of digits saturate.
        ("&#65&#x42;&#X43;", "ABC"),
        (
            "&#0; &#xD800; &#x110000; &#99999999999999999999;",
            "\u{fffd} \u{fffd} \u{fffd} \u{fffd}",
        ),
        ("&#128;&#x93;&#x81;", "\u{20ac}\u{201c}\u{81}"),
        // A reference's white space is white space.
        ("a&#10;b&nbsp;&nbsp;c&#9;", "a b c"),
    ] {
        assert_eq!(html_to_text(html), text, "{html}");
    }
}

#[test]
fn markup_is_read_as_a_browser_reads_it() {
    for (html, text) in [
        // `<` starts a tag only before a letter, `/`, `!` or `?`.
        ("a < b > c <3 <=", "a < b > c <3 <="),
        ("x </ y> z </> w", "x z w"),
        ("end </", "end </"),
        // `>` in a quoted value does not end the tag; case does not matter.
        ("<a title=\"x > y\" href='>'>link</a>", "link"),
        ("<A HREF=x>A</A><P>b<BR>c", "A\nb\nc"),
        ("<p class=a\"b>x</p>", "x"),
        // Comments, declarations, processing instructions.
        (
            "<!DOCTYPE html><?xml version=\"1.0\"?>a<!-->b<!--->c",
            "abc",
        ),
        ("a<!-- x --!> b <!-- -- > -->c", "a b c"),
        // Skipped elements end at their own end tag only.
        ("a<script>b</scripts>c</script >d", "ad"),
        ("<SCRIPT>x</SCRIPT>y<style>p{}</Style>z", "yz"),
        (
            "<p>a<svg viewBox='0 0 1 1'/>b</p><svg><text>c</text></svg>d",
            "ab\nd",
        ),
        (
            "<noscript>enable js</noscript><template><p>t</p></template>ok",
            "ok",
        ),
        // Blocks on their own lines, cells apart, blank lines dropped.
        (
            "<table><tr><th>k</th><td>v</td></tr><tr><td>1</td><td>2</td></tr></table>",
            "k v\n1 2",
        ),
        (
            "<div>\n\n<p> </p><p>a</p>\n<br><br>\n<p>b</p></div>",
            "a\nb",
        ),
        ("<dl><dt>term<dd>meaning</dl>", "term\nmeaning"),
    ] {
        assert_eq!(html_to_text(html), text, "{html}");
    }
}

#[test]
fn what_a_page_leaves_open_swallows_the_rest() {
    for (html, text) in [
        ("a<!-- b <p>c", "a"),
        ("a<p class='x>b", "a"),
        ("a<p class=\"x", "a"),
        ("a<p", "a"),
        ("a<script>b<p>c</p>", "a"),
        ("a<style>b</styl", "a"),
        ("a<!DOCTYPE", "a"),
    ] {
        assert_eq!(html_to_text(html), text, "{html}");
    }
}

#[test]
fn adversarial_pages_convert_to_what_they_say() {
    let n = 100_000;
    assert_eq!(html_to_text(&"&".repeat(n)), "&".repeat(n));
    assert_eq!(html_to_text(&"&#".repeat(n)), "&#".repeat(n));
    assert_eq!(html_to_text(&"&amp".repeat(n)), "&".repeat(n));
    assert_eq!(html_to_text(&"<".repeat(n)), "<".repeat(n));
    let nested = format!(
        "{}deep{}",
        "<div><span>".repeat(n),
        "</span></div>".repeat(n)
    );
    assert_eq!(html_to_text(&nested), "deep");
    let unclosed = format!("{}text", "<b><i>".repeat(n));
    assert_eq!(html_to_text(&unclosed), "text");
    let attribute = format!("<a title=\"{}\">link</a>", "&gt;>".repeat(n));
    assert_eq!(html_to_text(&attribute), "link");
    let script = format!("<script>{}</script>after", "</scrip</<".repeat(n));
    assert_eq!(html_to_text(&script), "after");
}

/// Pages made of one pattern repeated, the costliest shapes for each state
/// of the scanner: none costs more than `MAX_STEPS_PER_BYTE` steps a byte.
#[test]
fn work_is_linear_in_the_page() {
    let patterns = [
        "&",
        "&#",
        "&#x",
        "&#1",
        "&a",
        "&amp",
        "&amp;",
        "&notit",
        "&xxxxxxx;",
        "&CounterClockwiseContourIntegral",
        "&CounterClockwiseContourIntegralX;",
        "<",
        "</",
        "</>",
        "<!",
        "<!-",
        "<!--",
        "<!-- -->",
        "<?",
        "<a",
        "<a ",
        "<a b",
        "<a b=",
        "<a b='",
        "<a b=c ",
        "<a / ",
        "<a//",
        "<a =",
        "<a ==",
        "<p>",
        "</p>",
        "<br/>",
        "<td>",
        "<script>",
        "</script",
        "<script></",
        "</scrip",
        "<template></templat<",
        "--!>",
        "a b ",
        "\u{a0}",
        "é",
        "-->",
        "&x",
        "&xxxxxx",
        "&#x1",
        "<a b c",
    ];
    let size = 256 * 1024;
    for pattern in patterns {
        let page = pattern.repeat(size / pattern.len());
        let work = steps(&page);
        assert!(
            work <= MAX_STEPS_PER_BYTE * page.len() as u64 + 1,
            "{pattern:?}: {work} steps for {} bytes",
            page.len()
        );
        // And the same after a prefix that changes the scanner's state.
        for prefix in [
            "<script>",
            "<!--",
            "<a title=\"",
            "<a title='",
            "<template>",
        ] {
            let page = format!("{prefix}{page}");
            let work = steps(&page);
            assert!(
                work <= MAX_STEPS_PER_BYTE * page.len() as u64 + 1,
                "{prefix:?} then {pattern:?}: {work} steps for {} bytes",
                page.len()
            );
        }
    }
}

#[test]
fn a_cancelled_conversion_stops() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let page = "<p>a &amp; b</p>".repeat(100_000);
    assert_eq!(html_to_text_until(&page, &cancel), Err(ConversionCancelled));
    assert_eq!(html_to_text_until("", &cancel), Err(ConversionCancelled));
}

/// The trie of legacy names finds each of them, and finds no name where
/// the table has none.
#[test]
fn every_legacy_name_is_found_without_its_semicolon() {
    let mut count = 0;
    for (key, expansion) in ENTITIES.entries() {
        let Some(name) = key.strip_prefix(b"&").filter(|name| !name.ends_with(b";")) else {
            continue;
        };
        count += 1;
        assert_eq!(
            BARE_NAMES.longest_prefix(name),
            (name.len(), Some((name.len(), *expansion))),
            "{}",
            String::from_utf8_lossy(key)
        );
    }
    assert_eq!(count, 106);
    assert_eq!(
        BARE_NAMES.longest_prefix(b"notin"),
        (4, Some((3, "\u{ac}".as_bytes())))
    );
    assert_eq!(BARE_NAMES.longest_prefix(b"xyz"), (1, None));
}
