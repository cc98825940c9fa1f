use pretty_assertions::assert_eq;

use super::{affordable_first, route_prefix};
use crate::name::GroupId;

#[test]
fn the_groups_a_budget_passes_over_still_count_as_left_out() {
    let ranked: Vec<(GroupId, f64)> = [("a", 0.9), ("b", 0.5), ("c", 0.4), ("d", 0.1)]
        .iter()
        .map(|(g, p)| (GroupId::new(*g).unwrap(), *p))
        .collect();
    // The budget affords a and c: they lead, b and d follow in their order.
    let order = affordable_first(&ranked, &[0, 2]);
    let names: Vec<&str> = order.iter().map(|(g, _)| g.as_str()).collect();
    assert_eq!(names, ["a", "c", "b", "d"]);
    let (routed, cover) = route_prefix(&order, 2);
    assert_eq!(routed, [ranked[0].0.clone(), ranked[2].0.clone()]);
    // b's and d's chances of being needed are what the cover leaves out.
    assert!((cover - 0.5 * 0.9).abs() < 1e-9, "{cover}");
}
