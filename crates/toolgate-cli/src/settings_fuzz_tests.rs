//! Fuzz target of `toolgate.toml`: any text parses to checked settings or
//! to an error naming the file (and a line that exists), never a panic; the
//! `[agent] tools` span `toolgate migrate` rewrites lies on the array; and
//! the settings that are checked later (`[model]`, `[routing]`) check
//! without panicking too.
//!
//! Inputs: `TOOLGATE_FUZZ_CASES_SETTINGS_TOML` or `PROPTEST_CASES`.

use proptest::prelude::*;
use toolgate_core::Catalog;
use toolgate_fuzz::mutate;
use toolgate_fuzz::toml::{self as toml_gen, Section, TOML_TOKENS};
use toolgate_fuzz::{Kind, Target, fuzz};

use super::*;

/// Every table `toolgate.toml` has, with its keys.
const SECTIONS: &[Section] = &[
    Section {
        header: "",
        keys: &[
            ("upstream", Kind::Any),
            ("model", Kind::String),
            ("web", Kind::Any),
            ("agent", Kind::Any),
        ],
    },
    Section {
        header: "[[upstream]]",
        keys: &[
            ("name", Kind::String),
            ("description", Kind::String),
            ("command", Kind::String),
            ("args", Kind::Strings),
            ("env", Kind::StringTable),
            ("cwd", Kind::String),
            ("url", Kind::String),
            ("headers", Kind::StringTable),
            ("type", Kind::String),
            ("eager", Kind::Bool),
            ("core", Kind::Bool),
            ("timeout_seconds", Kind::Number),
            ("startup_timeout_seconds", Kind::Number),
            ("disabled", Kind::Bool),
        ],
    },
    Section {
        header: "[model]",
        keys: &[
            ("provider", Kind::String),
            ("model", Kind::String),
            ("base_url", Kind::String),
            ("api_key_env", Kind::String),
            ("stream", Kind::Bool),
            ("max_tokens", Kind::Number),
            ("max_tools", Kind::Number),
            ("max_tool_tokens", Kind::Number),
            ("context_window", Kind::Number),
            ("connect_timeout_seconds", Kind::Number),
            ("read_timeout_seconds", Kind::Number),
            ("max_retries", Kind::Number),
        ],
    },
    Section {
        header: "[routing]",
        keys: &[
            ("recovery_groups", Kind::Strings),
            ("unknown_intent", Kind::String),
            ("confidence", Kind::String),
            ("max_groups", Kind::Number),
            ("temperature", Kind::Number),
        ],
    },
    Section {
        header: "[[routing.intent]]",
        keys: &[
            ("name", Kind::String),
            ("groups", Kind::Strings),
            ("examples", Kind::Strings),
        ],
    },
    Section {
        header: "[routing.thresholds]",
        keys: &[("high", Kind::Number), ("medium", Kind::Number)],
    },
    Section {
        header: "[routing.per_group]",
        keys: &[("weight", Kind::Number), ("bias", Kind::Number)],
    },
    Section {
        header: "[routing.no_progress]",
        keys: &[("failed_calls", Kind::Number), ("outside_call", Kind::Bool)],
    },
    Section {
        header: "[routing.embeddings]",
        keys: &[
            ("base_url", Kind::String),
            ("model", Kind::String),
            ("api_key_env", Kind::String),
            ("weight", Kind::Number),
        ],
    },
    Section {
        header: "[web]",
        keys: &[
            ("search_url", Kind::String),
            ("max_results", Kind::Number),
            ("searches_per_turn", Kind::Number),
            ("max_content_chars", Kind::Number),
            ("allow_private_addresses", Kind::Bool),
            ("timeout_seconds", Kind::Number),
        ],
    },
    Section {
        header: "[tools]",
        keys: &[
            ("timeout_seconds", Kind::Number),
            ("loaded_schemas", Kind::String),
            ("max_loaded_tokens", Kind::Number),
            ("defer", Kind::String),
            ("defer_share", Kind::Number),
            ("context_window", Kind::Number),
        ],
    },
    Section {
        header: "[groups.github]",
        keys: &[
            ("expose", Kind::String),
            ("allow_actions", Kind::Strings),
            ("deny_actions", Kind::Strings),
        ],
    },
    Section {
        header: "[groups.\"*\"]",
        keys: &[
            ("expose", Kind::String),
            ("allow_actions", Kind::Strings),
            ("deny_actions", Kind::Strings),
        ],
    },
    Section {
        header: "[aliases]",
        keys: &[
            ("search_web", Kind::Any),
            ("old_clock", Kind::String),
            ("view_system_prompt", Kind::Any),
        ],
    },
    Section {
        header: "[agent]",
        keys: &[
            ("id", Kind::String),
            ("name", Kind::String),
            ("system_prompt", Kind::String),
            ("tools", Kind::Strings),
            ("compact_at", Kind::Number),
        ],
    },
    Section {
        header: "[agent.prompts]",
        keys: &[("system", Kind::String), ("greeting", Kind::String)],
    },
];

