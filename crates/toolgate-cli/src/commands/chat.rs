//! `toolgate chat`: the agent loop in a terminal. The answer streams to
//! stdout; tool calls, retries and token reports go to stderr, so
//! `toolgate chat -m "..." > answer.txt` keeps only the answer.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{
    Agent, AgentError, AgentOptions, CallReport, DEFAULT_SYSTEM_PROMPT, SemanticRouting, TurnEnd,
    TurnEvent, TurnOutcome,
};
use toolgate_core::routing::semantic::EmbeddingsConfig;
use toolgate_core::routing::{Router, Visible};
use toolgate_core::{Encoding, MetaTool, TokenCounter, ToolStatus};
use toolgate_llm::{ChatModel, ModelSettings, ProviderConfig, StreamEvent};
use toolgate_store::{
    AgentId, AgentRecord, AgentStore, ConversationId, ConversationStore, MemoryStore, SYSTEM_PROMPT,
};
use toolgate_tools::Toolbox;

use super::tools::{self, eprint, print};
use crate::cli::ChatArgs;

/// Longest tool argument or result text shown on one line.
const SHOWN_CHARS: usize = 120;

pub(crate) fn run(args: ChatArgs) -> anyhow::Result<()> {
    tools::init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let provider = provider_config(&args)?;
        let endpoint = format!(
            "{} {} at {}",
            provider.kind, provider.model, provider.base_url
        );
        let model = toolgate_llm::connect(provider)?;
        let mut setup = tools::tool_setup(&args.tools)?;
        if args.route {
            // The router matches tools by their names and descriptions.
            setup.start_upstreams_eagerly();
        }
        let config_files = setup.config_files.clone();
        let manifest_dirs = setup.options.manifest_dirs.clone();
        if args.memory_store {
            let store = Arc::new(MemoryStore::new());
            let banner = String::new();
            chat(
                &args,
                model,
                setup,
                store,
                endpoint,
                banner,
                &config_files,
                &manifest_dirs,
            )
            .await
        } else {
            let (store, path) = tools::open_sqlite(args.store.as_deref(), "conversations.db")?;
            let banner = format!("  conversations: SQLite {}\n", path.display());
            let store = Arc::new(store);
            chat(
                &args,
                model,
                setup,
                store,
                endpoint,
                banner,
                &config_files,
                &manifest_dirs,
            )
            .await
        }
    })
}

/// Provider settings: the `[model]` table of the configuration file, then the
/// environment, then the command line, each overriding the one before.
fn provider_config(args: &ChatArgs) -> anyhow::Result<ProviderConfig> {
    let settings = match tools::config_file(args.tools.config.as_deref()) {
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let mut settings = ModelSettings::from_toml_str(&text)
                .with_context(|| format!("{}: [model]", path.display()))?;
            // A key file named in the configuration is relative to it.
            if let (Some(file), Some(dir)) = (&settings.api_key_file, path.parent())
                && file.is_relative()
            {
                settings.api_key_file = Some(dir.join(file));
            }
            settings
        }
        None => ModelSettings::default(),
    };
    let overrides = [
        ("TOOLGATE_PROVIDER", &args.provider),
        ("TOOLGATE_MODEL", &args.model),
        ("TOOLGATE_BASE_URL", &args.base_url),
    ];
    let env = |name: &str| {
        overrides
            .iter()
            .find(|(variable, _)| *variable == name)
            .and_then(|(_, value)| (*value).clone())
            .or_else(|| std::env::var(name).ok())
    };
    let mut config = settings.resolve(&env)?;
    if args.no_stream {
        config.stream = false;
    }
    Ok(config)
}

