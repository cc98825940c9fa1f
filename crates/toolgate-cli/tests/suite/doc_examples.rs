//! Every command output README.md and docs/ show, produced again by the
//! build and compared with what they show (`doc_blocks.rs` says how), so a
//! change that alters one fails the test command until the document says
//! the same. One test per marked block; `doc_sessions.rs` has the ones that
//! need a model or a client.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::doc_blocks::{assert_shows, blocks, repository, shown};
use super::gateways::StdioGateway;

/// Each marked block and where it is checked: a test of this file or of
/// `doc_sessions.rs`, or another file of the test command.
const CHECKED: &[(&str, &str)] = &[
    ("serve-banner", "doc_examples.rs"),
    ("serve-desktop-entry", "doc_examples.rs"),
    ("serve-desktop-entry-with-config", "doc_examples.rs"),
    ("catalog-example", "doc_examples.rs"),
    ("prompt-section", "doc_examples.rs"),
    ("partial-load", "doc_examples.rs"),
    ("route-tokyo", "doc_examples.rs"),
    ("polymorphic-error", "doc_examples.rs"),
    ("token-create", "doc_examples.rs"),
    ("migrate", "doc_examples.rs"),
    ("chat-session", "doc_sessions.rs"),
    ("rate-limit-error", "doc_sessions.rs"),
    ("audit-line", "doc_sessions.rs"),
    ("client-snippets", "tests/python/test_client_docs.py"),
];

#[test]
fn every_block_that_shows_output_is_marked_and_checked() {
    let mut marked = Vec::new();
    for block in blocks() {
        let place = format!("{}:{}", block.file, block.line);
        match &block.output {
            Some(name) => {
                assert!(
                    CHECKED.iter().any(|(checked, _)| checked == name),
                    "{place}: `<!-- output: {name} -->` names no example doc_examples.rs knows"
                );
                marked.push(name.clone());
            }
            // A block without a language shows output: a test must
            // produce it.
            None => assert!(
                !block.language.is_empty(),
                "{place}: a block without a language shows output; mark it \
                 `<!-- output: NAME -->` and produce it in doc_examples.rs"
            ),
        }
    }
    for (name, checker) in CHECKED {
        assert_eq!(
            marked.iter().filter(|marked| marked == name).count(),
            1,
            "{name} must mark one block"
        );
        if checker.starts_with("tests/") {
            let text = std::fs::read_to_string(repository().join(checker)).unwrap();
            assert!(
                text.contains(&format!("output: {name}")),
                "{checker} does not check {name}"
            );
        }
    }
}

/// A home (`/home/you` in the documents) holding a project directory.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        let project = home.join("project");
        std::fs::create_dir_all(&project).unwrap();
        Self {
            _dir: dir,
            home,
            project,
        }
    }

    /// `toolgate` in the project, with the home's data under
    /// `~/.local/share` as on a desktop.
    fn toolgate(&self) -> std::process::Command {
        let mut command = super::support::toolgate(&self.home);
        command
            .current_dir(&self.project)
            .env("XDG_DATA_HOME", self.home.join(".local/share"));
        command
    }

    /// `text` as the documents show it: the temporary home is
    /// `/home/you`, and the binary the one `scripts/install` installs.
    fn as_shown(&self, text: &str) -> String {
        let binary = Path::new(env!("CARGO_BIN_EXE_toolgate"))
            .canonicalize()
            .unwrap();
        text.replace(
            &binary.display().to_string(),
            "/home/you/.cargo/bin/toolgate",
        )
        .replace(&self.home.display().to_string(), "/home/you")
    }
}