/// Values the settings know, so generated ones often pass the first check.
const STRINGS: &[&str] = &[
    "git",
    "uvx",
    "mcp-server-git",
    "http://127.0.0.1:3000/mcp",
    "https://example.com/v1",
    "ftp://h",
    "stdio",
    "http",
    "streamable-http",
    "sse",
    "tools",
    "polymorphic",
    "openai",
    "anthropic",
    "web",
    "time",
    "clock",
    "search",
    "tool",
    "action",
    "arguments",
    "softmax",
    "per_group",
    "all",
    "recovery",
    "a__b",
    "tool_list",
    "conversation",
];

/// The configurations of the README and the tests.
fn seeds() -> Vec<String> {
    vec![
        r#"
[[upstream]]
name = "git"
command = "uvx"
args = ["mcp-server-git", "--repository", "."]
description = "Inspect and change the git repository"

[[upstream]]
name = "memory"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory"]
env = { MEMORY_FILE_PATH = "/home/you/.local/share/memory.jsonl" }
eager = true
timeout_seconds = 30

[[upstream]]
name = "search"
url = "http://127.0.0.1:3000/mcp"
headers = { Authorization = "Bearer your-token" }
core = true
startup_timeout_seconds = 2.5
"#
        .to_owned(),
        r#"
[groups.github]
expose = "polymorphic"
deny_actions = ["delete_repository"]

[groups."*"]
expose = "polymorphic"

[aliases]
search_web = { tool = "web", action = "search" }
view_system_prompt = { tool = "prompt_manager", action = "view", arguments = { prompt_type = "system" } }
old_clock = "clock"

[web]
search_url = "http://127.0.0.1:8888"
searches_per_turn = 3
timeout_seconds = 2.5

[routing]
recovery_groups = ["git"]
temperature = 0.2

[[routing.intent]]
name = "code"
groups = ["git"]
examples = ["commit my change"]

[model]
provider = "anthropic"
model = "claude"
read_timeout_seconds = 30

[agent]
id = "sage"
tools = ["web", "time"]
"#
        .to_owned(),
    ]
}

fn settings_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => toml_gen::document(SECTIONS, STRINGS),
        3 => mutate::mutated_text(seeds(), TOML_TOKENS, 4),
        1 => (toml_gen::document(SECTIONS, STRINGS), mutate::text_edits(TOML_TOKENS, 3))
            .prop_map(|(text, edits)| mutate::apply_text_edits(&text, &edits)),
    ]
}

/// Checks what a parse gave.
fn check(text: &str, parsed: Result<Settings, SettingsError>) -> Result<(), TestCaseError> {
    let settings = match parsed {
        Err(error) => {
            let shown = error.to_string();
            prop_assert!(shown.starts_with("toolgate.toml"), "{shown}");
            prop_assert!(!error.reason.trim().is_empty(), "{shown}");
            if let Some(line) = error.line {
                prop_assert!(line >= 1 && line <= text.lines().count().max(1), "{shown}");
            }
            return Ok(());
        }
        Ok(settings) => settings,
    };
    let file = settings.file.as_ref().unwrap();
    if let Some(span) = file.agent_tools.clone() {
        prop_assert!(file.text.get(span.clone()).is_some(), "{span:?}");
        prop_assert!(file.text[span].starts_with('['));
    }
    for upstream in &settings.upstreams {
        prop_assert!(
            !upstream.call_timeout.is_zero() && !upstream.startup_timeout.is_zero(),
            "a zero timeout: {}",
            upstream.name
        );
    }
    prop_assert!(
        !settings.tools.web.timeout.is_zero(),
        "a zero timeout: [web]"
    );
    let mut model = settings.model.clone();
    // The key file is read from disk: not what this target is about.
    model.api_key_file = None;
    if let Ok(provider) = model.resolve(&|_| None) {
        prop_assert!(
            !provider.connect_timeout.is_zero() && !provider.read_timeout.is_zero(),
            "a zero timeout: [model]"
        );
    }
    let _ = settings.routing.validate(&Catalog::new());
    Ok(())
}

/// `toolgate.toml`: never a panic, no zero timeout, errors that name the file and a real
/// line.
#[test]
fn fuzz_settings_toml() {
    fuzz(
        Target::new("settings_toml", 512),
        settings_text(),
        &[],
        |text| {
            let parsed = Settings::parse(text.clone(), PathBuf::from("toolgate.toml"));
            check(&text, parsed)
        },
    );
}
