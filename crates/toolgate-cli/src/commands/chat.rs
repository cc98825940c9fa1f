//! `toolgate chat`: the agent loop in a terminal. The answer streams to
//! stdout; tool calls, retries and token reports go to stderr, so
//! `toolgate chat -m "..." > answer.txt` keeps only the answer.
//!
//! This file sets a chat up (the configuration, the model, the store, the
//! stored agent, the toolbox, the router); [`session`] runs the
//! conversation and [`printer`] shows it.

mod api_key;
mod printer;
mod session;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::store::StoreLocation;
use anyhow::Context;
use toolgate_agent::{Agent, AgentOptions, DEFAULT_SYSTEM_PROMPT, OutcomeLog, SemanticRouting};
use toolgate_core::routing::semantic::EmbeddingsConfig;
use toolgate_core::routing::{Embeddings, Router};
use toolgate_core::{LoadedSchemas, MetaTool, TokenCounter};
use toolgate_llm::{ChatModel, ProviderConfig, ToolCalls};
use toolgate_store::{
    AgentId, AgentRecord, AgentStore, ConversationId, ConversationStore, JsToolStore, MemoryStore,
    RoutingOutcomeStore, SYSTEM_PROMPT, ToolOwner,
};
use toolgate_tools::{JS_TOOL_MANAGEMENT_GROUP, Toolbox, USER_TOOLS_GROUP};

use self::session::{Session, new_conversation_id};
use super::banner::describe_sources;
use super::tool_setup::{TerminalProgress, ToolSetup, embeddings_client};
use crate::cli::{ChatArgs, DEFAULT_SEARCH_ABOVE_GROUPS};
use crate::output::{eprint, init_logging};
use crate::settings::{DEFAULT_CONFIG_FILE, Settings};

/// `--tool-timeout` as a duration.
fn tool_timeout(seconds: f64) -> anyhow::Result<std::time::Duration> {
    toolgate_core::timeout_from_seconds(seconds).with_context(|| {
        format!(
            "--tool-timeout must be a positive number of seconds, at most {} (a day), got {seconds:?}",
            toolgate_core::MAX_TIMEOUT_SECONDS
        )
    })
}

pub(crate) fn run(args: ChatArgs) -> anyhow::Result<()> {
    init_logging();
    // Checked before anything starts.
    tool_timeout(args.tool_timeout)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let settings = Settings::load(args.tools.config.as_deref())?;
        let overrides = ModelOverrides {
            provider: &args.provider,
            model: &args.model,
            base_url: &args.base_url,
            tool_calls: &args.tool_calls,
            no_stream: args.no_stream,
        };
        let provider = provider_config(&overrides, &settings)?;
        let mut endpoint = format!(
            "{} {} at {}",
            provider.kind, provider.model, provider.base_url
        );
        if provider.tool_calls != ToolCalls::Native {
            let _ = write!(endpoint, " ({} tool calls)", provider.tool_calls);
        }
        let mut tools = ToolSetup::new(&args.tools, &settings)?;
        if args.route {
            // The router matches tools by their names and descriptions.
            tools.start_upstreams_eagerly();
        }
        let store_settings = settings.store.clone();
        let loaded_schemas = settings.chat_loaded_schemas(provider.tool_calls);
        let chat = Chat {
            progress: TerminalProgress::on_stderr(),
            model: Model {
                model: toolgate_llm::connect(provider)?,
                loaded_schemas,
            },
            banner: format!("toolgate {} chat: {endpoint}\n", env!("CARGO_PKG_VERSION")),
            args: &args,
            settings,
            tools,
        };
        match crate::store::location(args.store.as_deref(), &store_settings) {
            _ if args.memory_store => {
                chat.start(Arc::new(MemoryStore::new()), String::new())
                    .await
            }
            StoreLocation::Postgres(uri) => {
                let store = crate::store::open_postgres(&uri, &store_settings).await?;
                let line = format!(
                    "  conversations: PostgreSQL {}\n",
                    crate::store::redacted(&uri)
                );
                chat.start(Arc::new(store), line).await
            }
            StoreLocation::Sqlite(path) => {
                let (store, path) = crate::store::open_sqlite(path.as_deref(), "conversations.db")?;
                let line = format!("  conversations: SQLite {}\n", path.display());
                chat.start(Arc::new(store), line).await
            }
        }
    })
}

