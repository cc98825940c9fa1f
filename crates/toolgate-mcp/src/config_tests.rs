use pretty_assertions::assert_eq;

use super::*;
use toolgate_core::GroupVisibility;

/// The `[[upstream]]` tables of a TOML text, checked.
fn toml(text: &str) -> Result<Vec<UpstreamConfig>, InvalidUpstream> {
    #[derive(Deserialize)]
    struct File {
        upstream: Vec<RawUpstream>,
    }
    let file: File = ::toml::from_str(text).unwrap();
    file.upstream
        .into_iter()
        .map(|raw| raw.into_config(None))
        .collect()
}

#[test]
fn stdio_and_http_upstreams_parse_with_their_defaults() {
    let upstreams = toml(
        r#"
        [[upstream]]
        name = "git"
        command = "uvx"
        args = ["mcp-server-git"]
        env = { GIT_PAGER = "cat" }
        inherit_env = ["SSH_AUTH_SOCK"]
        cwd = "/srv/repo"
        description = "Inspect the repository"

        [[upstream]]
        name = "search"
        url = "http://127.0.0.1:3000/mcp"
        headers = { Authorization = "Bearer abc" }
        eager = true
        timeout_seconds = 5
        "#,
    )
    .unwrap();
    assert_eq!(upstreams.len(), 2);
    assert_eq!(upstreams[0].name.as_str(), "git");
    assert_eq!(upstreams[0].startup, Startup::Lazy);
    assert_eq!(upstreams[0].visibility, GroupVisibility::OnLoad);
    assert_eq!(upstreams[0].call_timeout, DEFAULT_CALL_TIMEOUT);
    assert_eq!(
        upstreams[0].description.as_deref(),
        Some("Inspect the repository")
    );
    assert_eq!(
        upstreams[0].transport,
        UpstreamTransport::Stdio {
            command: "uvx".into(),
            args: vec!["mcp-server-git".into()],
            env: BTreeMap::from([("GIT_PAGER".into(), "cat".into())]),
            inherit_env: vec!["SSH_AUTH_SOCK".into()],
            cwd: Some("/srv/repo".into()),
        }
    );
    assert_eq!(upstreams[1].startup, Startup::Eager);
    assert_eq!(upstreams[1].call_timeout, Duration::from_secs(5));
    assert!(matches!(
        upstreams[1].transport,
        UpstreamTransport::Http { .. }
    ));
}

#[test]
fn core_upstreams_start_eagerly() {
    let upstreams = toml("[[upstream]]\nname = \"c\"\ncommand = \"x\"\ncore = true\n").unwrap();
    assert_eq!(upstreams[0].visibility, GroupVisibility::Always);
    assert_eq!(upstreams[0].startup, Startup::Eager);
}

#[test]
fn each_problem_of_an_upstream_is_named() {
    let cases = [
        (
            "[[upstream]]\nname = \"a\"\n",
            "needs `command` (stdio) or `url` (streamable HTTP)",
        ),
        (
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h\"\n",
            "give either `command` (stdio) or `url` (HTTP), not both",
        ),
        (
            "[[upstream]]\nname = \"a\"\nurl = \"ftp://h\"\n",
            "`url` must start with http:// or https://, got `ftp://h`",
        ),
        (
            "[[upstream]]\nname = \"a__b\"\ncommand = \"x\"\n",
            "names may not contain `__`, which separates server and tool in qualified names",
        ),
        (
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntimeout_seconds = 0\n",
            "`timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got 0.0",
        ),
        (
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nstartup_timeout_seconds = inf\n",
            "`startup_timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got inf",
        ),
        ("[[upstream]]\ncommand = \"x\"\n", "has no `name`"),
        (
            "[[upstream]]\nname = \"my server\"\ncommand = \"x\"\n",
            "the name \"my server\" has the character ' ': an upstream's name may hold only letters, digits, `_`, `-` and `.`, since it becomes a group id and qualifies tool names (`my server__tool`)",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(toml(text).unwrap_err().to_string(), expected, "{text}");
    }
    // Too large for a duration: refused, not a panic.
    let huge = toml("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntimeout_seconds = 1e300\n")
        .unwrap_err()
        .to_string();
    assert!(
        huge.starts_with("`timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got 1e300"),
        "{huge}"
    );
    let twice = toml("[[upstream]]\nname = \"a\"\ncommand = \"x\"\n[[upstream]]\nname = \"a\"\ncommand = \"y\"\n")
        .unwrap();
    assert_eq!(first_duplicate(&twice).map(GroupId::as_str), Some("a"));
}

#[test]
fn mcp_servers_json_reads_claude_desktop_files() {
    let upstreams = parse_mcp_servers_json(
        r#"{"mcpServers": {
            "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
            "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
            "off": {"command": "nope", "disabled": true}
        }}"#,
        Path::new("servers.json"),
    )
    .unwrap();
    let names: Vec<_> = upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["memory", "remote"]);
    assert!(
        matches!(&upstreams[1].transport, UpstreamTransport::Http { url, .. } if url == "https://example.com/mcp")
    );

    let error = parse_mcp_servers_json(
        r#"{"mcpServers": {"legacy": {"type": "sse", "url": "http://h/sse"}}}"#,
        Path::new("servers.json"),
    )
    .unwrap_err();
    assert_eq!(error.upstream.as_deref(), Some("legacy"));
    assert!(error.reason.contains("not supported"), "{error}");
}

