//! A restored session is the live one: what a session lists and may call
//! after a restart on its store is what it listed before, whatever the
//! catalog held while it was restored (a lazy upstream not listed yet), and
//! whatever the client's policy did meanwhile (a reload hiding or showing a
//! group, a tool). The load budget counts what a policy hides, and a
//! `tools/call` looks its session up once.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_core::{Encoding, LoadBudget, Message, TokenCounter, ToolPolicy, ToolStatus};
use toolgate_mcp::{Access, ClientName, Clients, Gateway, GatewayOptions, HttpOptions, TokenHash};
use toolgate_store::{
    ConversationId, ConversationStore, MemoryStore, MessageId, SqliteStore, StoredMessage,
};

use super::policies::{ALICE, call, load, open, tools};
use super::search_loads::searching;
use super::support::{Served, connect, loopback, options, serve, tool_names};
use super::upstreams::{peers, stdio};

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

fn alice() -> ClientName {
    ClientName::new("alice").unwrap()
}

/// Alice's token admits her; `policy` is what she may use.
fn with_alice(mut options: GatewayOptions, policy: ToolPolicy) -> (GatewayOptions, HttpOptions) {
    options.policies = Arc::new(HashMap::from([(alice(), policy)]));
    let clients = Clients::new([(alice(), TokenHash::of(ALICE))]).unwrap();
    let http = HttpOptions {
        clients,
        ..HttpOptions::default()
    };
    (options, http)
}

async fn reload<S: ConversationStore + 'static>(gateway: &Gateway<S>, policy: ToolPolicy) {
    let clients = gateway.access().clients.clone();
    gateway
        .update_access(Access {
            clients,
            policies: HashMap::from([(alice(), Arc::new(policy))]),
            ..Access::default()
        })
        .await;
}

#[tokio::test]
async fn a_search_that_loaded_some_tools_of_a_lazy_upstream_restores_as_those_tools() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let everything = || {
        stdio(
            "everything",
            peers().node_bin.join("mcp-server-everything"),
            &[],
        )
    };
    let mut options = searching(root.path(), 3);
    options.upstreams = vec![everything()];
    let first = serve(
        options.clone(),
        SqliteStore::open(&db).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let address = first.address;
    // Another client's load starts the upstream: its tools are known.
    let (other, _) = connect(&first.url).await;
    super::support::load(&other, "everything").await;
    let all: Vec<String> = first.gateway.with_catalog(|catalog| {
        catalog
            .group_tools("everything")
            .map(|tool| tool.name.to_string())
            .collect()
    });
    assert!(all.len() > 5, "{all:?}");

    let (client, _) = connect(&first.url).await;
    let found = super::support::call(
        &client,
        "find_tool_groups",
        json!({"query": "echo back a message and add two numbers"}),
    )
    .await;
    let listed = tool_names(&client).await;
    let loaded: Vec<&String> = listed.iter().filter(|name| all.contains(name)).collect();
    assert!(
        !loaded.is_empty() && loaded.len() < all.len(),
        "{listed:?}: {}",
        super::support::text(&found)
    );
    first.stop().await;

    // Restored where the upstream has not been listed yet.
    let second = serve(
        options,
        SqliteStore::open(&db).unwrap(),
        address,
        HttpOptions::default(),
    )
    .await;
    assert_eq!(tool_names(&client).await, listed);
    second.stop().await;
}

#[tokio::test]
async fn a_search_under_a_policy_restores_as_it_lives_after_the_policy_changes() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let no_convert = ToolPolicy {
        deny_tools: BTreeSet::from(["time_convert".to_owned()]),
        ..ToolPolicy::default()
    };
    let (options, http) = with_alice(searching(root.path(), 2), no_convert);
    let first = serve(
        options.clone(),
        SqliteStore::open(&db).unwrap(),
        loopback(),
        http.clone(),
    )
    .await;
    let address = first.address;
    let (session, _) = open(address, ALICE).await;
    let (found, error) = call(
        address,
        ALICE,
        &session,
        "find_tool_groups",
        json!({"query": "what time is it now"}),
    )
    .await;
    assert!(!error && found.contains("time_now"), "{found}");
    // Her policy allows time_convert now: what the live session lists...
    reload(&first.gateway, ToolPolicy::default()).await;
    let live = names(&tools(address, ALICE, &session).await);
    assert!(live.contains(&"time_now".to_owned()), "{live:?}");
    first.stop().await;

    // ...a restarted gateway lists too.
    let mut allowed = options;
    allowed.policies = Arc::new(HashMap::from([(alice(), ToolPolicy::default())]));
    let second = serve(allowed, SqliteStore::open(&db).unwrap(), address, http).await;
    assert_eq!(names(&tools(address, ALICE, &session).await), live);
    second.stop().await;
}

/// Tokens of the loaded tools `listed` names (core tools left out), as the
/// budget counts them.
fn loaded_tokens<S: ConversationStore + 'static>(gateway: &Gateway<S>, listed: &[String]) -> usize {
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    gateway.with_catalog(|catalog| {
        listed
            .iter()
            .filter_map(|name| catalog.tool(name))
            .filter(|tool| tool.group.is_some())
            .map(|tool| counter.tool(tool.definition))
            .sum()
    })
}

