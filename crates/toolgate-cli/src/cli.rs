//! Command-line definitions (clap derive). Doc comments are the help text.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use toolgate_core::Encoding;

pub(crate) use toolgate_tools::DEFAULT_SEARCH_ABOVE_GROUPS;

/// toolgate: hundreds of tools for an LLM agent, without paying for them on every turn.
#[derive(Debug, Parser)]
#[command(name = "toolgate", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Show what `toolgate serve` would send: its groups, core tools and turn-1 token savings.
    Catalog(CatalogArgs),
    /// Run the MCP gateway: core tools plus one line per group, groups loaded on demand.
    Serve(Box<ServeArgs>),
    /// Chat with a model (OpenAI-compatible or Anthropic) that loads tool groups as it needs them.
    Chat(Box<ChatArgs>),
    /// Show the routing decision for a query: intent, confidence, tier, groups, visible tokens.
    Route(Box<RouteArgs>),
    /// Evaluate routing policies on labelled datasets: recall against visible tokens.
    Eval(Box<EvalArgs>),
    /// Rewrite stored agents' tool lists and the config's [agent] tools through the aliases.
    Migrate(Box<MigrateArgs>),
    /// Make bearer tokens for named clients of `toolgate serve`.
    Token(TokenArgs),
}

/// `toolgate token`.
#[derive(Debug, Args)]
pub(crate) struct TokenArgs {
    #[command(subcommand)]
    pub(crate) command: TokenCommand,
}

/// What `toolgate token` does.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Print a new token for client NAME (only this once) and the [clients.NAME] table that
    /// lets it in: the configuration keeps only the token's SHA-256.
    Create {
        /// The client's name: 1-64 of A-Z a-z 0-9 _ . -
        name: String,
    },
}

/// Where the agents are stored, and the catalog whose aliases apply.
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// SQLite file of conversations and agents (default: the one `toolgate chat` uses).
    #[arg(long, value_name = "FILE")]
    pub(crate) store: Option<PathBuf>,

    /// Print the changes without writing them.
    #[arg(long)]
    pub(crate) dry_run: bool,

    #[command(flatten)]
    pub(crate) tools: ToolArgs,
}

/// The query and the catalog to route it over.
#[derive(Debug, Args)]
pub(crate) struct RouteArgs {
    /// The user's message.
    pub(crate) query: String,

    /// An earlier user turn of the conversation (repeatable, oldest first).
    #[arg(long, value_name = "TEXT")]
    pub(crate) context: Vec<String>,

    /// Print one JSON object.
    #[arg(long)]
    pub(crate) json: bool,

    /// The store whose routing outcomes (what `toolgate chat --route` learned of this catalog)
    /// restate the confidence, as chat would (default: [store] url, else chat's default SQLite
    /// file when it exists).
    #[arg(long, value_name = "FILE|URI")]
    pub(crate) store: Option<PathBuf>,

    #[command(flatten)]
    pub(crate) tools: ToolArgs,
}

