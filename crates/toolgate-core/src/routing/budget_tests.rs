use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::group::ToolGroup;
use crate::origin::Origin;
use crate::routing::config::{RoutingConfig, RoutingError};
use crate::routing::router::Router;
use crate::tokens::Encoding;
use crate::tool::ToolDefinition;

/// Four groups of three tools that all mention "report", each tool's
/// description longer than the one before, so every group costs a
/// different amount.
fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for (g, topic) in ["sales", "stock", "staff", "sites"].iter().enumerate() {
        let tools = (0..3)
            .map(|i| {
                let padding = "with every detail of the record ".repeat(1 + g * 3 + i);
                let definition = ToolDefinition::new(
                    ToolName::new(format!("{topic}_report_{i}")).unwrap(),
                    format!("Builds the {topic} report {padding}"),
                    json!({"type": "object", "properties": {"month": {"type": "string"}}}),
                )
                .unwrap();
                (definition, Origin::Builtin)
            })
            .collect();
        catalog
            .register_group_with_tools(
                ToolGroup::new(GroupId::new(*topic).unwrap(), *topic, "reports"),
                Origin::Builtin,
                tools,
            )
            .unwrap();
    }
    catalog
}

fn costs(catalog: &Catalog) -> ToolCosts {
    ToolCosts::measure(catalog, &TokenCounter::new(Encoding::O200kBase).unwrap())
}

fn ranked(catalog: &Catalog) -> Vec<(GroupId, f64)> {
    catalog.groups().map(|g| (g.id.clone(), 0.5)).collect()
}

#[test]
fn costs_add_up_to_the_catalog() {
    let catalog = catalog();
    let costs = costs(&catalog);
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let groups: usize = catalog.groups().map(|g| costs.group(&g.id)).sum();
    assert_eq!(costs.all_tools(), groups);
    assert_eq!(
        costs.group(&GroupId::new("stock").unwrap()),
        counter.tools(catalog.group_tools("stock"))
    );
    assert!(costs.fixed() > 0, "the listing costs tokens");
    // What `toolgate catalog` reports of the same catalog.
    let report = CatalogCost::measure(&catalog, &counter);
    assert_eq!(
        (costs.all_tools(), costs.fixed()),
        (report.all_tools_tokens, report.turn1_tokens)
    );
}

#[test]
fn whole_groups_fit_while_their_tokens_do() {
    let catalog = catalog();
    let costs = costs(&catalog);
    let ranked = ranked(&catalog);
    let all = costs.all_tools() as f64;
    // Exactly the listing and the first two groups.
    let two = costs.fixed() + costs.group(&ranked[0].0) + costs.group(&ranked[1].0);
    assert_eq!(
        costs.affordable(&ranked, two as f64 / all, None, &[], &[], None),
        [0, 1]
    );
    // Every later group costs more than the second one.
    assert_eq!(
        costs.affordable(&ranked, (two - 1) as f64 / all, None, &[], &[], None),
        [0]
    );
    // The listing counts too: the whole budget never holds every group.
    assert_eq!(
        costs.affordable(&ranked, 1.0, None, &[], &[], None),
        [0, 1, 2]
    );
}

#[test]
fn a_group_that_does_not_fit_is_passed_over_for_cheaper_ones() {
    let catalog = catalog();
    let costs = costs(&catalog);
    let group = |name: &str| (GroupId::new(name).unwrap(), 0.5);
    // The costliest group second: it does not fit, the cheaper one after
    // it does, the last one no longer.
    let ranked = [
        group("sales"),
        group("sites"),
        group("stock"),
        group("staff"),
    ];
    let cost = |place: usize| costs.group(&ranked[place].0);
    let share = (costs.fixed() + cost(0) + cost(2)) as f64 / costs.all_tools() as f64;
    assert!(cost(1) > cost(2));
    assert_eq!(
        costs.affordable(&ranked, share, None, &[], &[], None),
        [0, 2]
    );
}

#[test]
fn the_best_group_is_routed_whatever_it_costs() {
    let catalog = catalog();
    let costs = costs(&catalog);
    assert_eq!(
        costs.affordable(&ranked(&catalog), 1e-9, None, &[], &[], None),
        [0]
    );
}

