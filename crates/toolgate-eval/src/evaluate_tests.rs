use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::Encoding;
use toolgate_core::ListingForm;

use super::*;
use crate::baseline::{GROUP_KS, TOOL_KS};
use crate::error::EvalError;
use crate::fixtures::write_dataset;

/// Two dev queries, two reported ones and one naming no group, written to a
/// temporary directory (kept alive by the first element), and a counter.
fn setup() -> (tempfile::TempDir, Dataset, TokenCounter) {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(
        dir.path(),
        &[
            json!({"id": 1, "query": "send a mail", "tools": ["mail_send"], "groups": ["mail"], "split": "dev"}),
            json!({"id": 2, "query": "weather forecast", "tools": ["weather_forecast"], "groups": ["weather"], "split": "dev"}),
            json!({"id": 3, "query": "search my mail", "tools": ["mail_search"], "groups": ["mail"], "split": "test"}),
            json!({"id": 4, "query": "the forecast for Oslo", "tools": ["weather_forecast"], "groups": ["weather"], "split": "test"}),
            json!({"id": 5, "query": "hello", "split": "test"}),
        ],
    );
    let dataset = Dataset::load(dir.path()).unwrap();
    (
        dir,
        dataset,
        TokenCounter::new(Encoding::O200kBase).unwrap(),
    )
}

#[test]
fn every_policy_is_measured_on_the_reported_queries() {
    let (_dir, dataset, counter) = setup();
    let semantic = SemanticInputs {
        // mail_send, mail_search, weather_forecast.
        tools: vec![vec![1.0, 0.0], vec![0.9, 0.1], vec![0.0, 1.0]],
        queries: vec![
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![0.5, 0.5],
        ],
        keywords: Vec::new(),
        model: "fake".to_owned(),
    };
    let mut calls = Vec::new();
    let evaluation = evaluate(
        &dataset,
        &counter,
        &RoutingConfig::default(),
        crate::DEFAULT_CONTEXT_WINDOW,
        Some(&semantic),
        &mut |done, total| calls.push((done, total)),
    )
    .unwrap();

    // Query 5 names no group: neither tuned on nor reported.
    assert_eq!((evaluation.tune_queries, evaluation.report_queries), (2, 2));
    // Each reported decision of the router learning online is in one band.
    let learning: usize = evaluation
        .tool_router_calibration_online
        .iter()
        .map(|band| band.queries)
        .sum();
    assert_eq!(learning, 2);
    // Fitted on this catalog's own tuning part, the confidence is taken
    // as it is: no self-test, and the stated bands are the fitted ones.
    assert_eq!(evaluation.tool_router_self_test, None);
    assert_eq!(
        format!("{:?}", evaluation.tool_router_calibration[0].1),
        format!("{:?}", evaluation.tool_router_calibration_fitted)
    );
    assert_eq!(calls, [(1, 4), (2, 4), (3, 4), (4, 4)]);
    let figures: Vec<(&str, f64)> = evaluation
        .policies
        .iter()
        .map(|p| (p.policy.as_str(), p.group_recall))
        .collect();
    assert_eq!(
        figures,
        [
            ("all_tools", 1.0),
            ("core_listing", 0.0),
            ("tiered_router", 1.0),
            ("tiered_router(polymorphic)", 1.0),
            ("tiered_router(softmax)", 1.0),
            ("bm25_tools@500", 1.0),
            ("routed_tools@1", 1.0),
            ("routed_tools@2", 1.0),
            ("routed_tools@3", 1.0),
            ("routed_tools@5", 1.0),
            ("routed_tools@10", 1.0),
            ("bm25_groups@1", 1.0),
            ("bm25_groups@2", 1.0),
            ("bm25_groups@3", 1.0),
            ("tool_router", 1.0),
            ("tool_router(no id finders)", 1.0),
            ("tool_router(id finders)", 1.0),
            ("tool_router(learning online)", 1.0),
            (
                "tool_router[bm25, above 0.1, 1 tool, 50 groups, within 15%]",
                1.0
            ),
            (
                "tool_router[embedding, above 0.1, 1 tool, 50 groups, within 15%]",
                1.0
            ),
            (
                "tool_router[rrf(k=60), above 0.1, 1 tool, 50 groups, within 15%]",
                1.0
            ),
            (
                "tool_router[blend(0.5), above 0.1, 1 tool, 50 groups, within 15%]",
                1.0
            ),
            (
                "tool_router[blend(0.5, median), above 0.1, 1 tool, 50 groups, within 15%]",
                1.0
            ),
            ("find_tool_groups", 1.0),
            ("find_tool_groups(keywords)", 1.0),
            ("find_tool_groups(no id finders)", 1.0),
        ]
    );
    // One tool of each routed group costs less than the whole group, and
    // still reaches every gold group here.
    let tokens = |name: &str| {
        evaluation
            .policies
            .iter()
            .find(|p| p.policy == name)
            .map(|p| p.mean_visible_tokens)
            .unwrap()
    };
    assert!(tokens("routed_tools@1") < tokens("tiered_router"));
    assert_eq!(tokens("routed_tools@10"), tokens("tiered_router"));
    // Chosen on the tuning part among the fused methods: both reach every
    // gold group there with one tool per group, and RRF spends fewer
    // tokens doing it (within this small catalog's budget, the same at
    // any share of the best score).
    assert_eq!(
        evaluation.tool_router_setting,
        "tool_router[rrf(k=60), above 0.1, 1 tool, 50 groups, within 15%]"
    );
    assert!(tokens("tool_router") < tokens("tiered_router"));
    // The gateway's search answers in lines: the listing and its answer.
    assert!(tokens("find_tool_groups") > tokens("core_listing"));
    // Search by every method, and the groups' best tools, as curves.
    let methods: Vec<&str> = evaluation
        .search_curves
        .iter()
        .map(|c| c.method.as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "bm25",
            "embedding",
            "rrf(k=60)",
            "blend(0.5)",
            "blend(0.5, median)"
        ]
    );
    assert_eq!(evaluation.group_curves.len(), 5 * 3);
    let all_tools = &evaluation.policies[0];
    assert_eq!(
        (all_tools.mean_visible_tokens, all_tools.token_fraction),
        (evaluation.all_tools_tokens as f64, 1.0)
    );
    assert_eq!(
        evaluation.bm25_tools_curve.len() + evaluation.bm25_groups_curve.len(),
        TOOL_KS.len() + GROUP_KS.len()
    );
    // The search asked with the request's keywords is costed beside it,
    // marked so that it is never chosen as a host's policy.
    let mut by_keywords: Vec<&str> = evaluation
        .task_costs
        .iter()
        .filter(|r| r.variant.as_deref() == Some("keyword query"))
        .map(|r| r.policy.as_str())
        .collect();
    by_keywords.dedup();
    assert_eq!(
        by_keywords,
        ["find_tool_groups", "find_tool_groups(schemas)"]
    );
    // The main policies loading whole groups only, as before a load could
    // name tools: never cheaper than naming them, for the oracle.
    let variant = |policy: &str, variant: Option<&str>| {
        evaluation
            .task_costs
            .iter()
            .find(|r| {
                r.policy == policy
                    && r.agent == Some("oracle")
                    && r.placement == Some(crate::Placement::ToolList)
                    && r.variant.as_deref() == variant
            })
            .unwrap()
            .uncached
    };
    for policy in ["listing", "find_tool_groups", "find_tool_groups(schemas)"] {
        let (named, whole) = (
            variant(policy, None),
            variant(policy, Some("whole-group loads")),
        );
        assert!(named <= whole, "{policy}: {named} > {whole}");
    }
    assert!(
        evaluation
            .task_costs
            .iter()
            .any(|r| r.policy == "tiered_router"
                && r.variant.as_deref() == Some("whole-group loads"))
    );
    // The search ranking tools across groups, at each k: two agents, the
    // schemas in the tool list or the conversation, one round trip for the
    // search itself; and the same in each listing form serve did not
    // choose.
    for k in crate::find::FIND_ACROSS {
        let policy = format!("find_tool_groups(top {k} across groups, schemas)");
        let rows: Vec<&TaskCost> = evaluation
            .task_costs
            .iter()
            .filter(|r| r.policy == policy)
            .collect();
        assert_eq!(rows.len(), 4 * ListingForm::ALL.len(), "{policy}");
        assert_eq!(rows.iter().filter(|r| r.variant.is_none()).count(), 4);
        assert!(
            rows.iter()
                .all(|r| r.job == crate::Job::Serve && r.extra_round_trips >= 1.0),
            "{policy}"
        );
    }
}

