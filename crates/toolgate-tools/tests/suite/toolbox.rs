//! The toolbox over sources these tests write: a source known from the start
//! and listed sources that behave like MCP servers (lazy, failing,
//! changing their tools), checked through the calls a front end makes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use toolgate_core::{
    ActiveToolSet, Alias, GroupId, GroupVisibility, ToolDefinition, ToolGroup, ToolName,
};
use toolgate_tools::{
    Authority, BuiltinConfig, CallContext, GroupExposure, GroupSettings, ListedGroup, ListedSource,
    SourceCall, SourceChange, SourceError, SourceListing, SourceOffer, SourceTool, Startup,
    ToolCallError, ToolOutput, ToolSource, Toolbox, ToolboxOptions,
};

fn schema(required: &[&str]) -> Value {
    let properties: Map<String, Value> = required
        .iter()
        .map(|name| ((*name).to_owned(), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}

fn definition(name: &str, required: &[&str]) -> ToolDefinition {
    ToolDefinition::new(
        ToolName::new(name).unwrap(),
        format!("{name} does it"),
        schema(required),
    )
    .unwrap()
}

/// A source known from the start: group `notes` and core tool `echo`. It
/// answers with what it was asked, and records every call.
#[derive(Debug, Default)]
struct Notes {
    calls: Mutex<Vec<SourceCall>>,
}

#[async_trait]
impl ToolSource for Notes {
    fn offer(&self) -> SourceOffer {
        SourceOffer {
            core_tools: vec![definition("echo", &["text"])],
            groups: vec![(
                ToolGroup::new(GroupId::new("notes").unwrap(), "Notes", "Keep notes"),
                vec![
                    definition("notes_add", &["text"]),
                    definition("notes_list", &[]),
                ],
            )],
        }
    }

    async fn call(
        &self,
        call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        self.calls.lock().unwrap().push(call.clone());
        Ok(ToolOutput::text(format!(
            "{} {}",
            call.tool, call.arguments
        )))
    }
}

/// A listed source like an MCP server: lazy unless told, listing its tools
/// when asked, failing when `fails` is set, announcing changes on demand.
#[derive(Debug)]
struct Server {
    group: ListedGroup,
    tools: Mutex<Vec<&'static str>>,
    fails: bool,
    generation: AtomicU64,
    running: Mutex<Option<u64>>,
    listings: AtomicU64,
    changes: Notify,
}

impl Server {
    fn new(id: &str, tools: &[&'static str]) -> Self {
        Self {
            group: ListedGroup {
                id: GroupId::new(id).unwrap(),
                description: None,
                startup: Startup::Lazy,
                visibility: GroupVisibility::OnLoad,
            },
            tools: Mutex::new(tools.to_vec()),
            fails: false,
            generation: AtomicU64::new(0),
            running: Mutex::new(None),
            listings: AtomicU64::new(0),
            changes: Notify::new(),
        }
    }

    fn announce(&self, tools: &[&'static str]) {
        *self.tools.lock().unwrap() = tools.to_vec();
        self.changes.notify_one();
    }
}

#[async_trait]
impl ToolSource for Server {
    async fn call(
        &self,
        call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        Ok(ToolOutput::text(format!(
            "{} ran {}",
            self.group.id, call.tool
        )))
    }
}

#[async_trait]
impl ListedSource for Server {
    fn group(&self) -> &ListedGroup {
        &self.group
    }

    async fn list(&self) -> Result<SourceListing, SourceError> {
        if self.fails {
            return Err(SourceError::new(std::io::Error::other(format!(
                "MCP server '{}' failed to start: cannot run it",
                self.group.id
            ))));
        }
        self.listings.fetch_add(1, Ordering::SeqCst);
        let generation = {
            let mut running = self.running.lock().unwrap();
            *running.get_or_insert_with(|| self.generation.fetch_add(1, Ordering::SeqCst) + 1)
        };
        let tools = self
            .tools
            .lock()
            .unwrap()
            .iter()
            .map(|name| SourceTool {
                name: (*name).to_owned(),
                description: format!("{name} on the server"),
                input_schema: schema(&[]),
                annotations: None,
                listing: json!({"name": name, "title": format!("The {name}"), "inputSchema": schema(&[])})
                    .as_object()
                    .unwrap()
                    .clone(),
            })
            .collect();
        Ok(SourceListing {
            tools,
            about: Some(format!("The {} server", self.group.id)),
            generation,
        })
    }

    async fn running_generation(&self) -> Option<u64> {
        *self.running.lock().unwrap()
    }

    async fn stop(&self) {
        *self.running.lock().unwrap() = None;
    }

    async fn shutdown(&self) {
        self.stop().await;
    }

    async fn changed(&self) -> SourceChange {
        self.changes.notified().await;
        SourceChange::ToolsChanged
    }
}

async fn toolbox(notes: &Arc<Notes>, listed: Vec<Arc<dyn ListedSource>>) -> Arc<Toolbox> {
    let options = ToolboxOptions {
        sources: vec![Arc::clone(notes) as Arc<dyn ToolSource>],
        listed,
        ..ToolboxOptions::default()
    };
    Toolbox::start(options).await.unwrap().0
}

fn refusal(result: Result<ToolOutput, ToolCallError>) -> String {
    match result {
        Err(ToolCallError::RespondToModel(output)) => {
            assert!(output.is_error);
            output.model_text()
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_call_reaches_its_source_only_with_arguments_that_fit_the_schema() {
    let notes = Arc::new(Notes::default());
    let toolbox = toolbox(&notes, Vec::new()).await;
    let context = CallContext::new(Authority::everything());
    assert_eq!(
        refusal(toolbox.call("notes_add", json!({}), &context).await),
        "Invalid arguments for tool 'notes_add': \"text\" is a required property."
    );
    let output = toolbox
        .call("notes_add", json!({"text": "milk"}), &context)
        .await
        .unwrap();
    assert_eq!(output.model_text(), r#"notes_add {"text":"milk"}"#);
    assert_eq!(notes.calls.lock().unwrap().len(), 1);
    assert_eq!(
        refusal(toolbox.call("notes_delete", json!({}), &context).await),
        "Tool 'notes_delete' is not available for this agent."
    );
}

#[tokio::test]
async fn an_alias_calls_its_tool_with_the_arguments_it_fixes() {
    let notes = Arc::new(Notes::default());
    let mut alias = Alias::new(ToolName::new("notes_add").unwrap());
    alias.arguments.insert("text".to_owned(), json!("remember"));
    let options = ToolboxOptions {
        sources: vec![Arc::clone(&notes) as Arc<dyn ToolSource>],
        aliases: vec![("remember".to_owned(), alias)],
        ..ToolboxOptions::default()
    };
    let (toolbox, _) = Toolbox::start(options).await.unwrap();
    let output = toolbox
        .call(
            "remember",
            json!({"text": "ignored"}),
            &CallContext::new(Authority::everything()),
        )
        .await
        .unwrap();
    assert_eq!(output.model_text(), r#"notes_add {"text":"remember"}"#);
}

#[tokio::test]
async fn a_polymorphic_group_resolves_its_action_and_types_the_answer() {
    let notes = Arc::new(Notes::default());
    let mut groups = BTreeMap::new();
    groups.insert(
        "notes".to_owned(),
        GroupSettings {
            expose: Some(GroupExposure::Polymorphic),
            ..GroupSettings::default()
        },
    );
    let options = ToolboxOptions {
        sources: vec![Arc::clone(&notes) as Arc<dyn ToolSource>],
        groups,
        ..ToolboxOptions::default()
    };
    let (toolbox, _) = Toolbox::start(options).await.unwrap();
    let tools: Vec<String> = toolbox
        .catalog()
        .group_tools("notes")
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(tools, ["notes"]);
    let context = CallContext::new(Authority::everything());
    let output = toolbox
        .call("notes", json!({"action": "add", "text": "milk"}), &context)
        .await
        .unwrap();
    assert_eq!(
        output.structured,
        Some(json!({"type": "result", "action": "add", "result": r#"notes_add {"text":"milk"}"#}))
    );
    let wrong = match toolbox
        .call("notes", json!({"action": "ad", "text": "x"}), &context)
        .await
    {
        Err(ToolCallError::RespondToModel(output)) => output.structured.unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(wrong["error"], "Invalid action 'ad'");
    assert_eq!(wrong["allowed_actions"], json!(["add", "list"]));
    assert_eq!(wrong["did_you_mean"], "add");
    // The old name still works, as an alias of its action.
    toolbox
        .call("notes_list", json!({}), &context)
        .await
        .unwrap();
    assert_eq!(
        toolbox.action_calls(),
        [
            ("notes".to_owned(), "add".to_owned(), 1),
            ("notes".to_owned(), "list".to_owned(), 1)
        ]
    );
}

#[tokio::test]
async fn a_listed_source_starts_on_first_need_and_keeps_contested_names_qualified() {
    let notes = Arc::new(Notes::default());
    let first = Arc::new(Server::new("alpha", &["echo", "shared"]));
    let second = Arc::new(Server::new("beta", &["shared", "own"]));
    let toolbox = toolbox(
        &notes,
        vec![
            Arc::clone(&first) as Arc<dyn ListedSource>,
            Arc::clone(&second) as Arc<dyn ListedSource>,
        ],
    )
    .await;
    assert_eq!(first.listings.load(Ordering::SeqCst), 0, "lazy");
    // Loading the second lists the first before it: `shared` goes to alpha
    // whatever order groups are loaded in, and alpha is stopped again.
    toolbox.prepare("beta").await.unwrap();
    assert_eq!(first.running_generation().await, None);
    let names = |group: &str| -> Vec<String> {
        toolbox
            .catalog()
            .group_tools(group)
            .map(|t| t.name.to_string())
            .collect()
    };
    assert_eq!(names("alpha"), ["alpha__echo", "shared"]);
    assert_eq!(names("beta"), ["beta__shared", "own"]);
    assert_eq!(
        toolbox.catalog().group("beta").unwrap().description,
        "The beta server"
    );
    let output = toolbox
        .call(
            "beta__shared",
            json!({}),
            &CallContext::new(Authority::everything()),
        )
        .await
        .unwrap();
    assert_eq!(output.model_text(), "beta ran shared");
    let listing = toolbox
        .listings(["beta__shared"], &Authority::everything())
        .remove(0)
        .unwrap();
    assert_eq!(listing["name"], "beta__shared");
    assert_eq!(listing["title"], "The shared");
}

#[tokio::test]
async fn a_source_that_fails_to_start_fails_its_load_with_its_reason() {
    let notes = Arc::new(Notes::default());
    let broken = Arc::new(Server {
        fails: true,
        ..Server::new("broken", &["x"])
    });
    let toolbox = toolbox(&notes, vec![broken as Arc<dyn ListedSource>]).await;
    let meta = toolbox.meta_tools();
    let call = meta
        .parse("load_tool_group", &json!({"group_name": "broken"}))
        .unwrap()
        .unwrap();
    let failed = toolbox
        .prepare_meta(&call, &Authority::everything())
        .await
        .unwrap_err();
    assert!(failed.output.is_error);
    assert_eq!(
        failed.output.model_text(),
        "MCP server 'broken' failed to start: cannot run it"
    );
    assert!(failed.events.is_empty());
    // What the caller may not see is not started for it.
    let nothing = toolbox.prepare_meta(&call, &Authority::nothing()).await;
    assert!(nothing.is_ok(), "not started: the load answers not found");
}

#[tokio::test]
async fn a_real_change_is_announced_and_an_empty_one_is_not() {
    let notes = Arc::new(Notes::default());
    let server = Arc::new(Server::new("alpha", &["one"]));
    let toolbox = toolbox(&notes, vec![Arc::clone(&server) as Arc<dyn ListedSource>]).await;
    let mut changes = toolbox.subscribe_changes();
    toolbox.prepare("alpha").await.unwrap();
    server.announce(&["one"]);
    server.announce(&["one", "two"]);
    let changed = tokio::time::timeout(Duration::from_secs(5), changes.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        changed,
        toolgate_tools::CatalogChange::Group(toolgate_core::GroupId::new("alpha").unwrap())
    );
    let tools: Vec<String> = toolbox
        .catalog()
        .group_tools("alpha")
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(tools, ["one", "two"]);
    assert!(changes.try_recv().is_err(), "one announcement per change");
}

#[tokio::test]
async fn an_always_visible_source_is_listed_for_every_active_set() {
    let notes = Arc::new(Notes::default());
    let mut server = Server::new("core", &["status"]);
    server.group.visibility = GroupVisibility::Always;
    server.group.startup = Startup::Eager;
    let server = Arc::new(server);
    let (toolbox, report) = Toolbox::start(ToolboxOptions {
        sources: vec![notes as Arc<dyn ToolSource>],
        listed: vec![Arc::clone(&server) as Arc<dyn ListedSource>],
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert_eq!(report.listed.len(), 1);
    assert_eq!(*report.listed[0].1.as_ref().unwrap(), 1);
    let active = ActiveToolSet::new();
    toolbox.prepare_visible(&active).await;
    let names: Vec<String> = active
        .definitions(&toolbox.catalog())
        .iter()
        .map(|d| d.name.to_string())
        .collect();
    assert_eq!(names, ["load_tool_group", "echo", "status"]);
}

#[tokio::test]
async fn a_listed_source_replaces_the_builtin_group_of_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let time = Arc::new(Server::new("time", &["clock"]));
    let (toolbox, report) = Toolbox::start(ToolboxOptions {
        builtins: Some(BuiltinConfig::new(dir.path())),
        listed: vec![time as Arc<dyn ListedSource>],
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    let ids =
        |groups: &[GroupId]| -> Vec<String> { groups.iter().map(GroupId::to_string).collect() };
    assert_eq!(ids(&report.shadowed_builtins), ["time"]);
    assert_eq!(ids(&report.builtin_groups), ["files", "web"]);
    toolbox.prepare("time").await.unwrap();
    let tools: Vec<String> = toolbox
        .catalog()
        .group_tools("time")
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(tools, ["clock"]);
}

#[tokio::test]
async fn tools_with_names_mcp_refuses_are_exposed_under_stable_valid_names() {
    let long: &'static str = Box::leak(format!("fetch_the_{}", "x".repeat(90)).into_boxed_str());
    let listed = ["PDF&URLTool", long, "a&b", "plain", "a b"];
    let start = |tools: Vec<&'static str>| async move {
        let mut server = Server::new("docs", &tools);
        server.group.startup = Startup::Eager;
        Toolbox::start(ToolboxOptions {
            listed: vec![Arc::new(server) as Arc<dyn ListedSource>],
            ..ToolboxOptions::default()
        })
        .await
        .unwrap()
    };
    let (toolbox, report) = start(listed.to_vec()).await;
    let hashed_long = "fetch_the_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_fdc34f97";
    let expected = [
        ("PDF&URLTool", "PDF_URLTool"),
        (long, hashed_long),
        // Both become `a_b`: the first by name keeps it, the other is hashed.
        ("a&b", "a_b_f96b11f1"),
        ("plain", "plain"),
        ("a b", "a_b"),
    ];
    let names: Vec<String> = toolbox
        .catalog()
        .group_tools("docs")
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, expected.map(|(_, exposed)| exposed));
    for (original, exposed) in expected {
        let output = toolbox
            .call(
                exposed,
                json!({}),
                &CallContext::new(Authority::everything()),
            )
            .await
            .unwrap();
        assert_eq!(output.model_text(), format!("docs ran {original}"));
        let listing = toolbox
            .listings([exposed], &Authority::everything())
            .remove(0)
            .unwrap();
        assert_eq!(listing["name"], exposed);
    }
    let renamed: Vec<String> = report.renamed.iter().map(ToString::to_string).collect();
    assert_eq!(
        renamed,
        [
            "tool \"PDF&URLTool\" of 'docs' is exposed as 'PDF_URLTool': its name has the character '&', outside MCP's A-Za-z0-9_./-".to_owned(),
            "tool \"a b\" of 'docs' is exposed as 'a_b': its name has the character ' ', outside MCP's A-Za-z0-9_./-".to_owned(),
            "tool \"a&b\" of 'docs' is exposed as 'a_b_f96b11f1': its name has the character '&', outside MCP's A-Za-z0-9_./-".to_owned(),
            // A long name shows its first 80 characters only.
            format!("tool \"{}\"… of 'docs' is exposed as '{hashed_long}': its name is 100 characters long; MCP allows 1-64", &long[..80]),
        ]
    );

    // After a restart, with the server listing its tools in another order:
    // the same names.
    let mut reversed = listed.to_vec();
    reversed.reverse();
    let (again, _) = start(reversed).await;
    for (original, exposed) in expected {
        let output = again
            .call(
                exposed,
                json!({}),
                &CallContext::new(Authority::everything()),
            )
            .await
            .unwrap();
        assert_eq!(output.model_text(), format!("docs ran {original}"));
    }
}

#[tokio::test]
async fn find_tool_groups_is_offered_above_a_number_of_groups() {
    let root = tempfile::tempdir().unwrap();
    let start = |above: Option<usize>| {
        let options = ToolboxOptions {
            builtins: Some(toolgate_tools::BuiltinConfig::new(root.path())),
            search_above_groups: above,
            ..ToolboxOptions::default()
        };
        Toolbox::start(options)
    };
    let builtin_groups = {
        let (toolbox, _) = start(None).await.unwrap();
        toolbox.with_catalog(|catalog| catalog.groups().count())
    };
    let offered = |toolbox: &Toolbox| {
        toolbox.with_catalog(|catalog| {
            catalog
                .core_tools()
                .any(|tool| tool.name.as_str() == "find_tool_groups")
        })
    };
    let (at, report) = start(Some(builtin_groups)).await.unwrap();
    assert!(!offered(&at) && report.search_added.is_none());
    let (above, report) = start(Some(builtin_groups - 1)).await.unwrap();
    assert!(offered(&above));
    assert_eq!(report.search_added, Some(builtin_groups - 1));
    let call = above.meta_tools().parse(
        "find_tool_groups",
        &json!({"query": "what time is it in Tokyo"}),
    );
    assert!(matches!(call, Some(Ok(_))), "answered, not only listed");
}

fn group_names(toolbox: &Toolbox, group: &str) -> Vec<String> {
    toolbox
        .catalog()
        .group_tools(group)
        .map(|t| t.name.to_string())
        .collect()
}

fn changes_so_far(
    changes: &mut tokio::sync::broadcast::Receiver<toolgate_tools::CatalogChange>,
) -> Vec<toolgate_tools::CatalogChange> {
    std::iter::from_fn(|| changes.try_recv().ok()).collect()
}

#[tokio::test]
async fn a_source_added_at_run_time_comes_last_and_renames_nothing_that_runs() {
    let notes = Arc::new(Notes::default());
    let alpha = Arc::new(Server::new("alpha", &["shared", "one"]));
    let toolbox = toolbox(&notes, vec![Arc::clone(&alpha) as Arc<dyn ListedSource>]).await;
    toolbox.prepare("alpha").await.unwrap();
    let mut changes = toolbox.subscribe_changes();

    // Added lazily: offered, not started.
    let gamma = Arc::new(Server::new("gamma", &["shared", "three"]));
    let joined = toolbox
        .add_listed(Arc::clone(&gamma) as Arc<dyn ListedSource>)
        .await
        .unwrap();
    assert!(
        matches!(joined, toolgate_tools::Joined::Waiting),
        "{joined:?}"
    );
    assert_eq!(gamma.listings.load(Ordering::SeqCst), 0);
    assert!(toolbox.catalog().group("gamma").is_some());
    assert_eq!(
        changes_so_far(&mut changes),
        [toolgate_tools::CatalogChange::CoreTools]
    );
    assert_eq!(
        toolbox.listed_groups(),
        ["alpha", "gamma"].map(|g| GroupId::new(g).unwrap())
    );

    // Eager: listed at once, after alpha, so alpha keeps `shared`.
    let mut beta = Server::new("beta", &["shared", "two"]);
    beta.group.startup = Startup::Eager;
    let joined = toolbox.add_listed(Arc::new(beta)).await.unwrap();
    assert!(
        matches!(joined, toolgate_tools::Joined::Listed(2)),
        "{joined:?}"
    );
    assert_eq!(group_names(&toolbox, "alpha"), ["shared", "one"]);
    assert_eq!(group_names(&toolbox, "beta"), ["beta__shared", "two"]);
    // gamma, before it, was listed for its names, and stopped again.
    assert_eq!(group_names(&toolbox, "gamma"), ["gamma__shared", "three"]);
    assert_eq!(gamma.running_generation().await, None);
    let output = toolbox
        .call(
            "beta__shared",
            json!({}),
            &CallContext::new(Authority::everything()),
        )
        .await
        .unwrap();
    assert_eq!(output.model_text(), "beta ran shared");

    // A group id that is taken is refused, and nothing changes.
    let error = toolbox
        .add_listed(Arc::new(Server::new("notes", &["x"])))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("notes"), "{error}");
    assert_eq!(group_names(&toolbox, "notes"), ["notes_add", "notes_list"]);
}

#[tokio::test]
async fn a_removed_source_takes_its_group_away_and_frees_its_names() {
    let notes = Arc::new(Notes::default());
    let alpha = Arc::new(Server::new("alpha", &["shared"]));
    let beta = Arc::new(Server::new("beta", &["shared", "two"]));
    let toolbox = toolbox(
        &notes,
        vec![
            Arc::clone(&alpha) as Arc<dyn ListedSource>,
            Arc::clone(&beta) as Arc<dyn ListedSource>,
        ],
    )
    .await;
    toolbox.prepare("beta").await.unwrap();
    toolbox.prepare("alpha").await.unwrap();
    let mut changes = toolbox.subscribe_changes();

    assert!(toolbox.remove_listed("alpha").await);
    assert!(!toolbox.remove_listed("alpha").await, "already gone");
    assert_eq!(alpha.running_generation().await, None, "shut down");
    assert!(toolbox.catalog().group("alpha").is_none());
    assert!(toolbox.catalog().tool("shared").is_none());
    let refused = refusal(
        toolbox
            .call(
                "shared",
                json!({}),
                &CallContext::new(Authority::everything()),
            )
            .await,
    );
    assert!(refused.contains("not available"), "{refused}");
    assert_eq!(
        changes_so_far(&mut changes),
        [
            toolgate_tools::CatalogChange::Group(GroupId::new("alpha").unwrap()),
            toolgate_tools::CatalogChange::CoreTools
        ]
    );
    // beta keeps the names it has; they never move while it runs.
    assert_eq!(group_names(&toolbox, "beta"), ["beta__shared", "two"]);
    // The group id is free for another source.
    toolbox
        .add_listed(Arc::new(Server::new("alpha", &["again"])))
        .await
        .unwrap();
    toolbox.prepare("alpha").await.unwrap();
    assert_eq!(group_names(&toolbox, "alpha"), ["again"]);
}

#[tokio::test]
async fn a_replaced_source_keeps_its_place_and_names_and_runs_on_the_new_one() {
    let notes = Arc::new(Notes::default());
    let alpha = Arc::new(Server::new("alpha", &["shared", "one"]));
    let beta = Arc::new(Server::new("beta", &["shared"]));
    let toolbox = toolbox(
        &notes,
        vec![
            Arc::clone(&alpha) as Arc<dyn ListedSource>,
            Arc::clone(&beta) as Arc<dyn ListedSource>,
        ],
    )
    .await;
    toolbox.prepare("beta").await.unwrap();
    toolbox.prepare("alpha").await.unwrap();
    let mut changes = toolbox.subscribe_changes();

    // alpha ran: its replacement is listed at once, in alpha's place, and
    // `shared` stays alpha's though beta is listed and running.
    let mut replacement = Server::new("alpha", &["one", "shared", "new"]);
    replacement.group.description = Some("Alpha, moved".to_owned());
    let replacement = Arc::new(replacement);
    let joined = toolbox
        .replace_listed(Arc::clone(&replacement) as Arc<dyn ListedSource>)
        .await
        .unwrap();
    assert!(
        matches!(joined, toolgate_tools::Joined::Listed(3)),
        "{joined:?}"
    );
    assert_eq!(
        alpha.running_generation().await,
        None,
        "the old one stopped"
    );
    assert_eq!(group_names(&toolbox, "alpha"), ["one", "shared", "new"]);
    assert_eq!(group_names(&toolbox, "beta"), ["beta__shared"]);
    assert_eq!(
        toolbox.listed_groups(),
        ["alpha", "beta"].map(|g| GroupId::new(g).unwrap())
    );
    assert_eq!(
        toolbox.catalog().group("alpha").unwrap().description,
        "Alpha, moved"
    );
    assert_eq!(
        changes_so_far(&mut changes),
        [
            toolgate_tools::CatalogChange::Group(GroupId::new("alpha").unwrap()),
            toolgate_tools::CatalogChange::CoreTools
        ]
    );
    let output = toolbox
        .call(
            "shared",
            json!({}),
            &CallContext::new(Authority::everything()),
        )
        .await
        .unwrap();
    assert_eq!(output.model_text(), "alpha ran shared");
    assert_eq!(replacement.listings.load(Ordering::SeqCst), 1);

    // A replacement that fails leaves the group on offer with no tools; the
    // next load tries again.
    let broken = Arc::new(Server {
        fails: true,
        ..Server::new("alpha", &["one"])
    });
    let joined = toolbox.replace_listed(broken).await.unwrap();
    assert!(
        matches!(joined, toolgate_tools::Joined::Failed(_)),
        "{joined:?}"
    );
    assert_eq!(group_names(&toolbox, "alpha"), Vec::<String>::new());
    assert!(
        toolbox
            .catalog()
            .available_groups()
            .any(|group| group.id.as_str() == "alpha")
    );
    assert!(toolbox.prepare("alpha").await.is_err());

    // Replacing what is not there is an error naming it.
    let error = toolbox
        .replace_listed(Arc::new(Server::new("zeta", &[])))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("zeta"), "{error}");
}
