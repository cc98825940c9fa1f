use toolgate_core::routing::Fusion;

use super::*;

fn setting(route_above: f64) -> RouterSetting {
    RouterSetting {
        fusion: Fusion::Lexical,
        route_above,
        tools_per_group: 1,
    }
}

fn measured(worst_recall: f64, token_fraction: f64, most_tokens: f64) -> Measured {
    Measured {
        worst_recall,
        mean_recall: worst_recall,
        token_fraction,
        most_tokens,
    }
}

#[test]
fn a_setting_over_the_goal_on_one_dataset_loses_to_one_within_it_on_each() {
    // Cheap on average, but 27% of the tokens on one small catalog.
    let lopsided = (setting(0.2), measured(0.99, 0.08, 0.27));
    let even = (setting(0.5), measured(0.95, 0.06, 0.12));
    let chosen = best([lopsided, even]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.5));
}

#[test]
fn within_both_budgets_the_higher_worst_recall_wins() {
    let safer = (setting(0.3), measured(0.97, 0.09, 0.14));
    let cheaper = (setting(0.6), measured(0.93, 0.03, 0.05));
    let chosen = best([cheaper, safer]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.3));
}

#[test]
fn when_none_is_within_budget_the_cheapest_on_its_costliest_dataset_wins() {
    let a = (setting(0.2), measured(0.99, 0.12, 0.30));
    let b = (setting(0.4), measured(0.90, 0.13, 0.20));
    let chosen = best([a, b]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.4));
}
