use super::{KEPT_OUTCOMES, OnlineCalibration, Recalibration, catalog_key};

/// Each decision's confidence as an online calibration starting from
/// nothing states it, in order: `stream` holds each decision's fitted
/// confidence and whether it held; a decision's outcome is recorded only
/// after its own confidence is stated. What a deployment that learns from
/// its turns would have said of each.
fn prequential(stream: &[(f64, bool)], strength: f64) -> Vec<f64> {
    let mut online = OnlineCalibration::new(strength);
    stream
        .iter()
        .map(|(confidence, held)| {
            let stated = online.apply(*confidence);
            online.record(*confidence, *held);
            stated
        })
        .collect()
}

/// `count` outcomes at `confidence`, `held` of every 10 holding.
fn outcomes(online: &mut OnlineCalibration, confidence: f64, count: usize, held: usize) {
    for i in 0..count {
        online.record(confidence, i % 10 < held);
    }
}

#[test]
fn without_outcomes_the_fitted_confidence_stands() {
    let online = OnlineCalibration::default();
    assert_eq!(online.recalibration(), Recalibration::IDENTITY);
    assert_eq!(online.apply(0.93), 0.93);
    assert_eq!(online.apply(0.0), 0.0);
}

#[test]
fn a_catalog_that_holds_less_than_stated_is_stated_lower() {
    let mut online = OnlineCalibration::default();
    outcomes(&mut online, 0.97, 300, 8);
    let stated = online.apply(0.97);
    assert!((stated - 0.8).abs() < 0.03, "stated {stated}");
    // Monotone: a lower fitted confidence stays lower.
    assert!(online.apply(0.9) < stated);
}

#[test]
fn a_catalog_that_holds_more_than_stated_is_stated_higher() {
    let mut online = OnlineCalibration::default();
    outcomes(&mut online, 0.88, 300, 10);
    assert!(online.apply(0.88) > 0.97, "{}", online.apply(0.88));
}

#[test]
fn the_prior_holds_the_fitted_confidence_against_few_outcomes() {
    let mut weak = OnlineCalibration::new(1.0);
    let mut strong = OnlineCalibration::new(100.0);
    outcomes(&mut weak, 0.95, 20, 6);
    outcomes(&mut strong, 0.95, 20, 6);
    let (weak, strong) = (weak.apply(0.95), strong.apply(0.95));
    assert!(strong > weak, "strong prior {strong}, weak prior {weak}");
    assert!(strong > 0.9, "{strong}");
}

#[test]
fn only_the_newest_outcomes_are_kept() {
    let mut online = OnlineCalibration {
        kept: 200,
        ..OnlineCalibration::default()
    };
    assert_eq!(OnlineCalibration::default().kept, KEPT_OUTCOMES);
    outcomes(&mut online, 0.9, 200, 0);
    outcomes(&mut online, 0.9, 200, 10);
    assert_eq!(online.outcomes(), 200);
    // Every failure has been dropped.
    assert!(online.apply(0.9) > 0.95, "{}", online.apply(0.9));
}

#[test]
fn a_confidence_is_stated_before_its_own_outcome_is_seen() {
    let stream = [(0.9, false), (0.9, false), (0.9, false)];
    let stated = prequential(&stream, 1.0);
    assert_eq!(stated[0], 0.9);
    assert!(stated[1] < 0.9 && stated[2] < stated[1], "{stated:?}");
}

#[test]
fn a_confidence_that_is_not_a_number_is_not_recorded() {
    let mut online = OnlineCalibration::default();
    online.record(f64::NAN, true);
    assert_eq!(online.outcomes(), 0);
    assert_eq!(online.recalibration(), Recalibration::IDENTITY);
}

#[test]
fn outcomes_of_an_earlier_run_seed_the_same_fit() {
    let mut recorded = OnlineCalibration::default();
    outcomes(&mut recorded, 0.95, 100, 7);
    let stream: Vec<(f64, bool)> = (0..100).map(|i| (0.95, i % 10 < 7)).collect();
    let seeded = OnlineCalibration::default().with_outcomes(stream);
    assert_eq!(seeded.outcomes(), 100);
    assert!((seeded.apply(0.95) - recorded.apply(0.95)).abs() < 1e-6);
    assert!(seeded.apply(0.95) < 0.85, "{}", seeded.apply(0.95));
}

#[test]
fn a_catalog_key_names_the_set_of_groups() {
    let ids = |names: &[&str]| -> Vec<crate::name::GroupId> {
        names
            .iter()
            .map(|n| crate::name::GroupId::new(*n).unwrap())
            .collect()
    };
    let key = catalog_key(&ids(&["mail", "calendar"]));
    assert_eq!(key, catalog_key(&ids(&["calendar", "mail"])));
    assert_ne!(key, catalog_key(&ids(&["calendar", "mail", "files"])));
    assert_ne!(key, catalog_key(&ids(&["calendarmail"])));
    assert!(
        key.starts_with("groups-") && key.len() == "groups-".len() + 16,
        "{key}"
    );
}

#[test]
fn a_prior_other_than_no_change_stands_until_outcomes_move_it() {
    let prior = Recalibration {
        slope: 1.5,
        intercept: 0.4,
    };
    let online = OnlineCalibration::default().with_prior(prior);
    assert_eq!(online.recalibration(), prior);
    assert_eq!(online.apply(0.9), prior.apply(0.9));
    // Outcomes that hold less than the prior states pull it down, and
    // start from it: the same outcomes under "no change" end lower still.
    let mut from_prior = OnlineCalibration::default().with_prior(prior);
    let mut from_identity = OnlineCalibration::default();
    outcomes(&mut from_prior, 0.9, 30, 7);
    outcomes(&mut from_identity, 0.9, 30, 7);
    assert!(from_prior.apply(0.9) < prior.apply(0.9));
    assert!(from_prior.apply(0.9) > from_identity.apply(0.9));
    // Set after the outcomes, the prior refits them.
    let mut late = OnlineCalibration::default();
    outcomes(&mut late, 0.9, 30, 7);
    late.set_prior(prior);
    assert!((late.apply(0.9) - from_prior.apply(0.9)).abs() < 1e-6);
}

#[test]
fn outcomes_that_fail_more_the_more_confident_are_not_stated_backwards() {
    let mut online = OnlineCalibration::default();
    // Held at 0.6, failed at 0.95: a fit free to turn would state 0.95
    // below 0.6.
    outcomes(&mut online, 0.6, 100, 9);
    outcomes(&mut online, 0.95, 100, 1);
    let recalibration = online.recalibration();
    assert_eq!(recalibration.slope, 0.0);
    // One rate for every confidence: about how often turns held.
    let stated = online.apply(0.95);
    assert_eq!(stated, online.apply(0.6));
    assert!((stated - 0.5).abs() < 0.05, "{stated}");
}
