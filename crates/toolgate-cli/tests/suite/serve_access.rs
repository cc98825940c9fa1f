//! Who may use `toolgate serve`, at its start and as its configuration
//! changes: tokens `toolgate token create` makes, OAuth (its issuer away, or
//! switched on and off by a reload), warnings for policies and rate limits
//! naming no tool, a policy naming no group, and reloads that change the
//! clients, refuse to open an exposed listener, or remove a client with an
//! upstream.

use super::gateways::{
    call_over, exchange, initialize_response, initialize_status, listening_url, serve_in,
    serve_listening, serve_logged, stderr, toolgate, until_logged,
};

#[test]
fn a_token_made_by_token_create_lets_its_client_in() {
    let dir = tempfile::tempdir().unwrap();
    let made = toolgate(&["token", "create", "ci-bot"], dir.path());
    assert!(made.status.success(), "{}", stderr(&made));
    let printed = String::from_utf8(made.stdout).unwrap();
    let token = printed
        .lines()
        .find(|line| line.starts_with("tg_"))
        .unwrap_or_else(|| panic!("no token in:\n{printed}"))
        .to_owned();
    let table = &printed[printed.find("[clients.ci-bot]").expect("no table")..];
    std::fs::write(dir.path().join("toolgate.toml"), table).unwrap();

    let (mut child, banner) = serve_in(dir.path(), &["--memory-store"]);
    assert!(
        banner.contains("clients:   1 ([clients] in the config)"),
        "{banner}"
    );
    let url = listening_url(&banner);
    assert!(initialize_status(&url, Some(&token)).contains("200"));
    assert!(initialize_status(&url, None).contains("401"));
    assert!(initialize_status(&url, Some("tg_0000000000000000")).contains("401"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_gateway_signing_clients_in_with_oauth_starts_while_its_issuer_is_away() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[auth.oauth]\nissuer = \"http://127.0.0.1:9/realm\"\n\
         audience = \"https://toolgate.example.com/mcp\"\ndefault_client = \"staff\"\n\n\
         [clients.staff]\n",
    )
    .unwrap();
    let (mut child, banner) = serve_in(dir.path(), &["--memory-store"]);
    assert!(
        banner.contains(
            "OAuth:     tokens from http://127.0.0.1:9/realm; its keys are not fetched yet"
        ),
        "{banner}"
    );
    let url = listening_url(&banner);
    assert!(initialize_status(&url, None).contains("401"));
    assert!(initialize_status(&url, Some("not-a-jwt")).contains("401"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_rate_limit_on_a_tool_no_tool_holds_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[rate_limits.tools]\nno_such_tool = { calls = 1, per_seconds = 60 }\n",
    )
    .unwrap();
    let (mut child, banner) = serve_in(dir.path(), &["--memory-store"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        banner
            .contains("warning: [rate_limits.tools] names 'no_such_tool', which no tool holds now"),
        "{banner}"
    );
}

#[test]
fn a_policy_naming_no_tool_is_warned_about_but_a_former_tool_name_of_an_action_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let hash = "0".repeat(64);
    std::fs::write(
        dir.path().join("toolgate.toml"),
        format!(
            "[clients.alice]\ntoken_sha256 = \"{hash}\"\n\
             deny_tools = [\"web_fetch\", \"web_fetchh\", \"call_tool\", \"time_now\"]\n"
        ),
    )
    .unwrap();
    let (mut child, banner) = serve_listening(dir.path(), &["--memory-store"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        banner.contains(
            "warning: [clients.alice] deny_tools names 'web_fetchh', which no tool holds now"
        ),
        "{banner}"
    );
    // `web_fetch` is web's fetch action by its former name; call_tool a
    // meta-tool; time_now a tool.
    for known in ["'web_fetch'", "'call_tool'", "'time_now'"] {
        assert!(!banner.contains(&format!("names {known}")), "{banner}");
    }
}

#[test]
fn a_policy_naming_a_group_that_does_not_exist_stops_serve_naming_the_client_and_rule() {
    let dir = tempfile::tempdir().unwrap();
    let hash = "0".repeat(64);
    std::fs::write(
        dir.path().join("toolgate.toml"),
        format!("[clients.alice]\ntoken_sha256 = \"{hash}\"\nallow_groups = [\"tiem\"]\n"),
    )
    .unwrap();
    // The test's home is its working directory: the files root is given.
    let output = toolgate(
        &[
            "serve",
            "--memory-store",
            "--listen",
            "127.0.0.1:0",
            "--files-root",
            ".",
        ],
        dir.path(),
    );
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("[clients.alice] allow_groups names 'tiem', which is not a group (groups: time, files, web"),
        "{message}"
    );
}

#[test]
fn clients_change_with_the_config_file_and_a_bad_file_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let table = |name: &str, token: &str| {
        let hash = toolgate_mcp::TokenHash::of(token).to_hex();
        format!("[clients.{name}]\ntoken_sha256 = \"{hash}\"\n")
    };
    let (alice, bob) = ("tg_alice-reload-0123456789", "tg_bob-reload-0123456789");
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, table("alice", alice)).unwrap();
    let (mut child, url) = serve_logged(dir.path(), "127.0.0.1:0");
    assert!(initialize_status(&url, Some(alice)).contains("200"));
    assert!(initialize_status(&url, Some(bob)).contains("401"));

    // Alice's token is withdrawn and Bob's added, without a restart.
    std::fs::write(&config, table("bob", bob)).unwrap();
    until_logged(dir.path(), "applied 1 client(s)");
    assert!(initialize_status(&url, Some(alice)).contains("401"));
    assert!(initialize_status(&url, Some(bob)).contains("200"));

    // A file that does not check is refused; Bob stays in.
    std::fs::write(&config, "[clients.eve]\ntoken_sha256 = \"short\"\n").unwrap();
    let log = until_logged(dir.path(), "not applied");
    assert!(
        log.contains("[clients.eve]: `token_sha256` is 5 characters long"),
        "{log}"
    );
    assert!(initialize_status(&url, Some(bob)).contains("200"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_reload_that_would_open_an_exposed_listener_to_anyone_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tg_ops-exposed-0123456789";
    let hash = toolgate_mcp::TokenHash::of(token).to_hex();
    let config = dir.path().join("toolgate.toml");
    std::fs::write(
        &config,
        format!("[clients.ops]\ntoken_sha256 = \"{hash}\"\n"),
    )
    .unwrap();
    // Reachable from other machines, guarded only by the clients' tokens.
    let (mut child, url) = serve_logged(dir.path(), "0.0.0.0:0");
    let url = url.replace("0.0.0.0", "127.0.0.1");
    assert!(initialize_status(&url, None).contains("401"));

    // Taking the last token away would let anyone in: refused.
    std::fs::write(&config, "").unwrap();
    let log = until_logged(dir.path(), "not applied");
    assert!(
        log.contains(
            "no client would have a token: --listen 0.0.0.0:0 is reachable from other machines"
        ),
        "{log}"
    );
    assert!(initialize_status(&url, None).contains("401"));
    assert!(!initialize_status(&url, Some(token)).contains("401"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn oauth_comes_and_goes_with_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tg_staff-oauth-0123456789";
    let hash = toolgate_mcp::TokenHash::of(token).to_hex();
    let staff = format!("[clients.staff]\ntoken_sha256 = \"{hash}\"\n");
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, &staff).unwrap();
    let (mut child, url) = serve_logged(dir.path(), "127.0.0.1:0");
    let metadata = "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\n\r\n";
    assert!(exchange(&url, metadata).starts_with("HTTP/1.1 404"));

    // Signing in with OAuth is switched on without a restart.
    std::fs::write(
        &config,
        format!(
            "[auth.oauth]\nissuer = \"http://127.0.0.1:9/realm\"\n\
             audience = \"https://toolgate.example.com/mcp\"\n\n{staff}"
        ),
    )
    .unwrap();
    let log = until_logged(dir.path(), "[auth.oauth] applied");
    assert!(
        log.contains("[auth.oauth] applied: tokens from http://127.0.0.1:9/realm; its keys are not fetched yet"),
        "{log}"
    );
    let published = exchange(&url, metadata);
    assert!(published.starts_with("HTTP/1.1 200"), "{published}");
    assert!(
        published.contains(r#""resource":"https://toolgate.example.com/mcp""#),
        "{published}"
    );
    let challenge = initialize_response(&url, None);
    assert!(
        challenge.to_lowercase().contains(
            "www-authenticate: bearer resource_metadata=\"https://toolgate.example.com/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );
    assert!(initialize_status(&url, Some(token)).contains("200"));

    // And off again: the client's own token still works.
    std::fs::write(&config, &staff).unwrap();
    until_logged(dir.path(), "[auth.oauth] removed");
    assert!(exchange(&url, metadata).starts_with("HTTP/1.1 404"));
    assert!(initialize_status(&url, Some(token)).contains("200"));
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_removed_with_an_upstream_is_out_before_that_upstreams_calls_finish() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::time::{Duration, Instant};

    let peers = super::support::peers();
    let dir = tempfile::tempdir().unwrap();
    let table = |name: &str, token: &str| {
        let hash = toolgate_mcp::TokenHash::of(token).to_hex();
        format!("[clients.{name}]\ntoken_sha256 = \"{hash}\"\n\n")
    };
    let (alice, bob) = ("tg_alice-order-0123456789", "tg_bob-order-0123456789");
    let everything = format!(
        "[[upstream]]\nname = \"everything\"\ncommand = {:?}\nargs = [\"stdio\"]\n",
        peers.node_bin.join("mcp-server-everything")
    );
    let config = dir.path().join("toolgate.toml");
    std::fs::write(
        &config,
        format!("{}{}{everything}", table("alice", alice), table("bob", bob)),
    )
    .unwrap();
    super::support::pin_deferred(dir.path());
    let (mut child, url) = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || serve_logged(&dir, "127.0.0.1:0")
    })
    .await
    .unwrap();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(bob),
    );
    let client = ().serve(transport).await.unwrap();
    let loaded = call_over(
        &client,
        "load_tool_group",
        serde_json::json!({"group_name": "everything"}),
    )
    .await;
    assert_ne!(loaded["isError"], serde_json::json!(true), "{loaded}");
    // Bob's five-second operation is under way when one save removes both
    // Alice and the server it runs on.
    let long = tokio::spawn(async move {
        let result = call_over(
            &client,
            "trigger-long-running-operation",
            serde_json::json!({"duration": 5, "steps": 5}),
        )
        .await;
        (result, client)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::write(&config, table("bob", bob)).unwrap();
    let written = Instant::now();

    // Alice is shut out at once, not once the server has drained.
    let shut_out = tokio::task::spawn_blocking(move || {
        while written.elapsed() < Duration::from_secs(3) {
            if initialize_status(&url, Some(alice)).contains("401") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    })
    .await
    .unwrap();
    assert!(shut_out, "Alice still in 3 s after the save");
    // Bob's operation finished on the server being removed.
    let (result, _client) = long.await.unwrap();
    assert_ne!(result["isError"], serde_json::json!(true), "{result}");
    until_logged(dir.path(), "upstreams removed: everything");
    let _ = child.kill();
    let _ = child.wait();
}
