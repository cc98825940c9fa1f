//! The baseline: the same harness and JSON round trip with no engine, so the
//! engines' binary sizes and build times can be read as deltas.

#[path = "../../harness.rs"]
#[expect(dead_code, reason = "the baseline times calls only")]
mod harness;

fn main() {
    let arguments = harness::arguments();
    harness::time_calls(
        "baseline: JSON round trip, no engine",
        1000,
        100_000,
        || {
            let text = serde_json::to_string(&arguments).unwrap_or_default();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            serde_json::json!(value["a"].as_i64().unwrap_or(0) + value["b"].as_i64().unwrap_or(0))
        },
    );
}
