//! `toolgate migrate` as a user runs it: stored agents and the config's
//! `[agent] tools` rewritten through the aliases, each change printed, and a
//! second run that changes nothing.

use pretty_assertions::assert_eq;
use toolgate_store::{AgentRecord, AgentStore, SqliteStore};

fn migrate(dir: &std::path::Path, extra: &[&str]) -> (String, String, bool) {
    let output = super::support::toolgate(dir)
        .arg("migrate")
        .args(["--store", "agents.db"])
        .args(extra)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.success(),
    )
}

#[tokio::test]
async fn old_tool_names_are_migrated_once_and_printed() {
    let dir = tempfile::tempdir().unwrap();
    let config = "# Sage's settings\n[agent]\nid = \"sage\"\ntools = [\"view_system_prompt\", \"web_search\", \"web_fetch\", \"time\"]  # enabled\n\n[aliases]\nview_system_prompt = { tool = \"prompt_manager\", action = \"view\", arguments = { prompt_type = \"system\" } }\n";
    std::fs::write(dir.path().join("toolgate.toml"), config).unwrap();
    {
        let store = SqliteStore::open(dir.path().join("agents.db")).unwrap();
        let mut sage = AgentRecord::new("sage", "Sage");
        sage.tools = ["web_search", "web_fetch", "update_system_prompt", "time"]
            .map(str::to_owned)
            .to_vec();
        store.save_agent(sage).await.unwrap();
        store
            .save_agent(AgentRecord::new("atlas", "Atlas"))
            .await
            .unwrap();
    }

    let (stdout, stderr, ok) = migrate(dir.path(), &["--dry-run"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("agent `sage` (would change)"), "{stdout}");
    let unchanged = std::fs::read_to_string(dir.path().join("toolgate.toml")).unwrap();
    assert_eq!(unchanged, config, "a dry run writes nothing");

    let (stdout, stderr, ok) = migrate(dir.path(), &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "agent `sage` (changed): tools [web_search, web_fetch, update_system_prompt, time] -> [web, update_system_prompt, time]\n\
         toolgate.toml [agent] (changed): tools [view_system_prompt, web_search, web_fetch, time] -> [prompt_manager, web, time]\n"
    );
    let store = SqliteStore::open(dir.path().join("agents.db")).unwrap();
    let sage = store.agent(&"sage".into()).await.unwrap().unwrap();
    assert_eq!(sage.tools, ["web", "update_system_prompt", "time"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("toolgate.toml")).unwrap(),
        config.replace(
            "[\"view_system_prompt\", \"web_search\", \"web_fetch\", \"time\"]",
            "[\"prompt_manager\", \"web\", \"time\"]"
        ),
        "only the array changed; comments and the rest are kept"
    );

    let (stdout, stderr, ok) = migrate(dir.path(), &[]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("Nothing to migrate"), "{stdout}");
}

#[test]
fn an_empty_or_foreign_store_file_is_refused_with_its_path_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("agents.db");
    for (bytes, reason) in [
        (
            Vec::new(),
            "is empty (0 bytes), not a toolgate database: it may have been truncated. Restore it from a backup, or delete it to start with an empty store",
        ),
        (
            b"# my notes, not a database\n".repeat(40),
            "is not a toolgate database (SQLite: file is not a database); it was left untouched. Restore it from a backup, or move it away to start with an empty store",
        ),
    ] {
        std::fs::write(&store, &bytes).unwrap();
        let output = super::support::toolgate(dir.path())
            .args(["migrate", "--store", "agents.db"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            format!("error: agents.db {reason}\n")
        );
        assert_eq!(
            std::fs::read(&store).unwrap(),
            bytes,
            "the file is kept as it was"
        );
    }
}
