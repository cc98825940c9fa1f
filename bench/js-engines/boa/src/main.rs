//! boa_engine: per-call start-up, a call's overhead, memory per idle
//! context, and probes of what a sandbox needs.
//!
//! `js-engine-boa bench` prints the figures; `js-engine-boa probe <name>`
//! runs one sandbox probe (one process each: boa has no time or memory
//! limit, so the caller runs them under `timeout` and `prlimit`).

#[path = "../../harness.rs"]
mod harness;

use std::time::Instant;

use std::rc::Rc;

use boa_engine::module::IdleModuleLoader;
use boa_engine::{Context, JsValue, Source, js_string};

/// A context with boa's limits: recursion depth and VM stack (its defaults
/// made explicit), and a loop iteration limit (boa's only guard against
/// loops; it has no wall-clock interrupt and no heap limit). No module
/// loader: `Context::default()` installs one that reads the working
/// directory (probe `import-file-default`).
fn limited_context(loop_iterations: u64) -> Context {
    let mut context = Context::builder()
        .module_loader(Rc::new(IdleModuleLoader))
        .build()
        .unwrap();
    let limits = context.runtime_limits_mut();
    limits.set_recursion_limit(512);
    limits.set_stack_size_limit(10 * 1024);
    limits.set_loop_iteration_limit(loop_iterations);
    context
}

/// Evaluates `source`, calls `add` with `arguments`, settles a Promise, and
/// returns the result as JSON; a JavaScript error comes back as its text.
fn run(
    context: &mut Context,
    source: &str,
    arguments: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    context
        .eval(Source::from_bytes(source))
        .map_err(|error| error.to_string())?;
    call(context, arguments)
}

fn call(context: &mut Context, arguments: &serde_json::Value) -> Result<serde_json::Value, String> {
    let function = context
        .global_object()
        .get(js_string!("add"), context)
        .map_err(|error| error.to_string())?;
    let function = function.as_callable().ok_or("add is not a function")?;
    let arguments = JsValue::from_json(arguments, context).map_err(|error| error.to_string())?;
    let mut result = function
        .call(&JsValue::undefined(), &[arguments], context)
        .map_err(|error| error.to_string())?;
    if let Some(promise) = result.as_promise() {
        result = promise
            .await_blocking(context)
            .map_err(|error| error.to_string())?;
    }
    let value = result.to_json(context).map_err(|error| error.to_string())?;
    Ok(value.unwrap_or(serde_json::Value::Null))
}

fn bench() {
    let arguments = harness::arguments();
    harness::time_calls("fresh context per call", 50, 1_000, || {
        let mut context = limited_context(u64::MAX);
        run(&mut context, harness::TOOL_SOURCE, &arguments).unwrap()
    });
    harness::time_calls("fresh context per call, async tool", 50, 1_000, || {
        let mut context = limited_context(u64::MAX);
        run(&mut context, harness::ASYNC_TOOL_SOURCE, &arguments).unwrap()
    });
    let mut context = limited_context(u64::MAX);
    run(&mut context, harness::TOOL_SOURCE, &arguments).unwrap();
    harness::time_calls("reused context (call only)", 1_000, 100_000, || {
        call(&mut context, &arguments).unwrap()
    });
    drop(context);
    harness::memory_per_context("idle context with the tool loaded", 1_000, || {
        let mut context = limited_context(u64::MAX);
        context
            .eval(Source::from_bytes(harness::TOOL_SOURCE))
            .unwrap();
        context
    });
}

fn probe(name: &str) {
    let source = match name {
        "loop" => "function add(){ for(;;){} }",
        "loop-in-calls" => {
            "function spin(){ for(let i = 0; i < 1000; i++){} } function add(){ for(;;) spin(); }"
        }
        "alloc-arrays" => {
            "function add(){ const a = []; for(;;) a.push(new Array(100000).fill(1)); }"
        }
        "alloc-string" => "function add(){ let s = 'x'; for(;;) s = s + s; }",
        "recursion" => "function f(n){ return f(n + 1) + 1; } function add(){ return f(0); }",
        "async" => harness::ASYNC_TOOL_SOURCE,
        "globals" => {
            "function add(){ return ['require','process','Deno','fetch','console','setTimeout','os','std','globalThis'].map(n => n + ':' + typeof globalThis[n]).join(' '); }"
        }
        "import" => "async function add(){ return await import('fs'); }",
        // Context::default() installs a module loader rooted at the current
        // directory: this reads probe.json if there is one.
        "import-file" | "import-file-default" => {
            "async function add(){ const m = await import('probe.json', { with: { type: 'json' } }); return m.default; }"
        }
        "thrown" => "function add(args){\n  throw new Error('bad ' + args.a);\n}",
        _ => {
            println!("unknown probe {name}");
            return;
        }
    };
    let start = Instant::now();
    // A loop limit of 10 million iterations stands in for a time limit.
    let mut context = limited_context(10_000_000);
    if name == "import-file-default" {
        context = Context::default();
    }
    let outcome = match run(&mut context, source, &harness::arguments()) {
        Ok(value) => format!("ok {value}"),
        Err(error) => format!("error {:?}", error.trim().replace('\n', " | ")),
    };
    println!(
        "{name}: {outcome} after {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("probe") => probe(&args.next().unwrap_or_default()),
        _ => bench(),
    }
}
