//! `toolgate route "query"`: the router's decision over the configured
//! catalog, and what the model would see.

use std::fmt::Write as _;

use anyhow::Context;
use serde_json::json;
use toolgate_core::routing::{Decision, Router, Visible};
use toolgate_core::{
    ActiveToolSet, Catalog, GroupId, GroupSelection, MetaTool, TokenCounter, ToolName,
};
use toolgate_store::RoutingOutcome;
use toolgate_tools::Toolbox;

use super::partial_group::describe_partial;
use super::tool_setup::{TerminalProgress, ToolSetup};
use crate::cli::RouteArgs;
use crate::output::{print, probability};
use crate::settings::{Settings, StoreSettings};
use crate::store::StoreLocation;

/// Groups the `passed over:` line names; `--json` lists them all.
const PASSED_OVER_SHOWN: usize = 8;

/// Ranked groups shown.
const SHOWN: usize = 5;

pub(crate) fn run(args: &RouteArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let settings = Settings::load(args.tools.config.as_deref())?;
        let mut setup = ToolSetup::new(&args.tools, &settings)?;
        // Route over what the upstreams really offer.
        setup.start_upstreams_eagerly();
        // On a terminal, the upstreams starting and the tool texts being
        // embedded are shown until the answer is ready.
        let progress = TerminalProgress::on_stderr();
        if let Some(line) = &progress {
            setup.show_progress(line);
        }
        let mut options = setup.into_options();
        options.meta_tools = vec![MetaTool::UnloadToolGroup];
        let (toolbox, _) = Toolbox::start(options).await?;
        let taxonomy = toolbox.with_catalog(|catalog| settings.turn_taxonomy(catalog))?;
        let config = &settings.routing;
        let learned = if config.learn_online.unwrap_or(true) {
            let key = toolbox.with_catalog(super::learned::key);
            learned_outcomes(args.store.as_deref(), &settings.store, &key).await?
        } else {
            Vec::new()
        };
        let embeddings = super::tool_setup::local_embeddings(config, progress.as_ref());
        // The router counts the catalog with the same counter for its budget.
        let counter = TokenCounter::shared().context("loading the tokenizer")?;
        let output = toolbox.with_catalog(|catalog| {
            let mut router = Router::hybrid(catalog, taxonomy, embeddings.clone());
            if !learned.is_empty() {
                router = super::learned::learning(router, &learned);
            }
            let context: Vec<&str> = args.context.iter().map(String::as_str).collect();
            let decision = router.route(&args.query, &context);
            let routed = Routed::new(catalog, &router, &decision, counter, &learned);
            if args.json {
                json_answer(&args.query, &routed)
            } else {
                Ok(text_answer(&args.query, &routed))
            }
        });
        toolbox.shutdown().await;
        if let Some(line) = &progress {
            line.finish();
        }
        print(&output?);
        Ok(())
    })
}

/// A decision, and what the answer says with it: what the model would be
/// shown, the catalog's tokens, the router and what it learned.
struct Routed<'c> {
    catalog: &'c Catalog,
    router: &'c Router,
    decision: &'c Decision,
    shown: Shown<'c>,
    /// Every tool's tokens.
    all_tokens: usize,
    /// The outcomes of routed turns the router learned from.
    learned: &'c [RoutingOutcome],
}

impl<'c> Routed<'c> {
    fn new(
        catalog: &'c Catalog,
        router: &'c Router,
        decision: &'c Decision,
        counter: &TokenCounter,
        learned: &'c [RoutingOutcome],
    ) -> Self {
        let all_tokens = match router.costs() {
            Some(costs) => costs.all_tools(),
            None => counter.tools(catalog.tools().map(|t| t.definition)),
        };
        Self {
            catalog,
            router,
            decision,
            shown: Shown::new(catalog, decision, counter),
            all_tokens,
            learned,
        }
    }
}

