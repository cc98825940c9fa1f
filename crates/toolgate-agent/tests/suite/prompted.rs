//! A model without native tool calls, writing free text: the agent's
//! conversation as it reads it.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentOptions};
use toolgate_llm::ToolCalls;
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire};
use toolgate_store::{ConversationId, MemoryStore};

use super::support::{TestHost, agent_over, model_configured, user_texts};

/// What the model reads after its call of `pdf_info` before the load.
const BLOCKED: &str = "Error from pdf_info:\nTool 'pdf_info' is not available for this agent. It \
    belongs to tool group 'pdf'; call load_tool_group with group_name 'pdf' and tools \
    [\"pdf_info\"] first (without tools it loads the whole group).\n\nTo load it, reply with only \
    this block:\n<tool_call>\n{\"name\":\"load_tool_group\",\"arguments\":{\"group_name\":\"pdf\",\
    \"tools\":[\"pdf_info\"]}}\n</tool_call>";

fn agent(server: &ScriptedServer, host: &TestHost, store: &Arc<MemoryStore>) -> Agent<MemoryStore> {
    let model = model_configured(server, Wire::OpenAi, false, |config| {
        config.tool_calls = ToolCalls::PromptedText;
    });
    agent_over(model, host, Arc::clone(store), AgentOptions::default())
}

async fn send(agent: &Agent<MemoryStore>, text: &str) {
    agent
        .send(
            &ConversationId::new("c"),
            text,
            &mut |_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_free_text_model_blocked_before_a_load_is_shown_the_load_to_reply_with_after_a_restart_too()
 {
    let host = TestHost::new().await;
    let store = Arc::new(MemoryStore::new());
    let server = ScriptedServer::start().await.unwrap();
    for reply in [
        "<tool_call>\n{\"name\": \"pdf_info\", \"arguments\": {\"path\": \"r.pdf\"}}\n</tool_call>",
        // As the local model copies it: the lead, then the call fenced.
        "To load it, reply with only this block:\n```json\n{\"name\":\"load_tool_group\",\
         \"arguments\":{\"group_name\":\"pdf\",\"tools\":[\"pdf_info\"]}}\n```",
        "<tool_call>\n{\"name\": \"pdf_info\", \"arguments\": {\"path\": \"r.pdf\"}}\n</tool_call>",
        "It has 3 pages.",
        "You asked about r.pdf.",
    ] {
        server.push(ScriptedTurn::text(reply).reply(Wire::OpenAi, false));
    }
    send(&agent(&server, &host, &store), "how many pages in r.pdf?").await;

    let requests = server.requests();
    assert_eq!(
        user_texts(&requests[1], Wire::OpenAi).last().unwrap(),
        BLOCKED
    );
    assert_eq!(
        host.called(),
        vec!["pdf_info".to_owned()],
        "loaded, then ran once"
    );

    // Rebuilt from the store by a new agent: the same text.
    send(&agent(&server, &host, &store), "which file was it?").await;
    let texts = user_texts(&server.requests()[4], Wire::OpenAi);
    assert!(texts.iter().any(|text| text == BLOCKED), "{texts:#?}");
}
