//! A toolbox over real built-ins and a test source whose groups come from
//! real manifests, a scripted provider, and helpers to read what each
//! request carried.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLockReadGuard};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentOptions, TurnEvent, TurnOutcome};
use toolgate_core::routing::{Router, RoutingConfig};
use toolgate_core::{
    Catalog, Encoding, GroupId, GroupVisibility, MetaTool, TokenCounter, load_manifest_dirs,
};
use toolgate_llm::scripted::{Recorded, ScriptedServer, ScriptedTurn, Wire};
use toolgate_llm::{ProviderConfig, ProviderKind, connect};
use toolgate_store::{ConversationId, MemoryStore};
use toolgate_tools::{
    BuiltinConfig, CallContext, ListedGroup, ListedSource, SourceCall, SourceChange, SourceError,
    SourceListing, SourceOffer, Startup, ToolCallError, ToolOutput, ToolSource, Toolbox,
    ToolboxOptions,
};

/// Every wire format, streaming and not.
pub(crate) const WIRES: [(Wire, bool); 4] = [
    (Wire::OpenAi, true),
    (Wire::OpenAi, false),
    (Wire::Anthropic, true),
    (Wire::Anthropic, false),
];

/// The group whose start fails, like an upstream that cannot run.
pub(crate) const BROKEN_GROUP: &str = "broken";

/// The tools of the test: built-ins (`time`, `files`, `web`), the manifest
/// groups `config` (17 tools, no `_meta`), `crm` (90 tools), `pdf` (with
/// `_meta`) and `slow` (a tool that never finishes), a core tool `echo`,
/// and `broken`, a group whose source fails to start.
#[derive(Debug)]
pub(crate) struct TestHost {
    pub(crate) toolbox: Arc<Toolbox>,
    source: Arc<TestSource>,
    _root: TempDir,
}

/// The manifest groups' source: answers every call with what it was asked,
/// and records it.
#[derive(Debug)]
struct TestSource {
    manifests: Catalog,
    /// Every tool call that reached the source: name and arguments.
    calls: Mutex<Vec<(String, Value)>>,
    /// Calls of `slow_wait` that saw their cancellation.
    cancelled: AtomicUsize,
}

impl TestHost {
    pub(crate) async fn new() -> Arc<Self> {
        Self::offering(&[]).await
    }

    /// The test host with the meta-tools `extra` offered besides
    /// `load_tool_group` and `unload_tool_group`.
    pub(crate) async fn offering(extra: &[MetaTool]) -> Arc<Self> {
        let root = tempfile::tempdir().unwrap();
        let manifests = root.path().join("tools");
        std::fs::create_dir(&manifests).unwrap();
        write_manifests(&manifests);
        std::fs::write(root.path().join("notes.txt"), "hello from notes\n").unwrap();
        let mut catalog = Catalog::new();
        let report = load_manifest_dirs(&mut catalog, &[&manifests]);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let source = Arc::new(TestSource {
            manifests: catalog,
            calls: Mutex::new(Vec::new()),
            cancelled: AtomicUsize::new(0),
        });
        let options = ToolboxOptions {
            meta_tools: [MetaTool::UnloadToolGroup]
                .into_iter()
                .chain(extra.iter().copied())
                .collect(),
            builtins: Some(BuiltinConfig::new(root.path())),
            sources: vec![Arc::clone(&source) as Arc<dyn ToolSource>],
            listed: vec![Arc::new(Broken::new()) as Arc<dyn ListedSource>],
            ..ToolboxOptions::default()
        };
        let (toolbox, _) = Toolbox::start(options).await.unwrap();
        Arc::new(Self {
            toolbox,
            source,
            _root: root,
        })
    }