#[allow(
    clippy::too_many_arguments,
    reason = "what run() gathered, passed once"
)]
async fn chat<S: ConversationStore + AgentStore + 'static>(
    args: &ChatArgs,
    model: Arc<dyn ChatModel>,
    mut setup: tools::ToolSetup,
    store: Arc<S>,
    endpoint: String,
    store_line: String,
    config_files: &[std::path::PathBuf],
    manifest_dirs: &[std::path::PathBuf],
) -> anyhow::Result<()> {
    if !args.tool_timeout.is_finite() || args.tool_timeout <= 0.0 {
        bail!("--tool-timeout must be a positive number of seconds");
    }
    let agent = stored_agent(args, store.as_ref()).await?;
    let agent_id = agent.id.clone();
    if let Some(builtins) = &mut setup.options.builtins {
        builtins.agents = Some(Arc::clone(&store) as Arc<dyn AgentStore>);
    }
    if !agent.tools.is_empty() {
        // An upstream's tools are unknown until it starts: it is enabled by
        // its group id, or not at all.
        setup
            .upstreams
            .retain(|upstream| agent.tools.iter().any(|t| t == upstream.name.as_str()));
    }
    let mut options = setup.into_options();
    options.meta_tools = vec![MetaTool::UnloadToolGroup];
    let (toolbox, report) = Toolbox::start(options)
        .await
        .context("building the tool catalog")?;
    let mut banner = format!("toolgate {} chat: {endpoint}\n", env!("CARGO_PKG_VERSION"));
    tools::describe_sources(&mut banner, &report, config_files, manifest_dirs);
    banner.push_str(&store_line);
    let _ = writeln!(banner, "  agent: {agent_id} ({})", agent.name);
    if !agent.tools.is_empty() {
        let unknown = toolbox.restrict_to(&agent.tools);
        let _ = writeln!(banner, "  agent tools: {}", agent.tools.join(", "));
        if !unknown.is_empty() {
            eprint(&format!(
                "warning: agent `{agent_id}` enables unknown tools or groups: {}\n",
                unknown.join(", ")
            ));
        }
    }
    let result = run_chat(args, model, &toolbox, store, agent_id, banner).await;
    toolbox.shutdown().await;
    result
}

async fn run_chat<S: ConversationStore + AgentStore + 'static>(
    args: &ChatArgs,
    model: Arc<dyn ChatModel>,
    toolbox: &Arc<Toolbox>,
    store: Arc<S>,
    agent_id: AgentId,
    banner: String,
) -> anyhow::Result<()> {
    let (router, semantic) = if args.route {
        let config = tools::routing_config(args.tools.config.as_deref())?;
        let router = toolbox.with_catalog(|catalog| -> anyhow::Result<Router> {
            Ok(Router::lexical(catalog, config.validate(catalog)?))
        })?;
        let semantic = match &config.embeddings {
            Some(settings) => Some(Arc::new(
                semantic_routing(settings, &router, toolbox).await?,
            )),
            None => None,
        };
        (Some(Arc::new(router)), semantic)
    } else {
        (None, None)
    };
    let options = AgentOptions {
        system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
        max_model_calls: args.max_model_calls.max(1),
        tool_timeout: Duration::from_secs_f64(args.tool_timeout),
        router,
        semantic,
    };
    let counter = TokenCounter::new(Encoding::default())
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
    session.bind_agent().await?;
    match &args.message {
        Some(text) => session.one_shot(text).await,
        None => session.interactive(banner).await,
    }
}

/// The `[agent]` table of the configuration file.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentTable {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    system_prompt: Option<String>,
    /// Other prompts, by type.
    #[serde(default)]
    prompts: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    tools: Vec<String>,
}

/// The agent chat speaks as, stored: created from the `[agent]` table on
/// first use; after that the stored agent wins (it may have edited its own
/// prompts with `prompt_manager`), except that `--system-prompt` replaces its
/// system prompt. Returns it as stored.
async fn stored_agent<S: AgentStore>(args: &ChatArgs, store: &S) -> anyhow::Result<AgentRecord> {
    let table = match tools::config_file(args.tools.config.as_deref()) {
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let config: toml::Table =
                toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
            match config.get("agent") {
                Some(value) => value
                    .clone()
                    .try_into::<AgentTable>()
                    .with_context(|| format!("{}: [agent]", path.display()))?,
                None => AgentTable::default(),
            }
        }
        None => AgentTable::default(),
    };
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
    let client = tools::embeddings_client(settings)?;
    SemanticRouting::new(client, router, toolbox, settings.weight.unwrap_or(0.5))
        .await
        .context("embedding the tool groups for routing ([routing.embeddings])")
}

/// One terminal conversation.
struct Session<S> {
    agent: Agent<S>,
    /// The stored agent every conversation here belongs to.
    agent_id: AgentId,
    toolbox: Arc<Toolbox>,
    conversation: ConversationId,
    /// Every model call since the conversation was opened here.
    reports: Vec<CallReport>,
}

impl<S: ConversationStore + AgentStore> Session<S> {
    /// Makes the conversation the agent's, unless it already has an agent
    /// (a resumed conversation keeps its own).
    async fn bind_agent(&self) -> anyhow::Result<()> {
        let store = self.agent.store();
        if store
            .conversation_agent(&self.conversation)
            .await?
            .is_none()
        {
            store
                .set_conversation_agent(&self.conversation, &self.agent_id)
                .await?;
        }
        Ok(())
    }

