#!/usr/bin/env python3
"""What a JavaScript tool costs in `toolgate serve`, against a built-in tool.

One gateway, `toolgate serve --stdio --memory-store --manifests <tmp>/tools` (built-ins on), serves a
group `bench` written for this run: `bench_echo` returns `args.x`, `bench_work` loops `n` times.
One MCP Python SDK client over stdio then measures:

1. latency: `--calls` timed `tools/call` of `bench_echo` (a fresh QuickJS runtime per call) and as
   many of the built-in `time_now` `{"timezone": "UTC"}` (Rust, no engine), alternated call by call
   after `--warmup` of each, so drift in the machine's load falls on both alike. Every answer is
   checked outside the timed window (`bench_echo` must return its distinct `x`); p50 / p99 / mean,
   and the JavaScript tool's p50 overhead over the built-in.
2. concurrency: `--bursts` bursts of `--concurrency` (100) calls sent at once from the one client,
   first of `bench_echo`, then of `bench_work` with `--work` iterations (a few ms of script each, so
   that many runtimes are alive together): wall time per burst, errors (exceptions, error results,
   wrong values).
3. memory: the gateway's VmRSS once it is warm and idle, its highest VmRSS sampled every 2 ms
   during the bursts, and its VmHWM at the end (from /proc/<pid>/status).

Run from the repository root (needs only the `mcp` package: bench/gateway/.venv, or the test peers'
.peers/venv):
    bench/gateway/.venv/bin/python bench/gateway/js_tools.py --calls 2000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from tools_list import add_common_arguments, machine, run_main, summary_us  # noqa: E402

BENCH_JSON = [
    {"_meta": True, "display_name": "Bench", "description": "Trivial JavaScript tools for benchmarks"},
    {
        "name": "bench_echo",
        "function": "echo",
        "description": "Returns x",
        "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
    },
    {
        "name": "bench_work",
        "function": "work",
        "description": "Loops n times",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
]

BENCH_JS = """function echo(args) {
  return args.x;
}
function work({ n }) {
  let total = 0;
  for (let i = 0; i < n; i++) total += i % 7;
  return total;
}
"""


def work_value(n: int) -> int:
    """What `work({n})` returns: the sum of i % 7 for i below n."""
    return (n // 7) * 21 + sum(range(n % 7))


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def gateway_pid() -> int:
    """The pid of the toolgate child this process started (the SDK's stdio client spawns it)."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        # The command may hold spaces and parentheses: the fields after the last ')' are fixed.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and comm == "toolgate":
            return int(entry.name)
    raise RuntimeError("no toolgate child process found")


def proc_status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/{pid}/status")


class RssSampler:
    """Samples a process's VmRSS every `interval` seconds on a thread; keeps the highest."""

    def __init__(self, pid: int, interval: float = 0.002) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, proc_status_kib(self.pid, "VmRSS"))
            time.sleep(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()


async def load(session: ClientSession, group: str) -> None:
    result = await session.call_tool("load_tool_group", {"group_name": group})
    if result.is_error:
        raise RuntimeError(f"load_tool_group {group}: {text_of(result)}")


async def latency(session: ClientSession, calls: int, warmup: int) -> dict[str, Any]:
    """Alternates bench_echo and time_now; every answer checked after its timed call."""
    samples: dict[str, list[int]] = {"javascript": [], "builtin": []}
    failures: list[str] = []

    async def one(kind: str, index: int, timed: bool) -> None:
        if kind == "javascript":
            expected = f"call-{index}"
            started = time.perf_counter_ns()
            result = await session.call_tool("bench_echo", {"x": expected})
            elapsed = time.perf_counter_ns() - started
            ok = not result.is_error and text_of(result) == expected
        else:
            started = time.perf_counter_ns()
            result = await session.call_tool("time_now", {"timezone": "UTC"})
            elapsed = time.perf_counter_ns() - started
            ok = not result.is_error and "UTC" in text_of(result)
        if not ok:
            failures.append(f"{kind} #{index}: {text_of(result)[:200]!r}")
        if timed:
            samples[kind].append(elapsed)

    for index in range(warmup):
        await one("javascript", index, timed=False)
        await one("builtin", index, timed=False)
    gc.collect()
    gc.disable()
    try:
        for index in range(calls):
            await one("javascript", warmup + index, timed=True)
            await one("builtin", warmup + index, timed=True)
    finally:
        gc.enable()
    if failures:
        raise RuntimeError(f"{len(failures)} wrong answers, first: {failures[0]}")
    javascript = summary_us(samples["javascript"])
    builtin = summary_us(samples["builtin"])
    return {
        "javascript": javascript,
        "builtin": builtin,
        "p50_overhead_us": javascript["p50_us"] - builtin["p50_us"],
        "p99_overhead_us": javascript["p99_us"] - builtin["p99_us"],
    }


async def burst(session: ClientSession, tool: str, concurrency: int, work: int) -> dict[str, Any]:
    """`concurrency` calls of `tool` at once; wall time from the first send to the last answer."""
    errors: list[str] = []

    async def one(index: int) -> None:
        if tool == "bench_echo":
            arguments: dict[str, Any] = {"x": f"burst-{index}"}
            expected = arguments["x"]
        else:
            arguments = {"n": work}
            expected = str(work_value(work))
        try:
            result = await session.call_tool(tool, arguments)
        except Exception as error:  # noqa: BLE001 - every failure is counted, none hides
            errors.append(f"#{index}: {error!r}")
            return
        if result.is_error or text_of(result) != expected:
            errors.append(f"#{index}: {text_of(result)[:200]!r}")

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(concurrency):
            group.start_soon(one, index)
    return {"wall_ms": (time.perf_counter() - started) * 1000, "errors": len(errors), "first_error": errors[:1]}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    binary = Path(args.toolgate_bin).resolve()
    if not binary.is_file():
        raise SystemExit(f"no toolgate binary at {binary}: cargo build --release -p toolgate-cli")
    with tempfile.TemporaryDirectory(prefix="toolgate-js-bench-") as tmp:
        tools = Path(tmp) / "tools"
        tools.mkdir()
        (tools / "bench.json").write_text(json.dumps(BENCH_JSON, indent=1))
        (tools / "bench.js").write_text(BENCH_JS)
        params = StdioServerParameters(
            command=str(binary),
            args=["serve", "--stdio", "--memory-store", "--manifests", str(tools), "--files-root", tmp],
            cwd=tmp,
            env={**os.environ, "XDG_CACHE_HOME": tmp, "TOOLGATE_LOG": "warn"},
        )
        with (Path(tmp) / "gateway.log").open("w") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    pid = gateway_pid()
                    await load(session, "time")
                    await load(session, "bench")
                    timed = await latency(session, args.calls, args.warmup)
                    await anyio.sleep(1)
                    idle_kib = proc_status_kib(pid, "VmRSS")
                    bursts: dict[str, list[dict[str, Any]]] = {"bench_echo": [], "bench_work": []}
                    with RssSampler(pid) as sampler:
                        for tool in bursts:
                            for _ in range(args.bursts):
                                bursts[tool].append(await burst(session, tool, args.concurrency, args.work))
                    hwm_kib = proc_status_kib(pid, "VmHWM")
                    # One work call alone, for scale: how long the script of a burst's call runs.
                    started = time.perf_counter()
                    alone = await session.call_tool("bench_work", {"n": args.work})
                    alone_ms = (time.perf_counter() - started) * 1000
                    if alone.is_error:
                        raise RuntimeError(f"bench_work: {text_of(alone)}")
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "toolgate": str(binary),
        "calls": args.calls,
        "warmup": args.warmup,
        "latency": timed,
        "concurrency": args.concurrency,
        "work": args.work,
        "work_alone_ms": alone_ms,
        "bursts": bursts,
        "memory": {"idle_rss_kib": idle_kib, "peak_rss_kib": sampler.peak_kib, "vm_hwm_kib": hwm_kib},
    }


