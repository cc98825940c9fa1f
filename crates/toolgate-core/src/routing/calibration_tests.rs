use pretty_assertions::assert_eq;

use super::PerGroup;

#[test]
fn ranks_count_places_best_first_and_ties_share_the_better_one() {
    assert_eq!(
        crate::routing::calibration::ranks(&[1.0, 3.0, 2.0, 3.0, 0.0]),
        vec![4, 1, 3, 1, 5]
    );
    assert!(crate::routing::calibration::ranks(&[]).is_empty());
}

#[test]
fn a_group_without_evidence_is_never_needed_however_small_the_catalog() {
    // A high bias and a steep rank slope: the best of two groups that share
    // no word with the request would otherwise look likely.
    let model = PerGroup {
        weight: 4.0,
        bias: -1.0,
        rank: -2.0,
    };
    assert_eq!(model.probabilities(&[0.0, 0.0]), vec![0.0, 0.0]);
    let [best, none] = model.probabilities(&[2.0, 0.0])[..] else {
        panic!("two groups, two chances");
    };
    assert!(best > 0.9, "{best}");
    assert_eq!(none, 0.0);
}

#[test]
fn isotonic_calibration_pools_violators_and_interpolates() {
    use crate::routing::calibration::Isotonic;
    // Raw 0.9 succeeded half the time, raw 0.5 always: pooled to 2/3 over
    // the three samples, at their mean raw value.
    let fitted = Isotonic::fit(&[
        (0.5, 1.0, 1.0),
        (0.9, 1.0, 1.0),
        (0.9, 0.0, 1.0),
        (0.2, 0.0, 1.0),
    ]);
    assert_eq!(fitted.knots.len(), 2);
    assert_eq!(fitted.knots[0], (0.2, 0.0));
    assert!((fitted.knots[1].0 - 2.3 / 3.0).abs() < 1e-12);
    assert!((fitted.knots[1].1 - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(fitted.apply(0.0), 0.0);
    assert_eq!(fitted.apply(1.0), fitted.knots[1].1);
    let middle = fitted.apply((0.2 + fitted.knots[1].0) / 2.0);
    assert!((middle - 1.0 / 3.0).abs() < 1e-9, "{middle}");
    assert_eq!(Isotonic::fit(&[]).apply(0.37), 0.37);
}
