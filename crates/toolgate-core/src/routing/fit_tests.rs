use pretty_assertions::assert_eq;

use super::{Labelled, fit_per_group, fit_per_group_pooled, fit_temperature};
use crate::routing::config::RoutingConfig;
use crate::routing::router::Router;
use crate::routing::test_catalogs::{catalog, ids};

#[test]
fn the_fitted_temperature_follows_how_often_routes_are_right() {
    let catalog = catalog();
    let router = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    );
    let queries = [
        ("send an email message", 0),
        ("search the inbox", 0),
        ("create a calendar event", 1),
        ("list upcoming meetings", 1),
        ("weather forecast for Rome", 2),
        ("forecast for the city", 2),
    ];
    let labelled = |gold_of: &dyn Fn(usize, usize) -> usize| -> Vec<Labelled> {
        queries
            .iter()
            .enumerate()
            .map(|(i, (query, gold))| Labelled {
                scores: router.scores(query, &[]),
                gold: vec![gold_of(i, *gold)],
            })
            .collect()
    };
    // Every top route right: confidence may be high.
    let right = fit_temperature(&router, &labelled(&|_, gold| gold));
    // Half of them labelled with another group: confidence must come down.
    let half = fit_temperature(
        &router,
        &labelled(&|i, gold| if i % 2 == 0 { gold } else { (gold + 1) % 3 }),
    );
    assert!(half > right, "{half} should exceed {right}");
    // Less sure, it routes more groups to reach the same coverage.
    let query = "search the inbox";
    let confident = Router::lexical(
        &catalog,
        RoutingConfig::default().validate(&catalog).unwrap(),
    )
    .with_temperature(right)
    .route(query, &[]);
    let cautious = router.with_temperature(half).route(query, &[]);
    assert_eq!(confident.routed, ids(&["gmail"]));
    assert!(cautious.routed.len() > 1, "{cautious:?}");
}

#[test]
fn the_per_group_fit_learns_how_far_below_the_best_a_needed_group_scores() {
    // Turns that need only their best group, and turns that need every group
    // that scores at all.
    let only_best: Vec<Labelled> = (0..20)
        .map(|_| Labelled {
            scores: vec![10.0, 6.0, 0.0],
            gold: vec![0],
        })
        .collect();
    let every: Vec<Labelled> = (0..20)
        .map(|_| Labelled {
            scores: vec![10.0, 6.0, 0.0],
            gold: vec![0, 1],
        })
        .collect();
    let strict = fit_per_group(&only_best);
    let broad = fit_per_group(&every);
    assert!(strict.probability(1.0, 1) > 0.9, "{strict:?}");
    assert!(strict.probability(0.6, 2) < 0.1, "{strict:?}");
    assert!(broad.probability(0.6, 2) > 0.9, "{broad:?}");
    assert_eq!(broad.probabilities(&[10.0, 6.0, 0.0])[2], 0.0, "{broad:?}");
    assert_eq!(fit_per_group(&[]), super::DEFAULT_PER_GROUP);
}

#[test]
fn the_per_group_fit_learns_that_deep_ranks_of_a_large_catalog_are_rarely_needed() {
    // A small catalog whose second group, at half the best score, is needed
    // every other turn; a large one where it is the same, and the eighteen
    // groups below it score about as much and are never needed.
    let small: Vec<Labelled> = (0..40)
        .map(|turn| Labelled {
            scores: vec![10.0, 5.0, 0.0],
            gold: if turn % 2 == 0 { vec![0, 1] } else { vec![0] },
        })
        .collect();
    let large: Vec<Labelled> = (0..40)
        .map(|turn| Labelled {
            scores: std::iter::once(10.0)
                .chain((0..19).map(|place| 5.0 - 0.01 * f64::from(place)))
                .collect(),
            gold: if turn % 2 == 0 { vec![0, 1] } else { vec![0] },
        })
        .collect();
    let model = fit_per_group_pooled(&[&small, &large]);
    assert!(model.rank < 0.0, "{model:?}");
    let second = model.probability(0.5, 2);
    let deep = model.probability(0.5, 15);
    assert!((0.25..0.75).contains(&second), "{model:?}: {second}");
    assert!(deep < 0.1, "{model:?}: {deep}");
    // Chances still fall with the score: the best group first.
    let chances = model.probabilities(&large[0].scores);
    assert!(
        chances.windows(2).all(|pair| pair[0] >= pair[1]),
        "{chances:?}"
    );
}