/// A window that every schema passes: all-tools does no task, and the
/// policies that send less still do theirs.
#[test]
fn all_tools_does_not_fit_where_its_schemas_pass_the_context_window() {
    let (_dir, dataset, counter) = setup();
    let config = RoutingConfig::default();
    let measure = |window| evaluate(&dataset, &counter, &config, window, None, &mut |_, _| {});
    let roomy = measure(crate::DEFAULT_CONTEXT_WINDOW).unwrap();
    let all_tools = &roomy.task_costs[0];
    assert_eq!(roomy.context_window, crate::DEFAULT_CONTEXT_WINDOW);
    assert_eq!(
        (all_tools.fits, all_tools.over_window, all_tools.done),
        (true, 0.0, 1.0)
    );
    assert!(all_tools.largest_prompt > roomy.all_tools_tokens);
    let tight = measure(roomy.all_tools_tokens).unwrap();
    let all_tools = &tight.task_costs[0];
    assert_eq!(all_tools.policy, "all_tools");
    assert_eq!(
        (all_tools.fits, all_tools.over_window, all_tools.done),
        (false, 1.0, 0.0)
    );
    // The costs are those of all-tools' prompts all the same.
    assert_eq!(all_tools.uncached, roomy.task_costs[0].uncached);
    // Every row by its own largest prompt (here the meta-tools alone
    // outweigh the three tiny schemas).
    for row in &tight.task_costs {
        assert_eq!(
            row.fits,
            row.largest_prompt <= tight.context_window,
            "{row:?}"
        );
        assert!(row.done <= 1.0 - row.over_window + 1e-9, "{row:?}");
    }
}

#[test]
fn routing_settings_naming_an_unknown_group_are_refused() {
    let (_dir, dataset, counter) = setup();
    let config = RoutingConfig {
        recovery_groups: vec!["fax".to_owned()],
        ..RoutingConfig::default()
    };
    let error = evaluate(
        &dataset,
        &counter,
        &config,
        crate::DEFAULT_CONTEXT_WINDOW,
        None,
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(matches!(error, EvalError::Routing(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "[routing]: recovery_groups names group 'fax', which is not in the catalog. Known groups: mail, weather"
    );
}