    async fn one_shot(&mut self, text: &str) -> anyhow::Result<()> {
        let outcome = self.turn(Some(text)).await?;
        if outcome.end == TurnEnd::CallLimit {
            bail!("the model was still calling tools when the model-call limit was reached");
        }
        Ok(())
    }

    async fn interactive(&mut self, mut banner: String) -> anyhow::Result<()> {
        let _ = writeln!(
            banner,
            "Conversation {id} (resume it with --conversation {id}).\n\
             Commands: /groups  /tokens  /clear  /resume  /exit",
            id = self.conversation
        );
        eprint(&banner);
        if self.agent.is_unfinished(&self.conversation).await? {
            eprint(
                "The last turn stopped before the model answered: send a message to go on, \
                 or /resume to let the model finish it.\n",
            );
        }
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        loop {
            eprint("> ");
            let Some(line) = lines.next_line().await.context("reading stdin")? else {
                eprint("\n");
                return Ok(());
            };
            let line = line.trim();
            let result = match line {
                "" => continue,
                "/exit" | "/quit" => return Ok(()),
                "/groups" => self.print_groups().await,
                "/tokens" => {
                    print(&token_table(&self.reports));
                    print(&action_table(&self.toolbox.action_calls()));
                    Ok(())
                }
                "/clear" => {
                    self.conversation = ConversationId::new(new_conversation_id());
                    self.reports.clear();
                    self.bind_agent().await?;
                    eprint(&format!(
                        "New conversation {}: core tools only.\n",
                        self.conversation
                    ));
                    Ok(())
                }
                "/resume" => self.turn(None).await.map(|_| ()),
                "/help" => {
                    eprint(HELP);
                    Ok(())
                }
                command if command.starts_with('/') => {
                    eprint(&format!("Unknown command {command}. {HELP}"));
                    Ok(())
                }
                text => self.turn(Some(text)).await.map(|_| ()),
            };
            if let Err(error) = result {
                eprint(&format!(
                    "error: {error:#}\nThe conversation is kept as far as it got.\n"
                ));
            }
        }
    }

    /// Runs a turn (`None`: finish the stored unfinished one), printing it as
    /// it happens. Ctrl-C cancels it.
    async fn turn(&mut self, text: Option<&str>) -> anyhow::Result<TurnOutcome> {
        let cancel = CancellationToken::new();
        let mut printer = Printer::default();
        let outcome = {
            let mut events = |event: TurnEvent| printer.show(event);
            let turn = async {
                match text {
                    Some(text) => {
                        self.agent
                            .send(&self.conversation, text, &mut events, &cancel)
                            .await
                    }
                    None => {
                        self.agent
                            .resume(&self.conversation, &mut events, &cancel)
                            .await
                    }
                }
            };
            tokio::pin!(turn);
            tokio::select! {
                outcome = &mut turn => outcome,
                _ = tokio::signal::ctrl_c() => {
                    cancel.cancel();
                    turn.await
                }
            }
        };
        printer.end_line();
        self.reports.extend(printer.reports.iter().cloned());
        match outcome {
            Ok(outcome) => {
                eprint(&turn_summary(&outcome.calls));
                if outcome.end == TurnEnd::CallLimit {
                    eprint("The turn stopped at the model-call limit (--max-model-calls).\n");
                }
                Ok(outcome)
            }
            Err(AgentError::Cancelled) => bail!("cancelled"),
            Err(error) => Err(error.into()),
        }
    }

    async fn print_groups(&self) -> anyhow::Result<()> {
        let loaded = self.agent.loaded_groups(&self.conversation).await?;
        let mut out = String::new();
        let catalog = self.agent.toolbox().catalog();
        for group in catalog.groups() {
            let mark = if loaded.contains(&group.id) {
                "loaded"
            } else {
                "      "
            };
            let _ = writeln!(out, "  {mark}  {}: {}", group.id, group.description);
        }
        drop(catalog);
        if loaded.is_empty() {
            out.push_str("No group loaded: the model sees the core tools only.\n");
        }
        print(&out);
        Ok(())
    }
}

const HELP: &str = "/groups lists the groups (and which are loaded), /tokens the token report of \
each model call, /clear starts a new conversation, /resume finishes an interrupted turn, /exit \
quits. Ctrl-C cancels the turn under way.\n";

/// Prints a turn as it happens.
#[derive(Default)]
struct Printer {
    /// The answer's last line has no newline yet.
    mid_line: bool,
    reports: Vec<CallReport>,
}

