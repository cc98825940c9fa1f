//! Restore equals memory (`session_restore`): one client's session driven
//! through two gateways with the same operations — loads (whole, or of
//! named tools), searches that load some of a group's tools, unloads, loads
//! past the load budget, calls direct and through `call_tool`, and reloads
//! of the client's policy that allow more or less. The reference gateway holds the session in memory all
//! along; the gateway under test also forgets it (idle eviction) or restarts
//! on the same store (memory, SQLite, PostgreSQL) at random steps, and
//! rebuilds it from history. After every step both list the same tools, in
//! the same order, and every call answers the same.
//!
//! The tools answer in-process (their own name and group), so only the
//! sessions differ: a group of three, a group of two, and a lazy source of
//! five tools, listed only once a session needs it (the case a restore once
//! widened to the whole group).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use proptest::prelude::*;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{
    FoundTools, GroupId, GroupVisibility, LoadBudget, LoadedSchemas, ToolDefinition, ToolGroup,
    ToolName, ToolPolicy,
};
use toolgate_fuzz::{Target, fuzz};
use toolgate_mcp::{Access, ClientName, Gateway, GatewayOptions};
use toolgate_store::{
    ConversationId, ConversationStore, MemoryStore, PostgresOptions, PostgresStore, SqliteStore,
};
use toolgate_tools::{
    CallContext, ListedGroup, ListedSource, SourceCall, SourceChange, SourceError, SourceListing,
    SourceOffer, SourceTool, Startup, ToolCallError, ToolOutput, ToolSource, ToolboxOptions,
};

/// The tools of each group, by group.
const ALPHA: [&str; 3] = ["alpha_scan", "alpha_sort", "alpha_merge"];
const BETA: [&str; 2] = ["beta_send", "beta_read"];
const LAZY: [&str; 5] = [
    "lazy_paint",
    "lazy_crop",
    "lazy_blur",
    "lazy_rotate",
    "lazy_print",
];

/// Every tool name, and a name no tool has.
fn every_name() -> Vec<&'static str> {
    let mut names = vec!["nowhere"];
    names.extend(ALPHA);
    names.extend(BETA);
    names.extend(LAZY);
    names
}

const GROUPS: [&str; 4] = ["alpha", "beta", "lazy", "ghost"];

/// Requests the search ranks the groups for.
const QUERIES: [&str; 4] = [
    "scan and sort the records",
    "send a message",
    "paint and crop the picture",
    "rotate then print",
];

fn schema() -> Value {
    json!({"type": "object", "properties": {}})
}

fn describe(name: &str) -> String {
    let verb = name.split('_').nth(1).unwrap_or(name);
    format!("{verb} things: the {name} tool")
}

/// The groups every gateway has from the start.
#[derive(Debug)]
struct Known;

#[async_trait]
impl ToolSource for Known {
    fn offer(&self) -> SourceOffer {
        let group = |id: &str, tools: &[&str]| {
            let group = ToolGroup::new(GroupId::new(id).unwrap(), id, format!("{id} tools"));
            let tools = tools
                .iter()
                .map(|name| {
                    ToolDefinition::new(ToolName::new(*name).unwrap(), describe(name), schema())
                        .unwrap()
                })
                .collect();
            (group, tools)
        };
        SourceOffer {
            core_tools: Vec::new(),
            groups: vec![group("alpha", &ALPHA), group("beta", &BETA)],
        }
    }

    async fn call(
        &self,
        call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        Ok(ran(&call))
    }
}

/// What every tool answers: that it ran.
fn ran(call: &SourceCall) -> ToolOutput {
    ToolOutput::text(format!("{} ran", call.tool))
}

/// A source listed only when a session needs its group.
#[derive(Debug)]
struct Lazy {
    group: ListedGroup,
    generation: AtomicU64,
}

impl Lazy {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            group: ListedGroup {
                id: GroupId::new("lazy").unwrap(),
                description: Some("lazy image tools".to_owned()),
                startup: Startup::Lazy,
                visibility: GroupVisibility::OnLoad,
            },
            generation: AtomicU64::new(0),
        })
    }
}