/// The datasets and where the results go.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// A dataset directory with tools.jsonl, groups.jsonl and queries.jsonl (repeatable).
    #[arg(long, value_name = "DIR", required_unless_present_any = ["replay", "live"])]
    pub(crate) dataset: Vec<PathBuf>,

    /// Instead of the routing policies: replay this dataset's multi-turn conversations
    /// (queries.jsonl lines with conversation_id, turn and ground_truth_calls) through the agent
    /// loop against a model that calls each turn's gold tools, loading their groups as it needs
    /// them, with no load budget, each --budget, and every tool on every call (repeatable).
    #[arg(long, value_name = "DIR", conflicts_with = "dataset")]
    pub(crate) replay: Vec<PathBuf>,

    /// A load budget ([tools] max_loaded_tokens) to replay under (repeatable; default: one, two
    /// and three groups of the dataset's median size).
    #[arg(
        long,
        value_name = "TOKENS",
        requires = "replay",
        conflicts_with_all = ["dataset", "live"]
    )]
    pub(crate) budget: Vec<usize>,

    /// Where a replay's loads put the loaded tools' schemas: tool_list (the next request lists
    /// them) or conversation (the load's answer carries them, as [tools] loaded_schemas says).
    #[arg(
        long,
        value_name = "PLACEMENT",
        default_value = "tool_list",
        requires = "replay",
        conflicts_with_all = ["dataset", "live"]
    )]
    pub(crate) loaded_schemas: String,

    /// Instead of the routing policies: play this dataset's conversations (queries.jsonl, as for
    /// --replay) through the agent loop against a real model at an endpoint (--base-url,
    /// --model, as `chat` takes them), under each --policy; the tools answer a fixed text. A task
    /// succeeds when every tool its ground truth calls ran with arguments its schema accepts.
    /// Reports per policy the success rate with its 95% interval, billed tokens, model calls and
    /// seconds per task (repeatable).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dataset", "replay"])]
    pub(crate) live: Vec<PathBuf>,

    /// With --live: the first N conversations with a gold call are the tasks.
    #[arg(long, value_name = "N", default_value_t = 30, requires = "live",
          conflicts_with_all = ["dataset", "replay"])]
    pub(crate) tasks: usize,

    /// With --live: leave out the first N tasks, and play the --tasks after them (to go on with a
    /// stopped run, or to split one between endpoints).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "live",
          conflicts_with_all = ["dataset", "replay"])]
    pub(crate) skip: usize,

    /// With --live: the wall time a task may take, in seconds; past it its model call is cut off
    /// and the task is stopped, not done (default: no limit).
    #[arg(long, value_name = "SECONDS", requires = "live",
          conflicts_with_all = ["dataset", "replay"],
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) time_limit: Option<u64>,

    /// With --live: a policy to play the tasks under (repeatable; default all four): all-tools
    /// (left out when the schemas take over half the model's context window), tool-list and
    /// conversation (`chat`'s two places for loaded schemas), search (`serve --route`).
    #[arg(long, value_name = "NAME", requires = "live",
          conflicts_with_all = ["dataset", "replay"],
          value_parser = clap::builder::PossibleValuesParser::new(["all-tools", "tool-list", "conversation", "search"]))]
    pub(crate) policy: Vec<String>,

    /// With --live: provider wire format (openai or anthropic). Overrides TOOLGATE_PROVIDER and
    /// [model] provider.
    #[arg(long, value_name = "NAME", requires = "live",
          conflicts_with_all = ["dataset", "replay"])]
    pub(crate) provider: Option<String>,

    /// With --live: model name. Overrides TOOLGATE_MODEL and [model] model.
    #[arg(long, value_name = "NAME", requires = "live",
          conflicts_with_all = ["dataset", "replay"])]
    pub(crate) model: Option<String>,

    /// With --live: base URL of the API (e.g. http://127.0.0.1:8077/v1). Overrides
    /// TOOLGATE_BASE_URL.
    #[arg(long, value_name = "URL", requires = "live",
          conflicts_with_all = ["dataset", "replay"])]
    pub(crate) base_url: Option<String>,

    /// With --live: native, prompted or prompted-text, as for `chat`. Overrides
    /// TOOLGATE_TOOL_CALLS and [model] tool_calls.
    #[arg(long, value_name = "MODE", requires = "live",
          conflicts_with_all = ["dataset", "replay"],
          value_parser = clap::builder::PossibleValuesParser::new(toolgate_llm::ToolCalls::NAMES))]
    pub(crate) tool_calls: Option<String>,

    /// toolgate.toml whose [routing] table configures the router, and whose [model] table the
    /// model of --live (default: ./toolgate.toml when it exists, else the built-in settings).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// Write the results as JSON: per dataset, one entry per policy (with --replay, per mode
    /// and conversation; with --live, per policy and task).
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,

    /// Write an SVG plot of gold-group recall against visible tokens: the policies, and tool
    /// search by every method as curves.
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,

    /// Write an SVG plot of what a task costs (billed tokens, uncached and with Anthropic's
    /// prompt cache, as a share of all-tools') against its extra round trips, per policy.
    #[arg(long, value_name = "FILE")]
    pub(crate) plot: Option<PathBuf>,

    /// Tokenizer for the token figures: o200k_base or cl100k_base.
    #[arg(long, value_name = "NAME", default_value = "o200k_base")]
    pub(crate) encoding: Encoding,

    /// The local embedding model (all-MiniLM-L6-v2 as toolgate-embed loads it) for the
    /// semantic and hybrid policies (default: $TOOLGATE_EMBED_MODEL, else
    /// ~/.local/share/toolgate/models/all-MiniLM-L6-v2). Without one, or with a
    /// [routing.embeddings] endpoint configured, that is used instead; without either, only the
    /// lexical policies are measured.
    #[arg(long, value_name = "DIR")]
    pub(crate) embed_model: Option<PathBuf>,

    /// Where tool and query vectors are cached between runs (default:
    /// $XDG_CACHE_HOME/toolgate/vectors, else ~/.cache/toolgate/vectors).
    #[arg(long, value_name = "DIR")]
    pub(crate) vector_cache: Option<PathBuf>,

    /// Measure each dataset with the router's confidence model fitted on the other datasets
    /// only (needs two datasets or more): how routing does on a catalog it was not tuned on.
    #[arg(long)]
    pub(crate) leave_one_out: bool,

    /// The model's context window in tokens: a task one of whose prompts passes it is not done
    /// (all tools, on a catalog whose schemas pass it, does not fit).
    #[arg(long, value_name = "TOKENS", default_value_t = toolgate_eval::DEFAULT_CONTEXT_WINDOW)]
    pub(crate) context_window: usize,
}

