use serde_json::json;

use super::*;

#[test]
fn stored_initialize_parameters_keep_at_most_a_kilobyte_per_string() {
    let mut state = json!({
        "clientInfo": {"name": "é".repeat(1_000_000), "version": "1"},
        "x".repeat(5000): ["y".repeat(5000)],
    });
    bound_strings(&mut state, MAX_STORED_STRING);
    assert!(
        state.to_string().len() < 4 * MAX_STORED_STRING,
        "{}",
        state.to_string().len()
    );
    assert_eq!(state["clientInfo"]["version"], "1");
    assert_eq!(
        state["clientInfo"]["name"].as_str().unwrap().len(),
        MAX_STORED_STRING
    );
}