/// The answer of `--json`.
fn json_answer(query: &str, routed: &Routed<'_>) -> anyhow::Result<String> {
    let Routed {
        catalog,
        router,
        decision,
        shown,
        all_tokens,
        learned,
    } = routed;
    let ranked: Vec<_> = decision
        .ranked
        .iter()
        .take(SHOWN)
        .map(|(g, p)| json!({"group": g, "probability": p}))
        .collect();
    let partial: Vec<_> = shown
        .partial(catalog)
        .map(|(group, tools, group_tools)| {
            json!({"group": group, "tools": tools, "group_tools": group_tools})
        })
        .collect();
    let value = json!({
        "query": query,
        "intent": decision.intent,
        "confidence": decision.confidence,
        "fitted_confidence": decision.fitted_confidence,
        "self_test": router.self_test(),
        "learned_turns": learned.len(),
        "learned_groups": decision.learned,
        "tier": decision.tier.as_str(),
        "routed": decision.routed,
        "max_groups": router.taxonomy().max_groups,
        "max_token_share": router.taxonomy().max_token_share,
        "passed_over": decision.passed_over,
        "id_finders": decision
            .finders
            .iter()
            .map(|f| json!({"group": f.group, "tool": f.tool, "needed_by": f.needed_by}))
            .collect::<Vec<_>>(),
        "visible_groups": shown.groups,
        "partial_groups": partial,
        "visible_tools": shown.tools,
        "visible_tokens": shown.tokens,
        "all_tools_tokens": all_tokens,
        "ranked": ranked,
    });
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// The answer as text: the decision ([`describe`]), then the budget, the
/// id finders, the self-test and what was learned, when there are any.
fn text_answer(query: &str, routed: &Routed<'_>) -> String {
    let Routed {
        catalog,
        router,
        decision,
        shown,
        all_tokens,
        learned,
    } = routed;
    let max_groups = router.taxonomy().max_groups;
    let mut text = describe(catalog, query, decision, shown, *all_tokens, max_groups);
    if let Some(count) = router.taxonomy().route_tools {
        let _ = writeln!(
            text,
            "tools:      the best {count} across groups, with no cap per group ([routing] route_tools)"
        );
    } else if let Some(share) = router.taxonomy().max_token_share {
        describe_budget(&mut text, share, &decision.passed_over);
    }
    for finder in &decision.finders {
        let _ = writeln!(
            text,
            "id finder:  {} ({}) finds the id {} requires ([routing] id_finders)",
            finder.tool, finder.group, finder.needed_by
        );
    }
    if let Some(test) = router.self_test() {
        let _ = writeln!(
            text,
            "self-test:  {} of this catalog's tools routed as turns, {:.1}% to their own group (and the finder of any id they require); the confidence restates the fitted {}",
            test.probes,
            test.held_share() * 100.0,
            probability(decision.fitted_confidence, 3)
        );
    }
    if !learned.is_empty() {
        describe_learned(&mut text, learned.len(), decision);
    }
    text
}

/// The `budget:` line, and the groups passed over for it (the first
/// [`PASSED_OVER_SHOWN`]).
fn describe_budget(text: &mut String, share: f64, passed_over: &[GroupId]) {
    let _ = writeln!(
        text,
        "budget:     routed tools, core tools and listing within {}% of every tool's tokens ([routing] max_token_share)",
        share * 100.0
    );
    if passed_over.is_empty() {
        return;
    }
    let mut names: Vec<&str> = passed_over
        .iter()
        .take(PASSED_OVER_SHOWN)
        .map(GroupId::as_str)
        .collect();
    let more = passed_over.len().saturating_sub(PASSED_OVER_SHOWN);
    let more = format!("{more} more");
    if passed_over.len() > PASSED_OVER_SHOWN {
        names.push(&more);
    }
    let _ = writeln!(
        text,
        "passed over: {} (scored to be routed, but their tools did not fit the budget)",
        names.join(", ")
    );
}

/// What the router learned from `turns` routed turns, and the groups it
/// shows for missed ones.
fn describe_learned(text: &mut String, turns: usize, decision: &Decision) {
    let _ = writeln!(
        text,
        "learned:    from {turns} routed turn{} of this catalog (fitted confidence {})",
        if turns == 1 { "" } else { "s" },
        probability(decision.fitted_confidence, 3)
    );
    if !decision.learned.is_empty() {
        let names: Vec<&str> = decision.learned.iter().map(GroupId::as_str).collect();
        let _ = writeln!(
            text,
            "recovery:   learned from missed turns, shown when restricted: {}",
            names.join(", ")
        );
    }
}

/// The routing outcomes `toolgate chat --route` kept for the catalog
/// `key`, from `--store`, else `[store] url`, else chat's default SQLite file
/// when there is one (an inspection creates no store).
async fn learned_outcomes(
    store: Option<&std::path::Path>,
    settings: &StoreSettings,
    key: &str,
) -> anyhow::Result<Vec<RoutingOutcome>> {
    let outcomes = match crate::store::location(store, settings) {
        StoreLocation::Postgres(uri) => {
            let store = crate::store::open_postgres(&uri, settings).await?;
            super::learned::outcomes(&store, key).await
        }
        StoreLocation::Sqlite(path) => {
            let path = match path {
                Some(path) if !path.exists() => {
                    anyhow::bail!("--store {}: no such store", path.display())
                }
                Some(path) => path,
                None => match crate::store::default_sqlite_path("conversations.db") {
                    Some(path) if path.exists() => path,
                    _ => return Ok(Vec::new()),
                },
            };
            let (store, _) = crate::store::open_sqlite(Some(&path), "conversations.db")?;
            super::learned::outcomes(&store, key).await
        }
    };
    outcomes.context("reading the routing outcomes chat learned")
}

/// What the model would be shown for a decision.
struct Shown<'c> {
    /// The groups the agent loop would pre-load: each visible group whole,
    /// or with the tools the decision names for it (empty when the whole
    /// catalog is shown).
    active: ActiveToolSet,
    /// The groups it sees, whole or partly.
    groups: Vec<&'c GroupId>,
    /// The tools it is sent.
    tools: usize,
    /// Their schemas' tokens.
    tokens: usize,
}

