//! Test fixtures: a tiny dataset written to a directory, and a small
//! hand-made [`Evaluation`] for the rendering tests.

use std::path::Path;

use serde_json::json;

use crate::episode::Placement;
use crate::report::{Band, CurvePoint, Evaluation, PolicyReport, TierFigures, TierMix};
use crate::report::{Job, TaskCost};

/// The dataset of [`write_dataset`] with four labelled queries, loaded from
/// a directory named `name`.
pub(crate) fn small_dataset(name: &str) -> crate::Dataset {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(name);
    std::fs::create_dir(&dir).unwrap();
    write_dataset(
        &dir,
        &[
            json!({"id": 1, "query": "send a mail", "tools": ["mail_send"], "groups": ["mail"], "split": "dev"}),
            json!({"id": 2, "query": "weather forecast", "tools": ["weather_forecast"], "groups": ["weather"], "split": "dev"}),
            json!({"id": 3, "query": "search my mail", "tools": ["mail_search"], "groups": ["mail"], "split": "test"}),
            json!({"id": 4, "query": "the forecast for Oslo", "tools": ["weather_forecast"], "groups": ["weather"], "split": "test"}),
        ],
    );
    crate::Dataset::load(&dir).unwrap()
}

/// Writes a catalog of two groups (`mail`, `weather`) and `queries` as
/// `queries.jsonl` into `dir`.
pub(crate) fn write_dataset(dir: &Path, queries: &[serde_json::Value]) {
    let tools = [
        ("mail_send", "mail"),
        ("mail_search", "mail"),
        ("weather_forecast", "weather"),
    ]
    .map(|(name, group)| {
        json!({"name": name, "description": format!("{name} tool"), "group": group,
               "parameters": {"type": "object", "properties": {}}})
        .to_string()
    });
    std::fs::write(dir.join("tools.jsonl"), tools.join("\n") + "\n").unwrap();
    let lines: Vec<String> = queries.iter().map(ToString::to_string).collect();
    std::fs::write(dir.join("queries.jsonl"), lines.join("\n") + "\n").unwrap();
}

/// A [`TaskCost`] of 4 tasks against an all-tools cost of 4,000 tokens
/// uncached and 500 and 600 cached: `(first-call recall, uncached, cached)`
/// and `(extra round trips, none extra, done)`.
pub(crate) fn task_cost(
    policy: &str,
    job: Job,
    placement: Option<Placement>,
    agent: Option<&'static str>,
    (first_call_tool_recall, uncached, cached): (f64, f64, [f64; 2]),
    (extra_round_trips, no_extra_round_trip, done): (f64, f64, f64),
) -> TaskCost {
    TaskCost {
        policy: policy.to_owned(),
        job,
        placement,
        agent,
        tasks: 4,
        first_call_tool_recall,
        uncached,
        cached: cached.to_vec(),
        uncached_share: uncached / 4000.0,
        cached_share: vec![cached[0] / 500.0, cached[1] / 600.0],
        light_traffic_share: uncached / 4000.0,
        extra_round_trips,
        no_extra_round_trip,
        done,
        fits: true,
        over_window: 0.0,
        largest_prompt: 1000,
        default: false,
        sends: None,
        variant: None,
    }
}

pub(crate) fn policy(name: &str, group_recall: f64, tokens: f64) -> PolicyReport {
    PolicyReport {
        policy: name.to_owned(),
        group_recall,
        tool_recall: group_recall / 2.0,
        mean_visible_tokens: tokens,
        token_fraction: tokens / 2000.0,
        p50_decision_us: 12.4,
        p95_decision_us: 30.0,
        tiers: None,
        escalation_rate: None,
        high_tier: None,
    }
}

pub(crate) fn point(k: usize, group_recall: f64, token_fraction: f64) -> CurvePoint {
    CurvePoint {
        k,
        group_recall,
        tool_recall: group_recall,
        token_fraction,
    }
}

