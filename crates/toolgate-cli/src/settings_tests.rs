use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_core::{ActionPolicy, DEFAULT_DEFER_SHARE};
use toolgate_tools::{GroupExposure, GroupSettings, Startup};

use super::*;

fn parse(text: &str) -> Result<Settings, SettingsError> {
    Settings::parse(text.to_owned(), PathBuf::from("toolgate.toml"))
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

/// The first ```toml block of a document.
fn first_toml_block(document: &str) -> &str {
    let start = document.find("```toml\n").unwrap() + "```toml\n".len();
    let end = start + document[start..].find("```").unwrap();
    &document[start..end]
}

#[test]
fn the_first_configuration_of_the_readme_and_the_reference_is_accepted_as_written() {
    for document in [
        include_str!("../../../README.md"),
        include_str!("../../../docs/configuration.md"),
    ] {
        let settings = parse(first_toml_block(document)).unwrap();
        let names: Vec<&str> = settings.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["git", "memory", "search"]);
    }
}

#[test]
fn each_section_reaches_its_owner_checked() {
    let settings = parse(
        r#"
[[upstream]]
name = "git"
command = "uvx"
args = ["mcp-server-git"]
eager = true

[groups.github]
expose = "polymorphic"
deny_actions = ["delete_repository"]

[groups.web]
expose = "tools"

[aliases]
search_web = { tool = "web", action = "search" }
view_system_prompt = { tool = "prompt_manager", action = "view", arguments = { prompt_type = "system" } }
old_clock = "clock"

[web]
search_url = "http://127.0.0.1:8888"
searches_per_turn = 3
timeout_seconds = 2.5

[tools]
timeout_seconds = 90

[routing]
recovery_groups = ["git"]

[model]
provider = "anthropic"
model = "claude"

[agent]
id = "sage"
tools = ["web", "time"]
"#,
    )
    .unwrap();
    assert_eq!(settings.upstreams.len(), 1);
    assert_eq!(settings.upstreams[0].name.as_str(), "git");
    assert_eq!(settings.upstreams[0].startup, Startup::Eager);
    assert_eq!(
        settings.tools.groups["github"],
        GroupSettings {
            expose: Some(GroupExposure::Polymorphic),
            policy: ActionPolicy {
                allow: None,
                deny: vec!["delete_repository".to_owned()]
            }
        }
    );
    assert_eq!(
        settings.tools.groups["web"].expose,
        Some(GroupExposure::Tools)
    );
    let aliases: Vec<(&str, Value)> = settings
        .tools
        .aliases
        .iter()
        .map(|(old, alias)| (old.as_str(), alias.arguments(json!({}))))
        .collect();
    assert_eq!(
        aliases,
        [
            ("old_clock", json!({})),
            ("search_web", json!({"action": "search"})),
            (
                "view_system_prompt",
                json!({"action": "view", "prompt_type": "system"})
            ),
        ]
    );
    let web = &settings.tools.web;
    assert_eq!(web.search_url.as_deref(), Some("http://127.0.0.1:8888"));
    assert_eq!(web.searches_per_turn, 3);
    assert_eq!(web.max_content_chars, 40_000);
    assert_eq!(web.timeout, Duration::from_millis(2500));
    assert_eq!(settings.tools.call_timeout, Duration::from_secs(90));
    assert_eq!(settings.routing.recovery_groups, ["git"]);
    assert_eq!(settings.model.model.as_deref(), Some("claude"));
    assert_eq!(settings.agent.id.as_deref(), Some("sage"));
    assert_eq!(settings.agent.tools, ["web", "time"]);
    let file = settings.file.as_ref().unwrap();
    let span = file.agent_tools.clone().unwrap();
    assert_eq!(&file.text[span], r#"["web", "time"]"#);
}

#[test]
fn an_error_names_the_file_the_line_and_the_entry() {
    let cases = [
        (
            "[[upstream]]\nname = \"a\"\n",
            "toolgate.toml:1: upstream 'a': needs `command` (stdio) or `url` (streamable HTTP)",
        ),
        (
            "# servers\n\n[[upstream]]\nname = \"a\"\nurl = \"ftp://h\"\n",
            "toolgate.toml:3: upstream 'a': `url` must start with http:// or https://, got `ftp://h`",
        ),
        (
            "[[upstream]]\ncommand = \"x\"\n",
            "toolgate.toml:1: [[upstream]] number 1: has no `name`",
        ),
        (
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\n\n[[upstream]]\nname = \"a\"\ncommand = \"y\"\n",
            "toolgate.toml:5: upstream 'a': declared twice",
        ),
        (
            "[web]\nsearches_per_turn = 2\n\n[groups.x]\nexpose = \"merged\"\n",
            "toolgate.toml:4: [groups.x]: `expose` is \"tools\" or \"polymorphic\", not \"merged\"",
        ),
        (
            "[web]\nsearch_url = \"ftp://x\"\n",
            "toolgate.toml:1: [web]: `search_url` must start with http:// or https://, got `ftp://x`",
        ),
        (
            "[web]\ntimeout_seconds = inf\n",
            "toolgate.toml:1: [web]: `timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got inf",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error(text), expected, "{text}");
    }
    // Too large for a duration: refused, not a panic.
    let huge = error("[web]\ntimeout_seconds = 1e300\n");
    assert!(
        huge.starts_with("toolgate.toml:1: [web]: `timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got 1e300"),
        "{huge}"
    );
    let alias = error("[aliases]\nold = \"has space\"\n");
    assert!(
        alias.starts_with("toolgate.toml:2: [aliases] `old`: the tool is not a valid name: "),
        "{alias}"
    );
}

#[test]
fn a_tool_call_timeout_is_above_0_and_at_most_a_day() {
    assert_eq!(
        parse("").unwrap().tools.call_timeout,
        toolgate_tools::DEFAULT_CALL_TIMEOUT
    );
    assert_eq!(
        parse("[tools]\ntimeout_seconds = 86400\n")
            .unwrap()
            .tools
            .call_timeout,
        Duration::from_secs(86_400)
    );
    for (value, shown) in [
        ("0", "0.0"),
        ("-5", "-5.0"),
        ("86400.5", "86400.5"),
        ("1e9", "1000000000.0"),
        ("1e300", "1e300"),
        ("inf", "inf"),
        ("nan", "NaN"),
    ] {
        assert_eq!(
            error(&format!("# limits\n[tools]\ntimeout_seconds = {value}\n")),
            format!(
                "toolgate.toml:2: [tools]: `timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got {shown}"
            ),
            "{value}"
        );
    }
}

#[test]
fn unless_set_chat_keeps_loaded_schemas_in_the_conversation_and_serve_in_the_tool_list() {
    for unset in ["", "[tools]\ntimeout_seconds = 30\n"] {
        let settings = parse(unset).unwrap();
        assert_eq!(settings.loaded_schemas, None);
        assert_eq!(
            settings.chat_loaded_schemas(ToolCalls::Native),
            LoadedSchemas::Conversation
        );
        assert_eq!(
            settings.chat_loaded_schemas(ToolCalls::PromptedText),
            LoadedSchemas::Conversation
        );
        // Prompted calls hold a listed tool's arguments to its schema.
        assert_eq!(
            settings.chat_loaded_schemas(ToolCalls::Prompted),
            LoadedSchemas::ToolList
        );
        assert_eq!(settings.gateway_loaded_schemas(), LoadedSchemas::ToolList);
    }
    for (value, expected) in [
        ("tool_list", LoadedSchemas::ToolList),
        ("conversation", LoadedSchemas::Conversation),
    ] {
        let settings = parse(&format!(
            "[tools]\nloaded_schemas = \"{value}\"\ntimeout_seconds = 30\n"
        ))
        .unwrap();
        assert_eq!(settings.loaded_schemas, Some(expected), "{value}");
        for tool_calls in [ToolCalls::Native, ToolCalls::Prompted] {
            assert_eq!(
                settings.chat_loaded_schemas(tool_calls),
                expected,
                "{value}"
            );
        }
        assert_eq!(settings.gateway_loaded_schemas(), expected, "{value}");
        assert_eq!(settings.tools.call_timeout, Duration::from_secs(30));
    }
}

#[test]
fn an_unknown_place_for_loaded_schemas_is_an_error_with_its_line() {
    for (value, shown) in [
        ("\"Conversation\"", "\"Conversation\""),
        ("\"tools\"", "\"tools\""),
        ("\"\"", "\"\""),
    ] {
        assert_eq!(
            error(&format!(
                "# where schemas go\n\n[tools]\ntimeout_seconds = 30\nloaded_schemas = {value}\n"
            )),
            format!(
                "toolgate.toml:5: [tools]: `loaded_schemas` is \"tool_list\" or \"conversation\", not {shown}"
            )
        );
    }
    let not_text = error("[tools]\nloaded_schemas = true\n");
    assert!(not_text.starts_with("toolgate.toml: "), "{not_text}");
    assert!(not_text.contains("line 2"), "{not_text}");
    assert!(not_text.contains("loaded_schemas"), "{not_text}");
    let typo = error("[tools]\nloaded_schema = \"conversation\"\n");
    assert!(typo.contains("unknown field `loaded_schema`"), "{typo}");
}

#[test]
fn tools_are_deferred_over_a_share_of_the_context_window_unless_set_otherwise() {
    let settings = parse("").unwrap();
    assert_eq!(
        settings.deferral,
        Deferral::Auto {
            share: DEFAULT_DEFER_SHARE
        }
    );
    assert_eq!(settings.gateway_context_window(), DEFAULT_CONTEXT_WINDOW);
    let settings =
        parse("[tools]\ndefer = \"auto\"\ndefer_share = 0.05\ncontext_window = 128000\n").unwrap();
    assert_eq!(settings.deferral, Deferral::Auto { share: 0.05 });
    assert_eq!(settings.gateway_context_window(), 128_000);
    assert_eq!(
        parse("[tools]\ndefer = \"always\"\n").unwrap().deferral,
        Deferral::Always
    );
    assert_eq!(
        parse("[tools]\ndefer = \"never\"\n").unwrap().deferral,
        Deferral::Never
    );
    assert_eq!(
        error("[tools]\ndefer = \"sometimes\"\n"),
        "toolgate.toml:2: [tools]: `defer` is \"auto\", \"always\" or \"never\", not \"sometimes\""
    );
    assert_eq!(
        error("[tools]\ndefer_share = 1.5\n"),
        "toolgate.toml:2: [tools]: `defer_share` is a share of the context window, above 0 and \
         at most 1, not 1.5"
    );
    assert_eq!(
        error("[tools]\ndefer = \"never\"\ndefer_share = 0.1\n"),
        "toolgate.toml:3: [tools]: `defer_share` applies to `defer = \"auto\"`, not `defer = \"never\"`"
    );
    assert_eq!(
        error("[tools]\ncontext_window = 10\n"),
        "toolgate.toml:2: [tools]: `context_window` must be at least 1000 tokens, not 10"
    );
}

#[test]
fn a_typo_or_bad_toml_is_an_error_with_its_line() {
    let unknown = error("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncomand = \"y\"\n");
    assert!(unknown.starts_with("toolgate.toml: "), "{unknown}");
    assert!(unknown.contains("line 4"), "{unknown}");
    assert!(unknown.contains("unknown field `comand`"), "{unknown}");
    let table = error("[modle]\nmodel = \"m\"\n");
    assert!(table.contains("unknown field `modle`"), "{table}");
    let syntax = error("[web\n");
    assert!(syntax.contains("line 1"), "{syntax}");
}

#[test]
fn a_stdio_upstream_starts_in_the_directory_of_its_file() {
    let text = "[[upstream]]\nname = \"here\"\ncommand = \"s\"\n\n\
                [[upstream]]\nname = \"below\"\ncommand = \"s\"\ncwd = \"srv\"\n\n\
                [[upstream]]\nname = \"fixed\"\ncommand = \"s\"\ncwd = \"/srv\"\n";
    let cwds = |file: &str| -> Vec<Option<PathBuf>> {
        Settings::parse(text.to_owned(), PathBuf::from(file))
            .unwrap()
            .upstreams
            .into_iter()
            .map(|upstream| match upstream.transport {
                UpstreamTransport::Stdio { cwd, .. } => cwd,
                UpstreamTransport::Http { .. } => unreachable!(),
            })
            .collect()
    };
    assert_eq!(
        cwds("/etc/tg/toolgate.toml"),
        [
            Some(PathBuf::from("/etc/tg")),
            Some(PathBuf::from("/etc/tg/srv")),
            Some(PathBuf::from("/srv")),
        ]
    );
    // A file in the working directory: it is there already.
    assert_eq!(
        cwds("toolgate.toml"),
        [
            None,
            Some(PathBuf::from("srv")),
            Some(PathBuf::from("/srv"))
        ]
    );
}

#[test]
fn paths_in_the_file_are_relative_to_it() {
    let settings = Settings::parse(String::new(), PathBuf::from("conf/toolgate.toml")).unwrap();
    assert_eq!(
        settings.relative_to_file(Path::new("key.txt")),
        PathBuf::from("conf/key.txt")
    );
    assert_eq!(
        settings.relative_to_file(Path::new("/etc/key.txt")),
        PathBuf::from("/etc/key.txt")
    );
    assert_eq!(
        Settings::default().relative_to_file(Path::new("k")),
        PathBuf::from("k")
    );
}

#[test]
fn javascript_limits_default_to_10_s_and_64_mib_and_are_checked() {
    assert_eq!(
        parse("").unwrap().tools.javascript,
        toolgate_tools::JavaScriptConfig::default()
    );
    let set = parse("[tools.javascript]\ntimeout_seconds = 2.5\nmemory_mib = 16\n").unwrap();
    assert_eq!(
        set.tools.javascript,
        toolgate_tools::JavaScriptConfig {
            timeout: Duration::from_millis(2500),
            memory_mib: 16,
            ..toolgate_tools::JavaScriptConfig::default()
        }
    );
    assert_eq!(
        parse("[tools.javascript]\nmax_concurrent_calls = 3\n")
            .unwrap()
            .tools
            .javascript
            .max_concurrent_calls,
        3
    );
    assert_eq!(
        error("[tools.javascript]\nmax_concurrent_calls = 0\n"),
        "toolgate.toml:1: [tools]: [tools.javascript]: `max_concurrent_calls` must be between 1 and 256, got 0"
    );
    assert_eq!(
        error("[tools.javascript]\nmemory_mib = 0\n"),
        "toolgate.toml:1: [tools]: [tools.javascript]: `memory_mib` must be between 1 and 4096, got 0"
    );
    assert_eq!(
        error("[tools.javascript]\ntimeout_seconds = -1\n"),
        "toolgate.toml:1: [tools]: [tools.javascript]: `timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got -1.0"
    );
}

#[test]
fn javascript_settings_are_tables_by_group() {
    let set = parse(
        "[tools.javascript.settings.currency]\nbase_url = \"http://127.0.0.1:8080\"\nretries = 2\n\n[tools.javascript.settings.units]\nsystem = \"metric\"\n",
    )
    .unwrap();
    let settings = &set.tools.javascript.settings;
    assert_eq!(
        serde_json::to_value(settings).unwrap(),
        serde_json::json!({
            "currency": {"base_url": "http://127.0.0.1:8080", "retries": 2},
            "units": {"system": "metric"},
        })
    );
    let message = error("[tools.javascript]\nsettings = 3\n");
    assert!(
        message.contains("line 2") && message.contains("expected a map"),
        "{message}"
    );
}

#[test]
fn js_eval_is_off_and_the_owner_is_the_gateway_unless_set() {
    let default = parse("").unwrap().tools.javascript;
    assert_eq!(default.eval, toolgate_tools::JsEval::Off);
    assert_eq!(default.owner.as_str(), toolgate_tools::DEFAULT_TOOL_OWNER);
    let set = parse("[tools.javascript]\neval = true\nowner = \"team\"\n").unwrap();
    assert_eq!(set.tools.javascript.eval, toolgate_tools::JsEval::On);
    assert_eq!(set.tools.javascript.owner.as_str(), "team");
    assert_eq!(
        parse("[tools.javascript]\neval = false\n")
            .unwrap()
            .tools
            .javascript
            .eval,
        toolgate_tools::JsEval::Off
    );
    assert_eq!(
        error("[tools.javascript]\neval = \"yes\"\n"),
        "toolgate.toml: TOML parse error at line 2, column 8\n  |\n2 | eval = \"yes\"\n  |        ^^^^^\ninvalid type: string \"yes\", expected a boolean"
    );
    assert_eq!(
        error("[tools.javascript]\nowner = \" team\"\n"),
        "toolgate.toml:1: [tools]: [tools.javascript]: `owner` must be 1-128 characters with no leading or trailing white space, got \" team\""
    );
}

#[test]
fn the_store_table_names_a_database_a_password_file_and_a_pool() {
    let settings = Settings::parse(
        "[store]\nurl = \"postgres://toolgate@db/toolgate\"\npassword_file = \"secrets/pg\"\npool_size = 4\n"
            .to_owned(),
        PathBuf::from("/etc/toolgate/toolgate.toml"),
    )
    .unwrap();
    assert_eq!(
        settings.store,
        super::StoreSettings {
            url: Some("postgres://toolgate@db/toolgate".to_owned()),
            password_file: Some(PathBuf::from("/etc/toolgate/secrets/pg")),
            pool_size: Some(4),
        }
    );
    assert_eq!(parse("").unwrap().store, super::StoreSettings::default());
    assert_eq!(
        error("[store]\npool_size = 0\n"),
        "toolgate.toml:1: [store]: `pool_size` must be at least 1"
    );
    assert!(error("[store]\npassword = \"x\"\n").contains("unknown field `password`"));
}

#[test]
fn clients_are_named_with_the_hash_of_their_token() {
    let alice = toolgate_mcp::TokenHash::of("tg_alice-token").to_hex();
    let bob = toolgate_mcp::TokenHash::of("tg_bob-token").to_hex();
    let settings = parse(&format!(
        "[clients.alice]\ntoken_sha256 = \"{alice}\"\n\n[clients.bob]\ntoken_sha256 = \"{bob}\"\n"
    ))
    .unwrap();
    assert_eq!(settings.clients.len(), 2);
    assert_eq!(
        settings
            .clients
            .identify("tg_bob-token")
            .map(|name| name.as_str()),
        Some("bob")
    );
    assert!(parse("").unwrap().clients.is_empty());

    assert_eq!(
        error("[clients.alice]\ntoken_sha256 = \"abc\"\n"),
        "toolgate.toml:1: [clients.alice]: `token_sha256` is 3 characters long; a SHA-256 is 64 \
         hexadecimal digits"
    );
    assert!(
        error(&format!("[clients.\"a b\"]\ntoken_sha256 = \"{alice}\"\n"))
            .contains("[clients.a b]: client name \"a b\" is not 1-64 of the characters"),
        "{}",
        error(&format!("[clients.\"a b\"]\ntoken_sha256 = \"{alice}\"\n"))
    );
    assert!(
        error(&format!(
            "[clients.alice]\ntoken_sha256 = \"{alice}\"\n[clients.eve]\ntoken_sha256 = \"{alice}\"\n"
        ))
        .contains("[clients]: clients 'alice' and 'eve' have the same token")
    );
    assert!(
        error("[clients.alice]\ntoken = \"tg_plain\"\n").contains("unknown field `token`"),
        "a plain token in the file is refused"
    );
}

#[test]
fn oauth_maps_claims_to_clients_that_need_no_token() {
    let settings = parse(
        r#"
[auth.oauth]
issuer = "https://login.example.com/realms/team"
audience = "https://toolgate.example.com/mcp"
client_claim = "azp"
default_client = "staff"
required_scopes = ["mcp:tools"]

[auth.oauth.clients]
"ci-pipeline-7f3a" = "ci"

[clients.ci]
deny_groups = ["files"]

[clients.staff]
"#,
    )
    .unwrap();
    let oauth = settings.oauth.unwrap();
    assert_eq!(oauth.client_claim, "azp");
    assert_eq!(oauth.claim_clients["ci-pipeline-7f3a"].as_str(), "ci");
    assert_eq!(oauth.default_client.unwrap().as_str(), "staff");
    assert_eq!(settings.clients.len(), 2);
    assert!(settings.clients.has_no_tokens());
    assert_eq!(
        parse(
            "[auth.oauth]
issuer = \"https://a.example\"\naudience = \"https://b.example/mcp\"\n"
        )
        .unwrap()
        .oauth
        .unwrap()
        .client_claim,
        "client_id"
    );

    assert_eq!(
        error("[clients.ci]\ndeny_groups = [\"files\"]\n"),
        "toolgate.toml:1: [clients.ci]: has no `token_sha256`: give the client a token \
         (`toolgate token create ci`), or let clients sign in with OAuth ([auth.oauth])"
    );
    assert_eq!(
        error(
            "[auth.oauth]\nissuer = \"https://a.example\"\naudience = \"https://b.example/mcp\"\n\
             default_client = \"staff\"\n"
        ),
        "toolgate.toml:1: [auth.oauth] default_client: names client 'staff', which has no \
         [clients.staff] table"
    );
    assert_eq!(
        error(
            "[auth.oauth]\nissuer = \"http://a.example\"\naudience = \"https://b.example/mcp\"\n"
        ),
        "toolgate.toml:1: [auth.oauth] issuer: 'http://a.example' must be an https URL (http only \
         for a loopback host)"
    );
}

#[test]
fn rate_limits_apply_to_every_client_a_tool_or_one_client() {
    let alice = toolgate_mcp::TokenHash::of("tg_alice-token").to_hex();
    let settings = parse(&format!(
        "[rate_limits]\nclient = {{ calls = 600, per_seconds = 60 }}\n\
         [rate_limits.tools]\nweb_fetch = {{ calls = 30, per_seconds = 60 }}\n\n\
         [clients.alice]\ntoken_sha256 = \"{alice}\"\nrate_limit = {{ calls = 5, per_seconds = 1.5 }}\n"
    ))
    .unwrap();
    let limits = &settings.rate_limits;
    assert_eq!(limits.per_client.map(|limit| limit.calls), Some(600));
    assert_eq!(limits.tools["web_fetch"].calls, 30);
    let own = limits.clients.values().next().unwrap();
    assert_eq!((own.calls, own.per.as_millis()), (5, 1500));

    assert_eq!(
        error("[rate_limits]\nclient = { calls = 0, per_seconds = 60 }\n"),
        "toolgate.toml:1: [rate_limits] client: `calls` must be at least 1"
    );
    assert!(
        error("[rate_limits.tools]\nweb_fetch = { calls = 3, per_seconds = -1 }\n")
            .contains("[rate_limits.tools] web_fetch: `per_seconds` must be above 0, got -1"),
        "{}",
        error("[rate_limits.tools]\nweb_fetch = { calls = 3, per_seconds = -1 }\n")
    );
    assert!(
        error(&format!(
            "[clients.alice]\ntoken_sha256 = \"{alice}\"\nrate_limit = {{ calls = 1 }}\n"
        ))
        .contains("missing field `per_seconds`")
    );
}

#[test]
fn a_client_policy_lists_groups_tools_and_actions() {
    let alice = toolgate_mcp::TokenHash::of("tg_alice-token").to_hex();
    let settings = parse(&format!(
        "[clients.alice]\ntoken_sha256 = \"{alice}\"\nallow_groups = [\"time\", \"web\"]\n\
         deny_tools = [\"time_convert\"]\ndeny_actions = {{ web = [\"fetch\"] }}\n\
         allow_actions = {{ github = [\"search\"] }}\n"
    ))
    .unwrap();
    let (name, policy) = settings.policies.iter().next().unwrap();
    assert_eq!(name.as_str(), "alice");
    assert!(policy.allows_group("web") && !policy.allows_group("files"));
    assert!(!policy.allows_action("web", "fetch") && policy.allows_action("web", "search"));
    assert!(!policy.allows_action("github", "delete") && policy.allows_action("github", "search"));
    // A client without lists has no policy: it sees everything.
    let bob = parse(&format!("[clients.bob]\ntoken_sha256 = \"{alice}\"\n")).unwrap();
    assert!(bob.policies.is_empty());
}

#[test]
fn routing_settings_are_checked_when_read_with_the_line_of_their_key() {
    for (text, expected) in [
        (
            "[routing]\nmax_groups = 3\nthresholds = { high = 0.2, medium = 0.9 }\n",
            "toolgate.toml:3: [routing]: thresholds must satisfy 0 <= medium <= high <= 1 (medium = 0.9, high = 0.2)",
        ),
        (
            "[routing]\nsearch_tools = 11\n",
            "toolgate.toml:2: [routing]: search_tools must be at most 10, not 11 (0 lists the groups alone)",
        ),
        (
            "[routing]\nrecovery_groups = [\"web\"]\n\n[[routing.intent]]\nname = \"mail\"\ngroups = []\n",
            "toolgate.toml:4: [routing]: intent 'mail' has no groups",
        ),
    ] {
        assert_eq!(error(text), expected, "{text}");
    }
    // The groups it names wait for the catalog.
    assert!(parse("[routing]\nrecovery_groups = [\"fils\"]\n").is_ok());
}

#[test]
fn routing_groups_are_checked_against_the_catalog_with_the_line_that_names_them() {
    let mut catalog = Catalog::new();
    let group = toolgate_core::ToolGroup::new(
        toolgate_core::GroupId::new("files").unwrap(),
        "Files",
        "Read files",
    );
    catalog
        .register_group(group, toolgate_core::Origin::Builtin)
        .unwrap();
    let settings = parse(
        "[model]\nmodel = \"m\"\n\n[routing]\nmax_groups = 2\nrecovery_groups = [\"fils\"]\n",
    )
    .unwrap();
    assert_eq!(
        settings.routing_taxonomy(&catalog).unwrap_err().to_string(),
        "toolgate.toml:6: [routing]: recovery_groups names group 'fils', which is not in the catalog. Known groups: files"
    );
    let intent = parse(
        "[routing]\n[[routing.intent]]\nname = \"read\"\ngroups = [\"files\"]\n\n[[routing.intent]]\nname = \"mail\"\ngroups = [\"gmail\"]\n",
    )
    .unwrap();
    assert_eq!(
        intent.routing_taxonomy(&catalog).unwrap_err().to_string(),
        "toolgate.toml:6: [routing]: intent 'mail' names group 'gmail', which is not in the catalog. Known groups: files"
    );
    let fine = parse("[routing]\nrecovery_groups = [\"files\"]\n").unwrap();
    assert_eq!(
        fine.routing_taxonomy(&catalog).unwrap().recovery_groups,
        [toolgate_core::GroupId::new("files").unwrap()]
    );
}
