"""Harness for toolgate's end-to-end tests, driven by the official MCP Python SDK (mcp 2.x).

Run from the repository root:

    .peers/venv/bin/python -m pytest tests/python -q

Environment:
  TOOLGATE_BIN             the gateway binary (default: target/debug/toolgate, relative to the repo root)
  TOOLGATE_PEERS_NODE_BIN  node_modules/.bin of the npm reference servers  } read from .peers/env
  TOOLGATE_PEERS_VENV      the venv holding mcp, mcp-server-time, ...      } ($TOOLGATE_PEERS_DIR/env
  TOOLGATE_NODE22          a node >= 22 binary                             } when set) unless set

Every gateway runs in a temporary directory with its own store and files root. The tests are
plain functions that run their async body with `run(...)`, which bounds the whole body with a
timeout; each MCP operation is bounded too, so nothing can hang the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CORE_TOOLS = ["load_tool_group", "unload_tool_group", "call_tool"]

# Generous bounds: a debug build on a busy 2-core machine, node servers starting cold.
INIT_TIMEOUT = 15.0  # gateway start + initialize
OP_TIMEOUT = 30.0  # one MCP request
TEST_TIMEOUT = 90.0  # one test body
BANNER_TIMEOUT = 20.0  # HTTP gateway printing "Listening on http://..."
NOTIFY_TIMEOUT = 5.0  # a list_changed that must arrive
QUIET_PERIOD = 0.5  # how long we wait to be sure no extra notification comes


# --------------------------------------------------------------------------- environment


PEERS = Path(os.environ.get("TOOLGATE_PEERS_DIR", REPO / ".peers"))


def _peers_env_file() -> dict[str, str]:
    path = PEERS / "env"
    values: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            key = key.strip().removeprefix("export ").strip()
            values[key] = value.strip().strip("'\"")
    return values


for _key, _value in _peers_env_file().items():
    os.environ.setdefault(_key, _value)

NODE_BIN = Path(os.environ.get("TOOLGATE_PEERS_NODE_BIN", PEERS / "node/node_modules/.bin"))
VENV = Path(os.environ.get("TOOLGATE_PEERS_VENV", PEERS / "venv"))
VENV_BIN = VENV / "bin"
NODE22 = os.environ.get("TOOLGATE_NODE22")


def toolgate_bin() -> Path:
    raw = os.environ.get("TOOLGATE_BIN", "target/debug/toolgate")
    path = Path(raw)
    return path if path.is_absolute() else REPO / path


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the gateway: peer bin dirs first on PATH, quiet logs."""
    env = dict(os.environ)
    path_dirs = [str(NODE_BIN), str(VENV_BIN)]
    if NODE22:
        path_dirs.append(str(Path(NODE22).parent))
    env["PATH"] = os.pathsep.join([*path_dirs, env.get("PATH", "")])
    env.setdefault("TOOLGATE_LOG", "warn")
    if extra:
        env.update(extra)
    return env


def run(body: Callable[[], Awaitable[Any]], timeout: float = TEST_TIMEOUT) -> Any:
    """Run an async test body on asyncio, failing (not hanging) after `timeout` seconds."""

    async def bounded() -> Any:
        with anyio.fail_after(timeout):
            return await body()

    try:
        return anyio.run(bounded)
    except BaseExceptionGroup as group:
        # The SDK's task groups wrap a failing assertion in layers of exception groups;
        # report the one underlying error when there is exactly one.
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


# --------------------------------------------------------------------------- MCP client wrapper


@dataclass
class Client:
    """An initialized SDK `ClientSession` plus the notifications it received."""

    session: ClientSession
    label: str
    notifications: list[types.ServerNotification] = field(default_factory=list)
    stream_errors: list[Exception] = field(default_factory=list)
    init_result: types.InitializeResult | None = None
    session_id: str | None = None  # HTTP only: the Mcp-Session-Id the gateway assigned

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.stream_errors.append(message)
        else:
            self.notifications.append(message)

    @property
    def list_changed(self) -> int:
        return sum(1 for n in self.notifications if isinstance(n, types.ToolListChangedNotification))

    async def wait_list_changed(self, count: int, timeout: float = NOTIFY_TIMEOUT) -> None:
        """Wait until `count` list_changed notifications arrived in total, then make sure no
        more arrive during a short quiet period."""
        with anyio.move_on_after(timeout):
            while self.list_changed < count:
                await anyio.sleep(0.02)
        assert self.list_changed >= count, (
            f"{self.label}: expected {count} notifications/tools/list_changed, got {self.list_changed}"
        )
        await anyio.sleep(QUIET_PERIOD)
        assert self.list_changed == count, (
            f"{self.label}: expected exactly {count} notifications/tools/list_changed, got {self.list_changed}"
        )

    async def wait_list_changed_at_least(self, count: int, timeout: float = NOTIFY_TIMEOUT) -> None:
        with anyio.move_on_after(timeout):
            while self.list_changed < count:
                await anyio.sleep(0.02)
        assert self.list_changed >= count, (
            f"{self.label}: expected at least {count} notifications/tools/list_changed, got {self.list_changed}"
        )

    async def tools(self) -> list[types.Tool]:
        with anyio.fail_after(OP_TIMEOUT):
            return list((await self.session.list_tools()).tools)

    async def tool_names(self) -> list[str]:
        return [tool.name for tool in await self.tools()]

    async def call(self, name: str, arguments: dict[str, Any] | None = None, timeout: float = OP_TIMEOUT):
        """`tools/call`; a JSON-RPC error raises (the gateway should answer results)."""
        with anyio.fail_after(timeout):
            return await self.session.call_tool(name, arguments or {}, read_timeout_seconds=timeout)

    async def load(self, group: str) -> types.CallToolResult:
        return await self.call("load_tool_group", {"group_name": group})

    async def unload(self, group: str) -> types.CallToolResult:
        return await self.call("unload_tool_group", {"group_name": group})