fn group_tokens<S: ConversationStore + 'static>(gateway: &Gateway<S>, group: &str) -> usize {
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    gateway.with_catalog(|catalog| {
        catalog
            .group_tools(group)
            .map(|tool| counter.tool(tool))
            .sum()
    })
}

/// A gateway over `root`'s tools for everyone, to measure its groups with
/// before serving the one a test is about.
async fn measuring(root: &Path) -> Served<MemoryStore> {
    serve(
        options(root, vec![]),
        MemoryStore::new(),
        loopback(),
        HttpOptions::default(),
    )
    .await
}

#[tokio::test]
async fn a_group_a_policy_hides_still_counts_toward_the_load_budget() {
    let root = tempfile::tempdir().unwrap();
    let measuring = measuring(root.path()).await;
    let (time, files, web) = (
        group_tokens(&measuring.gateway, "time"),
        group_tokens(&measuring.gateway, "files"),
        group_tokens(&measuring.gateway, "web"),
    );
    measuring.stop().await;
    // Room for any two of the three, not for all of them.
    let budget = time + files + web - time.min(files).min(web);
    let mut budgeted = options(root.path(), vec![]);
    budgeted.load_budget = LoadBudget::Tokens(budget);
    let (budgeted, http) = with_alice(budgeted, ToolPolicy::default());
    let served = serve(budgeted, MemoryStore::new(), loopback(), http).await;
    let address = served.address;
    let (session, _) = open(address, ALICE).await;
    assert!(!load(address, ALICE, &session, "time").await.1);
    assert!(!load(address, ALICE, &session, "files").await.1);
    // Files hidden from her, and web loaded: files still counts.
    reload(
        &served.gateway,
        ToolPolicy {
            deny_groups: BTreeSet::from(["files".to_owned()]),
            ..ToolPolicy::default()
        },
    )
    .await;
    let (web_loaded, error) = load(address, ALICE, &session, "web").await;
    assert!(!error, "{web_loaded}");
    assert!(web_loaded.contains("Unloaded '"), "{web_loaded}");
    // Shown again, the session holds no more than its budget.
    reload(&served.gateway, ToolPolicy::default()).await;
    let listed = names(&tools(address, ALICE, &session).await);
    let held = loaded_tokens(&served.gateway, &listed);
    assert!(
        held <= budget,
        "{held} tokens held, budget {budget}: {listed:?}"
    );
    served.stop().await;
}

#[tokio::test]
async fn a_load_is_held_to_the_window_by_the_tools_the_caller_sees() {
    let root = tempfile::tempdir().unwrap();
    let measuring = measuring(root.path()).await;
    let files = group_tokens(&measuring.gateway, "files");
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let (hidden, hidden_tokens) = measuring.gateway.with_catalog(|catalog| {
        let tool = catalog.group_tools("files").next().unwrap();
        (tool.name.to_string(), counter.tool(tool))
    });
    measuring.stop().await;
    // Alice may not see one files tool; the window's quarter is what she
    // sees of the group, short of the whole.
    let mut small = options(root.path(), vec![]);
    small.context_window = 4 * (files - hidden_tokens);
    let policy = ToolPolicy {
        deny_tools: BTreeSet::from([hidden.clone()]),
        ..ToolPolicy::default()
    };
    let (small, http) = with_alice(small, policy);
    let served = serve(small, MemoryStore::new(), loopback(), http).await;
    let (session, _) = open(served.address, ALICE).await;
    let (loaded, error) = load(served.address, ALICE, &session, "files").await;
    assert!(!error, "the tools she sees fit: {loaded}");
    assert!(!loaded.contains(&hidden), "{loaded}");
    served.stop().await;
}

/// A store that says it is shared (so a session is checked against it on
/// every lookup) and counts those checks.
#[derive(Debug, Default)]
struct Counted {
    store: MemoryStore,
    lookups: Arc<AtomicUsize>,
}

impl ConversationStore for Counted {
    async fn append(
        &self,
        conversation: &ConversationId,
        message: Message,
    ) -> toolgate_store::Result<MessageId> {
        self.store.append(conversation, message).await
    }

    async fn append_after(
        &self,
        conversation: &ConversationId,
        last: Option<MessageId>,
        message: Message,
    ) -> toolgate_store::Result<Option<MessageId>> {
        self.store.append_after(conversation, last, message).await
    }

    async fn messages(
        &self,
        conversation: &ConversationId,
    ) -> toolgate_store::Result<Vec<StoredMessage>> {
        self.store.messages(conversation).await
    }

    async fn set_tool_status(
        &self,
        conversation: &ConversationId,
        tool_call_id: &str,
        status: ToolStatus,
    ) -> toolgate_store::Result<bool> {
        self.store
            .set_tool_status(conversation, tool_call_id, status)
            .await
    }

    async fn touch(&self, conversation: &ConversationId) -> toolgate_store::Result<bool> {
        self.store.touch(conversation).await
    }