/// `toolgate serve` in `home`'s project until its banner is out, as the
/// documents show it: the address it listens on (a free port here) is the
/// default one.
fn serve_banner(home: &Home) -> String {
    use std::io::{BufRead, BufReader};
    let mut child: Child = home
        .toolgate()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut banner = String::new();
    while !banner.ends_with("Press Ctrl-C to stop.\n") {
        if stderr.read_line(&mut banner).unwrap() == 0 {
            panic!("toolgate serve ended before its banner ended:\n{banner}");
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let address = banner
        .lines()
        .find_map(|line| line.strip_prefix("Listening on http://"))
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap()
        .to_owned();
    home.as_shown(&banner.replace(&address, "127.0.0.1:8848"))
}

/// The Claude Desktop entry of a banner.
fn desktop_entry(banner: &str) -> Value {
    let line = banner
        .lines()
        .find_map(|line| line.strip_prefix("  Claude Desktop:  "))
        .unwrap();
    serde_json::from_str(line).unwrap()
}

#[test]
fn the_readme_shows_the_banner_and_desktop_entry_of_a_first_start() {
    let home = Home::new();
    let banner = serve_banner(&home);
    assert_shows("serve-banner", &banner);
    let shown: Value = serde_json::from_str(&shown("serve-desktop-entry").text).unwrap();
    assert_eq!(shown, desktop_entry(&banner));
}

#[test]
fn the_clients_page_shows_the_desktop_entry_of_a_gateway_with_a_config() {
    let home = Home::new();
    std::fs::write(home.project.join("toolgate.toml"), "").unwrap();
    let banner = serve_banner(&home);
    let shown: Value =
        serde_json::from_str(&shown("serve-desktop-entry-with-config").text).unwrap();
    assert_eq!(shown, desktop_entry(&banner));
}

/// Runs `toolgate` with `args` in `home`'s project; its stdout.
fn stdout_of(home: &Home, args: &[&str]) -> String {
    let output = home.toolgate().args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_example_catalog_costs_what_commands_md_shows() {
    let home = Home::new();
    let examples = repository().join("examples/tools");
    let printed = stdout_of(
        &home,
        &[
            "catalog",
            "--manifests",
            examples.to_str().unwrap(),
            "--no-builtins",
        ],
    );
    assert_shows("catalog-example", &printed);
}

#[test]
fn the_prompt_section_is_what_how_it_works_md_shows() {
    let home = Home::new();
    let tools = home.project.join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::copy(
        repository().join("examples/tools/pdf.json"),
        tools.join("pdf.json"),
    )
    .unwrap();
    let printed = stdout_of(&home, &["catalog", "--prompt", "--no-builtins"]);
    assert_shows("prompt-section", &printed);
}

#[test]
fn a_partial_load_reads_as_routing_md_shows() {
    use toolgate_core::{
        ActiveToolSet, Catalog, GroupId, Origin, ToolDefinition, ToolGroup, ToolName,
    };
    let mut tools = vec![
        ("gmail_send", "Send an email"),
        ("gmail_search", "Search the mailbox"),
    ];
    let others: Vec<String> = (1..=12).map(|n| format!("gmail_other_{n}")).collect();
    tools.extend(
        others
            .iter()
            .map(|name| (name.as_str(), "Another mail tool")),
    );
    let tools = tools
        .into_iter()
        .map(|(name, description)| {
            let definition =
                ToolDefinition::new(ToolName::new(name).unwrap(), description, json!({})).unwrap();
            (definition, Origin::Builtin)
        })
        .collect();
    let mut catalog = Catalog::new();
    let group = ToolGroup::new(GroupId::new("gmail").unwrap(), "Gmail", "Mail");
    catalog
        .register_group_with_tools(group, Origin::Builtin, tools)
        .unwrap();
    let loaded = ActiveToolSet::new()
        .load_tools(&catalog, "gmail", &["gmail_send", "gmail_search"])
        .unwrap();
    assert_shows("partial-load", &format!("{loaded}\n"));
}

#[test]
fn toolgate_route_decides_as_routing_md_shows() {
    let home = Home::new();
    let query = "what time is it in Tokyo?";
    let output = home
        .toolgate()
        .args(["route", query])
        .env("TOOLGATE_EMBED_MODEL", super::support::peers().embed_model)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).unwrap();
    assert_shows(
        "route-tokyo",
        &format!("$ toolgate route \"{query}\"\n{printed}"),
    );
}

#[test]
fn a_wrong_action_is_answered_as_configuration_md_shows() {
    let home = Home::new();
    let tools = home.project.join("tools");
    std::fs::create_dir(&tools).unwrap();
    let tool = |name: &str| {
        json!({"name": name, "description": name,
               "parameters": {"type": "object", "properties": {}}})
    };
    std::fs::write(
        tools.join("clock.json"),
        json!([tool("get_current_time"), tool("convert_time")]).to_string(),
    )
    .unwrap();
    std::fs::write(
        home.project.join("toolgate.toml"),
        "[groups.clock]\nexpose = \"polymorphic\"\n",
    )
    .unwrap();
    let mut command = home.toolgate();
    command
        .args(["serve", "--stdio", "--memory-store", "--no-builtins"])
        .stderr(Stdio::null());
    let mut gateway = StdioGateway::spawn(command);
    gateway.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "docs", "version": "0"}}),
    );
    gateway.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    gateway.request(
        2,
        "tools/call",
        json!({"name": "load_tool_group", "arguments": {"group_name": "clock"}}),
    );
    let answer = gateway.request(
        3,
        "tools/call",
        json!({"name": "clock", "arguments": {"action": "get_curent_time"}}),
    );
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let answered: Value = serde_json::from_str(text).unwrap();
    let shown: Value = serde_json::from_str(&shown("polymorphic-error").text).unwrap();
    assert_eq!(answered, shown);
}

