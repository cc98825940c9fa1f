//! `toolgate catalog`: the catalog `toolgate serve` would build (the same
//! tool options and configuration, built-in groups included, every upstream
//! started and listed), shown as each group with its token cost, the core
//! tools, and the turn-1 comparison.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::json;
use toolgate_core::{
    Catalog, CatalogCost, Delivery, GroupId, ImportError, Mode, TokenCounter, thousands,
    tool_groups_section,
};
use toolgate_mcp::{Gateway, GatewayOptions};
use toolgate_store::MemoryStore;

use super::tool_setup::ToolSetup;
use crate::cli::{CatalogArgs, DEFAULT_SEARCH_ABOVE_GROUPS};
use crate::settings::Settings;

/// A skipped file or line, for the report.
struct LoadProblem {
    path: PathBuf,
    message: String,
}

/// What the report says beside the catalog: what was skipped, and the
/// built-in groups not served (with why).
struct Notes<'a> {
    problems: &'a [LoadProblem],
    withheld: &'a [(GroupId, String)],
    /// Whether `toolgate serve` would send every tool or defer them.
    delivery: Delivery,
}

/// Builds the catalog `toolgate serve` would, with its options and
/// defaults: the configuration (`--config`, else `./toolgate.toml`), the
/// built-in groups, the manifests, the catalogs and every upstream, each
/// started and listed, and reports on what it sends.
pub(crate) fn run(args: &CatalogArgs, out: &mut dyn Write) -> Result<()> {
    // Upstream failures and groups left as tools are logged as warnings.
    crate::output::init_logging();
    let settings = Settings::load(args.tools.config.as_deref())?;
    // A catalog asked for by name is measured or refused, not skipped as
    // the gateway skips what it cannot read.
    for path in &args.tools.jsonl {
        std::fs::metadata(path)
            .with_context(|| format!("cannot import the catalog: {}", path.display()))?;
    }
    let mut setup = ToolSetup::new(&args.tools, &settings)?;
    setup.withhold_broad_files_root(&args.tools);
    setup.start_upstreams_eagerly();
    // An empty set of the tools agents write: the store's are each
    // client's own.
    setup.add_user_js_tools(
        Arc::new(MemoryStore::new()),
        settings.tools.javascript.owner.clone(),
    )?;
    let no_sources = setup.options.builtins.is_none()
        && setup.options.manifest_dirs.is_empty()
        && setup.options.jsonl_catalogs.is_empty()
        && setup.upstreams.is_empty();
    if no_sources {
        bail!(
            "no catalog to show: pass --config FILE (or run where ./toolgate.toml is), \
             --manifests DIR (or run where ./tools is), --jsonl FILE or --mcp-config FILE, or \
             leave out --no-builtins"
        );
    }
    let files = setup.config_files.clone();
    let mut tools = setup.options;
    // As the gateway offers and answers its search.
    super::tool_setup::offer_search(
        &mut tools,
        &settings.routing,
        DEFAULT_SEARCH_ABOVE_GROUPS,
        None,
    );
    let options = GatewayOptions {
        tools,
        upstreams: setup.upstreams,
        session_idle_timeout: std::time::Duration::from_secs(60),
        routing: None,
        audit: None,
        rate_limits: Default::default(),
        policies: Default::default(),
        loaded_schemas: settings.gateway_loaded_schemas(),
        load_budget: settings.load_budget,
        deferral: settings.deferral,
        context_window: settings.gateway_context_window(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let (gateway, start) = Gateway::start(options, MemoryStore::new()).await?;
        let config_file = files.first().cloned().unwrap_or_default();
        let mut problems: Vec<LoadProblem> = start
            .manifest_errors
            .into_iter()
            .map(|error| LoadProblem {
                message: error.reason.to_string(),
                path: error.path,
            })
            .collect();
        problems.extend(start.import_errors.into_iter().map(import_problem));
        for (upstream, state) in &start.listed {
            if let Err(error) = state {
                problems.push(LoadProblem {
                    path: config_file.clone(),
                    message: format!("upstream '{upstream}': {error}"),
                });
            }
        }
        let notes = Notes {
            problems: &problems,
            withheld: &start.withheld_builtins,
            delivery: gateway.delivery(),
        };
        let written = gateway.with_catalog(|catalog| report(args, catalog, &notes, out));
        gateway.shutdown().await;
        written
    })
}

fn import_problem(error: ImportError) -> LoadProblem {
    LoadProblem {
        message: if error.line == 0 {
            error.reason
        } else {
            format!("line {}: {}", error.line, error.reason)
        },
        path: error.path,
    }
}

