//! Where `toolgate chat` puts loaded schemas: the conversation by default
//! (the tools sent never change on a load), as `[tools] loaded_schemas`
//! says otherwise.

use serde_json::json;
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire};

use super::chat::{chat, project, tool_names};
use super::support::{run, text};

#[tokio::test]
async fn loaded_schemas_in_the_conversation_keep_the_tools_sent_and_offer_call_tool() {
    let wire = Wire::OpenAi;
    let dir = project();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[tools]\nloaded_schemas = \"conversation\"\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await.unwrap();
    server.push(
        ScriptedTurn::tool_call("c1", "load_tool_group", json!({"group_name": "pdf"}))
            .reply(wire, true),
    );
    server.push(ScriptedTurn::text("Loaded.").reply(wire, true));
    let output = run(chat(&server, wire, dir.path(), &["-m", "load pdf"]), "").await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "  ← load_tool_group: Loaded 1 tool from group 'PDF Tools'. They are not added to your tool list: "
        ),
        "{stderr}"
    );
    let requests = server.requests();
    assert_eq!(
        tool_names(&requests[0]),
        ["load_tool_group", "unload_tool_group", "call_tool"]
    );
    assert_eq!(requests[1].body["tools"], requests[0].body["tools"]);
}

/// Without `[tools] loaded_schemas`, `toolgate chat` keeps loaded schemas
/// in the conversation: the tools sent do not change on a load.
#[tokio::test]
async fn by_default_chat_keeps_loaded_schemas_in_the_conversation() {
    let wire = Wire::Anthropic;
    let dir = project();
    // Says nothing of where loaded schemas go (and so is not pinned).
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "# loaded_schemas: toolgate chat's default\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await.unwrap();
    server.push(
        ScriptedTurn::tool_call("c1", "load_tool_group", json!({"group_name": "pdf"}))
            .reply(wire, false),
    );
    server.push(ScriptedTurn::text("Loaded.").reply(wire, false));
    let output = run(chat(&server, wire, dir.path(), &["-m", "load pdf"]), "").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let requests = server.requests();
    assert_eq!(
        tool_names(&requests[0]),
        ["load_tool_group", "unload_tool_group", "call_tool"]
    );
    assert_eq!(requests[1].body["tools"], requests[0].body["tools"]);
}
