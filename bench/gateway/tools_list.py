#!/usr/bin/env python3
"""tools/list latency and size through `toolgate serve` with a large imported catalog.

Starts `toolgate serve --memory-store --no-builtins --jsonl <catalog> --listen 127.0.0.1:<free port>`
and drives it over streamable HTTP with the official MCP Python SDK (one session):

1. turn 1: `--warmup` untimed then `--calls` timed `tools/list` (only the 3 core tools are listed);
2. `load_tool_group` once for every group of the catalog, each call timed (every result checked);
3. after all groups are loaded: `--warmup` untimed then `--calls` timed `tools/list` (core + every
   imported tool).

Every listing is checked for its tool count. The size of each response is the HTTP body the gateway
sent (counted by a pass-through transport under the SDK's httpx client) and the JSON-RPC message
inside it. As a reference for what the SDK client itself costs, the same session's tools/list is
also timed with a bare HTTP POST (httpx, no SDK parsing), reported separately.

Run from the repository root:
    bench/gateway/.venv/bin/python bench/gateway/tools_list.py ../shared/data/toolbench_stable/tools.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
CORE_TOOLS = 3  # load_tool_group, unload_tool_group, call_tool


# ---------------------------------------------------------------------------------------------
# helpers shared with sessions_memory.py


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_gateway(binary: Path, args: list[str], log: Any, port: int, timeout: float = 120.0) -> subprocess.Popen[bytes]:
    """Starts `binary serve ... --listen 127.0.0.1:port` and waits until the port accepts."""
    proc = subprocess.Popen(
        [str(binary), "serve", *args, "--listen", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"toolgate exited with code {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return proc
        time.sleep(0.05)
    stop_gateway(proc)
    raise RuntimeError(f"toolgate did not listen on port {port} within {timeout:.0f} s")


def stop_process_group(proc: subprocess.Popen[bytes], first: signal.Signals = signal.SIGTERM) -> None:
    """Sends `first` to the process group we started, then SIGKILL if it lingers."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, first)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def stop_gateway(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C (the gateway's shutdown signal), then SIGKILL if it lingers."""
    stop_process_group(proc, signal.SIGINT)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """--toolgate-bin and --json, shared by the gateway benchmarks."""
    parser.add_argument(
        "--toolgate-bin",
        default=str(REPO_ROOT / "target" / "release" / "toolgate"),
        help="toolgate binary (default: target/release/toolgate under the repo root)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")


