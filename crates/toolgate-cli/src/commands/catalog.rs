//! `toolgate catalog`: load manifests or a `tools.jsonl` import and show the
//! groups with their token cost, the core set, and the turn-1 comparison.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::json;
use toolgate_core::{
    Catalog, CatalogCost, ImportError, TokenCounter, import_jsonl, load_manifest_dirs,
    tool_groups_section,
};
use toolgate_mcp::Gateway;
use toolgate_mcp::GatewayOptions;
use toolgate_store::MemoryStore;
use toolgate_tools::ToolboxOptions;

use super::tool_setup::ToolSetup;
use crate::cli::CatalogArgs;
use crate::settings::Settings;

/// The manifest directory used when no source is given.
const DEFAULT_MANIFEST_DIR: &str = "tools";

/// A skipped file or line, for the report.
struct LoadProblem {
    path: PathBuf,
    message: String,
}

pub(crate) fn run(args: &CatalogArgs, out: &mut dyn Write) -> Result<()> {
    if args.config.is_some() || !args.mcp_config.is_empty() {
        return run_with_upstreams(args, out);
    }
    let (catalog, problems) = load(args)?;
    report(args, &catalog, &problems, out)
}

/// With upstream MCP servers: start them all, list them, and report on the
/// catalog `toolgate serve` would build in front of them.
fn run_with_upstreams(args: &CatalogArgs, out: &mut dyn Write) -> Result<()> {
    // Upstream failures and groups left as tools are logged as warnings.
    crate::output::init_logging();
    let settings = Settings::load(args.config.as_deref())?;
    let mut setup = ToolSetup::upstreams(&settings, &args.mcp_config)?;
    setup.start_upstreams_eagerly();
    let files = setup.config_files;
    let loaded_schemas = settings.gateway_loaded_schemas();
    let options = GatewayOptions {
        tools: ToolboxOptions {
            manifest_dirs: args.manifests.clone(),
            jsonl_catalogs: args.jsonl.clone(),
            builtins: None,
            groups: settings.tools.groups,
            aliases: settings.tools.aliases,
            ..ToolboxOptions::default()
        },
        upstreams: setup.upstreams,
        session_idle_timeout: std::time::Duration::from_secs(60),
        routing: None,
        audit: None,
        rate_limits: Default::default(),
        policies: Default::default(),
        loaded_schemas,
        load_budget: settings.load_budget,
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
        for (upstream, state) in start.listed {
            if let Err(error) = state {
                problems.push(LoadProblem {
                    path: config_file.clone(),
                    message: format!("upstream '{upstream}': {error}"),
                });
            }
        }
        let written = gateway.with_catalog(|catalog| report(args, catalog, &problems, out));
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
    problems: &[LoadProblem],
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
        write_json(out, catalog, &cost, problems)
    } else {
        write_text(out, catalog, &cost, problems)
    }
}

fn load(args: &CatalogArgs) -> Result<(Catalog, Vec<LoadProblem>)> {
    let mut manifests = args.manifests.clone();
    if manifests.is_empty() && args.jsonl.is_empty() {
        if !Path::new(DEFAULT_MANIFEST_DIR).is_dir() {
            bail!(
                "no catalog to show: pass --manifests DIR or --jsonl FILE (or run where ./{DEFAULT_MANIFEST_DIR} exists)"
            );
        }
        manifests.push(PathBuf::from(DEFAULT_MANIFEST_DIR));
    }
    let mut catalog = Catalog::new();
    let mut problems = Vec::new();
    let report = load_manifest_dirs(&mut catalog, &manifests);
    problems.extend(report.errors.into_iter().map(|error| LoadProblem {
        message: error.reason.to_string(),
        path: error.path,
    }));
    for path in &args.jsonl {
        let report = import_jsonl(&mut catalog, path).context("cannot import the catalog")?;
        problems.extend(report.errors.into_iter().map(import_problem));
    }
    Ok((catalog, problems))
}

fn write_json(
    out: &mut dyn Write,
    catalog: &Catalog,
    cost: &CatalogCost,
    problems: &[LoadProblem],
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
    let errors: Vec<_> = problems
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
        "errors": errors,
    });
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)?;
    Ok(())
}

fn write_text(
    out: &mut dyn Write,
    catalog: &Catalog,
    cost: &CatalogCost,
    problems: &[LoadProblem],
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
    if !problems.is_empty() {
        writeln!(out)?;
        writeln!(out, "SKIPPED ({})", problems.len())?;
        for problem in problems {
            writeln!(out, "  {}: {}", problem.path.display(), problem.message)?;
        }
    }
    Ok(())
}

/// `12345` -> `12,345`.
fn thousands(number: usize) -> String {
    let digits = number.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
