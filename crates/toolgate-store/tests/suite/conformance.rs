//! One behavioural suite that every [`ConversationStore`] backend must pass.

use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::{Message, MessageKind, ToolName, ToolStatus};
use toolgate_store::{
    AgentId, AgentRecord, AgentStore, ConversationId, ConversationStore, JsToolRecord, JsToolStore,
    KEPT_ROUTING_OUTCOMES, RoutingOutcome, RoutingOutcomeStore, StoreError, ToolOwner,
};

/// Runs every check against `store`, which must be empty.
pub(crate) async fn conformance<
    S: ConversationStore + AgentStore + JsToolStore + RoutingOutcomeStore,
>(
    store: S,
) {
    appends_keep_order_and_fields(&store).await;
    conversations_are_isolated(&store).await;
    append_after_writes_only_behind_the_given_message(&store).await;
    tool_status_updates_the_latest_matching_call(&store).await;
    delete_removes_only_that_conversation(&store).await;
    expiry_removes_idle_conversations(&store).await;
    touch_keeps_a_conversation_from_expiring(&store).await;
    agents_are_saved_replaced_and_listed(&store).await;
    a_conversation_keeps_its_agent(&store).await;
    js_tools_are_created_updated_listed_and_deleted(&store).await;
    js_tools_of_two_owners_are_apart(&store).await;
    each_change_of_an_owners_js_tools_raises_its_revision(&store).await;
    routing_outcomes_come_back_per_catalog_oldest_first(&store).await;
    routing_outcomes_outside_0_and_1_are_refused(&store).await;
    recording_past_the_kept_outcomes_deletes_the_oldest(&store).await;
}

fn id(text: &str) -> ConversationId {
    ConversationId::new(text)
}

async fn appends_keep_order_and_fields<S: ConversationStore>(store: &S) {
    let conversation = id("order");
    assert!(!store.exists(&conversation).await.unwrap());
    assert_eq!(store.messages(&conversation).await.unwrap(), []);
    let sent = vec![
        Message::user("check my email"),
        Message::tool_call(
            "c1",
            "load_tool_group",
            r#"{"group_name":"google_gmail"}"#,
            ToolStatus::Pending,
        ),
        Message::tool_result(
            "c1",
            "load_tool_group",
            "Loaded 8 tools",
            ToolStatus::Success,
        ),
        Message::assistant("Done: 3 unread. Émojis 👍 and \"quotes\" survive."),
        Message {
            tool_input: Some(r#"{"loaded_groups":["google_gmail"]}"#.into()),
            ..Message::system("")
        },
    ];
    let before = SystemTime::now() - Duration::from_secs(1);
    let mut ids = Vec::new();
    for message in sent.clone() {
        ids.push(store.append(&conversation, message).await.unwrap());
    }
    assert!(
        ids.windows(2).all(|pair| pair[0] < pair[1]),
        "ids increase: {ids:?}"
    );
    assert_eq!(
        store.last_message_id(&conversation).await.unwrap(),
        ids.last().copied()
    );
    assert_eq!(
        store.last_message_id(&id("never-written")).await.unwrap(),
        None
    );
    assert!(store.exists(&conversation).await.unwrap());
    let stored = store.messages(&conversation).await.unwrap();
    let messages: Vec<Message> = stored.iter().map(|stored| stored.message.clone()).collect();
    assert_eq!(messages, sent);
    assert_eq!(
        stored.iter().map(|stored| stored.id).collect::<Vec<_>>(),
        ids
    );
    assert!(stored.iter().all(|stored| stored.created >= before));
}

/// A compaction record is written only behind the message its summary
/// covers: once something else came in, nothing is written.
async fn append_after_writes_only_behind_the_given_message<S: ConversationStore>(store: &S) {
    let conversation = id("append-after");
    let first = store
        .append_after(&conversation, None, Message::user("first"))
        .await
        .unwrap()
        .unwrap();
    assert!(store.exists(&conversation).await.unwrap());
    assert_eq!(
        store
            .append_after(&conversation, None, Message::user("not behind nothing"))
            .await
            .unwrap(),
        None
    );
    let second = store
        .append(&conversation, Message::assistant("second"))
        .await
        .unwrap();
    assert_eq!(
        store
            .append_after(&conversation, Some(first), Message::user("stale"))
            .await
            .unwrap(),
        None
    );
    let compacted = store
        .append_after(&conversation, Some(second), Message::user("summary"))
        .await
        .unwrap()
        .unwrap();
    let messages = store.messages(&conversation).await.unwrap();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m.message.content.as_str())
        .collect();
    assert_eq!(texts, ["first", "second", "summary"]);
    assert_eq!(messages[2].id, compacted);
    assert_eq!(
        store.last_message_id(&conversation).await.unwrap(),
        Some(compacted)
    );
}

