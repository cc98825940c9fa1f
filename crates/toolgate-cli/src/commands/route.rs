//! `toolgate route "query"`: the router's decision over the configured
//! catalog, and what the model would see.

use std::fmt::Write as _;

use anyhow::Context;
use serde_json::json;
use toolgate_core::routing::{Router, Visible};
use toolgate_core::{Catalog, Encoding, GroupId, MetaTool, TokenCounter, ToolDefinition};
use toolgate_tools::Toolbox;

use super::tool_setup::ToolSetup;
use crate::cli::RouteArgs;
use crate::output::print;
use crate::settings::Settings;

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
        let mut options = setup.into_options();
        options.meta_tools = vec![MetaTool::UnloadToolGroup];
        let (toolbox, _) = Toolbox::start(options).await?;
        let config = settings.routing;
        let embeddings = super::tool_setup::local_embeddings(&config);
        let counter = TokenCounter::new(Encoding::default()).context("loading the tokenizer")?;
        let output = toolbox.with_catalog(|catalog| -> anyhow::Result<String> {
            let router = Router::hybrid(catalog, config.validate(catalog)?, embeddings.clone());
            let context: Vec<&str> = args.context.iter().map(String::as_str).collect();
            let decision = router.route(&args.query, &context);
            let visible: Vec<&ToolDefinition> = match &decision.visible {
                Visible::Groups(groups) => catalog
                    .core_tools()
                    .chain(groups.iter().flat_map(|g| catalog.group_tools(g.as_str())))
                    .collect(),
                Visible::Catalog => catalog.tools().map(|t| t.definition).collect(),
            };
            let visible_tokens = counter.tools(visible.iter().copied());
            let all_tokens = counter.tools(catalog.tools().map(|t| t.definition));
            let visible_groups: Vec<&GroupId> = match &decision.visible {
                Visible::Groups(groups) => groups.iter().collect(),
                Visible::Catalog => catalog.groups().map(|g| &g.id).collect(),
            };
            if args.json {
                let ranked: Vec<_> = decision
                    .ranked
                    .iter()
                    .take(SHOWN)
                    .map(|(g, p)| json!({"group": g, "probability": p}))
                    .collect();
                let value = json!({
                    "query": args.query,
                    "intent": decision.intent,
                    "confidence": decision.confidence,
                    "tier": decision.tier.as_str(),
                    "routed": decision.routed,
                    "visible_groups": visible_groups,
                    "visible_tools": visible.len(),
                    "visible_tokens": visible_tokens,
                    "all_tools_tokens": all_tokens,
                    "ranked": ranked,
                });
                return Ok(serde_json::to_string_pretty(&value)? + "\n");
            }
            Ok(describe(
                catalog,
                &args.query,
                &decision,
                &visible_groups,
                visible.len(),
                visible_tokens,
                all_tokens,
            ))
        });
        toolbox.shutdown().await;
        print(&output?);
        Ok(())
    })
}

fn describe(
    catalog: &Catalog,
    query: &str,
    decision: &toolgate_core::routing::Decision,
    visible_groups: &[&GroupId],
    visible_tools: usize,
    visible_tokens: usize,
    all_tokens: usize,
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
        "confidence: {:.3} ({} tier)",
        decision.confidence, decision.tier
    );
    let _ = writeln!(out, "routed:     {}", join(&mut decision.routed.iter()));
    let shown = if visible_groups.len() == catalog.groups().count() {
        "the whole catalog".to_owned()
    } else {
        join(&mut visible_groups.iter().copied())
    };
    let _ = writeln!(out, "visible:    {shown}");
    let share = if all_tokens == 0 {
        0.0
    } else {
        100.0 * visible_tokens as f64 / all_tokens as f64
    };
    let _ = writeln!(
        out,
        "tokens:     {visible_tokens} for {visible_tools} tools ({share:.1}% of {all_tokens} for every tool)"
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
