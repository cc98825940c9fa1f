//! Command-line definitions (clap derive). Doc comments are the help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use toolgate_core::Encoding;

/// toolgate: hundreds of tools for an LLM agent, without paying for them on every turn.
#[derive(Debug, Parser)]
#[command(name = "toolgate", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Show a tool catalog's groups, core tools and turn-1 token savings.
    Catalog(CatalogArgs),
}

/// Where the catalog comes from, and how to show it.
#[derive(Debug, Args)]
pub(crate) struct CatalogArgs {
    /// Directories of JSON tool manifests (default: ./tools when it exists).
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub(crate) manifests: Vec<PathBuf>,

    /// A normalized tools.jsonl catalog; a groups.jsonl beside it supplies group descriptions.
    #[arg(long, value_name = "FILE")]
    pub(crate) jsonl: Vec<PathBuf>,

    /// Tokenizer used for the token figures: o200k_base or cl100k_base.
    #[arg(long, value_name = "NAME", default_value = "o200k_base")]
    pub(crate) encoding: Encoding,

    /// Print one JSON object instead of tables.
    #[arg(long, conflicts_with = "prompt")]
    pub(crate) json: bool,

    /// Print the system-prompt section exactly as the model sees it.
    #[arg(long)]
    pub(crate) prompt: bool,
}
