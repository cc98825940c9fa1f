use pretty_assertions::assert_eq;

use super::{blend, cosine_scores};

#[test]
fn cosine_scores_rank_by_direction_and_ignore_opposites() {
    let groups = vec![
        vec![1.0, 0.0],
        vec![0.6, 0.8],
        vec![-1.0, 0.0],
        vec![0.0, 0.0],
    ];
    let scores = cosine_scores(&[2.0, 0.0], &groups);
    assert_eq!(scores[0], 1.0);
    assert!((scores[1] - 0.6).abs() < 1e-6, "{scores:?}");
    assert_eq!(
        scores[2..],
        [0.0, 0.0],
        "opposite and empty vectors are no evidence"
    );
    assert_eq!(
        cosine_scores(&[1.0], &groups)[0],
        0.0,
        "a length mismatch scores nothing"
    );
}

#[test]
fn blending_scales_each_source_by_its_best() {
    // Lexical says group 0, semantic says group 1, on very different scales.
    let blended = blend(&[12.0, 3.0, 0.0], &[0.2, 0.8, 0.4], 0.5);
    assert_eq!(
        blended,
        vec![0.5 * 1.0 + 0.5 * 0.25, 0.5 * 0.25 + 0.5 * 1.0, 0.5 * 0.5]
    );
    assert_eq!(blend(&[0.0, 0.0], &[0.0, 1.0], 0.3), vec![0.0, 0.3]);
}