#[test]
fn learned_groups_are_counted_first_and_shown_whatever_they_cost() {
    let catalog = catalog();
    let costs = costs(&catalog);
    let group = |name: &str| GroupId::new(name).unwrap();
    let ranked = [
        (group("sales"), 0.9),
        (group("sites"), 0.5),
        (group("stock"), 0.4),
        (group("staff"), 0.3),
    ];
    let cost = |name: &str| costs.group(&group(name));
    // Room for the best group and the learned one, no more.
    let share = (costs.fixed() + cost("sales") + cost("staff")) as f64 / costs.all_tools() as f64;
    assert_eq!(
        costs.affordable(&ranked, share, None, &[], &[group("staff")], None),
        [0, 3],
        "staff is shown already, and nothing else fits"
    );
    // With the budget spent, only the best group is routed; the caller
    // still shows the learned one beside it.
    assert_eq!(
        costs.affordable(&ranked, 1e-9, None, &[], &[group("staff")], None),
        [0]
    );
}

#[test]
fn partly_loaded_groups_cost_their_best_tools() {
    let catalog = catalog();
    let costs = costs(&catalog);
    let ranked = ranked(&catalog);
    // Each group's last tool scores best.
    let tools: Vec<ToolScore> = ranked
        .iter()
        .map(|(group, _)| ToolScore {
            tool: ToolName::new(format!("{group}_report_2")).unwrap(),
            group: group.clone(),
            score: 1.0,
        })
        .collect();
    let best: usize = ranked
        .iter()
        .map(|(group, _)| costs.tool(&format!("{group}_report_2")))
        .sum();
    let share = (costs.fixed() + best) as f64 / costs.all_tools() as f64;
    assert_eq!(
        costs.affordable(&ranked, share, Some(1), &tools, &[], None),
        [0, 1, 2, 3]
    );
    // Whole, the same groups cost more.
    assert!(
        costs
            .affordable(&ranked, share, None, &tools, &[], None)
            .len()
            < 4
    );
    // A group without scored tools arrives whole.
    assert!(
        costs
            .affordable(&ranked, share, Some(1), &tools[..1], &[], None)
            .len()
            < 4
    );
}

#[test]
fn a_router_with_a_budget_routes_fewer_groups() {
    let catalog = catalog();
    let costs = Arc::new(costs(&catalog));
    let config = RoutingConfig {
        route_above: Some(0.01),
        max_token_share: Some(0.5),
        ..RoutingConfig::default()
    };
    // A router counts the catalog when its taxonomy sets a budget.
    let bounded = Router::lexical(&catalog, config.validate(&catalog).unwrap()).counted(&catalog);
    assert_eq!(bounded.costs(), Some(&*costs));
    let unbounded = Router::lexical(
        &catalog,
        RoutingConfig {
            max_token_share: None,
            ..config
        }
        .validate(&catalog)
        .unwrap(),
    )
    .counted(&catalog);
    assert_eq!(unbounded.costs(), None);
    let query = "the monthly report";
    let all = unbounded.route(query, &[]);
    let within = bounded.route(query, &[]);
    assert_eq!(all.routed.len(), 4, "{all:?}");
    assert!(within.routed.len() < 4, "{within:?}");
    // The best group first, then the others in their order, each group
    // passed over one that would break the budget.
    assert_eq!(within.routed[0], all.routed[0]);
    let kept: Vec<&GroupId> = all
        .routed
        .iter()
        .filter(|g| within.routed.contains(g))
        .collect();
    assert_eq!(kept, within.routed.iter().collect::<Vec<_>>());
    let shown =
        |groups: &[GroupId]| costs.fixed() + groups.iter().map(|g| costs.group(g)).sum::<usize>();
    let budget = 0.5 * costs.all_tools() as f64;
    assert!(shown(&within.routed) as f64 <= budget);
    let left_out: Vec<GroupId> = all
        .routed
        .iter()
        .filter(|g| !within.routed.contains(g))
        .cloned()
        .collect();
    for group in &left_out {
        let mut more = within.routed.clone();
        more.push(group.clone());
        assert!(shown(&more) as f64 > budget, "{group} fits too");
    }
    // The decision names what the budget left out; without one, nothing.
    assert_eq!(within.passed_over, left_out);
    assert!(all.passed_over.is_empty());
}

#[test]
fn a_share_outside_zero_to_one_is_refused() {
    let catalog = catalog();
    for share in [0.0, 1.5, f64::NAN] {
        let error = RoutingConfig {
            max_token_share: Some(share),
            ..RoutingConfig::default()
        }
        .validate(&catalog)
        .unwrap_err();
        assert!(matches!(error, RoutingError::MaxTokenShare(_)), "{error}");
        assert!(error.to_string().contains("max_token_share"), "{error}");
    }
}