fn report(
    args: &CatalogArgs,
    catalog: &Catalog,
    notes: &Notes<'_>,
    out: &mut dyn Write,
) -> Result<()> {
    if args.prompt {
        match tool_groups_section(catalog) {
            Some(section) => writeln!(out, "{section}")?,
            None => bail!("the catalog has no tool groups, so there is no prompt section"),
        }
        return Ok(());
    }
    let counter = TokenCounter::new(args.encoding)?;
    let cost = CatalogCost::measure(catalog, &counter);
    if args.json {
        write_json(out, catalog, &cost, notes)
    } else {
        write_text(out, catalog, &cost, notes)
    }
}

fn write_json(
    out: &mut dyn Write,
    catalog: &Catalog,
    cost: &CatalogCost,
    notes: &Notes<'_>,
) -> Result<()> {
    let groups: Vec<_> = cost
        .groups
        .iter()
        .filter_map(|group_cost| {
            let group = catalog.group(group_cost.group.as_str())?;
            Some(json!({
                "name": group.id,
                "display_name": group.display_name,
                "description": group.description,
                "tools": group_cost.tools,
                "tokens": group_cost.tokens,
            }))
        })
        .collect();
    let core_tools: Vec<&str> = catalog
        .core_tools()
        .map(|tool| tool.name.as_str())
        .collect();
    let errors: Vec<_> = notes
        .problems
        .iter()
        .map(|problem| json!({"path": problem.path, "reason": problem.message}))
        .collect();
    let report = json!({
        "encoding": cost.encoding,
        "tools": cost.tools,
        "groups": groups,
        "core_tools": core_tools,
        "all_tools_tokens": cost.all_tools_tokens,
        "core_tools_tokens": cost.core_tools_tokens,
        "listing_tokens": cost.listing_tokens,
        "turn1_tokens": cost.turn1_tokens,
        "reduction": cost.reduction,
        "sent": {
            "mode": match notes.delivery.mode {
                Mode::Whole => "whole",
                Mode::Deferred => "deferred",
            },
            "why": notes.delivery.to_string(),
            "context_window": notes.delivery.window,
        },
        "errors": errors,
        "not_served": notes
            .withheld
            .iter()
            .map(|(group, why)| json!({"group": group, "reason": why}))
            .collect::<Vec<_>>(),
    });
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)?;
    Ok(())
}

fn write_text(
    out: &mut dyn Write,
    catalog: &Catalog,
    cost: &CatalogCost,
    notes: &Notes<'_>,
) -> Result<()> {
    writeln!(
        out,
        "{} tools in {} groups, {} core tools (token counts: {})",
        cost.tools,
        cost.groups.len(),
        cost.core_tools,
        cost.encoding
    )?;
    writeln!(out)?;
    let width = cost
        .groups
        .iter()
        .map(|g| g.group.as_str().len())
        .max()
        .unwrap_or(0)
        .max(5);
    writeln!(out, "{:<width$}  {:>5}  {:>9}", "GROUP", "TOOLS", "TOKENS")?;
    for group in &cost.groups {
        writeln!(
            out,
            "{:<width$}  {:>5}  {:>9}",
            group.group.as_str(),
            group.tools,
            thousands(group.tokens)
        )?;
    }
    writeln!(out)?;
    let core: Vec<&str> = catalog
        .core_tools()
        .map(|tool| tool.name.as_str())
        .collect();
    writeln!(
        out,
        "CORE TOOLS ({}, {} tokens)",
        core.len(),
        thousands(cost.core_tools_tokens)
    )?;
    writeln!(out, "  {}", core.join(", "))?;
    writeln!(out)?;
    let number_width = thousands(cost.all_tools_tokens.max(cost.turn1_tokens)).len();
    writeln!(out, "TURN 1")?;
    writeln!(
        out,
        "  every tool schema       {:>number_width$} tokens",
        thousands(cost.all_tools_tokens)
    )?;
    writeln!(
        out,
        "  core tools + listing    {:>number_width$} tokens ({} + {})",
        thousands(cost.turn1_tokens),
        thousands(cost.core_tools_tokens),
        thousands(cost.listing_tokens)
    )?;
    writeln!(
        out,
        "  reduction               {:>number_width$.1}%",
        cost.reduction * 100.0
    )?;
    writeln!(out)?;
    writeln!(out, "SENT BY toolgate serve ([tools] defer)")?;
    writeln!(out, "  {}", notes.delivery)?;
    if !notes.withheld.is_empty() {
        writeln!(out)?;
        writeln!(out, "NOT SERVED")?;
        for (group, why) in notes.withheld {
            writeln!(out, "  {group}: {why}")?;
        }
    }
    if !notes.problems.is_empty() {
        writeln!(out)?;
        writeln!(out, "SKIPPED ({})", notes.problems.len())?;
        for problem in notes.problems {
            writeln!(out, "  {}: {}", problem.path.display(), problem.message)?;
        }
    }
    Ok(())
}
