//! The runnable example pack `examples/js-tools/` served as its README says:
//! `toolgate serve --manifests examples/js-tools`. The `currency` group asks
//! a local stand-in for the Frankfurter API, whose address is the group's
//! `base_url` setting, so nothing here needs the internet.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::gateways::StdioGateway;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/js-tools")
}

/// A gateway over stdio serving the example pack, initialized, with `extra`
/// arguments.
fn serve_examples(dir: &Path, extra: &[&str]) -> StdioGateway {
    let examples = examples();
    let mut arguments = vec!["--manifests", examples.to_str().unwrap()];
    arguments.extend_from_slice(extra);
    let mut gateway = StdioGateway::start(dir, &arguments);
    let init = gateway.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "toolgate", "{init}");
    gateway.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    gateway
}

fn call(gateway: &mut StdioGateway, id: u64, name: &str, arguments: Value) -> Value {
    let answer = gateway.request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    );
    answer["result"].clone()
}

#[test]
fn the_example_pack_is_served_with_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let mut gateway = serve_examples(dir.path(), &["--no-builtins"]);
    let listed = gateway.request(2, "tools/list", json!({}));
    let listing = listed["result"]["tools"][0]["description"]
        .as_str()
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        listing.contains("\n- calc: Unit conversion, statistics of a list of numbers, and calendar date arithmetic\n- currency: Exchange rates"),
        "{listing}"
    );
    let loaded = call(
        &mut gateway,
        3,
        "load_tool_group",
        json!({"group_name": "calc"}),
    );
    assert_ne!(loaded["isError"], true, "{loaded}");
    let converted = call(
        &mut gateway,
        4,
        "calc_convert_units",
        json!({"value": 26.2, "from": "mi", "to": "km"}),
    );
    assert_eq!(
        converted["structuredContent"],
        json!({"value": 26.2, "from": "mi", "to": "km", "result": 42.1648128, "dimension": "length"}),
        "{converted}"
    );
}

/// A stand-in for the Frankfurter API on 127.0.0.1: answers a few canned
/// paths (404 otherwise) and records every request's path and query.
struct RatesServer {
    base_url: String,
    paths: Arc<Mutex<Vec<String>>>,
}

impl RatesServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let paths = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&paths);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                reader.read_line(&mut request_line).unwrap();
                // The head ends with an empty line; a GET has no body.
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                        break;
                    }
                }
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let (status, body) = match path.as_str() {
                    "/latest?base=EUR&symbols=USD" => (
                        "200 OK",
                        r#"{"amount":1.0,"base":"EUR","date":"2026-11-20","rates":{"USD":1.0512}}"#,
                    ),
                    "/2024-01-02?base=USD&symbols=JPY%2CGBP" => (
                        "200 OK",
                        r#"{"amount":1.0,"base":"USD","date":"2024-01-02","rates":{"GBP":0.78827,"JPY":141.82}}"#,
                    ),
                    _ => ("404 Not Found", r#"{"message":"not found"}"#),
                };
                recorded.lock().unwrap().push(path);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { base_url, paths }
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

#[test]
fn the_currency_example_asks_the_api_its_settings_name() {
    let server = RatesServer::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        format!(
            "[web]\nallow_private_addresses = true\n\n\
             [tools.javascript.settings.currency]\nbase_url = \"{}\"\n",
            server.base_url
        ),
    )
    .unwrap();
    // With the built-ins, whose `[web]` settings fetch keeps to.
    let mut gateway = serve_examples(dir.path(), &["--config", "toolgate.toml"]);
    let loaded = call(
        &mut gateway,
        2,
        "load_tool_group",
        json!({"group_name": "currency"}),
    );
    assert_ne!(loaded["isError"], true, "{loaded}");

    let converted = call(
        &mut gateway,
        3,
        "currency_convert",
        json!({"amount": 250, "from": "eur", "to": "USD"}),
    );
    assert_eq!(
        converted["structuredContent"],
        json!({"amount": 250, "from": "EUR", "to": "USD", "rate": 1.0512, "result": 262.8, "date": "2026-11-20"}),
        "{converted}"
    );
    let rates = call(
        &mut gateway,
        4,
        "currency_rates",
        json!({"base": "USD", "symbols": ["JPY", "GBP"], "date": "2024-01-02"}),
    );
    assert_eq!(
        rates["structuredContent"],
        json!({"base": "USD", "date": "2024-01-02", "rates": {"GBP": 0.78827, "JPY": 141.82}}),
        "{rates}"
    );
    // The API's refusal is an error result with its reason and the line.
    let refused = call(
        &mut gateway,
        5,
        "currency_convert",
        json!({"amount": 1, "from": "XXX", "to": "USD"}),
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["content"][0]["text"],
        "Tool 'currency_convert' failed: Error: exchange rate service answered 404 for /latest: not found (currency.js, line 27)",
        "{refused}"
    );
    assert_eq!(
        server.paths(),
        [
            "/latest?base=EUR&symbols=USD",
            "/2024-01-02?base=USD&symbols=JPY%2CGBP",
            "/latest?base=XXX&symbols=USD",
        ]
    );
}