/// What the command line says about the model (`chat`'s options, and
/// `eval --live`'s).
pub(crate) struct ModelOverrides<'a> {
    pub(crate) provider: &'a Option<String>,
    pub(crate) model: &'a Option<String>,
    pub(crate) base_url: &'a Option<String>,
    pub(crate) tool_calls: &'a Option<String>,
    pub(crate) no_stream: bool,
}

/// Provider settings: the `[model]` table of the configuration file, then the
/// environment, then the command line, each overriding the one before; the
/// key checked before anything starts, and before the first request.
pub(crate) fn provider_config(
    args: &ModelOverrides<'_>,
    settings: &Settings,
) -> anyhow::Result<ProviderConfig> {
    let mut model = settings.model.clone();
    // A key file named in the configuration is relative to it.
    if let Some(file) = &model.api_key_file {
        model.api_key_file = Some(settings.relative_to_file(file));
    }
    let overrides = [
        ("TOOLGATE_PROVIDER", args.provider),
        ("TOOLGATE_MODEL", args.model),
        ("TOOLGATE_BASE_URL", args.base_url),
        ("TOOLGATE_TOOL_CALLS", args.tool_calls),
    ];
    let env = |name: &str| {
        overrides
            .iter()
            .find(|(variable, _)| *variable == name)
            .and_then(|(_, value)| (*value).clone())
            .or_else(|| std::env::var(name).ok())
    };
    let mut config = model
        .resolve(&env)
        .map_err(|error| match (error, settings.path()) {
            // Not a fault of the file: every place a model may come from,
            // the command line's first.
            (toolgate_llm::ConfigError::NoModel, path) => anyhow::anyhow!(
                "no model configured: pass --model NAME, set TOOLGATE_MODEL, or set `model` under \
             [model] in {}",
                path.unwrap_or(Path::new(DEFAULT_CONFIG_FILE)).display()
            ),
            (error, Some(path)) => anyhow::anyhow!("{}: [model]: {error}", path.display()),
            (error, None) => anyhow::anyhow!("{error}"),
        })?;
    if args.no_stream {
        config.stream = false;
    }
    api_key::check(&config, settings.path())?;
    Ok(config)
}

/// What `run` gathered before the store is open.
struct Chat<'a> {
    args: &'a ChatArgs,
    settings: Settings,

    tools: ToolSetup,
    model: Model,
    /// The start-up summary so far.
    banner: String,
    /// On a terminal, the upstreams starting and the tool texts being
    /// embedded, shown until the conversation starts.
    progress: Option<TerminalProgress>,
}

