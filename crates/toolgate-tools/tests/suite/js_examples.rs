//! The runnable example pack `examples/js-tools/`, loaded as a user loads it:
//! every manifest loads, and the pure-computation group `calc` answers real
//! questions (its `currency` group needs the network and is tested through
//! `toolgate serve` against a local server, in toolgate-cli).

use std::path::PathBuf;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_tools::{ToolOutput, Toolbox, ToolboxOptions};

use super::calls::call;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/js-tools")
}

async fn toolbox() -> Arc<Toolbox> {
    let (toolbox, report) = Toolbox::start(ToolboxOptions {
        manifest_dirs: vec![examples()],
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert!(report.manifest_errors.is_empty(), "{report:?}");
    toolbox
}

/// The structured result of a call that succeeded.
async fn value(toolbox: &Toolbox, name: &str, arguments: Value) -> Value {
    let output = call(toolbox, name, arguments).await;
    assert!(!output.is_error, "{output:?}");
    output.structured.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_example_pack_loads_its_groups() {
    let toolbox = toolbox().await;
    let catalog = toolbox.catalog();
    let groups: Vec<(String, String)> = catalog
        .groups()
        .map(|group| (group.id.to_string(), group.display_name.clone()))
        .collect();
    assert_eq!(
        groups,
        [
            ("calc".to_owned(), "Calculator".to_owned()),
            ("currency".to_owned(), "Currency".to_owned()),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn calc_converts_units_of_each_dimension() {
    let toolbox = toolbox().await;
    // Written as JavaScript answers them: whole numbers as integers.
    for (quantity, from, to, result, dimension) in [
        (json!(26.2), "mi", "km", json!(42.1648128), "length"),
        (json!(100), "C", "F", json!(212), "temperature"),
        (json!(-40), "F", "C", json!(-40), "temperature"),
        (json!(0), "K", "C", json!(-273.15), "temperature"),
        (json!(1), "GiB", "MB", json!(1073.741824), "data"),
        (json!(1), "acre", "m2", json!(4046.8564224), "area"),
        (json!(3), "h", "min", json!(180), "time"),
        (json!(1), "gal", "l", json!(3.785411784), "volume"),
        (json!(16), "oz", "lb", json!(1), "mass"),
        (json!(100), "km/h", "mph", json!(62.1371192237), "speed"),
    ] {
        assert_eq!(
            value(
                &toolbox,
                "calc_convert_units",
                json!({"value": quantity, "from": from, "to": to}),
            )
            .await,
            json!({"value": quantity, "from": from, "to": to, "result": result, "dimension": dimension}),
            "{quantity} {from} -> {to}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn calc_says_which_units_cannot_be_converted_and_where() {
    let toolbox = toolbox().await;
    assert_eq!(
        call(
            &toolbox,
            "calc_convert_units",
            json!({"value": 1, "from": "kg", "to": "m"}),
        )
        .await,
        ToolOutput::error(
            "Tool 'calc_convert_units' failed: Error: cannot convert mass (kg) to length (m) (calc.js, line 61)"
        )
    );
    let unknown = call(
        &toolbox,
        "calc_convert_units",
        json!({"value": 1, "from": "furlong", "to": "m"}),
    )
    .await;
    assert!(unknown.is_error);
    let text = format!("{unknown:?}");
    assert!(
        text.contains("Error: unknown unit 'furlong'; known units: K, C, F, m, km,")
            && text.contains("(calc.js, line 49)"),
        "{text}"
    );
    assert_eq!(
        call(
            &toolbox,
            "calc_convert_units",
            json!({"value": -500, "from": "F", "to": "K"}),
        )
        .await,
        ToolOutput::error(
            "Tool 'calc_convert_units' failed: Error: -500 F is below absolute zero (calc.js, line 69)"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn calc_describes_a_list_of_numbers() {
    let toolbox = toolbox().await;
    assert_eq!(
        value(
            &toolbox,
            "calc_statistics",
            json!({"numbers": [9, 2, 4, 4, 5, 4, 7, 5]}),
        )
        .await,
        json!({
            "count": 8, "sum": 40, "min": 2, "max": 9, "mean": 5, "median": 4.5,
            "stdev_population": 2, "stdev_sample": 2.1380899353,
            "percentiles": {"p25": 4, "p50": 4.5, "p75": 5.5, "p90": 7.6, "p99": 8.86}
        })
    );
    assert_eq!(
        value(
            &toolbox,
            "calc_statistics",
            json!({"numbers": [0.1, 0.2], "percentiles": [50]}),
        )
        .await,
        json!({
            "count": 2, "sum": 0.3, "min": 0.1, "max": 0.2, "mean": 0.15, "median": 0.15,
            "stdev_population": 0.05, "stdev_sample": 0.0707106781187,
            "percentiles": {"p50": 0.15}
        })
    );
    // One number has no sample deviation.
    assert_eq!(
        value(&toolbox, "calc_statistics", json!({"numbers": [3]})).await["stdev_sample"],
        Value::Null
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn calc_adds_to_dates_and_measures_between_them() {
    let toolbox = toolbox().await;
    for (arguments, expected) in [
        (
            json!({"date": "2024-01-31", "months": 1}),
            json!({"date": "2024-02-29", "weekday": "Thursday"}),
        ),
        (
            json!({"date": "2024-02-29", "years": 1}),
            json!({"date": "2025-02-28", "weekday": "Friday"}),
        ),
        (
            json!({"date": "2026-11-23", "days": 100}),
            json!({"date": "2027-03-03", "weekday": "Wednesday"}),
        ),
        (
            json!({"date": "2026-01-15", "months": -2, "weeks": 1}),
            json!({"date": "2025-11-22", "weekday": "Saturday"}),
        ),
    ] {
        assert_eq!(
            value(&toolbox, "calc_date_add", arguments.clone()).await,
            expected,
            "{arguments}"
        );
    }
    assert_eq!(
        value(
            &toolbox,
            "calc_date_diff",
            json!({"from": "2024-01-31", "to": "2026-11-23"}),
        )
        .await,
        json!({
            "from": "2024-01-31", "to": "2026-11-23", "days": 1027, "weeks": 146.714285714,
            "weekdays": 733, "span": {"years": 2, "months": 9, "days": 23}
        })
    );
    assert_eq!(
        value(
            &toolbox,
            "calc_date_diff",
            json!({"from": "2026-11-30", "to": "2026-11-23"}),
        )
        .await,
        json!({
            "from": "2026-11-30", "to": "2026-11-23", "days": -7, "weeks": -1,
            "weekdays": -5, "span": {"years": 0, "months": 0, "days": -7}
        })
    );
    assert_eq!(
        call(
            &toolbox,
            "calc_date_diff",
            json!({"from": "2026-02-30", "to": "2026-03-01"}),
        )
        .await,
        ToolOutput::error(
            "Tool 'calc_date_diff' failed: Error: '2026-02-30' is not a calendar date (calc.js, line 127)"
        )
    );
}
