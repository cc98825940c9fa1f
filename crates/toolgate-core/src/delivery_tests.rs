use pretty_assertions::assert_eq;

use super::*;

#[test]
fn a_catalog_is_sent_whole_under_the_share_of_the_window_and_deferred_from_it_on() {
    let auto = Deferral::Auto { share: 0.2 };
    assert_eq!(auto.threshold(200_000), Some(40_000));
    assert_eq!(auto.decide(10, 39_999, 200_000, None).mode, Mode::Whole);
    assert_eq!(auto.decide(10, 40_000, 200_000, None).mode, Mode::Deferred);
    // A smaller window defers sooner.
    assert_eq!(auto.decide(129, 13_214, 64_000, None).mode, Mode::Deferred);
    assert_eq!(
        auto.decide(2_490, 275_954, 200_000, None).to_string(),
        "2,490 tools, 275,954 tokens: over 40,000 (20% of a 200,000-token window), deferred"
    );
    let fine = Deferral::Auto { share: 0.025 };
    assert_eq!(
        fine.decide(52, 5_488, 200_000, None).to_string(),
        "52 tools, 5,488 tokens: over 5,000 (2.5% of a 200,000-token window), deferred"
    );
}

#[test]
fn always_and_never_decide_whatever_the_size() {
    assert_eq!(
        Deferral::Always.decide(3, 10, 200_000, None).mode,
        Mode::Deferred
    );
    assert_eq!(
        Deferral::Never
            .decide(4_076, 399_258, 200_000, None)
            .to_string(),
        "4,076 tools, 399,258 tokens: sent whole ([tools] defer = \"never\")"
    );
    assert_eq!(
        Deferral::Always.decide(3, 10, 200_000, None).to_string(),
        "3 tools, 10 tokens: deferred ([tools] defer = \"always\")"
    );
    assert_eq!(
        Deferral::default(),
        Deferral::Auto {
            share: DEFAULT_DEFER_SHARE
        }
    );
}

#[test]
fn thousands_groups_digits() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(1234567), "1,234,567");
}

#[test]
fn more_tools_than_the_model_takes_are_deferred_whatever_the_setting() {
    let many = Deferral::Never.decide(300, 9_000, 200_000, Some(128));
    assert_eq!(many.mode, Mode::Deferred);
    assert_eq!(
        many.to_string(),
        "300 tools, 9,000 tokens: more than the 128 the model takes at once, deferred"
    );
    assert_eq!(
        Deferral::Never.decide(100, 9_000, 200_000, Some(128)).mode,
        Mode::Whole
    );
}

#[test]
fn the_explained_sentence_names_the_setting_once() {
    let auto = Deferral::Auto { share: 0.2 }.decide(3, 10, 200_000, None);
    assert_eq!(
        auto.explained(),
        "3 tools, 10 tokens: under 40,000 (20% of a 200,000-token window), sent whole ([tools] defer)"
    );
    let always = Deferral::Always.decide(3, 10, 200_000, None);
    assert_eq!(always.explained(), always.to_string());
}
