//! A scripted HTTP server for tests of code that calls a model: it answers
//! each request with the next queued [`Reply`] (whatever the path), records
//! every request, and speaks each provider's wire format through
//! [`ScriptedTurn`], streaming included.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use serde_json::json;
//! use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire};
//!
//! let server = ScriptedServer::start().await?;
//! server.push(ScriptedTurn::tool_call("c1", "load_tool_group", json!({"group_name": "pdf"})).reply(Wire::OpenAi, true));
//! server.push(ScriptedTurn::text("Done.").reply(Wire::OpenAi, true));
//! // ... point a provider at format!("{}/v1", server.url()) ...
//! let requests = server.requests();
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

/// A request as the server received it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// `POST`, ...
    pub method: String,
    /// The path (`/v1/chat/completions`).
    pub path: String,
    /// Headers, names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON; `Null` when it is not JSON.
    pub body: Value,
}

impl Recorded {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: ReplyBody,
}

#[derive(Clone, Debug)]
enum ReplyBody {
    Whole(String),
    Chunks(Vec<String>),
    Hang,
    Close,
}

impl Reply {
    /// A JSON body.
    pub fn json(status: u16, body: Value) -> Self {
        Self::raw(status, "application/json", body.to_string())
    }

    /// Any body.
    pub fn raw(status: u16, content_type: &str, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            body: ReplyBody::Whole(body.into()),
        }
    }

    /// A 200 `text/event-stream`, each chunk written and flushed on its own.
    pub fn sse(chunks: Vec<String>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".to_owned(), "text/event-stream".to_owned())],
            body: ReplyBody::Chunks(chunks),
        }
    }

    /// A 200 whose body never ends: for read timeouts and killed processes.
    pub fn hang() -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".to_owned(), "text/event-stream".to_owned())],
            body: ReplyBody::Hang,
        }
    }

    /// No answer: the server reads the request and closes the connection,
    /// as one does that drops a kept-alive connection the client reuses.
    pub fn close() -> Self {
        Self {
            status: 200,
            headers: Vec::new(),
            body: ReplyBody::Close,
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Keeps only the first `count` chunks of a streamed reply, then ends the
    /// body cleanly: a stream cut before its end marker.
    pub fn truncate_after(mut self, count: usize) -> Self {
        if let ReplyBody::Chunks(chunks) = &mut self.body {
            chunks.truncate(count);
        }
        self
    }
}

#[derive(Debug, Default)]
struct State {
    replies: Mutex<VecDeque<Reply>>,
    recorded: Mutex<Vec<Recorded>>,
    arrived: Notify,
}

/// The server. Dropping it stops accepting connections.
#[derive(Debug)]
pub struct ScriptedServer {
    url: String,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl ScriptedServer {
    /// Starts on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(State::default());
        let accept = tokio::spawn(accept(listener, Arc::clone(&state)));
        Ok(Self { url, state, accept })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Queues the answer to a coming request.
    pub fn push(&self, reply: Reply) {
        lock(&self.state.replies).push_back(reply);
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.state.recorded).clone()
    }

    /// Waits until `count` requests have arrived; returns them.
    pub async fn wait_for_requests(&self, count: usize) -> Vec<Recorded> {
        loop {
            let arrived = self.state.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let requests = self.requests();
            if requests.len() >= count {
                return requests;
            }
            arrived.await;
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn accept(listener: TcpListener, state: Arc<State>) {
    while let Ok((stream, _)) = listener.accept().await {
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let state = Arc::clone(&state);
                // An error from the service closes the connection unanswered.
                async move { answer(&state, request).await.ok_or(Closed) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Why the scripted server closed a connection without an answer.
#[derive(Debug)]
struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the script closes the connection")
    }
}

impl std::error::Error for Closed {}

/// The next scripted reply to `request`, which is recorded; `None` for
/// [`Reply::close`].
async fn answer(state: &State, request: Request<Incoming>) -> Option<Response<ScriptBody>> {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let headers = request
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let bytes = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => Bytes::new(),
    };
    lock(&state.recorded).push(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    });
    state.arrived.notify_waiters();
    let reply = lock(&state.replies).pop_front().unwrap_or_else(|| {
        Reply::json(
            500,
            json!({"error": {"message": "the script has no reply left"}}),
        )
    });
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    let body = match reply.body {
        ReplyBody::Whole(text) => ScriptBody::Whole(Some(Bytes::from(text))),
        ReplyBody::Hang => ScriptBody::Hang,
        ReplyBody::Close => return None,
        ReplyBody::Chunks(chunks) => {
            let (sender, receiver) = mpsc::channel(1);
            tokio::spawn(async move {
                for chunk in chunks {
                    if sender.send(Bytes::from(chunk)).await.is_err() {
                        return;
                    }
                    // Separate writes, so readers meet real chunk boundaries.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            });
            ScriptBody::Chunks(receiver)
        }
    };
    Some(
        response
            .body(body)
            .unwrap_or_else(|_| Response::new(ScriptBody::Whole(None))),
    )
}

/// A reply body: whole, chunk by chunk, or never ending.
#[derive(Debug)]
enum ScriptBody {
    Whole(Option<Bytes>),
    Chunks(mpsc::Receiver<Bytes>),
    Hang,
}

impl Body for ScriptBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Self::Chunks(receiver) => receiver
                .poll_recv(cx)
                .map(|chunk| chunk.map(|b| Ok(Frame::data(b)))),
            Self::Hang => Poll::Pending,
        }
    }
}

/// Which provider's wire format a scripted turn is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI chat completions.
    OpenAi,
    /// Anthropic messages.
    Anthropic,
}

/// One model answer, written once, replayed in either wire format.
#[derive(Clone, Debug, Default)]
pub struct ScriptedTurn {
    text: String,
    tool_calls: Vec<(String, String, Value)>,
    usage: Option<(u64, u64)>,
}

impl ScriptedTurn {
    /// An answer with text only.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// An answer that calls one tool.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        Self::default().and_tool_call(id, name, arguments)
    }

    /// Another tool call in the same answer (parallel calls).
    pub fn and_tool_call(mut self, id: &str, name: &str, arguments: Value) -> Self {
        self.tool_calls
            .push((id.to_owned(), name.to_owned(), arguments));
        self
    }

    /// Text before the calls.
    pub fn and_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// The usage figures the provider reports.
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        self.usage = Some((input, output));
        self
    }

    /// The reply `wire`'s provider would send, streamed or whole.
    pub fn reply(&self, wire: Wire, stream: bool) -> Reply {
        match (wire, stream) {
            (Wire::OpenAi, false) => Reply::json(200, self.openai_message()),
            (Wire::OpenAi, true) => Reply::sse(self.openai_chunks()),
            (Wire::Anthropic, false) => Reply::json(200, self.anthropic_message()),
            (Wire::Anthropic, true) => Reply::sse(self.anthropic_events()),
        }
    }

    fn openai_usage(&self) -> Option<Value> {
        self.usage.map(|(input, output)| {
            json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
        })
    }

    fn openai_finish(&self) -> &'static str {
        if self.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }

    fn openai_message(&self) -> Value {
        let mut message = json!({"role": "assistant",
            "content": if self.text.is_empty() { Value::Null } else { self.text.clone().into() }});
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = self
                .tool_calls
                .iter()
                .map(|(id, name, arguments)| {
                    json!({"id": id, "type": "function",
                           "function": {"name": name, "arguments": arguments.to_string()}})
                })
                .collect();
        }
        let mut body = json!({"id": "chatcmpl-scripted", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": self.openai_finish()}]});
        if let Some(usage) = self.openai_usage() {
            body["usage"] = usage;
        }
        body
    }

    fn openai_chunks(&self) -> Vec<String> {
        let chunk = |choice: Value| {
            let body = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                              "model": "scripted", "choices": [choice]});
            format!("data: {body}\n\n")
        };
        let mut chunks = vec![chunk(
            json!({"index": 0, "delta": {"role": "assistant", "content": ""}}),
        )];
        for piece in pieces(&self.text, 3) {
            chunks.push(chunk(json!({"index": 0, "delta": {"content": piece}})));
        }
        for (index, (id, name, arguments)) in self.tool_calls.iter().enumerate() {
            chunks.push(chunk(json!({"index": 0, "delta": {"tool_calls": [
                {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}})));
            for piece in pieces(&arguments.to_string(), 2) {
                chunks.push(chunk(json!({"index": 0, "delta": {"tool_calls": [
                    {"index": index, "function": {"arguments": piece}}]}})));
            }
        }
        chunks.push(chunk(
            json!({"index": 0, "delta": {}, "finish_reason": self.openai_finish()}),
        ));
        if let Some(usage) = self.openai_usage() {
            let body = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                              "model": "scripted", "choices": [], "usage": usage});
            chunks.push(format!("data: {body}\n\n"));
        }
        chunks.push("data: [DONE]\n\n".to_owned());
        chunks
    }

    fn anthropic_stop(&self) -> &'static str {
        if self.tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
    }

    fn anthropic_message(&self) -> Value {
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(json!({"type": "text", "text": self.text}));
        }
        for (id, name, arguments) in &self.tool_calls {
            content.push(json!({"type": "tool_use", "id": id, "name": name, "input": arguments}));
        }
        let (input, output) = self.usage.unwrap_or_default();
        json!({"id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted",
               "content": content, "stop_reason": self.anthropic_stop(), "stop_sequence": null,
               "usage": {"input_tokens": input, "output_tokens": output}})
    }

    fn anthropic_events(&self) -> Vec<String> {
        let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
        let (input, output) = self.usage.unwrap_or_default();
        let mut events = vec![
            event(
                "message_start",
                json!({"type": "message_start", "message": {
                "id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input, "output_tokens": 1}}}),
            ),
            event("ping", json!({"type": "ping"})),
        ];
        let mut index = 0;
        if !self.text.is_empty() {
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
            ));
            for piece in pieces(&self.text, 3) {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        for (id, name, arguments) in &self.tool_calls {
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ));
            for piece in pieces(&arguments.to_string(), 2) {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}),
                ));
            }
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        events.push(event(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": self.anthropic_stop(), "stop_sequence": null},
            "usage": {"output_tokens": output}}),
        ));
        events.push(event("message_stop", json!({"type": "message_stop"})));
        events
    }
}

/// An OpenAI-compatible `/embeddings` answer holding `vectors`, in order.
pub fn embeddings_reply(vectors: &[Vec<f32>]) -> Reply {
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(index, vector)| json!({"object": "embedding", "index": index, "embedding": vector}))
        .collect();
    Reply::json(
        200,
        json!({"object": "list", "data": data, "model": "scripted",
               "usage": {"prompt_tokens": 0, "total_tokens": 0}}),
    )
}

/// An error answer in `wire`'s body shape.
pub fn error_reply(wire: Wire, status: u16, message: &str) -> Reply {
    match wire {
        Wire::OpenAi => Reply::json(
            status,
            json!({"error": {"message": message, "type": "scripted_error", "param": null, "code": null}}),
        ),
        Wire::Anthropic => {
            let kind = match status {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            Reply::json(
                status,
                json!({"type": "error", "error": {"type": kind, "message": message}}),
            )
        }
    }
}

/// `text` cut into at most `count` non-empty pieces at character boundaries.
fn pieces(text: &str, count: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(count);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}
