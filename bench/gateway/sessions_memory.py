#!/usr/bin/env python3
"""Resident memory per idle MCP session in `toolgate serve` over streamable HTTP.

For each session store (`--memory-store`, then `--store <tmp>/sessions.db`), starts
`toolgate serve <store> --listen 127.0.0.1:<free port>` (built-in groups on, no upstreams), reads
VmRSS from /proc/<pid>/status, then opens `--sessions` sessions, each with raw HTTP (httpx):
`initialize`, `notifications/initialized`, `tools/call load_tool_group {"group_name": "time"}`.
Every response is parsed (plain JSON or SSE `data:` lines): each initialize must carry a new
`mcp-session-id` and a toolgate result, the notification must get 202, and each load must be a
non-error result naming the group. The client then closes its connections, the sessions are left
idle, and after `--settle` seconds VmRSS is read again:

    bytes per idle session = (VmRSS after - VmRSS before) / sessions

Afterwards a few sessions are spot-checked to still list the `time` tools (outside the
measurement).

Run from the repository root:
    bench/gateway/.venv/bin/python bench/gateway/sessions_memory.py --sessions 10000
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tools_list import REPO_ROOT, add_common_arguments, free_port, machine, run_main, sse_messages, start_gateway, stop_gateway  # noqa: E402

PROTOCOL = "2025-06-18"
ACCEPT = "application/json, text/event-stream"


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon, RssFile, VmHWM in bytes, and Threads."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
        elif key == "Threads":
            out[key] = int(value)
    return out


def only_result(response: httpx2.Response, request_id: int) -> dict[str, Any]:
    if response.status_code != 200:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
    messages = sse_messages(response.content, response.headers.get("content-type", ""))
    for message in messages:
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"JSON-RPC error: {message['error']}")
            return message["result"]
    raise RuntimeError(f"no answer to request {request_id} in {response.content[:300]!r}")


async def open_session(client: httpx2.AsyncClient, url: str, group: str | None) -> str:
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "sessions_memory.py", "version": "1"},
        },
    }
    response = await client.post(url, content=json.dumps(init), headers=headers)
    result = only_result(response, 1)
    session_id = response.headers.get("mcp-session-id")
    if not session_id:
        raise RuntimeError("initialize answered without an mcp-session-id header")
    if result.get("serverInfo", {}).get("name") != "toolgate":
        raise RuntimeError(f"unexpected initialize result: {str(result)[:300]}")
    headers = {
        **headers,
        "mcp-session-id": session_id,
        "mcp-protocol-version": result.get("protocolVersion", PROTOCOL),
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = await client.post(url, content=json.dumps(note), headers=headers)
    if response.status_code != 202:
        raise RuntimeError(f"notifications/initialized got HTTP {response.status_code}")
    if group is None:
        return session_id
    load = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "load_tool_group", "arguments": {"group_name": group}},
    }
    result = only_result(await client.post(url, content=json.dumps(load), headers=headers), 2)
    text = next((b.get("text", "") for b in result.get("content", []) if b.get("type") == "text"), "")
    if result.get("isError") or not text.startswith("Loaded ") or group not in text.lower():
        raise RuntimeError(f"load_tool_group({group}) did not load: {text[:300]!r}")
    return session_id


async def list_tool_names(client: httpx2.AsyncClient, url: str, session_id: str) -> list[str]:
    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-session-id": session_id,
        "mcp-protocol-version": PROTOCOL,
    }
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
    result = only_result(await client.post(url, content=json.dumps(body), headers=headers), 3)
    return [t["name"] for t in result["tools"]]


async def open_sessions(url: str, count: int, concurrency: int, group: str | None) -> tuple[list[str], float]:
    ids: list[str] = []
    next_index = 0
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    start = time.monotonic()
    async with httpx2.AsyncClient(timeout=60, limits=limits) as client:

        async def worker() -> None:
            nonlocal next_index
            while next_index < count:
                next_index += 1
                ids.append(await open_session(client, url, group))
                if len(ids) % 1000 == 0:
                    print(f"  {len(ids)} sessions", file=sys.stderr, flush=True)

        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
    # Leaving the block closed every connection: what stays is the sessions.
    return ids, time.monotonic() - start


async def measure_store(args: argparse.Namespace, label: str, store_args: list[str], tmp: Path) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log_path = tmp / f"{label}.log"
    with log_path.open("w") as log:
        proc = start_gateway(Path(args.toolgate_bin), store_args + args.serve_arg, log, port)
        try:
            await anyio.sleep(args.settle)
            before = proc_status(proc.pid)
            print(f"[{label}] VmRSS before: {before['VmRSS']:,} B; opening {args.sessions} sessions ...",
                  file=sys.stderr, flush=True)
            group = None if args.no_load else args.group
            ids, took = await open_sessions(url, args.sessions, args.concurrency, group)
            if len(set(ids)) != args.sessions:
                raise RuntimeError(f"{len(set(ids))} distinct session ids for {args.sessions} sessions")
            await anyio.sleep(args.settle)
            after = proc_status(proc.pid)
            dormant = None
            if args.idle_wait > 0:
                print(f"[{label}] VmRSS after {args.settle:g} s: {after['VmRSS']:,} B; waiting "
                      f"{args.idle_wait:g} s for idle sessions to leave memory ...", file=sys.stderr, flush=True)
                await anyio.sleep(args.idle_wait)
                dormant = proc_status(proc.pid)
            # Spot checks, after the readings: the sessions are alive and kept their group. The
            # first request of each restores it when it left memory; the second finds it held.
            first_ms: list[float] = []
            second_ms: list[float] = []
            async with httpx2.AsyncClient(timeout=60) as client:
                for session_id in random.Random(0).sample(ids, min(args.spot_checks, len(ids))):
                    for times in (first_ms, second_ms):
                        began = time.perf_counter()
                        names = await list_tool_names(client, url, session_id)
                        times.append((time.perf_counter() - began) * 1000)
                        if len(names) <= 3 and not args.no_load:
                            raise RuntimeError(f"session {session_id} lists only {names}")
            tools_after_load = len(names)
        except BaseException:
            print(log_path.read_text()[-2000:], file=sys.stderr)
            raise
        finally:
            stop_gateway(proc)
    delta = after["VmRSS"] - before["VmRSS"]
    res = {
        "store": label,
        "sessions": args.sessions,
        "open_seconds": took,
        "sessions_per_second": args.sessions / took,
        "before": before,
        "after": after,
        "rss_delta": delta,
        "bytes_per_session": delta / args.sessions,
        "anon_bytes_per_session": (after["RssAnon"] - before["RssAnon"]) / args.sessions,
        "tools_listed_per_session": tools_after_load,
        "first_list_ms_p50": sorted(first_ms)[len(first_ms) // 2],
        "second_list_ms_p50": sorted(second_ms)[len(second_ms) // 2],
    }
    if dormant is not None:
        res["dormant"] = dormant
        res["dormant_bytes_per_session"] = (dormant["VmRSS"] - before["VmRSS"]) / args.sessions
    if "--store" in store_args:
        db = Path(store_args[store_args.index("--store") + 1])
        res["db_bytes"] = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    print(f"[{label}] VmRSS after: {after['VmRSS']:,} B -> {res['bytes_per_session']:,.0f} B/session",
          file=sys.stderr, flush=True)
    return res


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory(prefix="toolgate-sessions-") as tmp:
        stores = {"memory": ["--memory-store"], "sqlite": ["--store", str(Path(tmp) / "sessions.db")]}
        for label in args.stores:
            results.append(await measure_store(args, label, stores[label], Path(tmp)))
    return results


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    mib = 1024 * 1024
    lines = [
        f"## Memory per idle session: {args.sessions:,} HTTP sessions, each initialize + initialized"
        + ("" if args.no_load else f" + load_tool_group({args.group})")
        + f", {args.settle:g} s settle",
        "",
        f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; machine: {machine()}; "
        f"python {platform.python_version()}; {args.concurrency} concurrent client connections",
        "",
        "| store | VmRSS before (MiB) | VmRSS after (MiB) | bytes / idle session | RssAnon bytes / session "
        "| peak VmHWM (MiB) | sessions opened / s | db on disk |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        db = f"{r['db_bytes'] / mib:.1f} MiB" if "db_bytes" in r else "—"
        lines.append(
            f"| {r['store']} | {r['before']['VmRSS'] / mib:.1f} | {r['after']['VmRSS'] / mib:.1f} | "
            f"{r['bytes_per_session']:,.0f} | {r['anon_bytes_per_session']:,.0f} | "
            f"{r['after']['VmHWM'] / mib:.1f} | {r['sessions_per_second']:,.0f} | {db} |"
        )
    if any("dormant" in r for r in results):
        lines += [
            "",
            f"After {args.idle_wait:g} s more with no request (sessions idle that long leave memory):",
            "",
            "| store | VmRSS (MiB) | bytes / idle session | first tools/list p50 (ms) | second p50 (ms) |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in results:
            if "dormant" in r:
                lines.append(
                    f"| {r['store']} | {r['dormant']['VmRSS'] / mib:.1f} | "
                    f"{r['dormant_bytes_per_session']:,.0f} | {r['first_list_ms_p50']:.2f} | "
                    f"{r['second_list_ms_p50']:.2f} |"
                )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions to open (default 10000)")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent client connections (default 32)")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds idle before each reading (default 2)")
    parser.add_argument(
        "--idle-wait",
        type=float,
        default=0.0,
        help="then wait this long and read VmRSS again (75 s outlasts serve's 60 s "
        "--session-memory-seconds; default 0: no second reading)",
    )
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="extra argument for toolgate serve (repeatable)"
    )
    parser.add_argument("--spot-checks", type=int, default=20, help="sessions listed after the readings (default 20)")
    parser.add_argument("--group", default="time", help="group each session loads (default: built-in time)")
    parser.add_argument(
        "--no-load", action="store_true", help="diagnostic: skip the load_tool_group (initialize only)"
    )
    parser.add_argument("--stores", default="memory,sqlite", help="comma-separated: memory,sqlite")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if any(s not in ("memory", "sqlite") for s in args.stores):
        parser.error("--stores takes memory and/or sqlite")
    return args


def main() -> int:
    return run_main(parse_args, run, report)


if __name__ == "__main__":
    sys.exit(main())
