#!/usr/bin/env python3
"""Where the time of a `tools/call` over streamable HTTP goes: the gateway's share against the client's.

Starts `toolgate serve --memory-store` twice, once on HTTP and once on stdio (built-in groups, no
upstreams), and drives both with a minimal client of its own: one kept-alive HTTP/1.1 connection
(Python's http.client, the body read whole and parsed) or JSON lines on the child's pipes. On each
transport it times, sequentially and after a warm-up:

- `ping`: the protocol round trip with no tool at all;
- `tools/call time_now` (the built-in `time` group loaded first): a cheap tool;
- `tools/call call_tool {"name": "time_now"}`: the same through the core dispatch tool.

Every answer is parsed and checked (a result for the request's id; the tool's text is a timestamp).
The difference between HTTP and stdio with this client is the gateway's HTTP path (hyper, rmcp's
session layer, SSE framing). The same cases then run through the official MCP Python SDK client
(`ClientSession` over `streamable_http_client` and `stdio_client`) against the same gateways:
what the SDK adds over the minimal client on each transport is the client's.

Run from the repository root:
    bench/gateway/.venv/bin/python bench/gateway/http_breakdown.py --calls 2000 --toolgate-bin target/release/toolgate
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tools_list import free_port, machine, sse_messages, start_gateway, stop_gateway  # noqa: E402

PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "breakdown", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class HttpClient:
    """One kept-alive connection to `/mcp`, one request at a time."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        response = self._post(INITIALIZE)
        self.headers["mcp-session-id"] = response.getheader("mcp-session-id") or ""
        self.headers["mcp-protocol-version"] = PROTOCOL
        self._answer(response, 0)
        response = self._post(INITIALIZED)
        response.read()
        if response.status != 202:
            raise RuntimeError(f"notifications/initialized got HTTP {response.status}")

    def _post(self, message: dict[str, Any]) -> http.client.HTTPResponse:
        self.connection.request("POST", "/mcp", body=json.dumps(message), headers=self.headers)
        return self.connection.getresponse()

    @staticmethod
    def _answer(response: http.client.HTTPResponse, request_id: int) -> dict[str, Any]:
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:300]!r}")
        for message in sse_messages(body, response.getheader("content-type") or ""):
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"JSON-RPC error: {message['error']}")
                return message["result"]
        raise RuntimeError(f"no answer to {request_id} in {body[:300]!r}")

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return self._answer(self._post(message), request_id)

    def close(self) -> None:
        self.connection.close()


