//! Benchmarks of the routing core's hot paths (divan).
//!
//! `cargo bench -p toolgate-core` runs the synthetic and example-catalog
//! benches. The toolbench benches read the public dataset's `tools.jsonl` from
//! the directory in `TOOLGATE_DATA` (the folder holding `toolbench_stable/`);
//! without it they are skipped with a message.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "benchmark setup: a broken fixture should abort loudly"
)]

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use divan::Bencher;
use serde_json::json;
use toolgate_core::{
    ActiveToolSet, Catalog, GroupId, Message, Origin, TokenCounter, ToolDefinition, ToolGroup,
    ToolName, ToolStatus, import_jsonl, load_manifest_dirs, restore_active_set,
    tool_groups_section,
};

fn main() {
    divan::main();
}

/// The example personal-assistant catalog shipped in `examples/tools`.
static EXAMPLES: LazyLock<Catalog> = LazyLock::new(|| {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tools");
    let mut catalog = Catalog::new();
    let report = load_manifest_dirs(&mut catalog, &[dir]);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    catalog
});

/// 100 groups of 10 tools each, descriptions of real-world length.
static HUNDRED_GROUPS: LazyLock<Catalog> = LazyLock::new(|| synthetic_catalog(100, 10));

/// The 2,490-tool toolbench catalog, when `TOOLGATE_DATA` points at the datasets.
static TOOLBENCH: LazyLock<Option<Catalog>> = LazyLock::new(|| {
    let dir = PathBuf::from(std::env::var_os("TOOLGATE_DATA")?);
    let mut catalog = Catalog::new();
    import_jsonl(&mut catalog, &dir.join("toolbench_stable/tools.jsonl")).ok()?;
    Some(catalog)
});

fn toolbench() -> Option<&'static Catalog> {
    let catalog = TOOLBENCH.as_ref();
    if catalog.is_none() {
        eprintln!("skipped: set TOOLGATE_DATA to the folder holding toolbench_stable/");
    }
    catalog
}

fn synthetic_catalog(groups: usize, tools_per_group: usize) -> Catalog {
    let mut catalog = Catalog::new();
    for g in 0..groups {
        let id = GroupId::new(format!("group_{g}")).unwrap();
        let group = ToolGroup::new(
            id,
            format!("Group {g}"),
            format!(
                "Manage the resources of service {g}: list, search, create, update and delete them"
            ),
        );
        let tools = (0..tools_per_group)
            .map(|t| {
                let name = ToolName::new(format!("group_{g}_tool_{t}")).unwrap();
                let schema = json!({"type": "object", "properties": {
                    "id": {"type": "string", "description": "Resource id"},
                    "limit": {"type": "integer", "description": "Most results", "default": 20}
                }, "required": ["id"]});
                (
                    ToolDefinition::new(name, "Does one thing", schema).unwrap(),
                    Origin::Builtin,
                )
            })
            .collect();
        catalog
            .register_group_with_tools(group, Origin::Builtin, tools)
            .unwrap();
    }
    catalog
}

/// One `load_tool_group` call on a fresh conversation (its budget is 10 ms).
#[divan::bench]
fn load_tool_group(bencher: Bencher) {
    let catalog = &*EXAMPLES;
    bencher.bench(|| {
        let mut active = ActiveToolSet::new();
        let loaded = active.load(catalog, divan::black_box("config")).unwrap();
        divan::black_box(loaded.to_string())
    });
}

/// The prompt section for 100 groups (its budget is 5 ms).
#[divan::bench]
fn prompt_section_100_groups(bencher: Bencher) {
    let catalog = &*HUNDRED_GROUPS;
    bencher.bench(|| tool_groups_section(divan::black_box(catalog)));
}

/// The definitions of an active set with every toolbench group loaded (2,490 tools).
#[divan::bench]
fn toolbench_active_set_definitions(bencher: Bencher) {
    let Some(catalog) = toolbench() else { return };
    let mut active = ActiveToolSet::new();
    let ids: Vec<GroupId> = catalog.groups().map(|group| group.id.clone()).collect();
    for id in &ids {
        active.load(catalog, id.as_str()).unwrap();
    }
    bencher.bench(|| active.definitions(divan::black_box(catalog)).len());
}

/// Counting the tokens of all 2,490 toolbench schemas with o200k_base.
#[divan::bench(sample_count = 10)]
fn toolbench_count_all_tokens(bencher: Bencher) {
    let Some(catalog) = toolbench() else { return };
    let counter = TokenCounter::new(Default::default()).unwrap();
    bencher.bench(|| counter.tools(catalog.tools().map(|tool| tool.definition)));
}

