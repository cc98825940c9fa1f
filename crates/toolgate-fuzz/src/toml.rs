//! TOML documents: tables and arrays of tables with keys a configuration
//! knows and values of every TOML type (strings with escapes, integers in
//! every base, floats such as `1e300`, `inf` and `nan`, dates, arrays and
//! inline tables), written as text so the parser sees all of it.

use proptest::prelude::*;

use crate::Kind;
use crate::json;

/// A table of a configuration: its header and the keys it knows.
#[derive(Clone, Copy, Debug)]
pub struct Section {
    /// The header as written (`[[upstream]]`, `[model]`, `[groups.web]`), or
    /// `""` for the top level.
    pub header: &'static str,
    /// Keys it knows, with the kind of value each takes.
    pub keys: &'static [(&'static str, Kind)],
}

/// Numbers as written in TOML, the troublesome ones first.
const NUMBERS: &[&str] = &[
    "1e300",
    "-1e300",
    "1.7976931348623157e308",
    "1e309",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "-nan",
    "-0.0",
    "0.0",
    "0",
    "5e-324",
    "1e-300",
    "1e19",
    "18446744073709551616.0",
    "9.3e18",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "-1",
    "1",
    "30",
    "2.5",
    "0.5",
    "1_000",
    "0x7fffffffffffffff",
    "0o777",
    "0b101",
];

/// A value of `kind`, or now and then of any kind.
pub fn typed_value(kind: Kind, strings: &'static [&'static str]) -> BoxedStrategy<String> {
    let typed = match kind {
        Kind::String => json::string(strings)
            .prop_map(|text| basic_string(&text))
            .boxed(),
        Kind::Number => prop_oneof![
            3 => prop::sample::select(NUMBERS).prop_map(str::to_owned),
            1 => json::number().prop_map(|n| n.to_string()),
        ]
        .boxed(),
        Kind::Bool => any::<bool>().prop_map(|b| b.to_string()).boxed(),
        Kind::Strings => prop::collection::vec(json::short_string(strings), 0..4)
            .prop_map(|items| {
                let items: Vec<String> = items.iter().map(|item| basic_string(item)).collect();
                format!("[{}]", items.join(", "))
            })
            .boxed(),
        Kind::StringTable => {
            prop::collection::vec((key(strings), json::short_string(strings)), 0..3)
                .prop_map(|entries| {
                    let body: Vec<String> = entries
                        .iter()
                        .map(|(key, value)| format!("{key} = {}", basic_string(value)))
                        .collect();
                    format!("{{ {} }}", body.join(", "))
                })
                .boxed()
        }
        Kind::Any => return value(strings),
    };
    prop_oneof![9 => typed, 1 => value(strings)].boxed()
}

/// One TOML value as written.
pub fn value(strings: &'static [&'static str]) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        4 => json::string(strings).prop_map(|text| basic_string(&text)),
        1 => json::pattern("[a-zA-Z0-9 ./:_-]{0,20}").prop_map(|text| format!("'{text}'")),
        1 => json::pattern("[a-z \\n]{0,20}").prop_map(|text| format!("\"\"\"\n{text}\"\"\"")),
        3 => json::number().prop_map(|n| n.to_string()),
        2 => prop::sample::select(NUMBERS).prop_map(str::to_owned),
        1 => any::<bool>().prop_map(|b| b.to_string()),
        1 => prop::sample::select(vec![
            "1979-05-27T07:32:00Z", "1979-05-27", "07:32:00", "1979-05-27T00:32:00.999999-07:00",
        ])
        .prop_map(str::to_owned),
    ];
    let key = key(strings);
    leaf.prop_recursive(3, 24, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec((key.clone(), inner), 0..4).prop_map(|entries| {
                let body: Vec<String> = entries
                    .into_iter()
                    .map(|(key, value)| format!("{key} = {value}"))
                    .collect();
                format!("{{ {} }}", body.join(", "))
            }),
        ]
    })
    .boxed()
}

/// A key as written: bare when it can be, else quoted.
pub fn key(known: &'static [&'static str]) -> BoxedStrategy<String> {
    let any = json::short_string(&[]).prop_map(|k| write_key(&k));
    if known.is_empty() {
        return any.boxed();
    }
    prop_oneof![
        4 => prop::sample::select(known).prop_map(write_key),
        1 => any,
    ]
    .boxed()
}

/// A document made of `sections` (each chosen zero or more times), in
/// random order, each with some of its keys (each once, with a value mostly
/// of its kind) and sometimes one it does not know.
pub fn document(
    sections: &'static [Section],
    strings: &'static [&'static str],
) -> impl Strategy<Value = String> {
    let values = json::TypedValues::new(|kind| typed_value(kind, strings));
    let unknown = prop::option::weighted(0.05, (key(&[]), value(strings)));
    let section = prop::sample::select(sections).prop_flat_map(move |section| {
        let values = values.clone();
        let entries = prop::sample::subsequence(section.keys, 0..=section.keys.len())
            .prop_flat_map(move |keys| {
                keys.into_iter()
                    .map(|(key, kind)| (Just(key), values.get(kind)))
                    .collect::<Vec<_>>()
            });
        (Just(section.header), entries, unknown.clone())
    });
    prop::collection::vec(section, 0..6).prop_map(|sections| {
        let mut text = String::new();
        for (header, entries, unknown) in sections {
            if !header.is_empty() {
                text.push_str(header);
                text.push('\n');
            }
            for (key, value) in entries {
                text.push_str(&format!("{} = {value}\n", write_key(key)));
            }
            if let Some((key, value)) = unknown {
                text.push_str(&format!("{key} = {value}\n"));
            }
            text.push('\n');
        }
        text
    })
}

/// Syntax tokens of TOML, for [`crate::mutate::text_edits`].
pub const TOML_TOKENS: &[&str] = &[
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    "=",
    "\"",
    "'",
    "\"\"\"",
    ",",
    ".",
    "#",
    "\n",
    " = ",
    "1e300",
    "inf",
    "nan",
    "-",
    "_",
    "true",
    "0x",
    "\\u0000",
    "\\U0010ffff",
    "\\",
    "\r\n",
];

/// `text` as a TOML basic string: quotes, backslashes and control
/// characters escaped.
pub fn basic_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn write_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_owned()
    } else {
        basic_string(key)
    }
}