async fn conversations_are_isolated<S: ConversationStore>(store: &S) {
    store
        .append(&id("a"), Message::user("for a"))
        .await
        .unwrap();
    store
        .append(&id("b"), Message::user("for b"))
        .await
        .unwrap();
    let a = store.messages(&id("a")).await.unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].message.content, "for a");
}

async fn tool_status_updates_the_latest_matching_call<S: ConversationStore>(store: &S) {
    let conversation = id("status");
    store
        .append(
            &conversation,
            Message::tool_call("x", "pdf_info", "{}", ToolStatus::Pending),
        )
        .await
        .unwrap();
    store
        .append(
            &conversation,
            Message::tool_result("x", "pdf_info", "result", ToolStatus::Pending),
        )
        .await
        .unwrap();
    assert!(
        store
            .set_tool_status(&conversation, "x", ToolStatus::Error)
            .await
            .unwrap()
    );
    assert!(
        !store
            .set_tool_status(&conversation, "missing", ToolStatus::Error)
            .await
            .unwrap()
    );
    assert!(
        !store
            .set_tool_status(&id("nobody"), "x", ToolStatus::Error)
            .await
            .unwrap()
    );
    let stored = store.messages(&conversation).await.unwrap();
    let call = stored
        .iter()
        .find(|s| s.message.kind == MessageKind::ToolCall)
        .unwrap();
    let result = stored
        .iter()
        .find(|s| s.message.kind == MessageKind::ToolResult)
        .unwrap();
    assert_eq!(call.message.tool_status, Some(ToolStatus::Error));
    assert_eq!(
        result.message.tool_status,
        Some(ToolStatus::Pending),
        "results are not touched"
    );
}

async fn delete_removes_only_that_conversation<S: ConversationStore>(store: &S) {
    store
        .append(&id("doomed"), Message::user("bye"))
        .await
        .unwrap();
    store
        .append(&id("kept"), Message::user("stay"))
        .await
        .unwrap();
    assert!(store.delete(&id("doomed")).await.unwrap());
    assert!(!store.delete(&id("doomed")).await.unwrap());
    assert!(!store.exists(&id("doomed")).await.unwrap());
    assert_eq!(store.messages(&id("doomed")).await.unwrap(), []);
    assert_eq!(store.messages(&id("kept")).await.unwrap().len(), 1);
}

async fn expiry_removes_idle_conversations<S: ConversationStore>(store: &S) {
    store
        .append(&id("fresh"), Message::user("hi"))
        .await
        .unwrap();
    // Nothing is older than an hour ago.
    assert_eq!(
        store
            .expire_idle(SystemTime::now() - Duration::from_secs(3600))
            .await
            .unwrap(),
        0
    );
    assert!(store.exists(&id("fresh")).await.unwrap());
    // Everything is older than a minute from now.
    let expired = store
        .expire_idle(SystemTime::now() + Duration::from_secs(60))
        .await
        .unwrap();
    assert!(expired >= 1, "{expired}");
    assert!(!store.exists(&id("fresh")).await.unwrap());
    assert_eq!(store.messages(&id("fresh")).await.unwrap(), []);
}