#[async_trait]
impl ToolSource for Lazy {
    async fn call(
        &self,
        call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        Ok(ran(&call))
    }
}

#[async_trait]
impl ListedSource for Lazy {
    fn group(&self) -> &ListedGroup {
        &self.group
    }

    async fn list(&self) -> Result<SourceListing, SourceError> {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let tools = LAZY
            .iter()
            .map(|name| {
                let listing =
                    json!({"name": name, "description": describe(name), "inputSchema": schema()});
                SourceTool {
                    name: (*name).to_owned(),
                    description: describe(name),
                    input_schema: schema(),
                    annotations: None,
                    listing: listing.as_object().unwrap().clone(),
                }
            })
            .collect();
        Ok(SourceListing {
            tools,
            about: None,
            generation,
        })
    }

    async fn running_generation(&self) -> Option<u64> {
        match self.generation.load(Ordering::SeqCst) {
            0 => None,
            generation => Some(generation),
        }
    }

    async fn stop(&self) {}

    async fn shutdown(&self) {}

    async fn changed(&self) -> SourceChange {
        std::future::pending().await
    }
}

/// The client's policies a reload chooses among: everything, less, more.
fn policies() -> Vec<ToolPolicy> {
    let set = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect();
    vec![
        ToolPolicy::default(),
        ToolPolicy {
            deny_tools: set(&["alpha_sort", "lazy_blur"]),
            ..ToolPolicy::default()
        },
        ToolPolicy {
            deny_groups: set(&["beta"]),
            ..ToolPolicy::default()
        },
        ToolPolicy {
            allow_groups: Some(set(&["alpha", "lazy"])),
            deny_tools: set(&["lazy_paint"]),
            ..ToolPolicy::default()
        },
    ]
}

