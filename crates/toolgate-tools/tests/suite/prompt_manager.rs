//! The `prompt_manager` built-in (views and updates of each prompt type) over a
//! stored agent.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_store::{AgentId, AgentRecord, AgentStore, ConversationId, MemoryStore};
use toolgate_tools::{
    Authority, BuiltinConfig, BuiltinTools, CallContext, PROMPT_TYPES, SourceCall, ToolSource,
};

struct Fixture {
    store: Arc<MemoryStore>,
    tools: BuiltinTools,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let store = Arc::new(MemoryStore::new());
    let mut agent = AgentRecord::new("sage", "Sage");
    for (prompt_type, text) in [
        ("system", "Original system prompt"),
        ("conversation_consolidation", "Original reflection prompt"),
        ("memory_management", "Original memory prompt"),
    ] {
        agent
            .prompts
            .insert(prompt_type.to_owned(), text.to_owned());
    }
    store.save_agent(agent).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = BuiltinConfig {
        agents: Some(Arc::clone(&store) as Arc<dyn AgentStore>),
        ..BuiltinConfig::new(dir.path())
    };
    Fixture {
        store,
        tools: BuiltinTools::new(&config).unwrap(),
        _dir: dir,
    }
}

fn sage() -> CallContext {
    CallContext {
        conversation: Some(ConversationId::new("c1")),
        agent: Some(AgentId::new("sage")),
        turn: Some(1),
        ..CallContext::new(Authority::everything())
    }
}

impl Fixture {
    async fn call(&self, tool: &str, arguments: Value, context: &CallContext) -> Value {
        let call = SourceCall {
            tool: tool.to_owned(),
            arguments,
        };
        let output = self.tools.call(call, context).await.unwrap();
        let value: Value = serde_json::from_str(&output.model_text()).unwrap();
        assert_eq!(output.is_error, value["type"] == "error", "{value}");
        value
    }

    async fn agent(&self) -> AgentRecord {
        self.store
            .agent(&AgentId::new("sage"))
            .await
            .unwrap()
            .unwrap()
    }
}

#[tokio::test]
async fn view_returns_each_prompt_type() {
    let fixture = fixture().await;
    for (prompt_type, value) in [
        ("system", "Original system prompt"),
        ("conversation_consolidation", "Original reflection prompt"),
        ("memory_management", "Original memory prompt"),
        ("name", "Sage"),
    ] {
        let result = fixture
            .call(
                "prompt_manager_view",
                json!({"prompt_type": prompt_type}),
                &sage(),
            )
            .await;
        assert_eq!(
            result,
            json!({"type": "view_result", "prompt_type": prompt_type, "value": value,
                "agent_name": "Sage"})
        );
    }
}

#[tokio::test]
async fn view_says_not_set_for_an_empty_prompt() {
    let fixture = fixture().await;
    let mut agent = fixture.agent().await;
    agent.prompts.remove("system");
    fixture.store.save_agent(agent).await.unwrap();
    let result = fixture
        .call(
            "prompt_manager_view",
            json!({"prompt_type": "system"}),
            &sage(),
        )
        .await;
    assert_eq!(result["value"], "(not set)");
}

#[tokio::test]
async fn update_changes_each_prompt_type_in_the_store() {
    let fixture = fixture().await;
    for (prompt_type, content) in [
        ("system", "New system prompt"),
        ("conversation_consolidation", "New reflection"),
        ("memory_management", "New memory prompt"),
    ] {
        let result = fixture
            .call(
                "prompt_manager_update",
                json!({"prompt_type": prompt_type, "content": content}),
                &sage(),
            )
            .await;
        assert_eq!(
            result,
            json!({"type": "update_result", "prompt_type": prompt_type, "success": true,
                "new_value": content, "agent_name": "Sage"})
        );
        assert_eq!(fixture.agent().await.prompt(prompt_type), Some(content));
    }
    let renamed = fixture
        .call(
            "prompt_manager_update",
            json!({"prompt_type": "name", "content": "New Agent Name"}),
            &sage(),
        )
        .await;
    assert_eq!(renamed["agent_name"], "New Agent Name");
    assert_eq!(fixture.agent().await.name, "New Agent Name");
}

#[tokio::test]
async fn update_without_content_is_an_error_and_changes_nothing() {
    let fixture = fixture().await;
    for arguments in [
        json!({"prompt_type": "system"}),
        json!({"prompt_type": "system", "content": "   "}),
    ] {
        let result = fixture
            .call("prompt_manager_update", arguments, &sage())
            .await;
        assert_eq!(result["error"], "content is required for update action");
        assert_eq!(result["allowed_prompt_types"], json!(PROMPT_TYPES));
    }
    assert_eq!(
        fixture.agent().await.system_prompt(),
        Some("Original system prompt")
    );
}

#[tokio::test]
async fn an_invalid_prompt_type_lists_the_allowed_ones() {
    let fixture = fixture().await;
    let result = fixture
        .call(
            "prompt_manager_view",
            json!({"prompt_type": "invalid"}),
            &sage(),
        )
        .await;
    assert_eq!(result["error"], "Invalid prompt_type 'invalid'");
    assert_eq!(result["allowed_prompt_types"], json!(PROMPT_TYPES));
}

#[tokio::test]
async fn without_an_agent_context_every_call_is_an_error() {
    let fixture = fixture().await;
    let no_agent = CallContext {
        agent: None,
        ..sage()
    };
    let result = fixture
        .call(
            "prompt_manager_view",
            json!({"prompt_type": "system"}),
            &no_agent,
        )
        .await;
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("No current agent context"),
        "{result}"
    );
    let unknown = CallContext {
        agent: Some(AgentId::new("ghost")),
        ..sage()
    };
    let result = fixture
        .call(
            "prompt_manager_view",
            json!({"prompt_type": "system"}),
            &unknown,
        )
        .await;
    assert_eq!(
        result["error"],
        "No current agent context: agent 'ghost' is not stored"
    );
}

#[tokio::test]
async fn an_overlong_prompt_is_refused() {
    let fixture = fixture().await;
    let result = fixture
        .call(
            "prompt_manager_update",
            json!({"prompt_type": "memory_management", "content": "x".repeat(10_001)}),
            &sage(),
        )
        .await;
    assert_eq!(
        result["error"],
        "Failed to update: memory_management is 10001 characters long, more than the 10000 allowed"
    );
}
