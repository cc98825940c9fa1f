use pretty_assertions::assert_eq;

use super::Compaction;

#[test]
fn the_threshold_is_a_share_of_the_window_or_a_count_or_none() {
    assert_eq!(Compaction::Off.threshold(200_000), None);
    assert_eq!(
        Compaction::AboveTokens(3_000).threshold(200_000),
        Some(3_000)
    );
    assert_eq!(Compaction::AtShare(0.8).threshold(200_000), Some(160_000));
    assert_eq!(Compaction::AtShare(0.5).threshold(128_000), Some(64_000));
    // A share past the window is the window.
    assert_eq!(Compaction::AtShare(1.5).threshold(1_000), Some(1_000));
}