/// Where the tools come from: shared by `serve` and `chat`.
#[derive(Debug, Args)]
pub(crate) struct ToolArgs {
    /// TOML configuration: [[upstream]], [groups], [aliases], [web], [tools], and [model],
    /// [agent] for chat (default: ./toolgate.toml when it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// Claude-Desktop-style {"mcpServers": {...}} file; its servers become upstreams too.
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub(crate) mcp_config: Vec<PathBuf>,

    /// Directories of JSON tool manifests (default: ./tools when it exists).
    #[arg(long, value_name = "DIR")]
    pub(crate) manifests: Vec<PathBuf>,

    /// A tools.jsonl catalog to list and load (its tools have nothing to run them: for
    /// inspection and measurement); a groups.jsonl beside it supplies group descriptions.
    #[arg(long, value_name = "FILE")]
    pub(crate) jsonl: Vec<PathBuf>,

    /// Root directory of the built-in `files` tools (default: the working directory; `serve`
    /// and `catalog` leave the group out when that is the filesystem root or holds the home
    /// directory, as when a desktop app starts the gateway, unless it is given).
    #[arg(long, value_name = "DIR")]
    pub(crate) files_root: Option<PathBuf>,

    /// Let the built-in `files` tools write under the files root.
    #[arg(long)]
    pub(crate) allow_write: bool,

    /// Leave out the built-in groups (time, files, web, prompt_manager, and
    /// js_tool_management with user_tools, the JavaScript tools agents write).
    #[arg(long)]
    pub(crate) no_builtins: bool,
}

/// The model, the conversation, and how a turn runs.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// Send this one message, print the answer and exit (default: interactive).
    #[arg(short, long, value_name = "TEXT")]
    pub(crate) message: Option<String>,

    /// Go on with this stored conversation (its loaded groups come back with it).
    #[arg(long, value_name = "ID")]
    pub(crate) conversation: Option<String>,

    /// Provider wire format: openai (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter) or anthropic.
    /// Overrides TOOLGATE_PROVIDER and [model] provider.
    #[arg(long, value_name = "NAME")]
    pub(crate) provider: Option<String>,

    /// Model name. Overrides TOOLGATE_MODEL and [model] model.
    #[arg(long, value_name = "NAME")]
    pub(crate) model: Option<String>,

    /// Base URL of the API (e.g. http://localhost:11434/v1). Overrides TOOLGATE_BASE_URL.
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,

    /// Wait for whole answers instead of streaming them.
    #[arg(long)]
    pub(crate) no_stream: bool,

    /// How tools reach the model: native (the provider's tool calls), prompted (described in the
    /// system prompt, each reply one JSON call or answer, constrained by response_format on the
    /// openai wire) or prompted-text (calls written as <tool_call> blocks), for models without
    /// tool calls. Overrides TOOLGATE_TOOL_CALLS and [model] tool_calls.
    #[arg(long, value_name = "MODE",
          value_parser = clap::builder::PossibleValuesParser::new(toolgate_llm::ToolCalls::NAMES))]
    pub(crate) tool_calls: Option<String>,

    /// Route each message before the model is called: pre-load the 40 tools that match it best,
    /// across groups ([routing] route_tools; 0 routes groups: those it needs at high confidence,
    /// the recovery groups at medium, the whole catalog at low); settings from [routing] in the
    /// config file. Upstream servers are started at once so their tools can be matched.
    #[arg(long)]
    pub(crate) route: bool,

    /// Base system prompt; the tool-group listing is appended to it.
    #[arg(long, value_name = "TEXT")]
    pub(crate) system_prompt: Option<String>,

    /// Model calls allowed per turn.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) max_model_calls: usize,

    /// Seconds a tool call may run (tools with their own timeout keep it).
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    pub(crate) tool_timeout: f64,

    /// SQLite file holding conversations (default: toolgate/conversations.db in the user's data
    /// directory), or a PostgreSQL URI (postgres://user@host/db; password from PGPASSWORD).
    #[arg(long, value_name = "FILE|URI", conflicts_with = "memory_store")]
    pub(crate) store: Option<PathBuf>,

    /// Keep the conversation in memory only.
    #[arg(long)]
    pub(crate) memory_store: bool,

    #[command(flatten)]
    pub(crate) tools: ToolArgs,
}

