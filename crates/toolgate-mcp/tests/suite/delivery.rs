//! A gateway that sends every tool: under the share of the context window
//! its catalog is listed whole, with no meta-tool, and every tool runs at
//! once; when upstreams take the catalog past the share, it defers from then
//! on and tells its sessions.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::{Deferral, GATEWAY_INSTRUCTIONS_WHOLE, Mode};

use super::support::{
    CORE, Served, call, connect, is_error, options, serve_in_memory, text, tool_names,
};
use super::upstreams::{peers, stdio};

async fn whole_under(share: f64) -> (tempfile::TempDir, Served<toolgate_store::MemoryStore>) {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "hello").unwrap();
    let mut options = options(root.path(), vec![]);
    options.deferral = Deferral::Auto { share };
    options.context_window = 200_000;
    let served = serve_in_memory(options).await;
    (root, served)
}

#[tokio::test]
async fn a_small_catalog_is_listed_whole_and_its_tools_run_at_once() {
    let (_root, served) = whole_under(0.1).await;
    let delivery = served.gateway.delivery();
    assert_eq!(delivery.mode, Mode::Whole, "{delivery}");
    let (client, _) = connect(&served.url).await;
    assert_eq!(
        client
            .peer_info()
            .and_then(|info| info.instructions.clone())
            .as_deref(),
        Some(GATEWAY_INSTRUCTIONS_WHOLE)
    );
    let listed = tool_names(&client).await;
    let every: Vec<String> = served.gateway.with_catalog(|catalog| {
        catalog
            .tools()
            .filter(|tool| tool.kind() != toolgate_core::ToolKind::Meta)
            .map(|tool| tool.definition.name.to_string())
            .collect()
    });
    assert_eq!(listed, every);
    assert!(
        !listed.iter().any(|name| CORE.contains(&name.as_str())),
        "{listed:?}"
    );
    let read = call(&client, "files_read", json!({"path": "notes.txt"})).await;
    assert!(!is_error(&read), "{}", text(&read));
    let load = call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    assert!(is_error(&load));
    assert_eq!(
        text(&load),
        "Tool 'load_tool_group' is not available for this agent."
    );
    served.stop().await;
}

#[tokio::test]
async fn upstreams_that_take_the_catalog_past_the_share_make_the_gateway_defer() {
    // Room for the built-ins' 6 tools (under 1,000 tokens), not for the
    // reference server's 15 too (about 1,900 in all).
    let (_root, served) = whole_under(0.008).await;
    assert_eq!(served.gateway.delivery().mode, Mode::Whole);
    let (client, recorder) = connect(&served.url).await;
    assert!(tool_names(&client).await.contains(&"files_read".to_owned()));
    let everything = stdio(
        "everything",
        peers().node_bin.join("mcp-server-everything"),
        &[],
    );
    served.gateway.update_upstreams(vec![everything]).await;
    let delivery = served.gateway.delivery();
    assert_eq!(delivery.mode, Mode::Deferred, "{delivery}");
    recorder.wait_for_list_changed(1).await;
    assert_eq!(tool_names(&client).await, CORE);
    served.stop().await;
}
