//! JSON inputs: values built from the keys a parser knows (so generated
//! documents reach past its first check), interesting scalars, deep nesting,
//! long strings and unicode; and JSON texts, valid or not.

use proptest::prelude::*;
use proptest::strategy::Union;
use serde_json::{Map, Number, Value};

use crate::Kind;

/// Strings matching the regular expression `regex`, compiled once. (A
/// `&str` used as a strategy compiles its expression for every value, which
/// costs more than most targets' property.)
pub fn pattern(regex: &str) -> BoxedStrategy<String> {
    proptest::string::string_regex(regex)
        .unwrap_or_else(|error| panic!("bad pattern {regex:?}: {error}"))
        .boxed()
}

/// Numbers that break naive conversions: the ends of every integer range,
/// floats far beyond any duration or count (`1e300`), the smallest
/// subnormal, negative zero, and ordinary ones.
pub fn number() -> impl Strategy<Value = Number> {
    let floats = prop::sample::select(vec![
        1e300,
        -1e300,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        -0.0,
        0.5,
        1.5,
        18_446_744_073_709_551_616.0,
        9.223_372_036_854_776e18,
        1e19,
        2.5,
        60.0,
    ]);
    let integers = prop::sample::select(vec![
        0_i64,
        -1,
        1,
        i64::MIN,
        i64::MAX,
        i64::from(i32::MAX),
        i64::from(u32::MAX),
        30,
        65_536,
    ]);
    prop_oneof![
        3 => integers.prop_map(Number::from),
        1 => Just(Number::from(u64::MAX)),
        3 => floats.prop_map(finite),
        2 => any::<i64>().prop_map(Number::from),
        2 => any::<f64>().prop_map(finite),
    ]
}

/// `x` as a JSON number; JSON has no infinity or NaN, so those become the
/// largest finite float of their sign (or zero). Mapping, not filtering:
/// proptest aborts a run after too many filtered-out values.
fn finite(x: f64) -> Number {
    let x = if x.is_nan() {
        0.0
    } else {
        x.clamp(f64::MIN, f64::MAX)
    };
    Number::from_f64(x).unwrap_or_else(|| Number::from(0))
}

/// Strings: empty, names a parser might know (`known`), short ASCII,
/// unicode (right-to-left, combining marks, emoji, NUL and other controls),
/// and now and then a long one (up to 100,000 characters).
pub fn string(known: &'static [&'static str]) -> BoxedStrategy<String> {
    strings(known, 1)
}

/// [`string`] without the long ones, for the leaves of larger values.
pub fn short_string(known: &'static [&'static str]) -> BoxedStrategy<String> {
    strings(known, 0)
}

fn strings(known: &'static [&'static str], long_weight: u32) -> BoxedStrategy<String> {
    let weird = prop::sample::select(vec![
        "",
        " ",
        "\u{0}",
        "\t\n\r",
        "\u{feff}",
        "\u{202e}evil",
        "e\u{301}",
        "😀👍🏽",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        "..",
        "../../etc/passwd",
        "__",
        "a__b",
        "*",
        "%s%n",
        "\\u0000",
        "null",
        "1e300",
    ])
    .prop_map(str::to_owned);
    let mut choices: Vec<(u32, BoxedStrategy<String>)> = vec![
        (12, pattern("[a-z_][a-z0-9_]{0,15}")),
        (8, weird.boxed()),
        (8, pattern("\\PC{0,24}")),
        (3, pattern("[\\x00-\\x1f\"\\\\]{0,8}")),
    ];
    if long_weight > 0 {
        let length =
            prop_oneof![4 => 0..1_000usize, 2 => 1_000..20_000usize, 1 => Just(100_000usize)];
        let long = (
            prop::sample::select(vec!['a', 'é', '😀', ' ', '\u{202e}', '_']),
            length,
        )
            .prop_map(|(c, n)| std::iter::repeat_n(c, n).collect::<String>());
        choices.push((long_weight, long.boxed()));
    }
    if !known.is_empty() {
        choices.push((
            16,
            prop::sample::select(known).prop_map(str::to_owned).boxed(),
        ));
    }
    Union::new_weighted(choices).boxed()
}

/// A scalar: null, a boolean, a [`number`] or a [`string`].
pub fn scalar(known: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => number().prop_map(Value::Number),
        4 => short_string(known).prop_map(Value::String),
    ]
    .boxed()
}

/// Any JSON value whose object keys and strings are often from `keys` (the
/// names the parser under test knows), a few levels deep, sometimes nested
/// hundreds of levels.
pub fn value(keys: &'static [&'static str]) -> BoxedStrategy<Value> {
    let key = short_string(keys);
    let tree = scalar(keys).prop_recursive(5, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    });
    prop_oneof![
        24 => tree,
        1 => string(keys).prop_map(Value::String),
        1 => (1..300usize, any::<bool>()).prop_map(|(depth, arrays)| nested(depth, arrays)),
    ]
    .boxed()
}

