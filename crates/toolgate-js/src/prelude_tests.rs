use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{FetchRequest, FetchResponse, Host, Invocation, JsError, JsLimits, LogLevel, run};

/// A host that answers every fetch with `response` and records what it
/// was asked.
#[derive(Default)]
struct Recorder {
    response: FetchResponse,
    refuse: Option<String>,
    requests: Mutex<Vec<FetchRequest>>,
    files: Mutex<Vec<String>>,
    lines: Mutex<Vec<(LogLevel, String)>>,
    cancelled: AtomicBool,
}

impl Host for Recorder {
    fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, String> {
        self.requests.lock().unwrap().push(request);
        match &self.refuse {
            Some(reason) => Err(reason.clone()),
            None => Ok(self.response.clone()),
        }
    }

    fn read_file(&self, path: &str) -> Result<String, String> {
        self.files.lock().unwrap().push(format!("read {path}"));
        match path {
            "notes.txt" => Ok("remember".to_owned()),
            _ => Err(format!("Cannot use '{path}': no such file or directory.")),
        }
    }

    fn list_files(&self, path: &str) -> Result<Value, String> {
        self.files.lock().unwrap().push(format!("list {path}"));
        Ok(json!({"path": path, "entries": [{"name": "notes.txt", "kind": "file"}]}))
    }

    fn write_file(&self, path: &str, text: &str) -> Result<(), String> {
        self.files
            .lock()
            .unwrap()
            .push(format!("write {path} {text}"));
        Ok(())
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.lines.lock().unwrap().push((level, message.to_owned()));
    }

    fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}

fn call(host: &Arc<Recorder>, source: &str, function: &str) -> Result<Value, JsError> {
    let invocation = Invocation {
        source,
        file_name: "tool.js",
        function,
        arguments: &json!({"city": "Lyon"}),
        context: &json!({"settings": {"base_url": "https://api.example"}}),
    };
    run(
        &invocation,
        &JsLimits::default(),
        Arc::clone(host) as Arc<dyn Host>,
    )
}

fn weather() -> FetchResponse {
    FetchResponse {
        status: 200,
        status_text: "OK".to_owned(),
        url: "https://api.example/weather?city=Lyon".to_owned(),
        headers: vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("set-cookie".to_owned(), "a=1".to_owned()),
            ("set-cookie".to_owned(), "b=2".to_owned()),
        ],
        body: r#"{"temperature": 21.5}"#.to_owned(),
    }
}