async fn touch_keeps_a_conversation_from_expiring<S: ConversationStore>(store: &S) {
    assert!(!store.touch(&id("never-stored")).await.unwrap());
    assert!(!store.exists(&id("never-stored")).await.unwrap());

    store.append(&id("old"), Message::user("hi")).await.unwrap();
    store
        .append(&id("used"), Message::user("hi"))
        .await
        .unwrap();
    // Let the clock move past both appends, then use one conversation again.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cutoff = SystemTime::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(store.touch(&id("used")).await.unwrap());

    assert_eq!(store.expire_idle(cutoff).await.unwrap(), 1);
    assert!(!store.exists(&id("old")).await.unwrap());
    assert!(store.exists(&id("used")).await.unwrap());
    assert_eq!(store.messages(&id("used")).await.unwrap().len(), 1);
}

async fn agents_are_saved_replaced_and_listed<S: AgentStore>(store: &S) {
    assert_eq!(store.agent(&AgentId::new("sage")).await.unwrap(), None);
    let mut sage = AgentRecord::new("sage", "Sage");
    sage.prompts
        .insert("system".to_owned(), "You are Sage.".to_owned());
    sage.tools = vec!["web_search".to_owned(), "time".to_owned()];
    store.save_agent(sage.clone()).await.unwrap();
    assert_eq!(
        store.agent(&AgentId::new("sage")).await.unwrap(),
        Some(sage.clone())
    );
    assert_eq!(sage.system_prompt(), Some("You are Sage."));

    sage.name = "Sage II".to_owned();
    sage.prompts
        .insert("memory_management".to_owned(), "Keep it short.".to_owned());
    store.save_agent(sage.clone()).await.unwrap();
    store
        .save_agent(AgentRecord::new("atlas", "Atlas"))
        .await
        .unwrap();
    let agents = store.agents().await.unwrap();
    let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["atlas", "sage"]);
    assert_eq!(agents[1], sage);
}

async fn a_conversation_keeps_its_agent<S: ConversationStore + AgentStore>(store: &S) {
    let conversation = id("with-agent");
    assert_eq!(store.conversation_agent(&conversation).await.unwrap(), None);
    store
        .save_agent(AgentRecord::new("helper", "Helper"))
        .await
        .unwrap();
    store
        .set_conversation_agent(&conversation, &AgentId::new("helper"))
        .await
        .unwrap();
    assert!(store.exists(&conversation).await.unwrap());
    store
        .append(&conversation, Message::user("hi"))
        .await
        .unwrap();
    assert_eq!(
        store.conversation_agent(&conversation).await.unwrap(),
        Some(AgentId::new("helper"))
    );
    let unknown = store
        .set_conversation_agent(&conversation, &AgentId::new("nobody"))
        .await
        .unwrap_err();
    assert!(matches!(unknown, StoreError::UnknownAgent(ref id) if id.as_str() == "nobody"));
    assert_eq!(unknown.to_string(), "no agent with id `nobody` is stored");
}

fn js_tool(owner: &str, name: &str, source: &str) -> JsToolRecord {
    let schema = json!({"type": "object", "properties": {"n": {"type": "number"}}});
    JsToolRecord::new(
        ToolOwner::new(owner),
        ToolName::new(name).unwrap(),
        format!("{name} of {owner}"),
        schema.as_object().unwrap().clone(),
        "run",
        source,
    )
}