    async fn last_message_id(
        &self,
        conversation: &ConversationId,
    ) -> toolgate_store::Result<Option<MessageId>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.store.last_message_id(conversation).await
    }

    fn is_shared(&self) -> bool {
        true
    }

    async fn exists(&self, conversation: &ConversationId) -> toolgate_store::Result<bool> {
        self.store.exists(conversation).await
    }

    async fn delete(&self, conversation: &ConversationId) -> toolgate_store::Result<bool> {
        self.store.delete(conversation).await
    }

    async fn expire_idle(&self, cutoff: SystemTime) -> toolgate_store::Result<usize> {
        self.store.expire_idle(cutoff).await
    }
}

async fn lookups_of_a_call(
    served: &Served<Counted>,
    lookups: &AtomicUsize,
    session: &str,
    tool: &str,
    arguments: Value,
) -> usize {
    let before = lookups.load(Ordering::SeqCst);
    let (text, error) = call(served.address, ALICE, session, tool, arguments).await;
    assert!(!error, "{tool}: {text}");
    lookups.load(Ordering::SeqCst) - before
}

#[tokio::test]
async fn a_tool_call_looks_its_session_up_once() {
    let root = tempfile::tempdir().unwrap();
    let store = Counted::default();
    let lookups = Arc::clone(&store.lookups);
    // Every path that once looked the session up again: loaded schemas in
    // the conversation, and a load budget.
    let mut options = options(root.path(), vec![]);
    options.loaded_schemas = toolgate_core::LoadedSchemas::Conversation;
    options.load_budget = LoadBudget::Tokens(100_000);
    let (options, http) = with_alice(options, ToolPolicy::default());
    let served = serve(options, store, loopback(), http).await;
    let (session, _) = open(served.address, ALICE).await;
    let load = json!({"group_name": "time"});
    assert_eq!(
        lookups_of_a_call(&served, &lookups, &session, "load_tool_group", load).await,
        1
    );
    let now = json!({"timezone": "UTC"});
    assert_eq!(
        lookups_of_a_call(&served, &lookups, &session, "time_now", now.clone()).await,
        1
    );
    let through = json!({"name": "time_now", "arguments": now});
    assert_eq!(
        lookups_of_a_call(&served, &lookups, &session, "call_tool", through).await,
        1
    );
    served.stop().await;
}

/// A JavaScript tool `name` of Alice's, named by what it does.
fn alices_tool(name: &str, does: &str) -> Value {
    json!({
        "name": name,
        "description": does,
        "parameters": {"type": "object", "properties": {"n": {"type": "number"}}},
        "source": format!("const {name} = ({{ n }}) => n;"),
    })
}

/// A gateway on `db` (sessions and JavaScript tools) whose named client Alice
/// writes tools of her own, and searches as `toolgate serve` does.
async fn with_alices_tools(root: &Path, db: &Path, address: SocketAddr) -> Served<SqliteStore> {
    let store = Arc::new(SqliteStore::open(db).unwrap());
    let builtins = toolgate_tools::BuiltinConfig::new(root);
    let config = toolgate_tools::JavaScriptConfig::default();
    let user_tools = toolgate_tools::UserJsTools::new(
        store as Arc<dyn toolgate_store::JsToolStore>,
        toolgate_store::ToolOwner::new(toolgate_tools::DEFAULT_TOOL_OWNER),
        &config,
        Some(&builtins),
    )
    .unwrap();
    let (mut options, http) = with_alice(searching(root, 1), ToolPolicy::default());
    user_tools.add_to(&mut options.tools);
    options.tools.javascript = config;
    let served = serve(options, SqliteStore::open(db).unwrap(), address, http).await;
    user_tools.attach(served.gateway.toolbox());
    served
}

#[tokio::test(flavor = "multi_thread")]
async fn a_search_that_loaded_one_of_a_clients_own_tools_restores_as_that_tool() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gateway.db");
    let first = with_alices_tools(root.path(), &db, loopback()).await;
    let address = first.address;
    let (session, _) = open(address, ALICE).await;
    assert!(!load(address, ALICE, &session, "js_tool_management").await.1);
    for (name, does) in [
        ("celsius", "Converts a temperature in fahrenheit to celsius"),
        ("miles", "Converts a distance in kilometres to miles"),
        ("pounds", "Converts a weight in kilograms to pounds"),
    ] {
        let (text, error) = call(
            address,
            ALICE,
            &session,
            "create_js_tool",
            alices_tool(name, does),
        )
        .await;
        assert!(!error, "{text}");
    }
    let (found, error) = call(
        address,
        ALICE,
        &session,
        "find_tool_groups",
        json!({"query": "convert kilometres to miles"}),
    )
    .await;
    assert!(!error, "{found}");
    let listed = names(&tools(address, ALICE, &session).await);
    assert!(listed.contains(&"miles".to_owned()), "{listed:?}\n{found}");
    assert!(
        !listed.contains(&"pounds".to_owned()),
        "{listed:?}\n{found}"
    );
    first.stop().await;

    let second = with_alices_tools(root.path(), &db, address).await;
    assert_eq!(names(&tools(address, ALICE, &session).await), listed);
    second.stop().await;
}