/// What the gateway serves, and where.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Speak MCP on stdin/stdout instead of HTTP (for clients that start the gateway).
    #[arg(long)]
    pub(crate) stdio: bool,

    /// Address for streamable HTTP; the endpoint is /mcp. A non-loopback address needs a token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8848")]
    pub(crate) listen: SocketAddr,

    #[command(flatten)]
    pub(crate) tools: ToolArgs,

    /// SQLite file holding sessions (default: toolgate/sessions.db in the user's data directory),
    /// or a PostgreSQL URI shared by several gateways (postgres://user@host/db, or
    /// postgresql://user@/db?host=/socket/dir; password from PGPASSWORD).
    #[arg(long, value_name = "FILE|URI", conflicts_with = "memory_store")]
    pub(crate) store: Option<PathBuf>,

    /// Keep sessions in memory only: a restart forgets them.
    #[arg(long)]
    pub(crate) memory_store: bool,

    /// Append one JSON line per tool call to FILE (overrides [audit] path); arguments are
    /// recorded as their SHA-256 unless [audit] arguments = true.
    #[arg(long, value_name = "FILE")]
    pub(crate) audit_log: Option<PathBuf>,

    /// Offer the find_tool_groups meta-tool whatever the number of groups: it ranks the tools
    /// for a request across groups (settings from [routing] in the config file).
    #[arg(long)]
    pub(crate) route: bool,

    /// Minutes after which an unused session and its history are deleted.
    #[arg(long, value_name = "MINUTES", default_value_t = 24 * 60)]
    pub(crate) session_idle_minutes: u64,

    /// Most sessions held in memory at once; beyond it the longest-idle one leaves memory
    /// (its history stays, and its next request restores it).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub(crate) max_sessions: usize,

    /// Seconds after which a session with no request and no open stream leaves memory (its
    /// history stays, and its next request restores it with its loaded groups).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(crate) session_memory_seconds: u64,

    /// Offer find_tool_groups (groups and their best tools for a request) when there are more
    /// groups than this; --route offers it always.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEARCH_ABOVE_GROUPS)]
    pub(crate) search_above_groups: usize,

    /// On SIGTERM or Ctrl-C, seconds that calls in flight get to finish before the gateway
    /// stops.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub(crate) shutdown_grace_seconds: u64,

    /// Session name for --stdio, so a restarted gateway restores its loaded groups
    /// (default: a new session each start).
    #[arg(long, value_name = "NAME", requires = "stdio")]
    pub(crate) session: Option<String>,

    /// File holding the bearer token HTTP clients must send (else TOOLGATE_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,

    /// Extra accepted Host header value (e.g. gateway.example.com:8848).
    #[arg(long, value_name = "HOST")]
    pub(crate) allowed_host: Vec<String>,

    /// Extra accepted browser Origin (e.g. https://app.example.com:443).
    #[arg(long, value_name = "ORIGIN")]
    pub(crate) allowed_origin: Vec<String>,
}

/// Where the catalog comes from (as for `toolgate serve`, whose upstreams are all started and
/// listed), and how to show it.
#[derive(Debug, Args)]
pub(crate) struct CatalogArgs {
    #[command(flatten)]
    pub(crate) tools: ToolArgs,

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

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