async fn js_tools_are_created_updated_listed_and_deleted<S: JsToolStore>(store: &S) {
    let owner = ToolOwner::new("sage");
    let double = ToolName::new("double").unwrap();
    assert_eq!(store.js_tools(&owner).await.unwrap(), []);
    assert_eq!(store.js_tool(&owner, &double).await.unwrap(), None);

    let before = SystemTime::now() - Duration::from_secs(1);
    let created = store
        .create_js_tool(js_tool(
            "sage",
            "double",
            "function run(a) { return a.n * 2; }",
        ))
        .await
        .unwrap()
        .unwrap();
    assert!(created.created >= before && created.updated == created.created);
    assert_eq!(
        JsToolRecord {
            created: std::time::UNIX_EPOCH,
            updated: std::time::UNIX_EPOCH,
            ..created.clone()
        },
        js_tool("sage", "double", "function run(a) { return a.n * 2; }")
    );
    assert_eq!(
        store.js_tool(&owner, &double).await.unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        store
            .create_js_tool(js_tool("sage", "double", "other"))
            .await
            .unwrap(),
        None,
        "a name is created once"
    );
    assert_eq!(
        store.js_tool(&owner, &double).await.unwrap(),
        Some(created.clone()),
        "a refused create changes nothing"
    );

    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut changed = js_tool("sage", "double", "function run(a) { return a.n + a.n; }");
    changed.description = "Doubles n".to_owned();
    let updated = store.update_js_tool(changed).await.unwrap().unwrap();
    assert_eq!(updated.created, created.created);
    assert!(updated.updated > created.updated);
    assert_eq!(updated.description, "Doubles n");
    assert_eq!(updated.source, "function run(a) { return a.n + a.n; }");
    assert_eq!(
        store.js_tool(&owner, &double).await.unwrap(),
        Some(updated.clone())
    );
    assert_eq!(
        store
            .update_js_tool(js_tool("sage", "missing", "x"))
            .await
            .unwrap(),
        None,
        "updating nothing stores nothing"
    );
    assert_eq!(
        store
            .js_tool(&owner, &ToolName::new("missing").unwrap())
            .await
            .unwrap(),
        None
    );

    store
        .create_js_tool(js_tool("sage", "add", "function run() {}"))
        .await
        .unwrap()
        .unwrap();
    let names: Vec<String> = store
        .js_tools(&owner)
        .await
        .unwrap()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, ["add", "double"]);

    assert!(store.delete_js_tool(&owner, &double).await.unwrap());
    assert!(!store.delete_js_tool(&owner, &double).await.unwrap());
    assert_eq!(store.js_tool(&owner, &double).await.unwrap(), None);
    assert_eq!(store.js_tools(&owner).await.unwrap().len(), 1);
}

async fn js_tools_of_two_owners_are_apart<S: JsToolStore>(store: &S) {
    let (alice, bob) = (ToolOwner::new("alice"), ToolOwner::new("bob"));
    let shared = ToolName::new("shared").unwrap();
    for owner in ["alice", "bob"] {
        store
            .create_js_tool(js_tool(owner, "shared", owner))
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        store
            .js_tool(&alice, &shared)
            .await
            .unwrap()
            .unwrap()
            .source,
        "alice"
    );
    assert!(store.delete_js_tool(&bob, &shared).await.unwrap());
    assert_eq!(store.js_tools(&bob).await.unwrap(), []);
    let left = store.js_tools(&alice).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].owner, alice);
}