/// A router with tiers and calibration, a polymorphic row, one baseline and
/// short curves.
pub(crate) fn evaluation() -> Evaluation {
    let high = TierFigures {
        queries: 3,
        group_recall: 1.0,
        token_fraction: 0.05,
    };
    let router = PolicyReport {
        tiers: Some(TierMix {
            high: 0.75,
            medium: 0.25,
            low: 0.0,
        }),
        escalation_rate: Some(0.0),
        high_tier: Some(high),
        ..policy("tiered_router", 1.0, 100.0)
    };
    let polymorphic = PolicyReport {
        high_tier: Some(TierFigures {
            token_fraction: 0.025,
            ..high
        }),
        ..policy("tiered_router(polymorphic)", 1.0, 50.0)
    };
    Evaluation {
        dataset: "tiny".to_owned(),
        tools: 9,
        groups: 3,
        all_tools_tokens: 2000,
        listing_tokens: 100,
        listing_forms: vec![("lines", 90), ("names", 40), ("search", 60)],
        listing_form: ("lines", "lines"),
        tune_queries: 2,
        report_queries: 4,
        split_rule: "tuned on the `dev` split, reported on the others".to_owned(),
        confidence_model: "per-group (weight 9.70, bias -8.30)".to_owned(),
        max_groups: 20,
        tuned_on: Vec::new(),
        policies: vec![
            policy("all_tools", 1.0, 2000.0),
            router,
            polymorphic,
            policy("bm25_groups@1", 0.5, 20.0),
        ],
        calibration: vec![
            Band {
                from: 0.0,
                to: 0.5,
                queries: 0,
                mean_confidence: 0.0,
                observed: 0.0,
            },
            Band {
                from: 0.95,
                to: 1.0,
                queries: 4,
                mean_confidence: 0.9875,
                observed: 1.0,
            },
        ],
        bm25_tools_curve: vec![point(1, 0.25, 0.001), point(3, 0.5, 0.01)],
        search_curves: Vec::new(),
        tool_router_calibration: Vec::new(),
        tool_router_calibration_fitted: Vec::new(),
        tool_router_self_test: None,
        tool_router_calibration_online: Vec::new(),
        group_curves: Vec::new(),
        tool_router_setting: String::new(),
        tool_router_considered: Vec::new(),
        tool_router_at_cap: 0.0,
        search_groups: 5,
        bm25_groups_curve: vec![point(1, 0.5, 0.1)],
        context_window: crate::DEFAULT_CONTEXT_WINDOW,
        defaults: Vec::new(),
        task_costs: vec![
            task_cost(
                "all_tools",
                Job::Baseline,
                None,
                None,
                (1.0, 4000.0, [500.0, 600.0]),
                (0.0, 1.0, 1.0),
            ),
            task_cost(
                "listing",
                Job::Serve,
                Some(Placement::Conversation),
                Some("listing"),
                (0.0, 900.0, [300.0, 330.0]),
                (1.25, 0.0, 0.75),
            ),
            task_cost(
                "tool_router(1 tool)",
                Job::Chat,
                Some(Placement::ToolList),
                Some("oracle"),
                (0.5, 700.0, [420.0, 480.0]),
                (0.5, 0.5, 1.0),
            ),
        ],
        fitted: Vec::new(),
    }
}

/// A lexical router setting routing every group within `route_above` of
/// the best, one tool each, 20 groups at most, no token budget.
pub(crate) fn router_setting(route_above: f64) -> crate::tool_first::RouterSetting {
    crate::tool_first::RouterSetting {
        fusion: toolgate_core::routing::Fusion::Lexical,
        route_above,
        tools_per_group: 1,
        max_groups: 20,
        max_token_share: None,
        id_finders: false,
    }
}

/// A model routing a group whose tools the turn names.
pub(crate) fn naming_model() -> crate::tool_first::Fitted {
    crate::tool_first::Fitted {
        model: toolgate_core::routing::PerGroup {
            weight: 5.0,
            bias: -2.0,
            rank: 0.0,
        },
        calibration: None,
        self_test: false,
    }
}
