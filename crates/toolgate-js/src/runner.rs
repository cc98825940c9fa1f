//! [`run_function`]: one call, from source to JSON value, in a runtime of its
//! own.
//!
//! Every call builds a fresh QuickJS runtime and context and drops them at
//! the end: a runtime is the unit QuickJS limits (heap, stack, interrupt
//! handler) and the only unit that shares nothing, so no state survives a call
//! and no call can exhaust another's memory. The context is `Context::full`
//! (the ECMAScript built-ins) on a runtime with no module loader and no
//! QuickJS standard library, plus the prelude's `fetch`, `files` and
//! `console`: nothing in it reaches the machine except through the
//! [`Host`] the embedder passes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use rquickjs::context::EvalOptions;
use rquickjs::{
    CatchResultExt, CaughtError, Coerced, Context, Ctx, FromJs, Function, Runtime, Value,
};

use crate::error::{JsError, Result};
use crate::host::{Host, NoHost};
use crate::limits::JsLimits;
use crate::prelude::install_prelude;

/// What QuickJS says when the stack limit is reached.
const STACK_OVERFLOW_MESSAGE: &str = "Maximum call stack size exceeded";
/// What QuickJS says when the memory limit is reached.
const OUT_OF_MEMORY_MESSAGE: &str = "out of memory";

/// One call of a script's function.
#[derive(Clone, Copy, Debug)]
pub struct Invocation<'a> {
    /// The script.
    pub source: &'a str,
    /// Its file name, as stack traces and errors name it.
    pub file_name: &'a str,
    /// The function to call: a function declaration or a top-level
    /// `const`/`let`/`var` binding of the script.
    pub function: &'a str,
    /// The function's first argument.
    pub arguments: &'a serde_json::Value,
    /// Its second argument: what the embedder tells the script about the
    /// call (`null` for none).
    pub context: &'a serde_json::Value,
}

/// Evaluates `source` (named `file_name` in stack traces) in a fresh context
/// without host functions, calls its function `function` with `arguments` as its one argument, waits
/// for a returned Promise to settle, and returns the value as JSON
/// (`undefined` becomes `null`, a string a JSON string).
///
/// `function` is a function declaration or a top-level `const`/`let`/`var`
/// binding of the script. The call blocks its thread for at most
/// `limits.time` (plus the time to tear the runtime down). [`run`] is the
/// same with a [`Host`].
///
/// ```
/// use serde_json::json;
/// use toolgate_js::{JsLimits, run_function};
///
/// let source = "async function add(args) { return args.a + args.b; }";
/// let sum = run_function(source, "mathx.js", "add", &json!({"a": 2, "b": 3}), &JsLimits::default())?;
/// assert_eq!(sum, json!(5));
/// # Ok::<(), toolgate_js::JsError>(())
/// ```
pub fn run_function(
    source: &str,
    file_name: &str,
    function: &str,
    arguments: &serde_json::Value,
    limits: &JsLimits,
) -> Result<serde_json::Value> {
    let invocation = Invocation {
        source,
        file_name,
        function,
        arguments,
        context: &serde_json::Value::Null,
    };
    run(&invocation, limits, Arc::new(NoHost))
}

/// Runs `invocation` in a fresh runtime whose `fetch`, `files` and
/// `console` end in `host`, and returns the function's value as JSON.
///
/// The call blocks its thread for at most `limits.time`, host functions
/// included when they keep to the time they are given, and stops early
/// once [`Host::cancelled`] answers true.
pub fn run(
    invocation: &Invocation<'_>,
    limits: &JsLimits,
    host: Arc<dyn Host>,
) -> Result<serde_json::Value> {
    run_limited(invocation.file_name, limits, host, |ctx| {
        call(ctx, invocation)
    })
}

/// Why the interrupt handler stopped the script, if it did.
const RUNNING: u8 = 0;
const TIMED_OUT: u8 = 1;
const CANCELLED: u8 = 2;

