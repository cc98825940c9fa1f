use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::{ActiveToolSet, Catalog, Origin};

use super::*;

/// The groups the built-ins offer, registered the way the toolbox does.
fn register(builtin: &BuiltinTools, catalog: &mut Catalog) -> Vec<GroupId> {
    let mut registered = Vec::new();
    for (group, tools) in builtin.offer().groups {
        registered.push(group.id.clone());
        let tools = tools.into_iter().map(|t| (t, Origin::Builtin)).collect();
        catalog
            .register_group_with_tools(group, Origin::Builtin, tools)
            .unwrap();
    }
    registered
}

fn tools(dir: &std::path::Path, access: FilesAccess) -> BuiltinTools {
    BuiltinTools::new(&BuiltinConfig {
        files_access: access,
        ..BuiltinConfig::new(dir)
    })
    .unwrap()
}

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs_write(dir.path(), "notes.txt", "alpha\nBeta gamma\ndelta\n");
    fs_write(
        dir.path(),
        "src/main.rs",
        "fn main() {\n    println!(\"gamma\");\n}\n",
    );
    fs_write(dir.path(), ".git/config", "gamma hidden\n");
    dir
}

fn fs_write(root: &std::path::Path, relative: &str, content: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

#[test]
fn builtin_groups_register_and_load_like_any_group() {
    let dir = fixture();
    let mut catalog = Catalog::new();
    let registered = register(&tools(dir.path(), FilesAccess::ReadOnly), &mut catalog);
    assert_eq!(
        registered.iter().map(GroupId::as_str).collect::<Vec<_>>(),
        ["time", "files", "web"]
    );
    let files: Vec<_> = catalog
        .group_tools("files")
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(files, ["files_list", "files_read", "files_search"]);
    let loaded = ActiveToolSet::new()
        .load(&catalog, "time")
        .unwrap()
        .to_string();
    assert!(
        loaded.starts_with("Loaded 2 tools from group 'Time':"),
        "{loaded}"
    );
}

#[test]
fn a_writable_root_adds_files_write() {
    let dir = fixture();
    let mut catalog = Catalog::new();
    register(&tools(dir.path(), FilesAccess::ReadWrite), &mut catalog);
    assert!(catalog.tool("files_write").is_some());
}

#[tokio::test]
async fn a_withheld_root_leaves_the_files_group_out_and_says_why() {
    let why = "the files root would be / (the filesystem root)".to_owned();
    let config = BuiltinConfig {
        files_root: FilesRoot::Withheld(why.clone()),
        ..BuiltinConfig::new(".")
    };
    let builtin = BuiltinTools::new(&config).unwrap();
    let groups: Vec<String> = builtin
        .offer()
        .groups
        .into_iter()
        .map(|(group, _)| group.id.to_string())
        .collect();
    assert_eq!(groups, ["time", "web"]);
    assert!(
        builtin
            .run("files_list", json!({}), &CallContext::default())
            .await
            .is_none()
    );
    assert_eq!(config.withheld(), [(GroupId::new("files").unwrap(), why)]);
    assert_eq!(config.files().unwrap().map(|_| ()), None);
}

#[tokio::test]
async fn list_read_and_search_stay_under_the_root() {
    let dir = fixture();
    let builtin = tools(dir.path(), FilesAccess::ReadOnly);

    let listed = builtin
        .run("files_list", json!({}), &CallContext::default())
        .await
        .unwrap();
    let names: Vec<_> = listed.structured.as_ref().unwrap()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, [".git", "notes.txt", "src"]);

    let read = builtin
        .run(
            "files_read",
            json!({"path": "notes.txt", "start_line": 2, "max_lines": 1}),
            &CallContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(read, ToolOutput::text("Beta gamma"));

    let found = builtin
        .run(
            "files_search",
            json!({"query": "GAMMA"}),
            &CallContext::default(),
        )
        .await
        .unwrap();
    let matches = &found.structured.unwrap()["matches"];
    assert_eq!(
        *matches,
        json!([
            {"path": "notes.txt", "match": "content", "line": 2, "text": "Beta gamma"},
            {"path": "src/main.rs", "match": "content", "line": 2, "text": "println!(\"gamma\");"},
        ])
    );
}

#[tokio::test]
async fn paths_outside_the_root_are_refused() {
    let dir = fixture();
    let outside = tempfile::tempdir().unwrap();
    fs_write(outside.path(), "secret.txt", "secret");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
    let builtin = tools(dir.path(), FilesAccess::ReadOnly);

    for path in [
        "../secret.txt".to_owned(),
        outside.path().join("secret.txt").display().to_string(),
        #[cfg(unix)]
        "escape/secret.txt".to_owned(),
    ] {
        let output = builtin
            .run("files_read", json!({"path": path}), &CallContext::default())
            .await
            .unwrap();
        assert!(output.is_error, "{path}: {}", output.model_text());
        assert!(
            output.model_text().contains("outside the files root"),
            "{path}: {}",
            output.model_text()
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn outside_the_root_the_answer_does_not_tell_whether_a_file_exists() {
    let dir = fixture();
    let outside = tempfile::tempdir().unwrap();
    fs_write(outside.path(), "secret.txt", "secret");
    let symlink = |target: &std::path::Path, link: &str| {
        std::os::unix::fs::symlink(target, dir.path().join(link)).unwrap();
    };
    symlink(outside.path(), "escape");
    symlink(&outside.path().join("secret.txt"), "to_secret");
    symlink(&outside.path().join("missing.txt"), "to_missing");
    symlink(std::path::Path::new("escape/../escape"), "relative_escape");
    let builtin = tools(dir.path(), FilesAccess::ReadWrite);
    let absolute = |name: &str| outside.path().join(name).display().to_string();
    // Each pair: a path to something that exists, one to nothing.
    let pairs = [
        (absolute("secret.txt"), absolute("missing.txt")),
        (absolute(""), absolute("missing/")),
        (absolute("secret.txt"), absolute("missing/deeper/x.txt")),
        ("../secret.txt".to_owned(), "../missing.txt".to_owned()),
        (
            "escape/secret.txt".to_owned(),
            "escape/missing.txt".to_owned(),
        ),
        ("to_secret".to_owned(), "to_missing".to_owned()),
        (
            "relative_escape/secret.txt".to_owned(),
            "relative_escape/missing.txt".to_owned(),
        ),
    ];
    let answer = |tool: &'static str, path: String| {
        let arguments = match tool {
            "files_search" => json!({"query": "secret", "path": path}),
            "files_write" => json!({"path": format!("{path}/new.txt"), "content": "x"}),
            _ => json!({"path": path}),
        };
        let builtin = &builtin;
        async move {
            builtin
                .run(tool, arguments, &CallContext::default())
                .await
                .unwrap()
        }
    };
    for (existing, missing) in pairs {
        for tool in ["files_read", "files_list", "files_search", "files_write"] {
            let to_existing = answer(tool, existing.clone()).await;
            let to_missing = answer(tool, missing.clone()).await;
            assert_eq!(
                to_existing.model_text().as_bytes(),
                to_missing.model_text().as_bytes(),
                "{tool}: {existing} and {missing}"
            );
            assert_eq!(
                to_existing,
                ToolOutput::error("Parameter 'path' is outside the files root."),
                "{tool}: {existing}"
            );
        }
    }
    assert!(!outside.path().join("new.txt").exists());
}

#[tokio::test]
async fn write_needs_a_writable_root() {
    let dir = fixture();
    let read_only = tools(dir.path(), FilesAccess::ReadOnly);
    let refused = read_only
        .run(
            "files_write",
            json!({"path": "new.txt", "content": "x"}),
            &CallContext::default(),
        )
        .await;
    assert_eq!(refused, None, "a read-only root has no files_write");
    assert!(!dir.path().join("new.txt").exists());

    let writable = tools(dir.path(), FilesAccess::ReadWrite);
    let written = writable
        .run(
            "files_write",
            json!({"path": "src/new.txt", "content": "hello"}),
            &CallContext::default(),
        )
        .await
        .unwrap();
    assert!(!written.is_error, "{}", written.model_text());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/new.txt")).unwrap(),
        "hello"
    );
    let escaped = writable
        .run(
            "files_write",
            json!({"path": "../x.txt", "content": "x"}),
            &CallContext::default(),
        )
        .await
        .unwrap();
    assert!(escaped.is_error);
}

#[tokio::test]
async fn a_missing_file_is_an_error_the_model_reads() {
    let dir = fixture();
    let output = tools(dir.path(), FilesAccess::ReadOnly)
        .run(
            "files_read",
            json!({"path": "nope.txt"}),
            &CallContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        output,
        ToolOutput::error("Cannot use 'nope.txt': no such file or directory.")
    );
}

/// Runs `tool`; should it still wait after a few seconds (opening a FIFO
/// blocks until its other end opens, on a thread nothing can stop), opens
/// both ends of `fifo` so the test fails instead of hanging.
async fn run_beside_fifo(
    builtin: &BuiltinTools,
    tool: &str,
    arguments: Value,
    fifo: &std::path::Path,
) -> ToolOutput {
    let context = CallContext::default();
    let run = builtin.run(tool, arguments, &context);
    match tokio::time::timeout(std::time::Duration::from_secs(5), run).await {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let fifo = fifo.to_path_buf();
            std::thread::spawn(move || {
                let _ = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(fifo);
            });
            panic!("{tool} blocked on a FIFO");
        }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn pipes_and_sockets_are_refused_before_they_are_opened() {
    let dir = fixture();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("socket")).unwrap();
    let builtin = tools(dir.path(), FilesAccess::ReadWrite);
    for (path, kind) in [("pipe", "a named pipe (FIFO)"), ("socket", "a socket")] {
        let refused =
            format!("Cannot use '{path}': it is {kind}, not a regular file or directory.");
        for (tool, arguments) in [
            ("files_read", json!({"path": path})),
            ("files_list", json!({"path": path})),
            ("files_search", json!({"query": "x", "path": path})),
            ("files_write", json!({"path": path, "content": "x"})),
        ] {
            let output = run_beside_fifo(&builtin, tool, arguments, &fifo).await;
            assert_eq!(output, ToolOutput::error(refused.clone()), "{tool} {path}");
        }
    }
    // A search walks past them without opening them.
    let found = run_beside_fifo(&builtin, "files_search", json!({"query": "gamma"}), &fifo).await;
    assert!(!found.is_error, "{}", found.model_text());
}

#[test]
fn prompt_manager_is_offered_only_with_an_agent_store() {
    let dir = fixture();
    let config = BuiltinConfig {
        agents: Some(Arc::new(toolgate_store::MemoryStore::new())),
        ..BuiltinConfig::new(dir.path())
    };
    let mut catalog = Catalog::new();
    let registered = register(&BuiltinTools::new(&config).unwrap(), &mut catalog);
    assert_eq!(
        registered.iter().map(GroupId::as_str).collect::<Vec<_>>(),
        ["time", "files", "web", "prompt_manager"]
    );
    let tools: Vec<_> = catalog
        .group_tools("prompt_manager")
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(tools, ["prompt_manager_view", "prompt_manager_update"]);
}