#[test]
fn fetch_sends_the_request_to_the_host_and_reads_its_response() {
    let host = Arc::new(Recorder {
        response: weather(),
        ..Recorder::default()
    });
    let source = r#"
        async function forecast(args, context) {
            const response = await fetch(`${context.settings.base_url}/weather?city=${args.city}`, {
                method: "post",
                headers: { Accept: "application/json", "X-Key": 42 },
                body: JSON.stringify({ city: args.city }),
            });
            const data = await response.json();
            return {
                ok: response.ok,
                status: response.status,
                statusText: response.statusText,
                url: response.url,
                type: response.headers.get("Content-Type"),
                cookies: response.headers.get("set-cookie"),
                missing: response.headers.get("etag"),
                temperature: data.temperature,
            };
        }
    "#;
    assert_eq!(
        call(&host, source, "forecast").unwrap(),
        json!({
            "ok": true, "status": 200, "statusText": "OK",
            "url": "https://api.example/weather?city=Lyon",
            "type": "application/json", "cookies": "a=1, b=2", "missing": null,
            "temperature": 21.5,
        })
    );
    let requests = host.requests.lock().unwrap();
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.url, "https://api.example/weather?city=Lyon");
    assert_eq!(
        request.headers,
        [
            ("accept".to_owned(), "application/json".to_owned()),
            ("x-key".to_owned(), "42".to_owned())
        ]
    );
    assert_eq!(request.body.as_deref(), Some(r#"{"city":"Lyon"}"#));
    assert!(
        request.timeout <= JsLimits::default().time && request.timeout > Duration::from_secs(9),
        "{:?}",
        request.timeout
    );
}

#[test]
fn a_refused_fetch_rejects_with_the_hosts_reason_at_the_scripts_line() {
    let host = Arc::new(Recorder {
        refuse: Some("http://127.0.0.1/ is a loopback address".to_owned()),
        ..Recorder::default()
    });
    let source = "async function probe() {\n  return await fetch('http://127.0.0.1/');\n}";
    match call(&host, source, "probe") {
        Err(JsError::Thrown { message, line }) => {
            assert_eq!(
                message,
                "Error: fetch: http://127.0.0.1/ is a loopback address"
            );
            assert_eq!(line, Some(2));
        }
        other => panic!("expected a thrown error, got {other:?}"),
    }
}

#[test]
fn a_script_that_rewrites_built_ins_still_asks_for_what_it_wrote() {
    let host = Arc::new(Recorder {
        response: weather(),
        ..Recorder::default()
    });
    // The prelude kept its own JSON and String: what the host receives is
    // what the script asked, however it rewrote the built-ins after.
    let source = r#"
        async function sneak() {
            Object.prototype.url = "http://169.254.169.254/";
            Object.prototype.method = "DELETE";
            JSON.stringify = () => '{"url":"http://169.254.169.254/"}';
            String = () => "http://169.254.169.254/";
            const response = await fetch("https://api.example/a");
            return response.status;
        }
    "#;
    assert_eq!(call(&host, source, "sneak").unwrap(), json!(200));
    let requests = host.requests.lock().unwrap();
    assert_eq!(requests[0].url, "https://api.example/a");
    // An inherited `method` is not the request's own: it stays a GET.
    assert_eq!(requests[0].method, "GET");
}

#[test]
fn a_body_that_is_not_a_string_is_a_type_error() {
    let host = Arc::new(Recorder::default());
    let source = "async function post() { return fetch('https://api.example/', { method: 'POST', body: { a: 1 } }); }";
    assert_eq!(
        call(&host, source, "post").unwrap_err().to_string(),
        "TypeError: fetch: body must be a string (use JSON.stringify for JSON) (line 1)"
    );
    assert!(host.requests.lock().unwrap().is_empty());
}

#[test]
fn files_go_to_the_host_and_its_refusals_are_thrown() {
    let host = Arc::new(Recorder::default());
    let source = r#"
        function use() {
            files.write("out.txt", 42);
            return { text: files.read("notes.txt"), listing: files.list() };
        }
        function escape() { return files.read("../../etc/passwd"); }
    "#;
    assert_eq!(
        call(&host, source, "use").unwrap(),
        json!({"text": "remember", "listing": {"path": ".", "entries": [{"name": "notes.txt", "kind": "file"}]}})
    );
    assert_eq!(
        *host.files.lock().unwrap(),
        ["write out.txt 42", "read notes.txt", "list ."]
    );
    assert_eq!(
        call(&host, source, "escape").unwrap_err().to_string(),
        "Error: files.read: Cannot use '../../etc/passwd': no such file or directory. (line 6)"
    );
}

#[test]
fn console_lines_reach_the_host_with_their_level() {
    let host = Arc::new(Recorder::default());
    let source = r#"
        function chatty() {
            console.log("loaded", { n: 1 }, [2], 3, undefined);
            console.warn("slow");
            console.error(new Error("boom").message);
            console.debug("detail");
            return null;
        }
    "#;
    call(&host, source, "chatty").unwrap();
    assert_eq!(
        *host.lines.lock().unwrap(),
        [
            (
                LogLevel::Info,
                r#"loaded {"n":1} [2] 3 undefined"#.to_owned()
            ),
            (LogLevel::Warn, "slow".to_owned()),
            (LogLevel::Error, "boom".to_owned()),
            (LogLevel::Debug, "detail".to_owned()),
        ]
    );
}

#[test]
fn a_cancelled_call_stops_its_script() {
    let host = Arc::new(Recorder::default());
    host.cancelled.store(true, Ordering::Relaxed);
    let source = "function spin() { for (;;) {} }";
    assert!(matches!(
        call(&host, source, "spin"),
        Err(JsError::Cancelled)
    ));
}

#[test]
fn without_a_host_fetch_and_files_throw() {
    let source = r#"
        async function get() { return fetch("https://example.com/"); }
        function read() { return files.read("a.txt"); }
        function log() { console.log("dropped"); return "fine"; }
    "#;
    let run = |function| {
        crate::run_function(
            source,
            "tool.js",
            function,
            &json!({}),
            &JsLimits::default(),
        )
    };
    assert_eq!(
        run("get").unwrap_err().to_string(),
        "Error: fetch: fetch is not available to this script (line 2)"
    );
    assert_eq!(
        run("read").unwrap_err().to_string(),
        "Error: files.read: files are not available to this script (line 3)"
    );
    assert_eq!(run("log").unwrap(), json!("fine"));
}