/// Runs `body` in a fresh context of a fresh runtime under `limits`, and
/// reads the JSON text it answers (or why it failed) out of the context
/// before the runtime is dropped. Every entry point of the crate runs this
/// way, so they share the limits, the prelude's globals (ending in `host`)
/// and the way failures are told.
pub(crate) fn run_limited<F>(
    file_name: &str,
    limits: &JsLimits,
    host: Arc<dyn Host>,
    body: F,
) -> Result<serde_json::Value>
where
    F: for<'js> FnOnce(&Ctx<'js>) -> std::result::Result<String, CallError<'js>>,
{
    let runtime = Runtime::new()?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let stopped = Arc::new(AtomicU8::new(RUNNING));
    // A limit too large for an `Instant` (`Duration::MAX`) is no limit.
    let deadline = Instant::now().checked_add(limits.time);
    let flag = Arc::clone(&stopped);
    let watched = Arc::clone(&host);
    // QuickJS polls this every few thousand instructions; once it answers
    // true the script gets an uncatchable error, and every later poll
    // answers true again, so a `finally` cannot keep it running.
    runtime.set_interrupt_handler(Some(Box::new(move || {
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            flag.store(TIMED_OUT, Ordering::Relaxed);
            return true;
        }
        if watched.cancelled() {
            flag.store(CANCELLED, Ordering::Relaxed);
            return true;
        }
        false
    })));
    let context = Context::full(&runtime)?;
    let outcome = context.with(|ctx| {
        install_prelude(&ctx, &host, deadline)
            .catch(&ctx)
            .map_err(CallError::from)
            .and_then(|()| body(&ctx))
            .map_err(|caught| Failure::read(caught, file_name))
    });
    match outcome {
        Ok(text) => Ok(serde_json::from_str(&text)?),
        Err(_) if stopped.load(Ordering::Relaxed) == TIMED_OUT => {
            Err(JsError::Timeout { limit: limits.time })
        }
        Err(_) if stopped.load(Ordering::Relaxed) == CANCELLED => Err(JsError::Cancelled),
        Err(Failure::OutOfMemory) => Err(JsError::OutOfMemory {
            limit_bytes: limits.memory_bytes,
        }),
        Err(Failure::Js(error)) => Err(error),
        Err(Failure::Engine(rquickjs::Error::WouldBlock)) => Err(JsError::Unsettled),
        Err(Failure::Engine(error)) => Err(JsError::Engine(error)),
    }
}

/// The call itself, inside the context; answers the result as JSON text.
fn call<'js>(
    ctx: &Ctx<'js>,
    invocation: &Invocation<'_>,
) -> std::result::Result<String, CallError<'js>> {
    evaluate::<()>(ctx, invocation.source, invocation.file_name)?;
    let callee = function_of(ctx, invocation.function)?;
    let arguments = ctx
        .json_parse(invocation.arguments.to_string())
        .catch(ctx)?;
    let context = ctx.json_parse(invocation.context.to_string()).catch(ctx)?;
    let result: Value<'js> = callee.call((arguments, context)).catch(ctx)?;
    json_text(ctx, result)
}

/// Evaluates `source` as a classic script named `file_name`, as a browser
/// or Node would run it, and answers its completion value.
pub(crate) fn evaluate<'js, T: FromJs<'js>>(
    ctx: &Ctx<'js>,
    source: &str,
    file_name: &str,
) -> std::result::Result<T, CallError<'js>> {
    let mut options = EvalOptions::default();
    options.strict = false;
    options.filename = Some(file_name.to_owned());
    Ok(ctx.eval_with_options::<T, _>(source, options).catch(ctx)?)
}

/// The evaluated script's function `name`, or [`CallError::NotAFunction`].
pub(crate) fn function_of<'js>(
    ctx: &Ctx<'js>,
    name: &str,
) -> std::result::Result<Function<'js>, CallError<'js>> {
    lookup(ctx, name)
        .catch(ctx)?
        .ok_or_else(|| CallError::NotAFunction(name.to_owned()))
}