class StdioClient:
    """JSON lines on a `toolgate serve --stdio` child."""

    def __init__(self, binary: Path, log: Any, extra: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--stdio", "--memory-store", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        self.request(0, INITIALIZE["method"], INITIALIZE["params"])
        self._send(INITIALIZED)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the gateway closed its output")
            message = json.loads(line)
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"JSON-RPC error: {message['error']}")
                return message["result"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


def tool_text(result: dict[str, Any]) -> str:
    if result.get("isError"):
        raise RuntimeError(f"error result: {result}")
    return "".join(b.get("text", "") for b in result.get("content", []) if b.get("type") == "text")


CASES: dict[str, tuple[str, dict[str, Any], Callable[[dict[str, Any]], None]]] = {}


def check_time(result: dict[str, Any]) -> None:
    text = tool_text(result)
    if "20" not in text:
        raise RuntimeError(f"time_now answered {text[:200]!r}")


CASES["ping"] = ("ping", {}, lambda result: None)
CASES["tools/call time_now"] = ("tools/call", {"name": "time_now", "arguments": {}}, check_time)
CASES["tools/call call_tool(time_now)"] = (
    "tools/call",
    {"name": "call_tool", "arguments": {"name": "time_now", "arguments": {}}},
    check_time,
)


def measure(client: HttpClient | StdioClient, calls: int, warmup: int) -> dict[str, dict[str, float]]:
    loaded = tool_text(client.request(1, "tools/call", {"name": "load_tool_group", "arguments": {"group_name": "time"}}))
    if not loaded.startswith("Loaded "):
        raise RuntimeError(f"load_tool_group(time): {loaded[:200]!r}")
    out = {}
    request_id = 10
    for label, (method, params, check) in CASES.items():
        times = []
        for i in range(warmup + calls):
            request_id += 1
            began = time.perf_counter()
            result = client.request(request_id, method, params)
            took = time.perf_counter() - began
            check(result)
            if i >= warmup:
                times.append(took * 1e6)
        times.sort()
        out[label] = {
            "p50": times[len(times) // 2],
            "p99": times[min(len(times) - 1, int(len(times) * 0.99))],
            "mean": statistics.fmean(times),
        }
    return out


async def measure_sdk(session: ClientSession, calls: int, warmup: int) -> dict[str, dict[str, float]]:
    """The cases of `measure`, through the SDK's `ClientSession`."""
    await session.initialize()
    loaded = await session.call_tool("load_tool_group", {"group_name": "time"})
    as_dict = lambda result: result.model_dump(by_alias=True, exclude_none=True)  # noqa: E731
    if not tool_text(as_dict(loaded)).startswith("Loaded "):
        raise RuntimeError(f"load_tool_group(time): {loaded}")
    runs: dict[str, Callable[[], Awaitable[Any]]] = {
        "ping": session.send_ping,
        "tools/call time_now": lambda: session.call_tool("time_now", {}),
        "tools/call call_tool(time_now)": lambda: session.call_tool("call_tool", {"name": "time_now", "arguments": {}}),
    }
    out = {}
    for label, call in runs.items():
        check = CASES[label][2]
        times = []
        for i in range(warmup + calls):
            began = time.perf_counter()
            result = await call()
            took = time.perf_counter() - began
            check(as_dict(result))
            if i >= warmup:
                times.append(took * 1e6)
        times.sort()
        out[label] = {
            "p50": times[len(times) // 2],
            "p99": times[min(len(times) - 1, int(len(times) * 0.99))],
            "mean": statistics.fmean(times),
        }
    return out


async def sdk_stdio(binary: Path, log: Any, calls: int, warmup: int) -> dict[str, dict[str, float]]:
    params = StdioServerParameters(command=str(binary), args=["serve", "--stdio", "--memory-store"])
    async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
        return await measure_sdk(session, calls, warmup)


async def sdk_http(port: int, calls: int, warmup: int) -> dict[str, dict[str, float]]:
    url = f"http://127.0.0.1:{port}/mcp"
    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
        return await measure_sdk(session, calls, warmup)


def run(args: argparse.Namespace) -> dict[str, Any]:
    binary = Path(args.toolgate_bin)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="toolgate-breakdown-") as tmp:
        for round_ in range(args.rounds):
            with (Path(tmp) / "stdio.log").open("w") as log:
                stdio = StdioClient(binary, log)
                try:
                    results.setdefault("stdio", []).append(measure(stdio, args.calls, args.warmup))
                finally:
                    stdio.close()
                results.setdefault("sdk stdio", []).append(
                    anyio.run(sdk_stdio, binary, log, args.calls, args.warmup)
                )
            port = free_port()
            with (Path(tmp) / "http.log").open("w") as log:
                proc = start_gateway(binary, ["--memory-store"], log, port)
                try:
                    client = HttpClient(port)
                    results.setdefault("http", []).append(measure(client, args.calls, args.warmup))
                    client.close()
                    results.setdefault("sdk http", []).append(anyio.run(sdk_http, port, args.calls, args.warmup))
                finally:
                    stop_gateway(proc)
            print(f"round {round_ + 1} done", file=sys.stderr, flush=True)
    return results


def report(results: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"## tools/call over HTTP and stdio with a minimal client: {args.calls} sequential calls per case, "
        f"{args.rounds} round(s), medians of the rounds' p50/p99 in µs (send to parsed answer)",
        "",
        f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; machine: {machine()}; "
        f"binary: {args.toolgate_bin}",
        "",
        "| client | case | stdio p50 | stdio p99 | HTTP p50 | HTTP p99 | HTTP − stdio (p50) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for client, (stdio, http) in {"minimal": ("stdio", "http"), "Python SDK": ("sdk stdio", "sdk http")}.items():
        for label in CASES:
            row = {}
            for transport in (stdio, http):
                rounds = results[transport]
                row[transport] = {
                    key: statistics.median(r[label][key] for r in rounds) for key in ("p50", "p99")
                }
            lines.append(
                f"| {client} | {label} | {row[stdio]['p50']:.0f} | {row[stdio]['p99']:.0f} | "
                f"{row[http]['p50']:.0f} | {row[http]['p99']:.0f} | {row[http]['p50'] - row[stdio]['p50']:+.0f} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per case (default 2000)")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating transports (default 3)")
    parser.add_argument("--toolgate-bin", default="target/release/toolgate", help="the toolgate binary")
    parser.add_argument("--json", help="also write the raw figures here")
    args = parser.parse_args()
    results = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(report(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