def text_of(result: types.CallToolResult) -> str:
    """All text content of a tool result, joined by newlines."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def ok_text(result: types.CallToolResult) -> str:
    assert not result.is_error, f"unexpected isError result: {text_of(result)!r}"
    return text_of(result)


def error_text(result: types.CallToolResult) -> str:
    assert result.is_error, f"expected an isError result, got: {text_of(result)!r}"
    return text_of(result)


# --------------------------------------------------------------------------- gateways


# A stdio gateway that never answers `initialize` would make every stdio test wait for the
# full timeout; after the first such failure the others fail at once with the same reason.
_STDIO_FAILURE: dict[str, str] = {}


@dataclass
class StdioGateway:
    """How to start `toolgate serve --stdio`; each `connect()` starts a new gateway process."""

    args: list[str]
    cwd: Path
    log: Path
    env: dict[str, str]
    transport: str = "stdio"

    @contextlib.asynccontextmanager
    async def connect(self, label: str = "client", **_: Any) -> AsyncIterator[Client]:
        if "reason" in _STDIO_FAILURE:
            pytest.fail(f"stdio gateway unusable (failed earlier in this run): {_STDIO_FAILURE['reason']}")
        params = StdioServerParameters(
            command=str(toolgate_bin()),
            args=["serve", "--stdio", *self.args],
            env=self.env,
            cwd=str(self.cwd),
        )
        with self.log.open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                client: Client
                holder: list[Client] = []

                async def handler(message: Any) -> None:
                    if holder:
                        await holder[0]._on_message(message)

                async with ClientSession(
                    read, write, read_timeout_seconds=OP_TIMEOUT, message_handler=handler
                ) as session:
                    client = Client(session=session, label=f"stdio {label}")
                    holder.append(client)
                    try:
                        with anyio.fail_after(INIT_TIMEOUT):
                            client.init_result = await session.initialize()
                    except TimeoutError:
                        reason = (
                            f"`toolgate serve --stdio {' '.join(self.args)}` did not answer `initialize` "
                            f"within {INIT_TIMEOUT:.0f}s; stderr: {self.log.read_text()[-1500:]!r}"
                        )
                        _STDIO_FAILURE["reason"] = reason
                        pytest.fail(reason)
                    yield client

    def stop(self) -> None:
        pass


@dataclass
class HttpGateway:
    """A running `toolgate serve --listen 127.0.0.1:PORT`; `connect()` opens a new MCP session."""

    args: list[str]
    cwd: Path
    log: Path
    env: dict[str, str]
    port: int = 0
    transport: str = "http"
    process: subprocess.Popen[bytes] | None = None
    url: str = ""

    def start(self) -> HttpGateway:
        assert self.process is None
        offset = self.log.stat().st_size if self.log.exists() else 0
        log = self.log.open("ab")
        self.process = subprocess.Popen(
            [str(toolgate_bin()), "serve", "--listen", f"127.0.0.1:{self.port}", *self.args],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # its own process group, so upstreams die with it
        )
        log.close()
        deadline = time.monotonic() + BANNER_TIMEOUT
        while time.monotonic() < deadline:
            with self.log.open("rb") as f:
                f.seek(offset)
                output = f.read().decode(errors="replace")
            match = re.search(r"Listening on (http://[^\s]+)", output)
            if match:
                self.url = match.group(1)
                self.port = int(re.search(r":(\d+)/", self.url).group(1))  # type: ignore[union-attr]
                return self
            if self.process.poll() is not None:
                raise AssertionError(f"gateway exited with {self.process.returncode}: {output[-2000:]}")
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"gateway printed no 'Listening on' within {BANNER_TIMEOUT}s: {self.log.read_text()}")

    def stop(self, sig: int = signal.SIGINT) -> None:
        """Stop the gateway (SIGINT = Ctrl-C, graceful; SIGKILL = crash) and its process group."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        # Upstream servers the gateway started share its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    @contextlib.asynccontextmanager
    async def connect(
        self,
        label: str = "client",
        *,
        resume: Client | None = None,
        terminate_on_close: bool = True,
        token: str | None = None,
    ) -> AsyncIterator[Client]:
        """A new MCP session; with `resume`, reuse that client's Mcp-Session-Id and negotiated
        protocol without sending `initialize` again (what a client does across a gateway restart)."""
        assert self.url, "gateway not started"
        seen: list[str] = []

        async def capture(response: httpx2.Response) -> None:
            sid = response.headers.get("mcp-session-id")
            if sid:
                seen.append(sid)

        headers = {}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        if resume is not None:
            assert resume.session_id, "the resumed client has no session id"
            headers["mcp-session-id"] = resume.session_id
        http = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(OP_TIMEOUT, read=300.0),
            event_hooks={"response": [capture]},
        )
        async with http, streamable_http_client(
            self.url, http_client=http, terminate_on_close=terminate_on_close
        ) as (read, write):
            holder: list[Client] = []

            async def handler(message: Any) -> None:
                if holder:
                    await holder[0]._on_message(message)

            async with ClientSession(
                read, write, read_timeout_seconds=OP_TIMEOUT, message_handler=handler
            ) as session:
                client = Client(session=session, label=f"http {label}")
                holder.append(client)
                if resume is not None:
                    assert resume.init_result is not None
                    session.adopt(resume.init_result)
                    client.init_result = resume.init_result
                    client.session_id = resume.session_id
                else:
                    with anyio.fail_after(INIT_TIMEOUT):
                        client.init_result = await session.initialize()
                    assert seen, "the gateway assigned no Mcp-Session-Id on initialize"
                    client.session_id = seen[0]
                yield client