async fn each_change_of_an_owners_js_tools_raises_its_revision<S: JsToolStore>(store: &S) {
    let (carol, dave) = (ToolOwner::new("carol"), ToolOwner::new("dave"));
    let name = ToolName::new("tally").unwrap();
    assert_eq!(store.js_tools_revision(&carol).await.unwrap(), 0);
    let mut seen = vec![0];
    let mut changed = |revision: u64| {
        assert!(
            !seen.contains(&revision),
            "revision {revision} came back after {seen:?}"
        );
        seen.push(revision);
    };
    store
        .create_js_tool(js_tool("carol", "tally", "v1"))
        .await
        .unwrap()
        .unwrap();
    changed(store.js_tools_revision(&carol).await.unwrap());
    store
        .update_js_tool(js_tool("carol", "tally", "v2"))
        .await
        .unwrap()
        .unwrap();
    changed(store.js_tools_revision(&carol).await.unwrap());
    assert!(store.delete_js_tool(&carol, &name).await.unwrap());
    changed(store.js_tools_revision(&carol).await.unwrap());
    let revision = store.js_tools_revision(&carol).await.unwrap();
    // What changes nothing, and another owner's changes, leave it as it is.
    assert!(!store.delete_js_tool(&carol, &name).await.unwrap());
    assert_eq!(
        store
            .update_js_tool(js_tool("carol", "tally", "v3"))
            .await
            .unwrap(),
        None
    );
    store
        .create_js_tool(js_tool("dave", "tally", "v1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store
            .create_js_tool(js_tool("dave", "tally", "again"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.js_tools_revision(&carol).await.unwrap(), revision);
    assert_ne!(store.js_tools_revision(&dave).await.unwrap(), 0);
}

/// An outcome; one that did not hold missed two groups.
fn outcome(fitted_confidence: f64, held: bool) -> RoutingOutcome {
    RoutingOutcome {
        fitted_confidence,
        held,
        missed: if held {
            Vec::new()
        } else {
            vec!["files".to_owned(), "time".to_owned()]
        },
    }
}

async fn routing_outcomes_come_back_per_catalog_oldest_first<S: RoutingOutcomeStore>(store: &S) {
    let (first, second) = ("catalog-1", "catalog-2");
    assert_eq!(store.routing_outcomes(first, 10).await.unwrap(), []);
    let of_first = [
        outcome(0.9, true),
        outcome(0.0, false),
        outcome(0.25, true),
        outcome(1.0, false),
        outcome(0.7, true),
    ];
    let of_second = [outcome(0.5, false), outcome(0.125, true)];
    // Interleaved, so that each catalog's outcomes are not one run of ids.
    for (i, recorded) in of_first.iter().enumerate() {
        store
            .record_routing_outcome(first, recorded.clone())
            .await
            .unwrap();
        if let Some(recorded) = of_second.get(i) {
            store
                .record_routing_outcome(second, recorded.clone())
                .await
                .unwrap();
        }
    }
    assert_eq!(store.routing_outcomes(first, 10).await.unwrap(), of_first);
    assert_eq!(
        store.routing_outcomes(first, usize::MAX).await.unwrap(),
        of_first
    );
    assert_eq!(store.routing_outcomes(first, 5).await.unwrap(), of_first);
    assert_eq!(
        store.routing_outcomes(first, 2).await.unwrap(),
        [outcome(1.0, false), outcome(0.7, true)],
        "the newest, oldest first"
    );
    assert_eq!(store.routing_outcomes(first, 0).await.unwrap(), []);
    assert_eq!(store.routing_outcomes(second, 10).await.unwrap(), of_second);
    assert_eq!(
        store.routing_outcomes(second, 1).await.unwrap(),
        [outcome(0.125, true)]
    );
    assert_eq!(store.routing_outcomes("catalog-3", 10).await.unwrap(), []);
}

async fn routing_outcomes_outside_0_and_1_are_refused<S: RoutingOutcomeStore>(store: &S) {
    let catalog = "refusing";
    store
        .record_routing_outcome(catalog, outcome(0.5, true))
        .await
        .unwrap();
    for (confidence, shown) in [
        (f64::NAN, "NaN"),
        (-0.1, "-0.1"),
        (1.5, "1.5"),
        (f64::INFINITY, "inf"),
    ] {
        let error = store
            .record_routing_outcome(catalog, outcome(confidence, true))
            .await
            .unwrap_err();
        assert!(
            matches!(error, StoreError::InvalidConfidence(value) if value.to_bits() == confidence.to_bits()),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "a routing outcome's fitted confidence must be a number within 0 and 1, not {shown}"
            )
        );
    }
    assert_eq!(
        store.routing_outcomes(catalog, 10).await.unwrap(),
        [outcome(0.5, true)],
        "nothing refused is stored"
    );
}

async fn recording_past_the_kept_outcomes_deletes_the_oldest<S: RoutingOutcomeStore>(store: &S) {
    let (busy, quiet) = ("busy", "quiet");
    store
        .record_routing_outcome(quiet, outcome(0.3, false))
        .await
        .unwrap();
    let total = KEPT_ROUTING_OUTCOMES + 5;
    // Every confidence distinct, so each outcome is told apart.
    let recorded: Vec<RoutingOutcome> = (0..total)
        .map(|i| outcome(i as f64 / total as f64, i % 3 == 0))
        .collect();
    for each in &recorded {
        store
            .record_routing_outcome(busy, each.clone())
            .await
            .unwrap();
    }
    let kept = store.routing_outcomes(busy, usize::MAX).await.unwrap();
    assert_eq!(kept.len(), KEPT_ROUTING_OUTCOMES);
    assert!(kept == recorded[5..], "the newest are kept, oldest first");
    assert_eq!(
        store.routing_outcomes(busy, 3).await.unwrap(),
        recorded[total - 3..]
    );
    assert_eq!(
        store.routing_outcomes(quiet, usize::MAX).await.unwrap(),
        [outcome(0.3, false)],
        "another catalog keeps its own"
    );
}