#[test]
fn a_stdio_upstream_gets_a_safe_environment_plus_what_it_asks_for() {
    let gateway = [
        ("PATH", "/usr/bin"),
        ("HOME", "/home/me"),
        ("TOOLGATE_TOKEN", "secret-token"),
        ("OPENAI_API_KEY", "sk-secret"),
        ("SSH_AUTH_SOCK", "/tmp/agent"),
    ]
    .map(|(name, value)| (name.to_owned(), value.to_owned()));
    let own = BTreeMap::from([("GIT_PAGER".to_owned(), "cat".to_owned())]);
    let env = upstream_env(gateway.clone().into_iter(), &["SSH_AUTH_SOCK".into()], &own);
    assert_eq!(
        env.keys().map(String::as_str).collect::<Vec<_>>(),
        ["GIT_PAGER", "HOME", "PATH", "SSH_AUTH_SOCK"]
    );
    let default = upstream_env(gateway.clone().into_iter(), &[], &BTreeMap::new());
    assert!(!default.contains_key("TOOLGATE_TOKEN") && !default.contains_key("OPENAI_API_KEY"));
    let everything = upstream_env(gateway.into_iter(), &["*".into()], &BTreeMap::new());
    assert_eq!(everything.len(), 5);
}

#[test]
fn tls_certificates_and_proxies_reach_a_stdio_upstream_when_set() {
    let gateway = [
        ("SSL_CERT_FILE", "/etc/ssl/cert.pem"),
        ("SSL_CERT_DIR", "/etc/ssl/certs"),
        ("REQUESTS_CA_BUNDLE", "/etc/ssl/cert.pem"),
        ("NODE_EXTRA_CA_CERTS", "/etc/ssl/extra.pem"),
        ("HTTPS_PROXY", "http://proxy:3128"),
        ("https_proxy", "http://proxy:3128"),
        ("NO_PROXY", "localhost"),
        ("all_proxy", "socks5://proxy:1080"),
        ("OPENAI_API_KEY", "sk-secret"),
    ]
    .map(|(name, value)| (name.to_owned(), value.to_owned()));
    let env = upstream_env(gateway.into_iter(), &[], &BTreeMap::new());
    assert_eq!(
        env.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "HTTPS_PROXY",
            "NODE_EXTRA_CA_CERTS",
            "NO_PROXY",
            "REQUESTS_CA_BUNDLE",
            "SSL_CERT_DIR",
            "SSL_CERT_FILE",
            "all_proxy",
            "https_proxy"
        ]
    );
}

#[test]
fn the_secrets_of_a_stdio_upstream_are_its_env_values_named_as_secrets() {
    let transport = UpstreamTransport::Stdio {
        command: "server".into(),
        args: Vec::new(),
        env: BTreeMap::from([
            ("GITHUB_TOKEN".into(), "ghp_0123456789".into()),
            ("db_password".into(), "hunter22".into()),
            ("LOG_LEVEL".into(), "debug".into()),
            ("API_KEY".into(), "k".into()),
        ]),
        inherit_env: Vec::new(),
        cwd: None,
    };
    assert_eq!(transport.secrets(), ["ghp_0123456789", "hunter22"]);
}

#[test]
fn the_credentials_of_an_http_upstream_are_redacted() {
    let transport = UpstreamTransport::Http {
        url: "https://alice:s3cret@example.com:8443/mcp?x=1".into(),
        headers: BTreeMap::from([("Authorization".into(), "Bearer tok-123456".into())]),
    };
    let shown = redact(
        "https://alice:s3cret@example.com:8443/mcp?x=1 refused (Bearer tok-123456); s3cret",
        &transport.secrets(),
    );
    assert_eq!(
        shown,
        "https://***@example.com:8443/mcp?x=1 refused (***); ***"
    );
}