impl Printer {
    fn show(&mut self, event: TurnEvent) {
        match event {
            TurnEvent::Model(StreamEvent::TextDelta(text)) => {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
                self.mid_line = !text.ends_with('\n');
            }
            TurnEvent::Model(StreamEvent::Retrying {
                attempt,
                delay,
                reason,
            }) => {
                self.end_line();
                eprint(&format!(
                    "  … {reason}; retry {attempt} in {:.1} s\n",
                    delay.as_secs_f64()
                ));
            }
            TurnEvent::Model(StreamEvent::ToolCallStarted { .. }) => {}
            TurnEvent::ModelCalled(report) => self.reports.push(report),
            TurnEvent::Routed(decision) => {
                let shown = match &decision.visible {
                    Visible::Catalog => "the whole catalog".to_owned(),
                    Visible::Groups(groups) => groups
                        .iter()
                        .map(|g| g.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                eprint(&format!(
                    "  ⇢ routed: {shown} ({} tier, confidence {:.2})\n",
                    decision.tier, decision.confidence
                ));
            }
            TurnEvent::Escalated { reason } => {
                self.end_line();
                eprint(&format!("  ⇡ whole catalog from now on: {reason}\n"));
            }
            TurnEvent::ToolStarted {
                name, arguments, ..
            } => {
                self.end_line();
                eprint(&format!("  → {name} {}\n", shorten(&arguments)));
            }
            TurnEvent::ToolFinished {
                name,
                status,
                output,
                ..
            } => {
                self.end_line();
                let mark = match status {
                    ToolStatus::Success => "←",
                    ToolStatus::Error | ToolStatus::Pending => "✗",
                };
                eprint(&format!("  {mark} {name}: {}\n", shorten(&output)));
            }
        }
    }

    fn end_line(&mut self) {
        if self.mid_line {
            print("\n");
            self.mid_line = false;
        }
    }
}

/// The first line of `text`, cut to [`SHOWN_CHARS`].
fn shorten(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let more = text.lines().nth(1).is_some();
    match first.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None if more => format!("{first} …"),
        None => first.to_owned(),
    }
}

/// One line after each turn: what the tools cost against the whole catalog.
fn turn_summary(calls: &[CallReport]) -> String {
    let Some(last) = calls.last() else {
        return String::new();
    };
    let sent: usize = calls.iter().map(|c| c.tool_tokens).sum();
    let all = last.catalog_tokens * calls.len();
    let usage = match calls
        .iter()
        .filter_map(|c| c.usage)
        .reduce(|a, b| toolgate_llm::Usage {
            input_tokens: a.input_tokens + b.input_tokens,
            output_tokens: a.output_tokens + b.output_tokens,
            cached_input_tokens: None,
        }) {
        Some(usage) => format!(
            "; provider counted {} in, {} out",
            usage.input_tokens, usage.output_tokens
        ),
        None => String::new(),
    };
    format!(
        "  [{} model call{}: tool schemas {sent} tokens, {all} with the whole catalog{usage}]\n",
        calls.len(),
        if calls.len() == 1 { "" } else { "s" },
    )
}

/// The `/tokens` table.
fn token_table(reports: &[CallReport]) -> String {
    if reports.is_empty() {
        return "No model call yet in this conversation.\n".to_owned();
    }
    let mut out = format!(
        "{:>4}  {:>6}  {:>13}  {:>14}  {:>6}  {:>12}  {:>13}\n",
        "call", "tools", "schema tokens", "catalog tokens", "saved", "provider in", "provider out"
    );
    for (index, report) in reports.iter().enumerate() {
        let saved = if report.catalog_tokens == 0 {
            0.0
        } else {
            100.0 * (1.0 - report.tool_tokens as f64 / report.catalog_tokens as f64)
        };
        let (input, output) = match report.usage {
            Some(usage) => (
                usage.input_tokens.to_string(),
                usage.output_tokens.to_string(),
            ),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let _ = writeln!(
            out,
            "{:>4}  {:>6}  {:>13}  {:>14}  {:>5.1}%  {:>12}  {:>13}",
            index + 1,
            format!("{}/{}", report.tools_sent, report.catalog_tools),
            report.tool_tokens,
            report.catalog_tokens,
            saved,
            input,
            output
        );
    }
    out
}

fn new_conversation_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("chat-{millis:x}-{:x}", std::process::id())
}

/// Calls of each polymorphic tool's actions since chat started.
fn action_table(calls: &[(String, String, u64)]) -> String {
    if calls.is_empty() {
        return String::new();
    }
    let mut out = String::from("Polymorphic tool calls:\n");
    for (tool, action, count) in calls {
        let _ = writeln!(out, "  {tool}.{action}: {count}");
    }
    out
}