impl Chat<'_> {
    /// Stores the agent, builds the toolbox for it and runs the
    /// conversation; the upstreams stop when it ends.
    async fn start<
        S: ConversationStore + AgentStore + JsToolStore + RoutingOutcomeStore + 'static,
    >(
        mut self,
        store: Arc<S>,
        store_line: String,
    ) -> anyhow::Result<()> {
        let args = self.args;
        let agent = stored_agent(args, &self.settings, store.as_ref()).await?;
        if let Some(builtins) = &mut self.tools.options.builtins {
            builtins.agents = Some(Arc::clone(&store) as Arc<dyn AgentStore>);
        }
        if !agent.tools.is_empty() {
            // An upstream's tools are unknown until it starts: it is enabled by
            // its group id, or not at all.
            self.tools
                .upstreams
                .retain(|upstream| agent.tools.iter().any(|t| t == upstream.name.as_str()));
        }
        // The tools the agent writes are its own; an agent limited to some
        // tools gets them when its list names either group.
        let writes_tools = agent.tools.is_empty()
            || agent
                .tools
                .iter()
                .any(|name| name == JS_TOOL_MANAGEMENT_GROUP || name == USER_TOOLS_GROUP);
        let user_js_tools = if writes_tools {
            self.tools.add_user_js_tools(
                Arc::clone(&store) as Arc<dyn JsToolStore>,
                ToolOwner::new(agent.id.as_str()),
            )?
        } else {
            None
        };
        if let Some(line) = &self.progress {
            self.tools.show_progress(line);
        }
        let config_files: Vec<PathBuf> = self.tools.config_files.clone();
        let manifest_dirs = self.tools.options.manifest_dirs.clone();
        let embeddings = self.embeddings();
        let mut options = self.tools.into_options();
        options.meta_tools = vec![MetaTool::UnloadToolGroup];
        // The gateway's search, offered where it is: it loads the tools it
        // lists, so a miss costs the next best tools, not a whole group.
        super::tool_setup::offer_search(
            &mut options,
            &self.settings.routing,
            DEFAULT_SEARCH_ABOVE_GROUPS,
            embeddings,
        );
        if self.model.loaded_schemas == LoadedSchemas::Conversation {
            // Loaded tools are not listed: the model calls them through it.
            options.meta_tools.push(MetaTool::CallTool);
        }
        let (toolbox, report) = Toolbox::start(options)
            .await
            .context("building the tool catalog")?;
        // [routing] names groups of this catalog, with or without --route.
        toolbox.with_catalog(|catalog| self.settings.routing_taxonomy(catalog))?;
        if let Some(user_js_tools) = &user_js_tools {
            user_js_tools.attach(&toolbox);
        }
        let mut banner = self.banner;
        describe_sources(&mut banner, &report, &config_files, &manifest_dirs);
        banner.push_str(&store_line);
        let _ = writeln!(banner, "  agent: {} ({})", agent.id, agent.name);
        if !agent.tools.is_empty() {
            // An agent that writes tools may call the ones it wrote.
            let mut enabled = agent.tools.clone();
            if user_js_tools.is_some() && !enabled.iter().any(|name| name == USER_TOOLS_GROUP) {
                enabled.push(USER_TOOLS_GROUP.to_owned());
            }
            let unknown = toolbox.restrict_to(&enabled);
            let _ = writeln!(banner, "  agent tools: {}", agent.tools.join(", "));
            if !unknown.is_empty() {
                eprint(&format!(
                    "warning: agent `{}` enables unknown tools or groups: {}\n",
                    agent.id,
                    unknown.join(", ")
                ));
            }
        }
        let agent_id = agent.id;
        let result = run_chat(
            args,
            &self.settings,
            self.model,
            &toolbox,
            store,
            agent_id,
            Opening {
                banner,
                progress: self.progress.as_ref(),
            },
        )
        .await;
        toolbox.shutdown().await;
        result
    }

    /// The local embedding model the search scores with, and the router
    /// with `--route` (which waits for the tool texts to be embedded, and
    /// says when the model is missing); without `--route` a missing model
    /// leaves the search lexical, unsaid.
    fn embeddings(&self) -> Option<Arc<dyn Embeddings>> {
        let config = &self.settings.routing;
        if self.args.route && config.embeddings.is_none() {
            return super::tool_setup::local_embeddings(config, self.progress.as_ref());
        }
        super::tool_setup::find_local_embeddings(config, true)
            .ok()
            .flatten()
    }
}

/// The model, and where loaded schemas go for its kind of tool calls
/// ([`Settings::chat_loaded_schemas`]).
struct Model {
    model: Arc<dyn ChatModel>,
    loaded_schemas: LoadedSchemas,
}

/// What is shown before the conversation: the start-up summary (in the
/// interactive mode), and the progress line until then.
struct Opening<'a> {
    banner: String,
    progress: Option<&'a TerminalProgress>,
}