/// Rebuilding the active set from a 10,000-message history.
#[divan::bench]
fn restore_from_10k_messages(bencher: Bencher) {
    let catalog = &*HUNDRED_GROUPS;
    let history: Vec<Message> = (0..10_000)
        .map(|i| match i % 4 {
            0 => Message::user("please do the next thing"),
            1 => Message::tool_call(
                format!("c{i}"),
                "load_tool_group",
                json!({"group_name": format!("group_{}", i % 100)}).to_string(),
                ToolStatus::Success,
            ),
            2 => Message::tool_result(
                format!("c{i}"),
                "load_tool_group",
                "Loaded ...",
                ToolStatus::Success,
            ),
            _ => Message::assistant("done"),
        })
        .collect();
    bencher.bench(|| {
        restore_active_set(divan::black_box(&history), catalog)
            .active
            .loaded_groups()
            .len()
    });
}

/// Stands in for the embedding model: a fixed pseudo-random 384-float
/// vector per text, so a bench measures the router's own work (BM25, one
/// cosine per tool, fusion, the decision) and not the model's.
#[derive(Debug)]
struct FixedVectors;

fn pseudo_vector(text: &str) -> Vec<f32> {
    let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..384)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

impl toolgate_core::routing::Embeddings for FixedVectors {
    fn embed_texts(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        Some(texts.iter().map(|text| pseudo_vector(text)).collect())
    }

    fn embed_query(&self, text: &str) -> Option<Vec<f32>> {
        Some(pseudo_vector(text))
    }
}

/// The router toolgate runs over `catalog` with `config`, scoring tools
/// semantically too when `semantic` (vectors as from a warm cache: no
/// model runs).
fn router(
    catalog: &Catalog,
    config: toolgate_core::routing::RoutingConfig,
    semantic: bool,
) -> toolgate_core::routing::Router {
    use toolgate_core::routing::{Embeddings, Router};
    let embeddings =
        semantic.then(|| std::sync::Arc::new(FixedVectors) as std::sync::Arc<dyn Embeddings>);
    Router::hybrid(catalog, config.validate(catalog).unwrap(), embeddings)
}

/// One best tool a group, groups within half the best score.
fn bench_config() -> toolgate_core::routing::RoutingConfig {
    toolgate_core::routing::RoutingConfig {
        tools_per_group: Some(1),
        route_above: Some(0.5),
        ..Default::default()
    }
}

fn hybrid_router(catalog: &Catalog) -> toolgate_core::routing::Router {
    router(catalog, bench_config(), true)
}

/// Times `router`'s decision for the benchmarks' one query.
fn bench_decision(bencher: Bencher, router: &toolgate_core::routing::Router) {
    bencher.bench(|| {
        router.route(
            divan::black_box("find me recent news articles about electric cars in Germany"),
            &[],
        )
    });
}

/// One routing decision over the 2,490 toolbench tools by the router
/// toolgate runs (BM25 and a cosine per tool, fused, groups from their best
/// tools, the partly loaded groups), the query's embedding excepted (see
/// `cargo bench -p toolgate-embed` for it).
#[divan::bench]
fn toolbench_hybrid_decision(bencher: Bencher) {
    let Some(catalog) = toolbench() else { return };
    let router = hybrid_router(catalog);
    bench_decision(bencher, &router);
}

/// The decision without the embedding model: BM25 alone. What the
/// semantic half adds to `toolbench_hybrid_decision` is the difference.
#[divan::bench]
fn toolbench_lexical_decision(bencher: Bencher) {
    let Some(catalog) = toolbench() else { return };
    let router = router(catalog, bench_config(), false);
    bench_decision(bencher, &router);
}

/// The same decision with the shipped `route_above` and at most 20 or 50
/// groups routed (the default cap, 50, against the one it replaced): a
/// routed group costs its best tools' lookup and its place in the
/// decision.
#[divan::bench(args = [20, 50])]
fn toolbench_hybrid_decision_capped(bencher: Bencher, max_groups: usize) {
    use toolgate_core::routing::RoutingConfig;
    let Some(catalog) = toolbench() else { return };
    let config = RoutingConfig {
        max_groups: Some(max_groups),
        ..RoutingConfig::default()
    };
    let router = router(catalog, config, true);
    bench_decision(bencher, &router);
}

/// The same decision without the token budget (`Router::hybrid_search`,
/// as `find_tool_groups` routes): what keeping a turn within
/// `max_token_share` adds to `toolbench_hybrid_decision` is the
/// difference.
#[divan::bench]
fn toolbench_hybrid_decision_unbudgeted(bencher: Bencher) {
    use toolgate_core::routing::{Embeddings, Router};
    let Some(catalog) = toolbench() else { return };
    let embeddings = std::sync::Arc::new(FixedVectors) as std::sync::Arc<dyn Embeddings>;
    let router = Router::hybrid_search(
        catalog,
        bench_config().validate(catalog).unwrap(),
        Some(embeddings),
    );
    bench_decision(bencher, &router);
}

