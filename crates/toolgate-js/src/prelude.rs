//! The host functions behind `fetch`, `files` and `console`, and the
//! prelude (`prelude.js`) that defines those globals on top of them.
//!
//! The host functions pass JSON text both ways: the prelude builds the
//! objects a script sees, and every request is read again here, whatever
//! the script did to the prelude's objects or the built-ins.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::{Ctx, Exception, Function, Object};
use serde_json::{Value, json};

use crate::host::{FetchRequest, Host, LogLevel};

/// The bootstrap's source: a function expression taking the native that
/// runs the prelude.
const BOOTSTRAP: &str = include_str!("bootstrap.js");
/// The prelude's source: a function expression taking the host functions
/// and the built-ins it relies on.
const PRELUDE: &str = include_str!("prelude.js");
/// The file name stack traces give the prelude's frames.
const PRELUDE_FILE: &str = "<toolgate prelude>";

/// Makes `fetch`, `Headers`, `Response`, `files` and `console` globals of
/// the context, each ending in `host`; `deadline` bounds the time a host
/// function is given.
///
/// Most calls use none of them, so the bootstrap (`bootstrap.js`) makes each
/// an accessor that, read or assigned, runs the prelude first (which puts
/// plain values in their place): a call that uses none of them does not pay
/// for it. The bootstrap keeps the built-ins the prelude relies on as they
/// were before the script ran, in a JavaScript closure: a Rust closure must
/// not hold JavaScript values, which the engine's collector cannot see.
pub(crate) fn install_prelude<'js>(
    ctx: &Ctx<'js>,
    host: &Arc<dyn Host>,
    deadline: Option<Instant>,
) -> rquickjs::Result<()> {
    let host = Arc::clone(host);
    let load = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, intrinsics: Object<'js>| {
            define_globals(&ctx, &host, &intrinsics, deadline)
        },
    )?;
    let mut options = EvalOptions::default();
    options.filename = Some(PRELUDE_FILE.to_owned());
    let bootstrap: Function<'js> = ctx.eval_with_options(BOOTSTRAP, options)?;
    bootstrap.call::<_, ()>((load,))
}

/// Runs the prelude (once: it replaces the accessors that call this): the
/// globals become plain values ending in `host`.
fn define_globals<'js>(
    ctx: &Ctx<'js>,
    host: &Arc<dyn Host>,
    intrinsics: &Object<'js>,
    deadline: Option<Instant>,
) -> rquickjs::Result<()> {
    let natives = Object::new(ctx.clone())?;
    let on = Arc::clone(host);
    natives.set(
        "fetch",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, request: String| {
            let request = fetch_request(&request, deadline)
                .map_err(|message| Exception::throw_type(&ctx, &format!("fetch: {message}")))?;
            let response = on
                .fetch(request)
                .map_err(|message| Exception::throw_message(&ctx, &format!("fetch: {message}")))?;
            Ok::<_, rquickjs::Error>(
                json!({
                    "status": response.status,
                    "status_text": response.status_text,
                    "url": response.url,
                    "headers": response.headers,
                    "body": response.body,
                })
                .to_string(),
            )
        })?,
    )?;
    let on = Arc::clone(host);
    natives.set(
        "read",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, path: String| {
            on.read_file(&path).map_err(|message| {
                Exception::throw_message(&ctx, &format!("files.read: {message}"))
            })
        })?,
    )?;
    let on = Arc::clone(host);
    natives.set(
        "list",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, path: String| {
            on.list_files(&path)
                .map(|entries| entries.to_string())
                .map_err(|message| {
                    Exception::throw_message(&ctx, &format!("files.list: {message}"))
                })
        })?,
    )?;
    let on = Arc::clone(host);
    natives.set(
        "write",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, path: String, text: String| {
                on.write_file(&path, &text).map_err(|message| {
                    Exception::throw_message(&ctx, &format!("files.write: {message}"))
                })
            },
        )?,
    )?;
    let on = Arc::clone(host);
    natives.set(
        "log",
        Function::new(ctx.clone(), move |level: String, message: String| {
            let level = match level.as_str() {
                "debug" => LogLevel::Debug,
                "warn" => LogLevel::Warn,
                "error" => LogLevel::Error,
                _ => LogLevel::Info,
            };
            on.log(level, &message);
        })?,
    )?;
    let mut options = EvalOptions::default();
    options.filename = Some(PRELUDE_FILE.to_owned());
    let prelude: Function<'js> = ctx.eval_with_options(PRELUDE, options)?;
    prelude.call::<_, ()>((natives, intrinsics.clone()))
}

/// Reads the prelude's request (`{url, method?, headers?, body?}`) as a
/// [`FetchRequest`] given the time left until `deadline`.
fn fetch_request(text: &str, deadline: Option<Instant>) -> Result<FetchRequest, String> {
    let request: Value =
        serde_json::from_str(text).map_err(|_| "the request is not valid".to_owned())?;
    let url = request
        .get("url")
        .and_then(Value::as_str)
        .ok_or("the request has no URL")?
        .to_owned();
    let method = match request.get("method") {
        None => "GET".to_owned(),
        Some(Value::String(method)) if is_token(method) => method.to_ascii_uppercase(),
        Some(other) => return Err(format!("invalid method {other}")),
    };
    let mut headers = Vec::new();
    if let Some(pairs) = request.get("headers").and_then(Value::as_array) {
        for pair in pairs {
            match pair.as_array().map(Vec::as_slice) {
                Some([Value::String(name), Value::String(value)]) => {
                    headers.push((name.clone(), value.clone()));
                }
                _ => return Err("headers must be name and value strings".to_owned()),
            }
        }
    }
    let body = match request.get("body") {
        None | Some(Value::Null) => None,
        Some(Value::String(body)) => Some(body.clone()),
        Some(_) => return Err("body must be a string".to_owned()),
    };
    let timeout = match deadline {
        Some(deadline) => deadline.saturating_duration_since(Instant::now()),
        None => Duration::MAX,
    };
    if timeout.is_zero() {
        return Err("the call's time limit was reached".to_owned());
    }
    Ok(FetchRequest {
        method,
        url,
        headers,
        body,
        timeout,
    })
}

/// Whether `method` is an HTTP token of letters (`GET`, `PATCH`).
fn is_token(method: &str) -> bool {
    !method.is_empty() && method.len() <= 16 && method.bytes().all(|b| b.is_ascii_alphabetic())
}

#[cfg(test)]
#[path = "prelude_tests.rs"]
mod tests;