#[test]
fn token_create_prints_what_security_md_shows() {
    let home = Home::new();
    let printed = stdout_of(&home, &["token", "create", "ci-bot"]);
    // The token is new each time, and with it its hash: the page shows
    // them cut, the test checks their form.
    let token = printed
        .lines()
        .find(|line| line.starts_with("tg_"))
        .unwrap()
        .to_owned();
    let hash = printed
        .lines()
        .find_map(|line| line.strip_prefix("token_sha256 = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap()
        .to_owned();
    assert!(
        token.len() > 40 && token[3..].chars().all(|c| c.is_ascii_hexdigit()),
        "{token}"
    );
    assert!(
        hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    let printed = printed
        .replace(&token, "tg_3b0d...c91e")
        .replace(&hash, "9f2c...07ab");
    assert_shows(
        "token-create",
        &format!("$ toolgate token create ci-bot\n{printed}"),
    );
}

#[tokio::test]
async fn migrate_prints_what_commands_md_shows() {
    use toolgate_store::{AgentRecord, AgentStore, SqliteStore};
    let home = Home::new();
    std::fs::write(
        home.project.join("toolgate.toml"),
        "[agent]\nid = \"sage\"\ntools = [\"view_system_prompt\", \"web_search\", \"time\"]\n\n\
         [aliases]\nview_system_prompt = { tool = \"prompt_manager\", action = \"view\", \
         arguments = { prompt_type = \"system\" } }\n",
    )
    .unwrap();
    // The store chat uses, where migrate looks by default.
    let data = home.home.join(".local/share/toolgate");
    std::fs::create_dir_all(&data).unwrap();
    let store = SqliteStore::open(data.join("conversations.db")).unwrap();
    let mut sage = AgentRecord::new("sage", "Sage");
    sage.tools = ["web_search", "web_fetch", "time"]
        .map(str::to_owned)
        .to_vec();
    store.save_agent(sage).await.unwrap();
    store.checkpoint().await.unwrap();
    drop(store);
    let mut printed = String::new();
    for _ in 0..2 {
        printed.push_str("$ toolgate migrate\n");
        printed.push_str(&stdout_of(&home, &["migrate"]));
    }
    assert_shows("migrate", &printed);
}

#[test]
fn every_option_of_serve_is_in_the_table_of_configuration_md() {
    let home = Home::new();
    let help = stdout_of(&home, &["serve", "--help"]);
    let options: Vec<&str> = help
        .lines()
        .filter_map(|line| line.split_whitespace().find(|w| w.starts_with("--")))
        .map(|option| option.trim_end_matches(','))
        .filter(|option| *option != "--help")
        .collect();
    assert!(options.len() > 20, "{help}");
    let page = std::fs::read_to_string(repository().join("docs/configuration.md")).unwrap();
    // Each row's first cell: the options it describes.
    let table: Vec<&str> = page
        .lines()
        .skip_while(|line| *line != "## `toolgate serve` options")
        .take_while(|line| !line.starts_with("## Tool call deadline"))
        .filter(|line| line.starts_with("| `-"))
        .filter_map(|line| line.split(" | ").next())
        .collect();
    for option in options {
        assert!(
            table
                .iter()
                .any(|row| row.contains(&format!("`{option}`"))
                    || row.contains(&format!("`{option} "))),
            "docs/configuration.md's table of serve's options has no row for {option}"
        );
    }
}

/// The crates' dependencies on each other, as README.md's and AGENTS.md's
/// "Dependencies point one way" describe them: a change to one fails here
/// until they say it.
#[test]
fn the_crates_depend_on_each_other_as_the_documents_say() {
    let layers: &[(&str, &[&str])] = &[
        ("toolgate-core", &[]),
        ("toolgate-llm", &[]),
        ("toolgate-embed", &[]),
        ("toolgate-js", &[]),
        ("toolgate-fuzz", &[]),
        ("toolgate-store", &["toolgate-core"]),
        (
            "toolgate-tools",
            &[
                "toolgate-core",
                "toolgate-embed",
                "toolgate-js",
                "toolgate-store",
            ],
        ),
        (
            "toolgate-agent",
            &[
                "toolgate-core",
                "toolgate-llm",
                "toolgate-store",
                "toolgate-tools",
            ],
        ),
        (
            "toolgate-mcp",
            &["toolgate-core", "toolgate-store", "toolgate-tools"],
        ),
        (
            "toolgate-eval",
            &[
                "toolgate-agent",
                "toolgate-core",
                "toolgate-llm",
                "toolgate-store",
                "toolgate-tools",
            ],
        ),
        (
            "toolgate-cli",
            &[
                "toolgate-agent",
                "toolgate-core",
                "toolgate-embed",
                "toolgate-eval",
                "toolgate-llm",
                "toolgate-mcp",
                "toolgate-store",
                "toolgate-tools",
            ],
        ),
    ];
    for (krate, expected) in layers {
        let manifest =
            std::fs::read_to_string(repository().join("crates").join(krate).join("Cargo.toml"))
                .unwrap();
        let mut found: Vec<&str> = manifest
            .lines()
            .skip_while(|line| *line != "[dependencies]")
            .skip(1)
            .take_while(|line| !line.starts_with('['))
            .filter_map(|line| line.split(['.', ' ', '=']).next())
            .filter(|name| name.starts_with("toolgate-"))
            .collect();
        found.sort_unstable();
        assert_eq!(&found, expected, "{krate}'s toolgate dependencies");
    }
}