/// The same decision without id finders (`[routing] id_finders = false`):
/// what showing them adds to `toolbench_hybrid_decision` is the
/// difference.
#[divan::bench]
fn toolbench_hybrid_decision_without_id_finders(bencher: Bencher) {
    use toolgate_core::routing::RoutingConfig;
    let Some(catalog) = toolbench() else { return };
    let config = RoutingConfig {
        id_finders: Some(false),
        ..bench_config()
    };
    let router = router(catalog, config, true);
    bench_decision(bencher, &router);
}

/// Reading the catalog's id finders, part of the router's build.
#[divan::bench(sample_count = 10)]
fn toolbench_id_finders(bencher: Bencher) {
    use toolgate_core::routing::IdFinders;
    let Some(catalog) = toolbench() else { return };
    bencher.bench(|| IdFinders::new(catalog).len());
}

/// Counting every tool's schema tokens for the budget, part of the
/// router's build (the shared `o200k_base` counter already loaded).
#[divan::bench(sample_count = 10)]
fn toolbench_tool_costs(bencher: Bencher) {
    use toolgate_core::routing::ToolCosts;
    let Some(catalog) = toolbench() else { return };
    let counter = TokenCounter::shared().unwrap();
    bencher.bench(|| ToolCosts::measure(catalog, counter).all_tools());
}

/// Building that router: indexing the 2,490 tools, taking their vectors
/// (here computed, as from a warm cache: no model runs) and its self-test.
#[divan::bench(sample_count = 10)]
fn toolbench_hybrid_router_build(bencher: Bencher) {
    let Some(catalog) = toolbench() else { return };
    bencher.bench(|| hybrid_router(catalog).groups().len());
}

/// Its self-test alone, part of that build: 189 of the tools'
/// descriptions routed as turns (BM25 and cosines each, no model runs) and
/// the recalibration fitted to them.
#[divan::bench(sample_count = 10)]
fn toolbench_hybrid_router_self_test(bencher: Bencher) {
    use toolgate_core::routing::{
        Confidence, DEFAULT_FUSION, Embeddings, HYBRID_DEFAULTS, HybridScorer, Router,
    };
    let Some(catalog) = toolbench() else { return };
    let taxonomy = bench_config().validate(catalog).unwrap();
    bencher
        .with_inputs(|| {
            let embeddings = std::sync::Arc::new(FixedVectors) as std::sync::Arc<dyn Embeddings>;
            let scorer = HybridScorer::new(catalog, &taxonomy, Some(embeddings), DEFAULT_FUSION);
            Router::new(Box::new(scorer), taxonomy.clone())
                .with_confidence(Confidence::PerGroup(HYBRID_DEFAULTS.model))
                .with_calibration(HYBRID_DEFAULTS.calibration())
        })
        .bench_values(|router| router.self_tested(catalog).self_test().map(|t| t.probes));
}

/// An online calibration holding the most outcomes it keeps: stated
/// 0.9-0.99, holding nine times in ten.
fn full_online_calibration() -> toolgate_core::routing::OnlineCalibration {
    use toolgate_core::routing::{KEPT_OUTCOMES, OnlineCalibration};
    let outcomes = (0..KEPT_OUTCOMES).map(|i| (0.9 + (i % 10) as f64 / 100.0, i % 10 != 0));
    OnlineCalibration::default().with_outcomes(outcomes)
}

/// The toolbench decision with an online calibration restating it (one
/// lock and one logistic more than `toolbench_hybrid_decision`).
#[divan::bench]
fn toolbench_hybrid_decision_online(bencher: Bencher) {
    let Some(catalog) = toolbench() else { return };
    let router = hybrid_router(catalog).with_online_calibration(full_online_calibration());
    bench_decision(bencher, &router);
}

/// Recording one outcome into a full online calibration: the refit a turn
/// ends with.
#[divan::bench]
fn online_record_one_outcome_of_2000(bencher: Bencher) {
    let full = full_online_calibration();
    bencher
        .with_inputs(|| full.clone())
        .bench_values(|mut online| {
            online.record(divan::black_box(0.95), false);
            online
        });
}

/// Learned recovery groups from the most outcomes kept: every tenth turn
/// missed one of the catalog's first 20 groups.
fn full_learned_recovery(catalog: &Catalog) -> toolgate_core::routing::LearnedRecovery {
    use toolgate_core::routing::{KEPT_OUTCOMES, LearnedRecovery};
    let groups: Vec<_> = catalog.groups().take(20).map(|g| g.id.clone()).collect();
    let turns = (0..KEPT_OUTCOMES).map(|i| {
        if i % 10 == 0 {
            vec![groups[(i / 10) % groups.len()].clone()]
        } else {
            Vec::new()
        }
    });
    LearnedRecovery::default().with_turns(turns)
}

/// The toolbench decision showing the five learned recovery groups too
/// (one lock, a sort of the missed groups, and their best tools).
#[divan::bench]
fn toolbench_hybrid_decision_learned(bencher: Bencher) {
    let Some(catalog) = toolbench() else { return };
    let router = hybrid_router(catalog).with_learned_recovery(full_learned_recovery(catalog));
    bench_decision(bencher, &router);
}