#[derive(Clone, Debug)]
enum Step {
    Load(&'static str),
    /// `load_tool_group` naming these tools of the group.
    LoadNamed(&'static str, Vec<&'static str>),
    Unload(&'static str),
    Find(&'static str),
    Call(&'static str),
    CallThrough(&'static str),
    /// The client's policy becomes this one of [`policies`].
    Reload(usize),
    /// The gateway under test forgets the session (idle eviction).
    Evict,
    /// The gateway under test restarts on the same store.
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    let group = prop::sample::select(GROUPS.to_vec());
    // Mostly the first tool of each group, so that calls find their group
    // loaded often, and so decide what the load budget unloads.
    let name = prop_oneof![
        3 => prop::sample::select(vec!["alpha_scan", "beta_send", "lazy_paint", "lazy_crop"]),
        1 => prop::sample::select(every_name()),
    ];
    let named = prop::collection::vec(prop::sample::select(every_name()), 1..3);
    prop_oneof![
        5 => group.clone().prop_map(Step::Load),
        3 => (group.clone(), named).prop_map(|(group, tools)| Step::LoadNamed(group, tools)),
        2 => group.prop_map(Step::Unload),
        3 => prop::sample::select(QUERIES.to_vec()).prop_map(Step::Find),
        5 => name.clone().prop_map(Step::Call),
        2 => name.prop_map(Step::CallThrough),
        1 => (0..policies().len()).prop_map(Step::Reload),
        2 => Just(Step::Evict),
        2 => Just(Step::Restart),
    ]
}

/// Where the gateway under test keeps its sessions.
#[derive(Clone, Copy, Debug)]
enum StoreKind {
    Memory,
    Sqlite,
    Postgres,
}

#[derive(Clone, Debug)]
struct Case {
    schemas: LoadedSchemas,
    /// Tokens the loaded groups may hold: none, or room for one group, two,
    /// or two of the three (alpha's tools are 99 tokens, beta's 66, lazy's
    /// 165).
    budget: LoadBudget,
    steps: Vec<Step>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::select(vec![LoadedSchemas::ToolList, LoadedSchemas::Conversation]),
        prop::sample::select(vec![
            LoadBudget::Unlimited,
            LoadBudget::Tokens(120),
            LoadBudget::Tokens(200),
            LoadBudget::Tokens(270),
            LoadBudget::Tokens(270),
        ]),
        prop::collection::vec(step(), 4..18),
    )
        .prop_map(|(schemas, budget, steps)| Case {
            schemas,
            budget,
            steps,
        })
}

fn client() -> ClientName {
    ClientName::new("alice").unwrap()
}

fn gateway_options(case: &Case, policy: &ToolPolicy) -> GatewayOptions {
    GatewayOptions {
        tools: ToolboxOptions {
            sources: vec![Arc::new(Known) as Arc<dyn ToolSource>],
            listed: vec![Lazy::new() as Arc<dyn ListedSource>],
            found_tools: FoundTools::Loaded,
            ..ToolboxOptions::default()
        },
        upstreams: Vec::new(),
        session_idle_timeout: Duration::from_secs(3600),
        routing: Some(RoutingConfig {
            search_tools: Some(2),
            ..RoutingConfig::default()
        }),
        audit: None,
        rate_limits: Default::default(),
        policies: Arc::new(HashMap::from([(client(), policy.clone())])),
        loaded_schemas: case.schemas,
        load_budget: case.budget,
        deferral: toolgate_core::Deferral::Always,
        context_window: toolgate_core::DEFAULT_CONTEXT_WINDOW,
    }
}

/// What a request answered, as compared: its text and whether it failed.
fn answer(result: &CallToolResult) -> (String, bool) {
    let text = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (text, result.is_error == Some(true))
}

/// One gateway serving the client's session.
struct Side<S> {
    gateway: Arc<Gateway<S>>,
    session: ConversationId,
}

impl<S: ConversationStore + 'static> Side<S> {
    async fn start(store: S, case: &Case, policy: &ToolPolicy, session: &ConversationId) -> Self {
        let (gateway, _) = Gateway::start(gateway_options(case, policy), store)
            .await
            .unwrap();
        Self {
            gateway,
            session: session.clone(),
        }
    }

    async fn call(&self, name: &str, arguments: Value) -> (String, bool) {
        let scope = self
            .gateway
            .client_scope(Some(self.session.clone()), client())
            .await;
        let arguments: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
        let result = self
            .gateway
            .call_tool(&scope, name, Some(arguments))
            .await
            .unwrap();
        answer(&result)
    }

    async fn list(&self) -> Vec<String> {
        let scope = self
            .gateway
            .client_scope(Some(self.session.clone()), client())
            .await;
        self.gateway
            .list_tools(&scope)
            .await
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }

    async fn reload(&self, policy: &ToolPolicy) {
        let access = Access {
            policies: HashMap::from([(client(), Arc::new(policy.clone()))]),
            ..Access::default()
        };
        self.gateway.update_access(access).await;
    }

    async fn lazy_listed(&self) -> bool {
        self.gateway
            .with_catalog(|catalog| catalog.group_tools("lazy").count() > 0)
    }
}

/// Runs `case` on a reference gateway (memory, never restored) and one on
/// the store `open` makes, comparing after every step.
async fn run<S, F, Fut>(case: &Case, session: ConversationId, open: F) -> Result<(), String>
where
    S: ConversationStore + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let policies = policies();
    let mut policy = &policies[0];
    let reference = Side::start(MemoryStore::new(), case, policy, &session).await;
    let mut tested = Side::start(open().await, case, policy, &session).await;
    for (index, step) in case.steps.iter().enumerate() {
        let mut answers = None;
        match step {
            Step::Load(group) | Step::Unload(group) => {
                let tool = match step {
                    Step::Load(_) => "load_tool_group",
                    _ => "unload_tool_group",
                };
                let arguments = json!({ "group_name": group });
                answers = Some((
                    reference.call(tool, arguments.clone()).await,
                    tested.call(tool, arguments).await,
                ));
            }
            Step::LoadNamed(group, tools) => {
                let arguments = json!({ "group_name": group, "tools": tools });
                answers = Some((
                    reference.call("load_tool_group", arguments.clone()).await,
                    tested.call("load_tool_group", arguments).await,
                ));
            }
            Step::Find(query) => {
                let arguments = json!({ "query": query });
                answers = Some((
                    reference.call("find_tool_groups", arguments.clone()).await,
                    tested.call("find_tool_groups", arguments).await,
                ));
            }
            Step::Call(name) => {
                answers = Some((
                    reference.call(name, json!({})).await,
                    tested.call(name, json!({})).await,
                ));
            }
            Step::CallThrough(name) => {
                let arguments = json!({ "name": name, "arguments": {} });
                answers = Some((
                    reference.call("call_tool", arguments.clone()).await,
                    tested.call("call_tool", arguments).await,
                ));
            }
            Step::Reload(choice) => {
                policy = &policies[*choice];
                reference.reload(policy).await;
                tested.reload(policy).await;
            }
            Step::Evict => tested.gateway.sessions().forget(&session).await,
            Step::Restart => {
                tested.gateway.shutdown().await;
                tested = Side::start(open().await, case, policy, &session).await;
            }
        }
        if let Some((expected, got)) = answers
            && expected != got
        {
            return Err(format!(
                "step {index} {step:?} answered {got:?}, not {expected:?}"
            ));
        }
        // The first request after a restart restores the session while the
        // lazy source is not listed; then the catalogs are made alike, so
        // that a search ranks the same tools in both.
        let (expected, got) = (reference.list().await, tested.list().await);
        if expected != got {
            return Err(format!(
                "after step {index} {step:?} the list is {got:?}, not {expected:?}"
            ));
        }
        if reference.lazy_listed().await && !tested.lazy_listed().await {
            tested.gateway.toolbox().prepare("lazy").await.unwrap();
        }
    }
    // Every call answers the same at the end.
    for name in every_name() {
        let (expected, got) = (
            reference.call(name, json!({})).await,
            tested.call(name, json!({})).await,
        );
        if expected != got {
            return Err(format!(
                "at the end {name} answered {got:?}, not {expected:?}"
            ));
        }
    }
    tested.gateway.shutdown().await;
    Ok(())
}

/// A session id no earlier case used (the stores outlive the cases).
fn session_id(kind: StoreKind) -> ConversationId {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    ConversationId::new(format!(
        "restore-{kind:?}-{nanos}-{}",
        NEXT.fetch_add(1, Ordering::SeqCst)
    ))
}

fn check(kind: StoreKind, cases: u32) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(MemoryStore::new());
    let name = match kind {
        StoreKind::Memory => "session_restore_memory",
        StoreKind::Sqlite => "session_restore_sqlite",
        StoreKind::Postgres => "session_restore_postgres",
    };
    let target = Target::new(name, cases);
    fuzz(target, case(), &[], |case| {
        let session = session_id(kind);
        let outcome = runtime.block_on(async {
            match kind {
                StoreKind::Memory => run(&case, session, || async { Arc::clone(&memory) }).await,
                StoreKind::Sqlite => {
                    let path = dir.path().join("sessions.db");
                    run(&case, session, || async { SqliteStore::open(&path).unwrap() }).await
                }
                StoreKind::Postgres => {
                    let url = std::env::var("TOOLGATE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
                        panic!("TOOLGATE_TEST_POSTGRES_URL is not set: run the tests with ./scripts/test")
                    });
                    run(&case, session, || async {
                        PostgresStore::connect(&PostgresOptions::new(&url))
                            .await
                            .unwrap()
                    })
                    .await
                }
            }
        });
        outcome.map_err(TestCaseError::fail)
    });
}

#[test]
fn fuzz_session_restore_memory() {
    check(StoreKind::Memory, 160);
}

#[test]
fn fuzz_session_restore_sqlite() {
    check(StoreKind::Sqlite, 96);
}

#[test]
fn fuzz_session_restore_postgres() {
    check(StoreKind::Postgres, 48);
}