    pub(crate) fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.toolbox.catalog()
    }

    /// The tools called through the test source, in call order.
    pub(crate) fn called(&self) -> Vec<String> {
        self.source
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Calls of `slow_wait` that saw their cancellation.
    pub(crate) fn cancelled(&self) -> usize {
        self.source.cancelled.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ToolSource for TestSource {
    fn offer(&self) -> SourceOffer {
        let catalog = &self.manifests;
        SourceOffer {
            core_tools: catalog
                .core_tools()
                .filter(|tool| tool.name.as_str() != "load_tool_group")
                .cloned()
                .collect(),
            groups: catalog
                .groups()
                .map(|group| {
                    let tools = catalog.group_tools(group.id.as_str()).cloned().collect();
                    (group.clone(), tools)
                })
                .collect(),
        }
    }

    async fn call(
        &self,
        call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        self.calls
            .lock()
            .unwrap()
            .push((call.tool.clone(), call.arguments.clone()));
        if call.tool == "slow_wait" {
            context.cancel.cancelled().await;
            self.cancelled.fetch_add(1, Ordering::SeqCst);
            return Ok(ToolOutput::error("cancelled"));
        }
        Ok(ToolOutput::text(format!(
            "{} ran with {}",
            call.tool, call.arguments
        )))
    }
}

/// A group whose MCP server cannot start.
#[derive(Debug)]
struct Broken {
    group: ListedGroup,
}

impl Broken {
    fn new() -> Self {
        Self {
            group: ListedGroup {
                id: GroupId::new(BROKEN_GROUP).unwrap(),
                description: Some("Tools: broken_tool".to_owned()),
                startup: Startup::Lazy,
                visibility: GroupVisibility::OnLoad,
            },
        }
    }
}

#[async_trait]
impl ToolSource for Broken {
    async fn call(
        &self,
        _call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        Err(ToolCallError::respond("the broken server is not running"))
    }
}

#[async_trait]
impl ListedSource for Broken {
    fn group(&self) -> &ListedGroup {
        &self.group
    }

    async fn list(&self) -> Result<SourceListing, SourceError> {
        Err(SourceError::new(std::io::Error::other(
            "MCP server 'broken' failed to start: cannot run 'broken-server'",
        )))
    }

    async fn running_generation(&self) -> Option<u64> {
        None
    }

    async fn stop(&self) {}

    async fn shutdown(&self) {}

    async fn changed(&self) -> SourceChange {
        SourceChange::Closed
    }
}

fn write_manifests(dir: &Path) {
    let tool = |name: &str, description: &str| {
        json!({"name": name, "description": description,
               "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}})
    };
    let write = |file: &str, value: Value| {
        std::fs::write(
            dir.join(file),
            serde_json::to_string_pretty(&value).unwrap(),
        )
        .unwrap();
    };
    write(
        "echo.json",
        json!({"name": "echo", "description": "Repeat the text back",
               "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}),
    );
    write(
        "pdf.json",
        json!([
            {"_meta": true, "display_name": "PDF Tools", "description": "Read and merge PDF files"},
            tool("pdf_info", "Page count and metadata of a PDF"),
            tool("pdf_merge", "Merge PDF files"),
        ]),
    );
    write(
        "config.json",
        Value::Array(
            (1..=17)
                .map(|n| {
                    tool(
                        &format!("config_setting_{n}"),
                        "Read a configuration setting",
                    )
                })
                .collect(),
        ),
    );
    write(
        "crm.json",
        Value::Array(
            (1..=90)
                .map(|n| tool(&format!("crm_action_{n}"), "Work with customer records"))
                .collect(),
        ),
    );
    write(
        "slow.json",
        json!([tool("slow_wait", "Wait for something that never comes")]),
    );
}

/// A provider for `wire` pointed at `server`.
pub(crate) fn model(
    server: &ScriptedServer,
    wire: Wire,
    stream: bool,
) -> Arc<dyn toolgate_llm::ChatModel> {
    model_configured(server, wire, stream, |_| {})
}

/// [`model`], its configuration as `adjust` leaves it.
pub(crate) fn model_configured(
    server: &ScriptedServer,
    wire: Wire,
    stream: bool,
    adjust: impl FnOnce(&mut ProviderConfig),
) -> Arc<dyn toolgate_llm::ChatModel> {
    let (kind, base) = match wire {
        Wire::OpenAi => (ProviderKind::OpenAi, format!("{}/v1", server.url())),
        Wire::Anthropic => (ProviderKind::Anthropic, server.url()),
    };
    let mut config = ProviderConfig::new(kind, base, "test-model");
    config.stream = stream;
    config.retry.initial_backoff = Duration::from_millis(20);
    config.read_timeout = Duration::from_secs(5);
    adjust(&mut config);
    connect(config).unwrap()
}

/// An agent over `host`'s tools and `store`, its model scripted by `server`.
pub(crate) fn agent_with<S: toolgate_store::ConversationStore + toolgate_store::AgentStore>(
    server: &ScriptedServer,
    wire: Wire,
    stream: bool,
    host: &TestHost,
    store: Arc<S>,
    options: AgentOptions,
) -> Agent<S> {
    agent_over(model(server, wire, stream), host, store, options)
}

/// An agent over `host`'s tools and `store`, asking `model`.
pub(crate) fn agent_over<S: toolgate_store::ConversationStore + toolgate_store::AgentStore>(
    model: Arc<dyn toolgate_llm::ChatModel>,
    host: &TestHost,
    store: Arc<S>,
    options: AgentOptions,
) -> Agent<S> {
    static COUNTER: OnceLock<Arc<TokenCounter>> = OnceLock::new();
    let counter = COUNTER.get_or_init(|| Arc::new(TokenCounter::new(Encoding::O200kBase).unwrap()));
    Agent::new(
        model,
        Arc::clone(&host.toolbox),
        store,
        options,
        Arc::clone(counter),
    )
}

/// A scripted server, a test host and a memory store, with the server's
/// replies queued.
pub(crate) struct Setup {
    pub(crate) server: ScriptedServer,
    pub(crate) host: Arc<TestHost>,
    pub(crate) agent: Agent<MemoryStore>,
    pub(crate) wire: Wire,
}

impl Setup {
    pub(crate) async fn new(wire: Wire, stream: bool, turns: Vec<ScriptedTurn>) -> Self {
        Self::with_options(wire, stream, turns, AgentOptions::default()).await
    }

    /// With a lexical router over the test host's catalog.
    pub(crate) async fn routed(wire: Wire, stream: bool, turns: Vec<ScriptedTurn>) -> Self {
        Self::routed_by(wire, stream, turns, |router| router)
            .await
            .0
    }

    /// With a lexical router over the test host's catalog, as `adjust`
    /// leaves it; the router is returned too.
    pub(crate) async fn routed_by(
        wire: Wire,
        stream: bool,
        turns: Vec<ScriptedTurn>,
        adjust: impl FnOnce(Router) -> Router,
    ) -> (Self, Arc<Router>) {
        let host = TestHost::new().await;
        let router = {
            let catalog = host.catalog();
            let taxonomy = RoutingConfig::default().validate(&catalog).unwrap();
            Arc::new(adjust(Router::lexical(&catalog, taxonomy)))
        };
        let options = AgentOptions {
            router: Some(Arc::clone(&router)),
            ..AgentOptions::default()
        };
        (
            Self::with_host_for_tests(wire, stream, turns, options, host).await,
            router,
        )
    }

    pub(crate) async fn with_options(
        wire: Wire,
        stream: bool,
        turns: Vec<ScriptedTurn>,
        options: AgentOptions,
    ) -> Self {
        Self::with_host_for_tests(wire, stream, turns, options, TestHost::new().await).await
    }

    pub(crate) async fn with_host_for_tests(
        wire: Wire,
        stream: bool,
        turns: Vec<ScriptedTurn>,
        options: AgentOptions,
        host: Arc<TestHost>,
    ) -> Self {
        let server = ScriptedServer::start().await.unwrap();
        for turn in turns {
            server.push(turn.reply(wire, stream));
        }
        let agent = agent_with(
            &server,
            wire,
            stream,
            &host,
            Arc::new(MemoryStore::new()),
            options,
        );
        Self {
            server,
            host,
            agent,
            wire,
        }
    }

    /// Sends `text` in `conversation`, collecting the events.
    pub(crate) async fn send(
        &self,
        conversation: &ConversationId,
        text: &str,
    ) -> (TurnOutcome, Vec<TurnEvent>) {
        let mut events = Vec::new();
        let outcome = self
            .agent
            .send(
                conversation,
                text,
                &mut |event| events.push(event),
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        (outcome, events)
    }

    /// The tool names each recorded request offered.
    pub(crate) fn tools_per_request(&self) -> Vec<Vec<String>> {
        self.server
            .requests()
            .iter()
            .map(|request| tool_names(request, self.wire))
            .collect()
    }
}

/// The tool names a request offered, in order.
pub(crate) fn tool_names(request: &Recorded, wire: Wire) -> Vec<String> {
    let tools = request.body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    tools
        .iter()
        .map(|tool| {
            let name = match wire {
                Wire::OpenAi => &tool["function"]["name"],
                Wire::Anthropic => &tool["name"],
            };
            name.as_str().unwrap().to_owned()
        })
        .collect()
}

/// A request's system prompt.
pub(crate) fn system_prompt(request: &Recorded, wire: Wire) -> String {
    match wire {
        Wire::OpenAi => {
            let first = &request.body["messages"][0];
            assert_eq!(first["role"], "system");
            first["content"].as_str().unwrap().to_owned()
        }
        Wire::Anthropic => request.body["system"].as_str().unwrap().to_owned(),
    }
}

/// The text of every tool result a request carried, in order.
pub(crate) fn tool_results(request: &Recorded, wire: Wire) -> Vec<String> {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    match wire {
        Wire::OpenAi => messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect(),
        Wire::Anthropic => messages
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|block| block["type"] == "tool_result")
            .map(|block| block["content"].as_str().unwrap().to_owned())
            .collect(),
    }
}

/// The user texts a request carried, in order.
pub(crate) fn user_texts(request: &Recorded, wire: Wire) -> Vec<String> {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| match (wire, &m["content"]) {
            (_, Value::String(text)) => vec![text.clone()],
            (_, Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .map(|b| b["text"].as_str().unwrap().to_owned())
                .collect(),
            _ => vec![],
        })
        .collect()
}

/// Core tools the test host offers, in catalog order.
pub(crate) fn core_tools() -> Vec<String> {
    vec![
        "load_tool_group".to_owned(),
        "unload_tool_group".to_owned(),
        "echo".to_owned(),
    ]
}

/// `names` with `prefix`-ed tools counted.
pub(crate) fn count_prefixed(names: &[String], prefix: &str) -> usize {
    names.iter().filter(|n| n.starts_with(prefix)).count()
}

/// Tokens of `group`'s schemas in `host`'s catalog, counted as the agent
/// counts them (o200k_base).
pub(crate) fn group_tokens(host: &TestHost, group: &str) -> usize {
    let counter = toolgate_core::TokenCounter::new(toolgate_core::Encoding::O200kBase).unwrap();
    host.catalog()
        .group_tools(group)
        .map(|tool| counter.tool(tool))
        .sum()
}

/// The core tools, then `more`: a request's tool names.
pub(crate) fn with(more: &[&str]) -> Vec<String> {
    core_tools()
        .into_iter()
        .chain(more.iter().map(|s| (*s).to_owned()))
        .collect()
}