/// An object with some of `keys` (the fields a parser knows) set to
/// arbitrary values, and sometimes a key it does not know.
pub fn object(keys: &'static [&'static str]) -> BoxedStrategy<Map<String, Value>> {
    (
        prop::collection::vec((prop::sample::select(keys), value(keys)), 0..keys.len() + 1),
        prop::option::weighted(0.2, (string(&[]), value(keys))),
    )
        .prop_map(|(known, unknown)| {
            let mut object: Map<String, Value> = known
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value))
                .collect();
            if let Some((key, value)) = unknown {
                object.insert(key, value);
            }
            object
        })
        .boxed()
}

/// `depth` levels of arrays (or objects keyed `a`) around `0`.
pub fn nested(depth: usize, arrays: bool) -> Value {
    let mut value = Value::from(0);
    for _ in 0..depth {
        value = if arrays {
            Value::Array(vec![value])
        } else {
            let mut object = Map::new();
            object.insert("a".to_owned(), value);
            Value::Object(object)
        };
    }
    value
}

/// JSON texts that are not what a serializer writes: deep nesting (past
/// serde_json's limit of 128), numbers out of range, lone surrogates,
/// duplicate keys, trailing garbage, truncation.
pub fn odd_text() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        "",
        " ",
        "{",
        "}",
        "[",
        "{\"a\":}",
        "[1,]",
        "{\"a\":1,}",
        "1e400",
        "-1e400",
        "1e-400",
        "123456789012345678901234567890",
        "\"\\ud800\"",
        "\"\\udc00\\ud800\"",
        "\"\\u0000\"",
        "{\"a\":1,\"a\":2}",
        "NaN",
        "Infinity",
        "nul",
        "\u{feff}{}",
        "{} {}",
        "[]]",
        "\"unterminated",
        "{\"a\" 1}",
        "tru",
        "-",
        "0x10",
        "01",
    ])
    .prop_map(str::to_owned);
    let deep =
        (1..5_000usize, prop::sample::select(vec!["[", "{\"a\":"])).prop_map(|(depth, open)| {
            let close = if open == "[" { "]" } else { "}" };
            format!("{}0{}", open.repeat(depth), close.repeat(depth))
        });
    let unclosed = (1..100_000usize).prop_map(|depth| "[".repeat(depth));
    prop_oneof![4 => fixed, 2 => deep, 1 => unclosed]
}

/// A value of `kind`, or now and then of any kind.
pub fn typed_value(kind: Kind, strings: &'static [&'static str]) -> BoxedStrategy<Value> {
    let typed = match kind {
        Kind::String => string(strings).prop_map(Value::String).boxed(),
        Kind::Number => number().prop_map(Value::Number).boxed(),
        Kind::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        Kind::Strings => prop::collection::vec(short_string(strings).prop_map(Value::String), 0..4)
            .prop_map(Value::Array)
            .boxed(),
        Kind::StringTable => {
            prop::collection::vec((short_string(strings), short_string(strings)), 0..3)
                .prop_map(|entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k, Value::String(v)))
                            .collect(),
                    )
                })
                .boxed()
        }
        Kind::Any => return value(strings),
    };
    prop_oneof![9 => typed, 1 => value(strings)].boxed()
}

/// An object with some of `fields` (each once, its value mostly of its
/// kind), and now and then a key it does not know.
pub fn typed_object(
    fields: &'static [(&'static str, Kind)],
    strings: &'static [&'static str],
) -> BoxedStrategy<Map<String, Value>> {
    let values = typed_values(strings);
    let known = prop::sample::subsequence(fields, 0..=fields.len()).prop_flat_map(move |fields| {
        fields
            .into_iter()
            .map(|(key, kind)| (Just(key), values.get(kind)))
            .collect::<Vec<_>>()
    });
    (
        known,
        prop::option::weighted(0.05, (string(&[]), value(strings))),
    )
        .prop_map(|(known, unknown)| {
            let mut object: Map<String, Value> =
                known.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            if let Some((key, value)) = unknown {
                object.insert(key, value);
            }
            object
        })
        .boxed()
}

/// A [`typed_value`] strategy per [`Kind`], built once: strategies made
/// inside a `prop_flat_map` would be built again for every input.
#[derive(Clone, Debug)]
pub struct TypedValues<T: std::fmt::Debug>(Vec<(Kind, BoxedStrategy<T>)>);

impl<T: std::fmt::Debug> TypedValues<T> {
    /// The strategies, from a function making one for a kind.
    pub fn new(make: impl Fn(Kind) -> BoxedStrategy<T>) -> Self {
        Self(Kind::ALL.iter().map(|&kind| (kind, make(kind))).collect())
    }

    /// The strategy for `kind`.
    pub fn get(&self, kind: Kind) -> BoxedStrategy<T> {
        self.0
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, strategy)| strategy.clone())
            .unwrap_or_else(|| unreachable!("every kind has a strategy"))
    }
}

/// [`typed_value`] for every kind.
pub fn typed_values(strings: &'static [&'static str]) -> TypedValues<Value> {
    TypedValues::new(|kind| typed_value(kind, strings))
}