def run_main(parse_args: Any, run: Any, report: Any) -> int:
    """Parses arguments, runs the measurement, prints the report, writes --json."""
    args = parse_args()
    results = anyio.run(run, args)
    print(report(results, args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


def sse_messages(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a streamable-HTTP response (plain JSON or SSE `data:` lines)."""
    if content_type.startswith("application/json"):
        parsed = json.loads(body)
        return parsed if isinstance(parsed, list) else [parsed]
    messages, data = [], []
    for line in body.decode().splitlines():
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line.strip():
            if data and "".join(data).strip():
                messages.append(json.loads("\n".join(data)))
            data = []
    if data and "".join(data).strip():
        messages.append(json.loads("\n".join(data)))
    return messages


def machine() -> str:
    cpu = platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"


def percentile(sorted_values: list[int], q: float) -> int:
    """Nearest-rank percentile."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def summary_us(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)
    return {
        "n": len(ordered),
        "p50_us": percentile(ordered, 0.50) / 1000,
        "p99_us": percentile(ordered, 0.99) / 1000,
        "mean_us": statistics.fmean(ordered) / 1000,
        "min_us": ordered[0] / 1000,
        "max_us": ordered[-1] / 1000,
    }


# ---------------------------------------------------------------------------------------------
# byte counting under the SDK


class _CountingStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, record: dict[str, Any]) -> None:
        self._inner = inner
        self._record = record

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._record["body_bytes"] += len(chunk)
            self._record["chunks"].append(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CountingTransport(httpx2.AsyncBaseTransport):
    """Passes every request through and records each POST's JSON-RPC method, session id, response
    content type and body (bytes as received). Only the last record per method is kept."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self.last: dict[str, dict[str, Any]] = {}
        self.session_id: str | None = None
        self.protocol_version: str | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        method = None
        if request.method == "POST":
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                method = json.loads(request.content).get("method")
        response = await self._inner.handle_async_request(request)
        if request.headers.get("mcp-session-id"):
            self.session_id = request.headers["mcp-session-id"]
            self.protocol_version = request.headers.get("mcp-protocol-version")
        if method is None:
            return response
        record = {"content_type": response.headers.get("content-type", ""), "body_bytes": 0, "chunks": []}
        self.last[method] = record
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CountingStream(response.stream, record),
            extensions=response.extensions,
        )


def response_size(record: dict[str, Any]) -> dict[str, int]:
    body = b"".join(record["chunks"])
    messages = [m for m in sse_messages(body, record["content_type"]) if "result" in m or "error" in m]
    message = json.dumps(messages[0], separators=(",", ":"), ensure_ascii=False).encode() if messages else b""
    return {"http_body_bytes": record["body_bytes"], "jsonrpc_message_bytes": len(message)}


# ---------------------------------------------------------------------------------------------
# measuring


async def timed_lists(session: ClientSession, n: int, warmup: int, expect: int) -> list[int]:
    for _ in range(warmup):
        got = len((await session.list_tools()).tools)
        if got != expect:
            raise RuntimeError(f"tools/list returned {got} tools, expected {expect}")
    samples = [0] * n
    counts = [0] * n
    gc.collect()
    gc.disable()
    try:
        for i in range(n):
            start = time.perf_counter_ns()
            result = await session.list_tools()
            samples[i] = time.perf_counter_ns() - start
            counts[i] = len(result.tools)
    finally:
        gc.enable()
    bad = [c for c in counts if c != expect]
    if bad:
        raise RuntimeError(f"{len(bad)} timed tools/list returned {bad[0]} tools, expected {expect}")
    return samples


async def raw_lists(
    url: str, transport: CountingTransport, n: int, warmup: int, expect: int, *, reuse: bool
) -> list[int]:
    """The same session's tools/list as bare HTTP POSTs: server + HTTP + reading the whole body, no
    parsing. `reuse=False` opens a new connection per request, as the SDK client does (it stops
    reading each SSE response after the result, so its connection is never reused); `reuse=True`
    keeps one keep-alive connection, as most HTTP clients would."""
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-session-id": transport.session_id or "",
    }
    if transport.protocol_version:
        headers["mcp-protocol-version"] = transport.protocol_version
    samples = []
    # No keep-alive pool: each request opens (and closes) its own connection.
    limits = None if reuse else httpx2.Limits(max_keepalive_connections=0)
    async with httpx2.AsyncClient(timeout=60, **({"limits": limits} if limits else {})) as client:
        for i in range(warmup + n):
            payload = json.dumps({"jsonrpc": "2.0", "id": 100_000 + i, "method": "tools/list", "params": {}})
            start = time.perf_counter_ns()
            response = await client.post(url, content=payload, headers=headers)
            body = response.content
            elapsed = time.perf_counter_ns() - start
            if i == 0 or i == warmup:  # checked outside the timed window
                msgs = [m for m in sse_messages(body, response.headers.get("content-type", "")) if "result" in m]
                got = len(msgs[0]["result"]["tools"]) if msgs else -1
                if response.status_code != 200 or got != expect:
                    raise RuntimeError(f"raw tools/list: HTTP {response.status_code}, {got} tools, expected {expect}")
            if i >= warmup:
                samples.append(elapsed)
    return samples


def catalog_groups(path: Path) -> tuple[list[str], int]:
    groups: dict[str, None] = {}
    tools = 0
    with path.open() as lines:
        for line in lines:
            if line.strip():
                tools += 1
                groups.setdefault(json.loads(line)["group"], None)
    return list(groups), tools


async def run(args: argparse.Namespace) -> dict[str, Any]:
    jsonl = Path(args.jsonl)
    groups, catalog_tools = catalog_groups(jsonl)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with tempfile.TemporaryDirectory(prefix="toolgate-tools-list-") as tmp:
        log_path = Path(tmp) / "toolgate.log"
        with log_path.open("w") as log:
            proc = start_gateway(
                Path(args.toolgate_bin), ["--memory-store", "--no-builtins", "--jsonl", str(jsonl)], log, port
            )
            try:
                return await measure(args, url, groups, catalog_tools)
            except BaseException:
                print(log_path.read_text()[-2000:], file=sys.stderr)
                raise
            finally:
                stop_gateway(proc)


async def measure(args: argparse.Namespace, url: str, groups: list[str], catalog_tools: int) -> dict[str, Any]:
    transport = CountingTransport()
    http = httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(60.0))
    out: dict[str, Any] = {"groups": len(groups), "catalog_tools": catalog_tools}
    async with (
        http,
        streamable_http_client(url, http_client=http, max_sse_event_size=None) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        init = await session.initialize()
        out["server"] = f"{init.server_info.name} {init.server_info.version}"
        out["protocol_version"] = init.protocol_version

        print("turn 1: tools/list ...", file=sys.stderr, flush=True)
        turn1 = await timed_lists(session, args.calls, args.warmup, CORE_TOOLS)
        out["turn1"] = {"tools": CORE_TOOLS, **summary_us(turn1), **response_size(transport.last["tools/list"])}
        for reuse in (False, True):
            raw = await raw_lists(url, transport, args.calls, args.warmup, CORE_TOOLS, reuse=reuse)
            out["turn1_raw_http_keepalive" if reuse else "turn1_raw_http"] = summary_us(raw)

        print(f"load_tool_group x {len(groups)} ...", file=sys.stderr, flush=True)
        loads = []
        for group in groups:
            start = time.perf_counter_ns()
            result = await session.call_tool("load_tool_group", {"group_name": group})
            loads.append(time.perf_counter_ns() - start)
            if result.is_error:
                text = next((b.text for b in result.content if b.type == "text"), "")
                raise RuntimeError(f"load_tool_group({group!r}) failed: {text}")
        out["load_tool_group"] = {
            **summary_us(loads),
            **response_size(transport.last["tools/call"]),
        }

        expect = CORE_TOOLS + catalog_tools
        print(f"all loaded: tools/list ({expect} tools) ...", file=sys.stderr, flush=True)
        full = await timed_lists(session, args.calls, args.warmup, expect)
        out["all_loaded"] = {"tools": expect, **summary_us(full), **response_size(transport.last["tools/list"])}
        for reuse in (False, True):
            raw = await raw_lists(url, transport, args.calls, args.warmup, expect, reuse=reuse)
            out["all_loaded_raw_http_keepalive" if reuse else "all_loaded_raw_http"] = summary_us(raw)
    return out


def report(res: dict[str, Any], args: argparse.Namespace) -> str:
    t1, full, load = res["turn1"], res["all_loaded"], res["load_tool_group"]
    r1, rf = res["turn1_raw_http"], res["all_loaded_raw_http"]
    k1, kf = res["turn1_raw_http_keepalive"], res["all_loaded_raw_http_keepalive"]

    def row(label: str, s: dict[str, Any], raw: dict[str, Any], base: dict[str, Any] | None) -> str:
        ratio = f"{s['p50_us'] / base['p50_us']:.1f}×" if base else "1×"
        size_ratio = f"{s['http_body_bytes'] / base['http_body_bytes']:,.0f}×" if base else "1×"
        return (
            f"| {label} | {s['tools']:,} | {s['p50_us']:,.0f} | {s['p99_us']:,.0f} | {ratio} | "
            f"{raw['p50_us']:,.0f} | {raw['p99_us']:,.0f} | {s['jsonrpc_message_bytes']:,} | "
            f"{s['http_body_bytes']:,} | {size_ratio} |"
        )

    lines = [
        f"## tools/list through toolgate serve (streamable HTTP), {res['catalog_tools']:,} imported tools in "
        f"{res['groups']} groups; {args.calls} timed calls after {args.warmup} warm-up per state",
        "",
        f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; machine: {machine()}; "
        f"server: {res['server']} (protocol {res['protocol_version']}); python {platform.python_version()}",
        "",
        "| state | tools listed | SDK p50 (µs) | SDK p99 (µs) | p50 / turn-1 p50 | raw HTTP p50 (µs) "
        "| raw HTTP p99 (µs) | JSON-RPC message (bytes) | HTTP body (bytes) | size / turn 1 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        row("turn 1 (no group loaded)", t1, r1, None),
        row(f"all {res['groups']} groups loaded", full, rf, t1),
        "",
        f"load_tool_group (each of the {res['groups']} groups once, SDK call_tool): p50 {load['p50_us']:,.0f} µs, "
        f"p99 {load['p99_us']:,.0f} µs, min {load['min_us']:,.0f} µs, max {load['max_us']:,.0f} µs; "
        f"last response {load['jsonrpc_message_bytes']:,} bytes",
        "",
        "SDK: official MCP client `ClientSession.list_tools()` (includes parsing and validating the result). "
        "Raw HTTP: bare POST of the same session's tools/list, whole body read, not parsed, a new connection "
        "per request (as the SDK does).",
        f"Raw HTTP on one reused keep-alive connection: turn 1 p50 {k1['p50_us']:,.0f} µs / p99 "
        f"{k1['p99_us']:,.0f} µs; all loaded p50 {kf['p50_us']:,.0f} µs / p99 {kf['p99_us']:,.0f} µs.",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("jsonl", help="tools.jsonl catalog, e.g. ../shared/data/toolbench_stable/tools.jsonl")
    parser.add_argument("--calls", type=int, default=200, help="timed tools/list per state (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed tools/list first (default 20)")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    if args.calls < 1 or args.warmup < 1:
        parser.error("--calls and --warmup must be at least 1")
    return args


def main() -> int:
    return run_main(parse_args, run, report)


if __name__ == "__main__":
    sys.exit(main())