/// `value` as JSON text, once settled when it is a Promise (`undefined`,
/// and anything else JSON cannot say, is `null`).
pub(crate) fn json_text<'js>(
    ctx: &Ctx<'js>,
    mut value: Value<'js>,
) -> std::result::Result<String, CallError<'js>> {
    if let Some(promise) = value.as_promise() {
        value = promise.finish::<Value<'js>>().catch(ctx)?;
    }
    let text = ctx.json_stringify(value).catch(ctx)?;
    match text {
        Some(text) => Ok(text.to_string().catch(ctx)?),
        None => Ok("null".to_owned()),
    }
}

/// The script's function `name`: a property of the global object (function
/// declarations, `var`) or a top-level `let`/`const`, which only a lookup by
/// identifier sees.
fn lookup<'js>(ctx: &Ctx<'js>, name: &str) -> rquickjs::Result<Option<Function<'js>>> {
    if !is_identifier(name) {
        return Ok(None);
    }
    let value: Value<'js> =
        ctx.eval(format!("typeof {name} === 'function' ? {name} : undefined"))?;
    Ok(value.into_function())
}

/// Whether `name` is a plain JavaScript identifier, so it can be looked up
/// by evaluating it without running anything else.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_' || first == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Why a body run by [`run_limited`] stopped, while the context is still
/// alive.
pub(crate) enum CallError<'js> {
    Caught(CaughtError<'js>),
    NotAFunction(String),
}

impl<'js> From<CaughtError<'js>> for CallError<'js> {
    fn from(caught: CaughtError<'js>) -> Self {
        Self::Caught(caught)
    }
}

/// Why a body stopped, read out of the context before it is dropped.
enum Failure {
    OutOfMemory,
    Js(JsError),
    Engine(rquickjs::Error),
}

impl Failure {
    fn read(error: CallError<'_>, file_name: &str) -> Self {
        match error {
            CallError::NotAFunction(function) => Self::Js(JsError::NotAFunction { function }),
            CallError::Caught(CaughtError::Error(rquickjs::Error::Allocation)) => Self::OutOfMemory,
            CallError::Caught(CaughtError::Error(error)) => Self::Engine(error),
            CallError::Caught(CaughtError::Exception(exception)) => {
                let name = exception
                    .get::<_, Coerced<String>>("name")
                    .map(|name| name.0)
                    .unwrap_or_else(|_| "Error".to_owned());
                let message = exception.message().unwrap_or_default();
                let line = exception
                    .stack()
                    .and_then(|stack| line_in(&stack, file_name));
                match (name.as_str(), message.as_str()) {
                    ("InternalError", OUT_OF_MEMORY_MESSAGE) => Self::OutOfMemory,
                    ("RangeError" | "InternalError", STACK_OVERFLOW_MESSAGE) => {
                        Self::Js(JsError::StackOverflow { line })
                    }
                    _ => Self::Js(JsError::Thrown {
                        message: format!("{name}: {message}"),
                        line,
                    }),
                }
            }
            // When QuickJS cannot allocate even its "out of memory" error,
            // it throws `null` (the heap is freed again by the time the
            // context is left, so the two cannot be told apart later). A
            // script's own `throw null` reads the same: a rare, useless
            // throw, and the price of recognising every allocation bomb.
            CallError::Caught(CaughtError::Value(value)) if value.is_null() => Self::OutOfMemory,
            CallError::Caught(CaughtError::Value(value)) => {
                let message = value
                    .get::<Coerced<String>>()
                    .map(|text| text.0)
                    .unwrap_or_else(|_| "a value that is not an Error".to_owned());
                Self::Js(JsError::Thrown {
                    message,
                    line: None,
                })
            }
        }
    }
}

/// The line of the innermost frame of `stack` in `file_name`: QuickJS writes
/// frames as `    at add (mathx.js:2:9)` or `    at mathx.js:2:9`.
fn line_in(stack: &str, file_name: &str) -> Option<u32> {
    let prefix = format!("{file_name}:");
    stack.lines().find_map(|frame| {
        let frame = frame.trim_start().strip_prefix("at ")?;
        let location = frame
            .rfind(" (")
            .map_or(frame, |open| &frame[open + 2..])
            .trim_end_matches(')');
        let position = location.strip_prefix(prefix.as_str())?;
        position.split(':').next()?.parse().ok()
    })
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