def report(res: dict[str, Any], args: argparse.Namespace) -> str:
    lat = res["latency"]
    lines = [
        f"# JavaScript tools in toolgate serve ({res['date']}, {res['machine']})",
        "",
        f"## tools/call over stdio, {res['calls']} timed calls each, alternated ({res['warmup']} warm-up)",
        "",
        "| tool | p50 (µs) | p99 (µs) | mean (µs) | p50 / built-in p50 |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, key in (("time_now (built-in, Rust)", "builtin"), ("bench_echo (JavaScript)", "javascript")):
        stats = lat[key]
        ratio = stats["p50_us"] / lat["builtin"]["p50_us"]
        lines.append(f"| {label} | {stats['p50_us']:,.0f} | {stats['p99_us']:,.0f} | {stats['mean_us']:,.0f} | {ratio:.2f}× |")
    lines += [
        "",
        f"JavaScript overhead: p50 {lat['p50_overhead_us']:,.0f} µs, p99 {lat['p99_overhead_us']:,.0f} µs",
        "",
        f"## {res['concurrency']} concurrent calls from one client, {len(res['bursts']['bench_echo'])} bursts per tool",
        "",
        "| tool | errors | wall per burst (ms), each burst |",
        "|---|---:|---|",
    ]
    for tool, runs in res["bursts"].items():
        label = tool if tool == "bench_echo" else f"bench_work (n = {res['work']:,}; {res['work_alone_ms']:.1f} ms alone)"
        errors = sum(run["errors"] for run in runs)
        walls = ", ".join(f"{run['wall_ms']:,.0f}" for run in runs)
        lines.append(f"| {label} | {errors} | {walls} |")
        for run in runs:
            if run["first_error"]:
                lines.append(f"|  first error | | {run['first_error'][0]} |")
    memory = res["memory"]
    lines += [
        "",
        "## gateway memory",
        "",
        f"VmRSS idle (warm): {memory['idle_rss_kib'] / 1024:.1f} MiB; highest sampled during the bursts: "
        f"{memory['peak_rss_kib'] / 1024:.1f} MiB (+{(memory['peak_rss_kib'] - memory['idle_rss_kib']) / 1024:.1f} MiB); "
        f"VmHWM: {memory['vm_hwm_kib'] / 1024:.1f} MiB",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per tool (default 2000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed calls per tool first (default 100)")
    parser.add_argument("--concurrency", type=int, default=100, help="calls per burst (default 100)")
    parser.add_argument("--bursts", type=int, default=5, help="bursts per tool (default 5)")
    parser.add_argument("--work", type=int, default=200_000, help="loop iterations of bench_work (default 200000)")
    add_common_arguments(parser)
    return parser.parse_args(argv)


def main() -> int:
    return run_main(parse_args, run, report)


if __name__ == "__main__":
    sys.exit(main())
