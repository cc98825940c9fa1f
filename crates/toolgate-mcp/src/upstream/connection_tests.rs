use super::*;

#[test]
fn backoff_retries_at_once_then_doubles_up_to_the_cap() {
    let waits: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
    assert_eq!(waits, [0, 1, 2, 4, 8, 16, 30, 30]);
}