impl<'c> Shown<'c> {
    fn new(catalog: &'c Catalog, decision: &'c Decision, counter: &TokenCounter) -> Self {
        let mut active = ActiveToolSet::new();
        let (groups, definitions) = match &decision.visible {
            Visible::Groups(groups) => {
                for group in groups {
                    // A group that cannot be loaded (no enabled tool) adds nothing.
                    match decision.partial.iter().find(|p| p.group == *group) {
                        Some(partial) => {
                            active
                                .load_tools(catalog, group.as_str(), &partial.tools)
                                .ok();
                        }
                        None => {
                            active.load(catalog, group.as_str()).ok();
                        }
                    }
                }
                (
                    groups.iter().collect::<Vec<_>>(),
                    active.definitions(catalog),
                )
            }
            Visible::Catalog => (
                catalog.groups().map(|g| &g.id).collect(),
                catalog.tools().map(|t| t.definition).collect::<Vec<_>>(),
            ),
        };
        Self {
            tools: definitions.len(),
            tokens: counter.tools(definitions),
            active,
            groups,
        }
    }

    /// The visible groups that arrive partly loaded: each with its loaded
    /// tools and how many tools it has.
    fn partial<'a>(
        &'a self,
        catalog: &'a Catalog,
    ) -> impl Iterator<Item = (&'c GroupId, Vec<&'a ToolName>, usize)> + 'a {
        self.groups
            .iter()
            .filter_map(move |group| match self.active.selection(group.as_str())? {
                GroupSelection::Tools(tools) => {
                    Some((*group, tools, catalog.group_tools(group.as_str()).count()))
                }
                GroupSelection::Whole => None,
            })
    }
}

fn describe(
    catalog: &Catalog,
    query: &str,
    decision: &Decision,
    shown: &Shown<'_>,
    all_tokens: usize,
    max_groups: usize,
) -> String {
    let mut out = String::new();
    let join = |groups: &mut dyn Iterator<Item = &GroupId>| {
        groups.map(GroupId::as_str).collect::<Vec<_>>().join(", ")
    };
    let _ = writeln!(out, "query:      {query}");
    let _ = writeln!(
        out,
        "intent:     {}",
        decision
            .intent
            .as_deref()
            .unwrap_or("(none: nothing matched)")
    );
    let _ = writeln!(
        out,
        "confidence: {} ({} tier)",
        probability(decision.confidence, 3),
        decision.tier
    );
    let _ = writeln!(out, "routed:     {}", join(&mut decision.routed.iter()));
    if decision.routed.len() >= max_groups {
        let _ = writeln!(
            out,
            "cap:        routed {max_groups} groups, the most [routing] max_groups allows"
        );
    }
    let partial: Vec<(&GroupId, Vec<&ToolName>, usize)> = shown.partial(catalog).collect();
    let visible = if shown.groups.len() == catalog.groups().count() && partial.is_empty() {
        "the whole catalog".to_owned()
    } else {
        shown
            .groups
            .iter()
            .map(
                |group| match partial.iter().find(|(partly, ..)| partly == group) {
                    Some((_, tools, group_tools)) => {
                        describe_partial(group.as_str(), tools, *group_tools)
                    }
                    None => group.to_string(),
                },
            )
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "visible:    {visible}");
    let share = if all_tokens == 0 {
        0.0
    } else {
        100.0 * shown.tokens as f64 / all_tokens as f64
    };
    let _ = writeln!(
        out,
        "tokens:     {} for {} tools ({share:.1}% of {all_tokens} for every tool)",
        shown.tokens, shown.tools
    );
    let ranked: Vec<String> = decision
        .ranked
        .iter()
        .take(SHOWN)
        .map(|(g, p)| format!("{g} {p:.3}"))
        .collect();
    let _ = writeln!(out, "ranked:     {}", ranked.join(", "));
    out
}