/// The agent over `toolbox`, with the router when `--route` is on, then
/// the conversation: one message, or interactive.
async fn run_chat<S: ConversationStore + AgentStore + RoutingOutcomeStore + 'static>(
    args: &ChatArgs,
    settings: &Settings,
    model: Model,
    toolbox: &Arc<Toolbox>,
    store: Arc<S>,
    agent_id: AgentId,
    opening: Opening<'_>,
) -> anyhow::Result<()> {
    let Opening { banner, progress } = opening;
    let Model {
        model,
        loaded_schemas,
    } = model;
    let (router, semantic, outcomes) = if args.route {
        let config = &settings.routing;
        // The endpoint's group-level blend when one is configured, else
        // tools scored first, with the local model the search scores with
        // when it is there.
        let embeddings = match &config.embeddings {
            Some(_) => None,
            None => toolbox.meta_tools().embeddings().cloned(),
        };
        let router = toolbox.with_catalog(|catalog| -> anyhow::Result<Router> {
            let taxonomy = settings.turn_taxonomy(catalog)?;
            Ok(match &config.embeddings {
                Some(_) => Router::lexical(catalog, taxonomy).counted(catalog),
                None => Router::hybrid(catalog, taxonomy, embeddings.clone()),
            })
        })?;
        // What earlier runs over the same groups learned, and where this
        // run's outcomes go.
        let (router, outcomes) = if config.learn_online.unwrap_or(true) {
            let catalog = toolbox.with_catalog(super::learned::key);
            let learned = super::learned::outcomes(store.as_ref(), &catalog)
                .await
                .unwrap_or_else(|error| {
                    tracing::warn!(%error, "reading earlier routing outcomes");
                    Vec::new()
                });
            let log = OutcomeLog {
                store: Arc::clone(&store) as Arc<dyn RoutingOutcomeStore>,
                catalog,
            };
            (super::learned::learning(router, &learned), Some(log))
        } else {
            (router, None)
        };
        let semantic = match &config.embeddings {
            Some(settings) => Some(Arc::new(
                semantic_routing(settings, &router, toolbox).await?,
            )),
            None => None,
        };
        (Some(Arc::new(router)), semantic, outcomes)
    } else {
        (None, None, None)
    };
    let options = AgentOptions {
        system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
        max_model_calls: args.max_model_calls.max(1),
        tool_timeout: tool_timeout(args.tool_timeout)?,
        router,
        semantic,
        outcomes,
        // The user at the terminal runs the agent: its calls may use every
        // tool the agent is given.
        authority: toolgate_tools::Authority::everything(),
        loaded_schemas,
        compaction: settings.agent.compaction(),
        load_budget: settings.load_budget,
        deferral: settings.deferral,
    };
    // The router counts with the same counter for its budget.
    let counter = TokenCounter::shared()
        .cloned()
        .context("loading the tokenizer for token reports")?;
    let agent = Agent::new(
        model,
        Arc::clone(toolbox),
        store,
        options,
        Arc::new(counter),
    );
    let conversation = ConversationId::new(
        args.conversation
            .clone()
            .unwrap_or_else(new_conversation_id),
    );
    let mut session = Session {
        agent,
        agent_id,
        toolbox: Arc::clone(toolbox),
        conversation,
        reports: Vec::new(),
    };
    if let Some(line) = progress {
        line.finish();
    }
    session.bind_agent().await?;
    match &args.message {
        Some(text) => session.one_shot(text).await,
        None => session.interactive(banner).await,
    }
}

/// The agent chat speaks as, stored: created from the `[agent]` table on
/// first use; after that the stored agent wins (it may have edited its own
/// prompts with `prompt_manager`), except that `--system-prompt` replaces its
/// system prompt. Returns it as stored.
async fn stored_agent<S: AgentStore>(
    args: &ChatArgs,
    settings: &Settings,
    store: &S,
) -> anyhow::Result<AgentRecord> {
    let table = &settings.agent;
    let id = AgentId::new(table.id.clone().unwrap_or_else(|| "default".to_owned()));
    let stored = store
        .agent(&id)
        .await
        .with_context(|| format!("reading agent `{id}`"))?;
    let mut agent = match stored {
        Some(agent) => agent,
        None => {
            let mut agent = AgentRecord::new(
                id.clone(),
                table.name.clone().unwrap_or_else(|| "Assistant".into()),
            );
            agent.prompts = table.prompts.clone();
            let system = table
                .system_prompt
                .clone()
                .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned());
            agent.prompts.insert(SYSTEM_PROMPT.to_owned(), system);
            agent.tools = table.tools.clone();
            agent
        }
    };
    if let Some(prompt) = &args.system_prompt {
        agent
            .prompts
            .insert(SYSTEM_PROMPT.to_owned(), prompt.clone());
    }
    store
        .save_agent(agent.clone())
        .await
        .with_context(|| format!("storing agent `{id}`"))?;
    Ok(agent)
}

/// The `[routing.embeddings]` endpoint, with every group embedded.
async fn semantic_routing(
    settings: &EmbeddingsConfig,
    router: &Router,
    toolbox: &Arc<Toolbox>,
) -> anyhow::Result<SemanticRouting> {
    let client = embeddings_client(settings)?;
    SemanticRouting::new(client, router, toolbox, settings.weight.unwrap_or(0.5))
        .await
        .context("embedding the tool groups for routing ([routing.embeddings])")
}
