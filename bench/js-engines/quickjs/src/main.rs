//! rquickjs (QuickJS-ng): per-call start-up, a call's overhead, memory per
//! idle context, and probes of what a sandbox needs.
//!
//! `js-engine-quickjs bench` prints the figures; `js-engine-quickjs probe`
//! runs the sandbox probes.

#[path = "../../harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use rquickjs::{CatchResultExt, Context, Ctx, Function, Runtime, Value};

const MEMORY_LIMIT: usize = 64 << 20;
const STACK_LIMIT: usize = 512 << 10;

/// A runtime with the sandbox's limits: memory, stack, and an interrupt
/// handler that stops the script once `time` has passed.
fn limited_runtime(time: Duration) -> Runtime {
    let runtime = Runtime::new().unwrap();
    runtime.set_memory_limit(MEMORY_LIMIT);
    runtime.set_max_stack_size(STACK_LIMIT);
    let deadline = Instant::now() + time;
    runtime.set_interrupt_handler(Some(Box::new(move || Instant::now() >= deadline)));
    runtime
}

/// Evaluates `source`, calls `add` with `arguments`, settles a Promise, and
/// returns the result as JSON; a JavaScript error comes back as its text.
fn run(
    ctx: &Ctx<'_>,
    source: &str,
    arguments: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    ctx.eval::<(), _>(source)
        .catch(ctx)
        .map_err(|error| error.to_string())?;
    call(ctx, arguments)
}

fn call(ctx: &Ctx<'_>, arguments: &serde_json::Value) -> Result<serde_json::Value, String> {
    let function: Function = ctx
        .globals()
        .get("add")
        .catch(ctx)
        .map_err(|error| error.to_string())?;
    let arguments = ctx
        .json_parse(arguments.to_string())
        .catch(ctx)
        .map_err(|error| error.to_string())?;
    let mut result: Value = function
        .call((arguments,))
        .catch(ctx)
        .map_err(|error| error.to_string())?;
    if let Some(promise) = result.as_promise() {
        result = promise
            .finish::<Value>()
            .catch(ctx)
            .map_err(|error| error.to_string())?;
    }
    let text = ctx
        .json_stringify(result)
        .catch(ctx)
        .map_err(|error| error.to_string())?;
    let text = text
        .map(|text| text.to_string().unwrap_or_default())
        .unwrap_or_else(|| "null".into());
    serde_json::from_str(&text).map_err(|error| error.to_string())
}

fn fresh_call(source: &str, arguments: &serde_json::Value) -> Result<serde_json::Value, String> {
    let runtime = limited_runtime(Duration::from_secs(10));
    let context = Context::full(&runtime).unwrap();
    context.with(|ctx| run(&ctx, source, arguments))
}

fn bench() {
    let arguments = harness::arguments();
    harness::time_calls("fresh runtime + context per call", 200, 5_000, || {
        fresh_call(harness::TOOL_SOURCE, &arguments).unwrap()
    });
    harness::time_calls(
        "fresh runtime + context per call, async tool",
        200,
        5_000,
        || fresh_call(harness::ASYNC_TOOL_SOURCE, &arguments).unwrap(),
    );
    let runtime = limited_runtime(Duration::from_secs(3600));
    harness::time_calls("fresh context in a reused runtime", 200, 5_000, || {
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| run(&ctx, harness::TOOL_SOURCE, &arguments).unwrap())
    });
    let context = Context::full(&runtime).unwrap();
    context.with(|ctx| run(&ctx, harness::TOOL_SOURCE, &arguments).unwrap());
    harness::time_calls("reused context (call only)", 1_000, 100_000, || {
        context.with(|ctx| call(&ctx, &arguments).unwrap())
    });
    drop(context);

    // Contexts in one runtime first: RSS freed by the runtimes below would
    // otherwise be reused and hide them.
    let shared = limited_runtime(Duration::from_secs(3600));
    shared.set_memory_limit(0);
    let before = shared.memory_usage().malloc_size;
    let contexts: Vec<Context> = (0..100)
        .map(|_| {
            let context = Context::full(&shared).unwrap();
            context.with(|ctx| ctx.eval::<(), _>(harness::TOOL_SOURCE).unwrap());
            context
        })
        .collect();
    println!(
        "engine accounting (malloc_size): 100 contexts with the tool in one runtime: {:.1} KiB per context; an empty runtime {:.1} KiB",
        (shared.memory_usage().malloc_size - before) as f64 / 100.0 / 1024.0,
        before as f64 / 1024.0,
    );
    drop(contexts);
    harness::memory_per_context(
        "idle context in one runtime with the tool loaded",
        1_000,
        || {
            let context = Context::full(&shared).unwrap();
            context.with(|ctx| ctx.eval::<(), _>(harness::TOOL_SOURCE).unwrap());
            context
        },
    );
    harness::memory_per_context("idle runtime + context with the tool loaded", 1_000, || {
        let runtime = limited_runtime(Duration::from_secs(3600));
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| ctx.eval::<(), _>(harness::TOOL_SOURCE).unwrap());
        (context, runtime)
    });
}

/// Runs `source`'s `add` under a 200 ms limit and prints what happened.
fn probe(label: &str, source: &str) {
    let start = Instant::now();
    let runtime = limited_runtime(Duration::from_millis(200));
    let context = Context::full(&runtime).unwrap();
    let outcome = context.with(|ctx| run(&ctx, source, &harness::arguments()));
    let outcome = match outcome {
        Ok(value) => format!("ok {value}"),
        Err(error) => format!("error {:?}", error.trim().replace('\n', " | ")),
    };
    println!(
        "{label}: {outcome} after {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
}

fn probes() {
    probe("infinite loop", "function add(){ for(;;){} }");
    probe(
        "allocation bomb (arrays)",
        "function add(){ const a = []; for(;;) a.push(new Array(100000).fill(1)); }",
    );
    probe(
        "allocation bomb (string doubling)",
        "function add(){ let s = 'x'; for(;;) s = s + s; }",
    );
    probe(
        "deep recursion",
        "function f(n){ return f(n + 1) + 1; } function add(){ return f(0); }",
    );
    probe("async tool", harness::ASYNC_TOOL_SOURCE);
    probe(
        "globals",
        "function add(){ return ['require','process','Deno','fetch','console','setTimeout','os','std','globalThis'].map(n => n + ':' + typeof globalThis[n]).join(' '); }",
    );
    probe(
        "dynamic import",
        "async function add(){ return await import('fs'); }",
    );
    probe(
        "import a file",
        "async function add(){ const m = await import('probe.json', { with: { type: 'json' } }); return m.default; }",
    );
    probe(
        "thrown error",
        "function add(args){\n  throw new Error('bad ' + args.a);\n}",
    );
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("probe") => probes(),
        _ => bench(),
    }
}
