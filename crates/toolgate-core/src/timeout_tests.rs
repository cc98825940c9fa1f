use super::*;

#[test]
fn only_positive_finite_seconds_up_to_a_day_are_timeouts() {
    assert_eq!(timeout_from_seconds(1.5), Some(Duration::from_millis(1500)));
    assert_eq!(
        timeout_from_seconds(86_400.0),
        Some(Duration::from_secs(86_400))
    );
    for bad in [0.0, -1.0, 1e-10, 86_400.5, 1e300, f64::INFINITY, f64::NAN] {
        assert_eq!(timeout_from_seconds(bad), None, "{bad}");
    }
}
