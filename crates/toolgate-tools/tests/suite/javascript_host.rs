//! What a JavaScript tool reaches outside its sandbox (`fetch`, `files`,
//! `context.settings`) and what it cannot: each escape attempt is a clear
//! error result, and the toolbox keeps serving.

use std::path::Path;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use toolgate_tools::{
    BuiltinConfig, FilesAccess, JavaScriptConfig, ToolOutput, Toolbox, ToolboxOptions,
};

use super::calls::call;
use super::site::{Page, Site};

/// A group `probe` whose tool `probe_<function>` calls `<function>` of
/// `script`, for each function named.
fn write_probe(dir: &Path, functions: &[&str], script: &str) {
    let entries: Vec<Value> = functions
        .iter()
        .map(|function| {
            json!({
                "name": format!("probe_{function}"),
                "function": function,
                "description": format!("Calls {function}"),
                "parameters": {"type": "object", "properties": {"url": {"type": "string"}, "path": {"type": "string"}}},
            })
        })
        .collect();
    std::fs::write(
        dir.join("probe.json"),
        serde_json::to_string(&entries).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("probe.js"), script).unwrap();
}

/// A toolbox running `dir`'s manifests, with `root` as the files root.
async fn start(
    dir: &Path,
    root: &Path,
    configure: impl FnOnce(&mut BuiltinConfig, &mut JavaScriptConfig),
) -> Arc<Toolbox> {
    let mut builtins = BuiltinConfig::new(root);
    let mut javascript = JavaScriptConfig::default();
    configure(&mut builtins, &mut javascript);
    let (toolbox, report) = Toolbox::start(ToolboxOptions {
        manifest_dirs: vec![dir.to_path_buf()],
        builtins: Some(builtins),
        javascript,
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert!(report.manifest_errors.is_empty(), "{report:?}");
    toolbox
}

/// The text of an error result, failing when the result is no error.
fn error_text(output: &ToolOutput) -> String {
    assert!(output.is_error, "expected an error, got {output:?}");
    output.model_text()
}

const FETCHING: &str = r#"
async function rates(args, context) {
  const response = await fetch(`${context.settings.base_url}/latest?base=EUR`, {
    headers: { Accept: "application/json", Authorization: "Bearer abc" },
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const data = await response.json();
  return { tool: context.tool, usd: data.rates.USD, type: response.headers.get("content-type") };
}
async function get(args) {
  const response = await fetch(args.url);
  return { status: response.status, url: response.url, text: await response.text() };
}
async function post(args) {
  const response = await fetch(args.url, { method: "POST", body: "{\"a\":1}", headers: { Authorization: "Bearer abc" } });
  return { status: response.status, url: response.url, text: await response.text() };
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn fetch_reaches_a_configured_api_and_settings_reach_the_script() {
    let site = Site::start(vec![(
        "/latest",
        Page::new(
            200,
            "application/json",
            r#"{"base": "EUR", "rates": {"USD": 1.08}}"#,
        ),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    write_probe(dir.path(), &["rates"], FETCHING);
    let toolbox = start(dir.path(), dir.path(), |builtins, javascript| {
        builtins.web.allow_private_addresses = true;
        let mut settings = Map::new();
        settings.insert("base_url".into(), json!(site.base));
        javascript.settings.insert("probe".into(), settings);
    })
    .await;
    assert_eq!(
        call(&toolbox, "probe_rates", json!({})).await,
        ToolOutput::json(json!({"tool": "probe_rates", "usd": 1.08, "type": "application/json"}))
    );
    assert_eq!(site.requests(), ["/latest?base=EUR"]);
    let head = site.heads()[0].to_ascii_lowercase();
    assert!(head.contains("accept: application/json"), "{head}");
}

#[tokio::test(flavor = "multi_thread")]
async fn fetch_follows_redirects_and_drops_credentials_across_origins() {
    let target = Site::start(vec![("/end", Page::new(200, "text/plain", "arrived"))]).await;
    let mut hop = Page::new(302, "text/plain", "");
    hop.headers
        .push(("Location", format!("{}/end", target.base)));
    let mut see_other = Page::new(303, "text/plain", "");
    see_other.headers.push(("Location", "/same".to_owned()));
    let origin = Site::start(vec![
        ("/hop", hop),
        ("/post", see_other),
        ("/same", Page::new(200, "text/plain", "same origin")),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    write_probe(dir.path(), &["get", "post"], FETCHING);
    let toolbox = start(dir.path(), dir.path(), |builtins, _| {
        builtins.web.allow_private_addresses = true;
    })
    .await;

    let output = call(
        &toolbox,
        "probe_post",
        json!({"url": format!("{}/hop", origin.base)}),
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::json(
            json!({"status": 200, "url": format!("{}/end", target.base), "text": "arrived"})
        )
    );
    // The other origin got neither the credentials nor the body: a 302
    // turns a POST into a GET.
    let head = target.heads()[0].to_ascii_lowercase();
    assert!(head.starts_with("get /end"), "{head}");
    assert!(!head.contains("authorization"), "{head}");

    let output = call(
        &toolbox,
        "probe_post",
        json!({"url": format!("{}/post", origin.base)}),
    )
    .await;
    assert_eq!(output.structured.unwrap()["text"], "same origin");
    let heads = origin.heads();
    let same = heads.last().unwrap().to_ascii_lowercase();
    assert!(same.starts_with("get /same"), "{same}");
    assert!(same.contains("authorization: bearer abc"), "{same}");
}

#[tokio::test(flavor = "multi_thread")]
async fn fetch_refuses_loopback_link_local_and_names_that_resolve_to_them() {
    let site = Site::start(vec![("/", Page::new(200, "text/plain", "secret"))]).await;
    let port = site.base.rsplit(':').next().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    write_probe(dir.path(), &["get"], FETCHING);
    let toolbox = start(dir.path(), dir.path(), |_, _| {}).await;
    for (url, kind) in [
        (format!("{}/", site.base), "loopback address (127.0.0.1)"),
        (format!("http://localhost:{port}/"), "loopback address"),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "link-local address (169.254.169.254)",
        ),
        ("http://10.0.0.8/".to_owned(), "private address (10.0.0.8)"),
        ("http://[::1]/".to_owned(), "loopback address (::1)"),
    ] {
        let text = error_text(&call(&toolbox, "probe_get", json!({ "url": url })).await);
        assert!(
            text.starts_with("Tool 'probe_get' failed: Error: fetch: Refused to fetch")
                && text.contains(kind)
                && text.ends_with("(probe.js, line 11)"),
            "{text}"
        );
    }
    let text = error_text(&call(&toolbox, "probe_get", json!({"url": "file:///etc/passwd"})).await);
    assert!(
        text.contains("only http and https URLs, not file"),
        "{text}"
    );
    assert!(site.requests().is_empty(), "nothing was sent");
}

const FILES: &str = r#"
function read(args) { return files.read(args.path); }
function list(args) { return files.list(args.path); }
function write(args) { files.write(args.path, "written by a tool"); return files.read(args.path); }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn files_stay_under_the_root_and_are_read_only_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "remember the milk").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
    write_probe(dir.path(), &["read", "list", "write"], FILES);
    let toolbox = start(dir.path(), root.path(), |_, _| {}).await;

    assert_eq!(
        call(&toolbox, "probe_read", json!({"path": "notes.txt"})).await,
        ToolOutput::text("remember the milk")
    );
    let listing = call(&toolbox, "probe_list", json!({"path": "."})).await;
    assert_eq!(
        listing.structured.unwrap()["entries"][0]["name"],
        "notes.txt"
    );
    let outside = dir.path().join("secret.txt");
    for path in [
        "../secret.txt".to_owned(),
        outside.display().to_string(),
        "/etc/passwd".to_owned(),
    ] {
        assert_eq!(
            error_text(&call(&toolbox, "probe_read", json!({ "path": path })).await),
            "Tool 'probe_read' failed: Error: files.read: Parameter 'path' is outside the files root. (probe.js, line 2)"
        );
    }
    assert_eq!(
        error_text(&call(&toolbox, "probe_write", json!({"path": "new.txt"})).await),
        "Tool 'probe_write' failed: Error: files.write: files are read-only (toolgate was started without --allow-write) (probe.js, line 4)"
    );
    assert!(!root.path().join("new.txt").exists());

    let writable = start(dir.path(), root.path(), |builtins, _| {
        builtins.files_access = FilesAccess::ReadWrite;
    })
    .await;
    assert_eq!(
        call(&writable, "probe_write", json!({"path": "new.txt"})).await,
        ToolOutput::text("written by a tool")
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("new.txt")).unwrap(),
        "written by a tool"
    );
}

const ESCAPES: &str = r#"
function useRequire() { return require("fs").readFileSync("/etc/passwd", "utf8"); }
function useProcess() { return process.env; }
function useDeno() { return Deno.env.get("HOME"); }
async function useImport() { return (await import("os")).getenv("HOME"); }
function pollute() {
  Object.prototype.polluted = "yes";
  Array.prototype.map = () => "hijacked";
  files.read = () => "fake";
  globalThis.fetch = async () => "fake";
  return "polluted";
}
function inspect() {
  return { polluted: ({}).polluted ?? null, map: [1].map((x) => x + 1), read: String(files.read).includes("fake") };
}
function recurse(n) { return recurse(n + 1) + 1; }
function huge() { let s = "x"; for (;;) { s += s; } }
function spin() { for (;;) {} }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn escape_attempts_are_clear_errors_and_the_toolbox_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let functions = [
        "useRequire",
        "useProcess",
        "useDeno",
        "useImport",
        "pollute",
        "inspect",
        "recurse",
        "huge",
        "spin",
    ];
    write_probe(dir.path(), &functions, ESCAPES);
    let toolbox = start(dir.path(), dir.path(), |_, javascript| {
        javascript.timeout = std::time::Duration::from_millis(500);
        javascript.memory_mib = 16;
    })
    .await;
    for (tool, expected) in [
        (
            "probe_useRequire",
            "Tool 'probe_useRequire' failed: ReferenceError: require is not defined (probe.js, line 2)",
        ),
        (
            "probe_useProcess",
            "Tool 'probe_useProcess' failed: ReferenceError: process is not defined (probe.js, line 3)",
        ),
        (
            "probe_useDeno",
            "Tool 'probe_useDeno' failed: ReferenceError: Deno is not defined (probe.js, line 4)",
        ),
        (
            "probe_useImport",
            "Tool 'probe_useImport' failed: ReferenceError: could not load module 'os' (probe.js)",
        ),
        (
            "probe_recurse",
            "Tool 'probe_recurse' failed: maximum call stack size exceeded (probe.js, line 16)",
        ),
        (
            "probe_huge",
            // QuickJS builds the doubled string as a rope: it hits its
            // length limit before the heap limit.
            "Tool 'probe_huge' failed: InternalError: string too long (probe.js, line 17)",
        ),
        (
            "probe_spin",
            "Tool 'probe_spin' (probe.js) timed out after 0.5 s.",
        ),
    ] {
        let output = call(&toolbox, tool, json!({})).await;
        assert_eq!(error_text(&output), expected);
    }
    // What one call changes dies with it.
    assert_eq!(
        call(&toolbox, "probe_pollute", json!({})).await,
        ToolOutput::text("polluted")
    );
    assert_eq!(
        call(&toolbox, "probe_inspect", json!({})).await,
        ToolOutput::json(json!({"polluted": null, "map": [2], "read": false}))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn scripts_reach_what_is_configured_without_the_built_in_groups() {
    let site = Site::start(vec![("/ping", Page::new(200, "text/plain", "pong"))]).await;
    let dir = tempfile::tempdir().unwrap();
    write_probe(dir.path(), &["get"], FETCHING);
    let mut reach = BuiltinConfig::new(dir.path());
    reach.web.allow_private_addresses = true;
    let (toolbox, _) = Toolbox::start(ToolboxOptions {
        manifest_dirs: vec![dir.path().to_path_buf()],
        builtins: None,
        script_reach: Some(reach),
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert!(toolbox.catalog().group_listing("web").is_none());
    let output = call(
        &toolbox,
        "probe_get",
        json!({"url": format!("{}/ping", site.base)}),
    )
    .await;
    assert_eq!(output.structured.unwrap()["text"], "pong");
}

/// A call of `tool` for a caller that may use what `authority` allows.
async fn call_as(
    toolbox: &Toolbox,
    authority: toolgate_tools::Authority,
    tool: &str,
    arguments: Value,
) -> ToolOutput {
    let context = toolgate_tools::CallContext::new(authority);
    match toolbox.call(tool, arguments, &context).await {
        Ok(output) | Err(toolgate_tools::ToolCallError::RespondToModel(output)) => output,
        Err(fatal) => panic!("{fatal:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_reaches_only_what_its_caller_may_use() {
    use std::collections::{BTreeMap, BTreeSet};
    use toolgate_core::{ActionPolicy, ToolPolicy};
    use toolgate_tools::Authority;

    let site = Site::start(vec![("/page", Page::new(200, "text/plain", "reached"))]).await;
    let dir = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("secret.txt"), "the secret").unwrap();
    write_probe(
        dir.path(),
        &["read", "list", "write", "get"],
        &format!("{FILES}\n{FETCHING}"),
    );
    let toolbox = start(dir.path(), root.path(), |builtins, _| {
        builtins.web.allow_private_addresses = true;
        builtins.files_access = FilesAccess::ReadWrite;
    })
    .await;
    let policy = |policy: ToolPolicy| Authority::policy(Arc::new(policy));
    // The tool itself is the caller's to call (`probe` is allowed); what
    // its script does on the caller's behalf is judged as the caller's own
    // call of the built-in tool.
    let no_files = policy(ToolPolicy {
        deny_groups: BTreeSet::from(["files".to_owned()]),
        actions: BTreeMap::from([("web".to_owned(), ActionPolicy::deny(["fetch"]))]),
        ..ToolPolicy::default()
    });
    for (function, arguments, host) in [
        (
            "read",
            json!({"path": "secret.txt"}),
            "files.read: files_read",
        ),
        ("list", json!({"path": "."}), "files.list: files_list"),
        (
            "write",
            json!({"path": "secret.txt"}),
            "files.write: files_write",
        ),
    ] {
        let text = error_text(
            &call_as(
                &toolbox,
                no_files.clone(),
                &format!("probe_{function}"),
                arguments,
            )
            .await,
        );
        assert!(
            text.contains(&format!("{host} is not available to this caller")),
            "{text}"
        );
        assert!(!text.contains("the secret"), "{text}");
    }
    let text = error_text(
        &call_as(
            &toolbox,
            no_files,
            "probe_get",
            json!({"url": format!("{}/page", site.base)}),
        )
        .await,
    );
    assert!(
        text.contains("fetch: web_fetch is not available to this caller"),
        "{text}"
    );
    assert!(site.requests().is_empty(), "the page was fetched");
    assert_eq!(
        std::fs::read_to_string(root.path().join("secret.txt")).unwrap(),
        "the secret"
    );

    // Write alone denied, by the tool's name: reading still works.
    let read_only = policy(ToolPolicy {
        deny_tools: BTreeSet::from(["files_write".to_owned()]),
        ..ToolPolicy::default()
    });
    assert_eq!(
        call_as(
            &toolbox,
            read_only.clone(),
            "probe_read",
            json!({"path": "secret.txt"})
        )
        .await,
        ToolOutput::text("the secret")
    );
    assert!(
        error_text(
            &call_as(
                &toolbox,
                read_only,
                "probe_write",
                json!({"path": "secret.txt"})
            )
            .await
        )
        .contains("files_write is not available to this caller")
    );
    // A context that says no caller runs nothing.
    let text = error_text(
        &call_as(
            &toolbox,
            Authority::nothing(),
            "probe_read",
            json!({"path": "secret.txt"}),
        )
        .await,
    );
    assert_eq!(text, "Tool 'probe_read' is not available for this agent.");
    // The operator reaches everything configured.
    assert_eq!(
        call_as(
            &toolbox,
            Authority::everything(),
            "probe_read",
            json!({"path": "secret.txt"})
        )
        .await,
        ToolOutput::text("the secret")
    );
}