Gateway = StdioGateway | HttpGateway


class GatewayFactory:
    """Makes gateways for one test, over its transport, in its temp dir; stops them afterwards."""

    def __init__(self, transport: str, tmp_path: Path) -> None:
        self.transport = transport
        self.tmp = tmp_path
        self.files_root = tmp_path / "files-root"
        self.files_root.mkdir(exist_ok=True)
        self.store = tmp_path / "sessions.db"
        self.started: list[Gateway] = []
        self._count = 0

    def config(self, toml: str, name: str = "toolgate.toml") -> Path:
        path = self.tmp / name
        path.write_text(deferred(toml))
        return path

    def __call__(
        self,
        *,
        config: Path | None = None,
        extra_args: list[str] | None = None,
        store: Path | None = None,
        session: str | None = None,
        port: int = 0,
        env: dict[str, str] | None = None,
        transport: str | None = None,
    ) -> Gateway:
        transport = transport or self.transport
        self._count += 1
        args = ["--store", str(store or self.store), "--files-root", str(self.files_root)]
        if config is None:
            # The stories of loading groups are told on catalogs small enough that the
            # gateway would send every tool by default.
            config = self.config("", name="deferred.toml")
        args += ["--config", str(config)]
        if session is not None:
            args += ["--session", session]
        args += extra_args or []
        log = self.tmp / f"gateway-{self._count}-{transport}.log"
        gateway: Gateway
        if transport == "stdio":
            gateway = StdioGateway(args=args, cwd=self.tmp, log=log, env=child_env(env))
        else:
            gateway = HttpGateway(args=args, cwd=self.tmp, log=log, env=child_env(env), port=port).start()
        self.started.append(gateway)
        return gateway

    def stop_all(self) -> None:
        for gateway in reversed(self.started):
            gateway.stop()


def deferred(toml: str) -> str:
    """`toml` with `[tools] defer = "always"` unless it says otherwise: the gateway defers its
    tools whatever the catalog's size."""
    if "defer =" in toml:
        return toml
    if "[tools]\n" in toml:
        return toml.replace("[tools]\n", '[tools]\ndefer = "always"\n', 1)
    return toml + '\n[tools]\ndefer = "always"\n'


def python_upstream(name: str, script: Path, **fields: Any) -> str:
    """A TOML [[upstream]] table running `script` with the peers venv's Python."""
    return upstream_toml(name, command=str(VENV_BIN / "python"), args=[str(script)], **fields)


def upstream_toml(name: str, **fields: Any) -> str:
    lines = ["[[upstream]]", f"name = {json.dumps(name)}"]
    env = fields.pop("env", None)
    for key, value in fields.items():
        lines.append(f"{key} = {json.dumps(value)}")
    if env:
        lines.append("[upstream.env]")
        for key, value in env.items():
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n\n"


def require_peer(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"peer not installed: {path} (run scripts/install-peers)")
    return path


def which_git() -> str:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    return git
