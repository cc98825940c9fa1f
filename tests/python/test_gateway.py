"""End-to-end tests of `toolgate serve` through the official MCP Python SDK client.

Most tests run twice, over stdio (`toolgate serve --stdio`, one gateway process per client) and
over streamable HTTP (`toolgate serve --listen 127.0.0.1:0`, one MCP session per client).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest

from harness import (
    CORE_TOOLS,
    FIXTURES,
    NODE_BIN,
    VENV_BIN,
    Client,
    GatewayFactory,
    error_text,
    ok_text,
    python_upstream,
    require_peer,
    run,
    upstream_toml,
    which_git,
)

CRASHY = FIXTURES / "crashy_server.py"


def not_available(tool: str, group: str) -> str:
    return (
        f"Tool '{tool}' is not available for this agent. It belongs to tool group '{group}'; "
        f"call load_tool_group with group_name '{group}' and tools [\"{tool}\"] first "
        "(without tools it loads the whole group)."
    )


def expected_load_text(structured: dict) -> str:
    lines = [f"Loaded {len(structured['tools'])} tools from group '{structured['display_name']}':"]
    lines += [f"- {tool['name']}: {tool['description']}" for tool in structured["tools"]]
    return "\n".join(lines)


async def load_ok(client: Client, group: str) -> dict:
    """Loads `group`, checks the result's text against its structuredContent, returns the latter."""
    result = await client.load(group)
    text = ok_text(result)
    structured = result.structured_content
    assert isinstance(structured, dict), f"no structuredContent in the load result: {result}"
    assert structured["group"] == group
    assert structured["tools"], f"group {group!r} loaded no tools"
    assert text == expected_load_text(structured)
    return structured


# --------------------------------------------------------------------------- 1. turn 1


def test_turn1_lists_only_the_core_tools(gateways: GatewayFactory) -> None:
    gateway = gateways()

    async def body() -> None:
        async with gateway.connect() as client:
            assert client.init_result is not None
            assert client.init_result.capabilities.tools is not None
            assert client.init_result.capabilities.tools.list_changed is True
            tools = await client.tools()
            assert [tool.name for tool in tools] == CORE_TOOLS
            load = tools[0]
            assert load.input_schema["properties"]["group_name"]["type"] == "string"
            assert load.input_schema.get("required") == ["group_name"]
            assert client.list_changed == 0

    run(body)


# --------------------------------------------------------------------------- 2. load


def test_load_sends_one_list_changed_and_appends_the_group(gateways: GatewayFactory) -> None:
    gateway = gateways()

    async def body() -> None:
        async with gateway.connect() as client:
            files = await load_ok(client, "files")
            assert files["display_name"] == "Files"
            await client.wait_list_changed(1)
            file_tools = [tool["name"] for tool in files["tools"]]
            assert file_tools == ["files_list", "files_read", "files_search"]
            assert await client.tool_names() == CORE_TOOLS + file_tools

            # A second group is appended after the first (load order).
            time_group = await load_ok(client, "time")
            await client.wait_list_changed(2)
            time_tools = [tool["name"] for tool in time_group["tools"]]
            assert time_tools == ["time_now", "time_convert"]
            assert await client.tool_names() == CORE_TOOLS + file_tools + time_tools

            # Reloading a loaded group answers the same text and sends no notification.
            again = await client.load("files")
            assert ok_text(again) == expected_load_text(files)
            await client.wait_list_changed(2)
            assert await client.tool_names() == CORE_TOOLS + file_tools + time_tools

    run(body)


# --------------------------------------------------------------------------- 3. schemas


def test_load_result_schemas_match_tools_list(gateways: GatewayFactory) -> None:
    gateway = gateways()

    async def body() -> None:
        async with gateway.connect() as client:
            structured = {}
            for group in ("time", "files"):
                structured[group] = await load_ok(client, group)
            listed = {tool.name: tool for tool in await client.tools()}
            for group, content in structured.items():
                for raw in content["tools"]:
                    assert "inputSchema" in raw, f"{group}: load result tool without inputSchema: {raw}"
                    tool = listed[raw["name"]]
                    assert raw["inputSchema"] == tool.input_schema
                    assert raw.get("description") == tool.description
                    # The whole MCP Tool object, normalised by the SDK's own model, is identical.
                    as_loaded = types.Tool.model_validate(raw).model_dump(by_alias=True, exclude_none=True)
                    as_listed = tool.model_dump(by_alias=True, exclude_none=True)
                    assert as_loaded == as_listed

    run(body)


# --------------------------------------------------------------------------- 4. call_tool


def test_call_tool_runs_tools_of_loaded_groups(gateways: GatewayFactory) -> None:
    gateway = gateways()
    (gateways.files_root / "notes").mkdir()
    (gateways.files_root / "notes" / "hello.txt").write_text("hello from pytest\nsecond line\n")

    async def body() -> None:
        async with gateway.connect() as client:
            await load_ok(client, "files")
            await load_ok(client, "time")
            # A client that never refreshed its list still reaches the tools through call_tool.
            read = await client.call("call_tool", {"name": "files_read", "arguments": {"path": "notes/hello.txt"}})
            assert "hello from pytest\nsecond line" in ok_text(read)

            listing = await client.call("call_tool", {"name": "files_list", "arguments": {"path": "notes"}})
            assert "hello.txt" in ok_text(listing)

            convert = await client.call(
                "call_tool",
                {
                    "name": "time_convert",
                    "arguments": {"time": "12:00", "source_timezone": "UTC", "target_timezone": "Asia/Tokyo"},
                },
            )
            data = json.loads(ok_text(convert))
            assert data["source"]["datetime"].endswith("T12:00:00+00:00")
            assert data["target"]["datetime"].endswith("T21:00:00+09:00")
            assert data["time_difference"] == "+9h"

            # The same call made directly gives the same answer as through call_tool.
            direct = await client.call("files_read", {"path": "notes/hello.txt"})
            assert ok_text(direct) == ok_text(read)

    run(body)


def test_time_convert_keeps_the_date_of_an_iso_date_time(gateways: GatewayFactory) -> None:
    """time_convert's schema promises "'HH:MM' (today) or an ISO 8601 date-time"."""
    gateway = gateways()

    async def body() -> None:
        async with gateway.connect() as client:
            await load_ok(client, "time")
            result = await client.call(
                "time_convert",
                {"time": "2024-01-15T12:00:00", "source_timezone": "UTC", "target_timezone": "Asia/Tokyo"},
            )
            data = json.loads(ok_text(result))
            assert data["source"]["datetime"] == "2024-01-15T12:00:00+00:00"
            assert data["target"]["datetime"] == "2024-01-15T21:00:00+09:00"

            summer = await client.call(
                "time_convert",
                {"time": "2024-07-01T09:30:00", "source_timezone": "Europe/Paris", "target_timezone": "UTC"},
            )
            data = json.loads(ok_text(summer))
            assert data["source"]["datetime"] == "2024-07-01T09:30:00+02:00"
            assert data["source"]["is_dst"] is True
            assert data["target"]["datetime"] == "2024-07-01T07:30:00+00:00"

    run(body)


# --------------------------------------------------------------------------- 5. blocked calls


def test_calls_before_load_get_the_not_available_result(gateways: GatewayFactory) -> None:
    gateway = gateways()

    async def body() -> None:
        async with gateway.connect() as client:
            # An isError tool result, not a JSON-RPC error (which would raise here).
            blocked = await client.call("files_list", {})
            assert error_text(blocked) == not_available("files_list", "files")
            blocked = await client.call("time_now", {"timezone": "UTC"})
            assert error_text(blocked) == not_available("time_now", "time")
            via_call_tool = await client.call("call_tool", {"name": "files_read", "arguments": {"path": "x"}})
            assert error_text(via_call_tool) == not_available("files_read", "files")
            # Loading one group does not open the others.
            await load_ok(client, "time")
            still = await client.call("files_search", {"query": "x"})
            assert error_text(still) == not_available("files_search", "files")

    run(body)


# --------------------------------------------------------------------------- 6. unload


def test_unload_removes_the_tools_and_sends_list_changed(gateways: GatewayFactory) -> None:
    gateway = gateways()

    async def body() -> None:
        async with gateway.connect() as client:
            await load_ok(client, "files")
            await load_ok(client, "time")
            await client.wait_list_changed(2)

            ok_text(await client.unload("files"))
            await client.wait_list_changed(3)
            assert await client.tool_names() == CORE_TOOLS + ["time_now", "time_convert"]
            blocked = await client.call("files_list", {})
            assert error_text(blocked) == not_available("files_list", "files")

            # Unloading a group that is not loaded is an error and changes nothing.
            text = error_text(await client.unload("files"))
            assert "'files'" in text and "not loaded" in text
            await client.wait_list_changed(3)

            ok_text(await client.unload("time"))
            await client.wait_list_changed(4)
            assert await client.tool_names() == CORE_TOOLS

    run(body)


# --------------------------------------------------------------------------- error texts


def test_meta_tool_errors(gateways: GatewayFactory) -> None:
    gateway = gateways()

    async def body() -> None:
        async with gateway.connect() as client:
            unknown = error_text(await client.load("no_such_group"))
            assert unknown.startswith("Tool group 'no_such_group' not found. Available groups: time, files")

            close = error_text(await client.load("tme"))
            assert close.startswith("Tool group 'tme' not found. Available groups: time, files")
            assert "'time'" in close.removeprefix("Tool group 'tme' not found. Available groups: time, files")

            missing = error_text(await client.call("load_tool_group", {}))
            assert missing == "Required parameter 'group_name' is missing."

            await load_ok(client, "time")
            invalid = error_text(await client.call("time_convert", {"time": "12:00", "source_timezone": "UTC"}))
            assert invalid.startswith("Invalid arguments for tool 'time_convert':")
            assert "target_timezone" in invalid

            wrong_type = error_text(await client.call("time_now", {"timezone": 5}))
            assert wrong_type.startswith("Invalid arguments for tool 'time_now':")
            assert "timezone" in wrong_type
            assert client.list_changed == 1

    run(body)


# --------------------------------------------------------------------------- 7. restart


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGKILL], ids=["graceful", "killed"])
def test_http_session_is_restored_after_a_gateway_restart(
    http_gateways: GatewayFactory, stop_signal: signal.Signals
) -> None:
    (http_gateways.files_root / "kept.txt").write_text("survives restarts")

    async def body() -> None:
        first = http_gateways()
        async with first.connect("before restart", terminate_on_close=False) as before:
            await load_ok(before, "files")
            await before.wait_list_changed(1)
            expected = await before.tool_names()
        first.stop(stop_signal)

        # Same port, same store; the client keeps its Mcp-Session-Id and does not initialize again.
        second = http_gateways(port=first.port)
        assert second.port == first.port
        async with second.connect("after restart", resume=before) as after:
            assert await after.tool_names() == expected
            read = await after.call("files_read", {"path": "kept.txt"})
            assert "survives restarts" in ok_text(read)
            blocked = await after.call("time_now", {})
            assert error_text(blocked) == not_available("time_now", "time")

        # A brand-new session on the restarted gateway starts from the core tools.
        async with second.connect("fresh") as fresh:
            assert await fresh.tool_names() == CORE_TOOLS

    run(body)


def test_stdio_session_is_restored_by_name(stdio_gateways: GatewayFactory) -> None:
    async def body() -> None:
        named = stdio_gateways(session="pytest-restore")
        async with named.connect("first process") as first:
            await load_ok(first, "time")
            await first.wait_list_changed(1)
            expected = await first.tool_names()

        async with named.connect("second process") as second:
            assert await second.tool_names() == expected
            now = await second.call("time_now", {"timezone": "UTC"})
            assert json.loads(ok_text(now))["timezone"] == "UTC"
            assert second.list_changed == 0

        other = stdio_gateways(session="pytest-other")
        async with other.connect("other session") as third:
            assert await third.tool_names() == CORE_TOOLS

    run(body)


# --------------------------------------------------------------------------- 8. upstream crash


def test_upstream_crash_mid_session(gateways: GatewayFactory) -> None:
    config = gateways.config(python_upstream("crashy", CRASHY, description="Crash test fixture"))
    gateway = gateways(config=config)

    async def body() -> None:
        async with gateway.connect() as client:
            crashy = await load_ok(client, "crashy")
            assert [tool["name"] for tool in crashy["tools"]] == ["echo", "crash"]
            first = ok_text(await client.call("echo", {"message": "before"}))
            assert first.startswith("echo: before")

            crashed = await client.call("crash", {}, timeout=20)
            assert "crashy" in error_text(crashed)

            # The first restart is immediate: the next call reaches a new server process.
            again = ok_text(await client.call("echo", {"message": "after"}, timeout=20))
            assert again.startswith("echo: after")
            assert again.split("(pid ")[1] != first.split("(pid ")[1], "echo answered by the crashed process?"
            # The group stayed loaded, with the same tools.
            assert await client.tool_names() == CORE_TOOLS + ["echo", "crash"]
            # Other groups are unaffected.
            await load_ok(client, "time")
            ok_text(await client.call("time_now", {}))
        if gateway.transport == "http":
            # The restart is counted, under the upstream's name.
            async with httpx2.AsyncClient(timeout=10) as http:
                scraped = await http.get(gateway.url.removesuffix("/mcp") + "/metrics")
            assert scraped.status_code == 200, scraped.text
            assert 'toolgate_upstream_restarts_total{upstream="crashy"} 1' in scraped.text.splitlines(), scraped.text

    run(body)


# --------------------------------------------------------------------------- 9. bad command


def test_bad_upstream_command_fails_only_its_own_group(gateways: GatewayFactory, tmp_path: Path) -> None:
    config = gateways.config(
        upstream_toml("broken", command=str(tmp_path / "no-such-mcp-server"), description="Never starts")
    )
    gateway = gateways(config=config)

    async def body() -> None:
        async with gateway.connect() as client:
            failed = error_text(await client.load("broken"))
            assert failed.startswith("MCP server 'broken' failed to start:"), failed
            await client.wait_list_changed(0)
            assert await client.tool_names() == CORE_TOOLS

            time_group = await load_ok(client, "time")
            assert [tool["name"] for tool in time_group["tools"]] == ["time_now", "time_convert"]
            now = json.loads(ok_text(await client.call("time_now", {"timezone": "Europe/Paris"})))
            assert now["timezone"] == "Europe/Paris"

            # Still failing (while the start is retried with backoff), still only for itself.
            assert error_text(await client.load("broken")).startswith("MCP server 'broken' ")
            assert await client.tool_names() == CORE_TOOLS + ["time_now", "time_convert"]

    run(body)


# --------------------------------------------------------------------------- 10. parallel clients


def test_parallel_clients_have_separate_sessions(gateways: GatewayFactory) -> None:
    # Over stdio each client starts its own gateway process; both share one store file.
    gateway_a = gateways()
    gateway_b = gateways() if gateways.transport == "stdio" else gateway_a

    async def body() -> None:
        async with gateway_a.connect("A") as a, gateway_b.connect("B") as b:
            if gateways.transport == "http":
                assert a.session_id != b.session_id

            async with anyio.create_task_group() as tg:
                tg.start_soon(load_ok, a, "files")
                tg.start_soon(b.tool_names)
            await a.wait_list_changed(1)

            assert await b.tool_names() == CORE_TOOLS
            blocked = await b.call("files_list", {})
            assert error_text(blocked) == not_available("files_list", "files")
            assert b.list_changed == 0

            await load_ok(b, "time")
            await b.wait_list_changed(1)
            assert await a.tool_names() == CORE_TOOLS + ["files_list", "files_read", "files_search"]
            assert error_text(await a.call("time_now", {})) == not_available("time_now", "time")
            assert await b.tool_names() == CORE_TOOLS + ["time_now", "time_convert"]
            assert a.list_changed == 1

    run(body)


# --------------------------------------------------------------------------- 11. reference upstreams


def reference_config(gateways: GatewayFactory, tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    git = which_git()
    fs_dir = tmp_path / "fs-allowed"
    fs_dir.mkdir()
    (fs_dir / "alpha.txt").write_text("alpha")
    (fs_dir / "sub").mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run([git, "init", "-q", str(repo)], check=True)
    (repo / "untracked.txt").write_text("new file")
    memory_file = tmp_path / "memory.jsonl"
    config = gateways.config(
        upstream_toml("clock", command=str(require_peer(VENV_BIN / "mcp-server-time")), args=["--local-timezone", "UTC"])
        + upstream_toml("everything", command=str(require_peer(NODE_BIN / "mcp-server-everything")), args=["stdio"])
        + upstream_toml("filesystem", command=str(require_peer(NODE_BIN / "mcp-server-filesystem")), args=[str(fs_dir)])
        + upstream_toml(
            "memory",
            command=str(require_peer(NODE_BIN / "mcp-server-memory")),
            env={"MEMORY_FILE_PATH": str(memory_file)},
        )
        + upstream_toml("git", command=str(require_peer(VENV_BIN / "mcp-server-git")), args=["--repository", str(repo)])
    )
    return config, {"fs": fs_dir, "repo": repo, "memory": memory_file}


def test_reference_upstreams(gateways: GatewayFactory, tmp_path: Path) -> None:
    config, paths = reference_config(gateways, tmp_path)
    gateway = gateways(config=config)

    async def body() -> None:
        async with gateway.connect() as client:
            expected = list(CORE_TOOLS)
            for count, group in enumerate(["clock", "everything", "filesystem", "memory", "git"], start=1):
                structured = await load_ok(client, group)
                # At least one: an upstream's own list_changed may be relayed too (see
                # test_loading_an_upstream_sends_exactly_one_list_changed).
                await client.wait_list_changed_at_least(count)
                names = [tool["name"] for tool in structured["tools"]]
                # No two of these servers share a tool name, so none is qualified.
                assert not [name for name in names if "__" in name], names
                expected += names
                assert await client.tool_names() == expected

            # mcp-server-time (PyPI)
            now = json.loads(ok_text(await client.call("get_current_time", {"timezone": "UTC"})))
            assert now["timezone"] == "UTC" and "datetime" in now

            # mcp-server-everything
            assert ok_text(await client.call("echo", {"message": "through toolgate"})) == "Echo: through toolgate"
            total = ok_text(await client.call("get-sum", {"a": 2, "b": 3}))
            assert "5" in total

            # mcp-server-filesystem
            allowed = ok_text(await client.call("list_allowed_directories", {}))
            assert str(paths["fs"].resolve()) in allowed
            listing = ok_text(await client.call("list_directory", {"path": str(paths["fs"])}))
            assert "[FILE] alpha.txt" in listing and "[DIR] sub" in listing

            # mcp-server-memory
            ok_text(
                await client.call(
                    "create_entities",
                    {"entities": [{"name": "toolgate", "entityType": "project", "observations": ["an MCP gateway"]}]},
                )
            )
            graph = ok_text(await client.call("read_graph", {}))
            assert "toolgate" in graph and "an MCP gateway" in graph
            assert paths["memory"].exists(), "MEMORY_FILE_PATH was not passed to the upstream"

            # mcp-server-git
            status = ok_text(await client.call("git_status", {"repo_path": str(paths["repo"])}))
            assert "untracked.txt" in status

    run(body)


def test_loading_an_upstream_sends_exactly_one_list_changed(http_gateways: GatewayFactory) -> None:
    """mcp-server-everything registers some tools after `initialize` and says so with
    notifications/tools/list_changed. By the time load_tool_group answers, the gateway has listed
    the final tools, and the session's list does not change afterwards; the load must still be
    followed by exactly one list_changed."""
    config = http_gateways.config(
        upstream_toml("everything", command=str(require_peer(NODE_BIN / "mcp-server-everything")), args=["stdio"])
    )
    gateway = http_gateways(config=config)

    async def body() -> None:
        async with gateway.connect() as client:
            structured = await load_ok(client, "everything")
            names = [tool["name"] for tool in structured["tools"]]
            await anyio.sleep(1.5)  # let the upstream's start-up notifications arrive
            assert await client.tool_names() == CORE_TOOLS + names
            await client.wait_list_changed(1)

    run(body)


# --------------------------------------------------------------------------- name collisions


def collision_config(gateways: GatewayFactory) -> Path:
    return gateways.config(python_upstream("alpha", CRASHY) + python_upstream("beta", CRASHY))


def test_colliding_tool_names_are_qualified_and_stable_across_sessions(http_gateways: GatewayFactory) -> None:
    gateway = http_gateways(config=collision_config(http_gateways))

    async def body() -> None:
        async with gateway.connect("first") as first:
            alpha = await load_ok(first, "alpha")
            beta = await load_ok(first, "beta")
            assert [t["name"] for t in alpha["tools"]] == ["echo", "crash"]
            assert [t["name"] for t in beta["tools"]] == ["beta__echo", "beta__crash"]
            assert await first.tool_names() == CORE_TOOLS + ["echo", "crash", "beta__echo", "beta__crash"]
            pid_alpha = ok_text(await first.call("echo", {"message": "a"})).split("(pid ")[1]
            pid_beta = ok_text(await first.call("beta__echo", {"message": "b"})).split("(pid ")[1]
            assert pid_alpha != pid_beta, "both names reached the same upstream"

        # Another session loading in the opposite order sees the same names.
        async with gateway.connect("second") as second:
            beta = await load_ok(second, "beta")
            assert [t["name"] for t in beta["tools"]] == ["beta__echo", "beta__crash"]
            assert error_text(await second.call("echo", {"message": "x"})) == not_available("echo", "alpha")
            alpha = await load_ok(second, "alpha")
            assert [t["name"] for t in alpha["tools"]] == ["echo", "crash"]

    run(body)


def test_colliding_tool_names_do_not_depend_on_load_order(http_gateways: GatewayFactory) -> None:
    """The exposed name of a colliding tool must not depend on which group some session happened
    to load first since the gateway started: config order decides (alpha is listed first, so
    alpha's `echo` is `echo` and beta's is `beta__echo`). Otherwise a restored session's tools get
    renamed after a restart, and its old names point at another server."""
    config = collision_config(http_gateways)

    async def body() -> None:
        first = http_gateways(config=config)
        async with first.connect("S", terminate_on_close=False) as session:
            beta = await load_ok(session, "beta")  # beta loaded first in this gateway's life
            assert [t["name"] for t in beta["tools"]] == ["beta__echo", "beta__crash"]
        first.stop()

        second = http_gateways(config=config, port=first.port)
        async with second.connect("T") as other:
            alpha = await load_ok(other, "alpha")
            assert [t["name"] for t in alpha["tools"]] == ["echo", "crash"]
            async with second.connect("S restored", resume=session) as restored:
                assert await restored.tool_names() == CORE_TOOLS + ["beta__echo", "beta__crash"]
                ok_text(await restored.call("beta__echo", {"message": "x"}))

    run(body)


# --------------------------------------------------------------------------- per-client policy


def test_a_client_policy_hides_a_group_its_resources_and_prompts(http_gateways: GatewayFactory) -> None:
    """Two clients with their own tokens in front of a real upstream that offers tools, resources
    and prompts (the conformance fixture): one client's policy leaves that upstream's group out."""
    import hashlib

    alice, bob = "tg_alice-python-0123456789", "tg_bob-python-0123456789"
    fixture = Path(__file__).resolve().parent.parent / "conformance" / "fixture_server.py"
    config = http_gateways.config(
        f"""[clients.alice]
token_sha256 = "{hashlib.sha256(alice.encode()).hexdigest()}"
allow_groups = ["time"]

[clients.bob]
token_sha256 = "{hashlib.sha256(bob.encode()).hexdigest()}"

"""
        + python_upstream("fixture", fixture, description="Conformance fixture", eager=True)
    )
    gateway = http_gateways(config=config)

    async def body() -> None:
        async with gateway.connect("alice", token=alice) as a, gateway.connect("bob", token=bob) as b:
            assert (await b.session.list_resources()).resources, "bob sees no resource"
            assert (await b.session.list_prompts()).prompts, "bob sees no prompt"
            assert (await a.session.list_resources()).resources == []
            assert (await a.session.list_prompts()).prompts == []
            instructions = a.init_result.instructions if a.init_result else ""
            assert "- fixture:" not in (instructions or "")
            refused = error_text(await a.load("fixture"))
            assert refused.startswith("Tool group 'fixture' not found."), refused
            await load_ok(b, "fixture")
            await load_ok(a, "time")
            ok_text(await a.call("time_now", {}))

    run(body)


# --------------------------------------------------------------------------- status page


def test_the_status_page_renders_in_chromium_and_agrees_with_metrics(http_gateways: GatewayFactory) -> None:
    """The page at `/`, opened in a real headless Chromium with a client's token, shows the
    figures `/metrics` gives, the groups' loads, the upstream's health and charts, with no
    console error; without the token it is refused like `/mcp`."""
    import hashlib
    import os

    node = os.environ.get("TOOLGATE_NODE22")
    if not node:
        pytest.fail("TOOLGATE_NODE22 is not set: run scripts/install-peers")
    token = "tg_viewer-python-0123456789"
    fixture = Path(__file__).resolve().parent.parent / "conformance" / "fixture_server.py"
    config = http_gateways.config(
        f"""[clients.viewer]
token_sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"

"""
        + python_upstream("fixture", fixture, description="Conformance fixture", eager=True)
    )
    gateway = http_gateways(config=config)
    base = gateway.url.removesuffix("/mcp")

    async def body() -> dict:
        auth = {"authorization": f"Bearer {token}"}
        async with gateway.connect("viewer", token=token) as client, httpx2.AsyncClient(timeout=30) as http:
            ok_text(await client.load("time"))
            ok_text(await client.call("time_now", {}))
            ok_text(await client.load("fixture"))
            # The schemas' token costs are counted on the first list; the lists after it
            # count what they saved.
            with anyio.fail_after(30):
                while True:
                    await client.session.list_tools()
                    scraped = metrics_totals((await http.get(f"{base}/metrics", headers=auth)).text)
                    if scraped.get("toolgate_tool_tokens_saved_total", 0) > 0:
                        break
                    await anyio.sleep(0.2)
            refused = await http.get(f"{base}/")
            assert refused.status_code == 401, refused.text
        with anyio.fail_after(120):
            shown = await anyio.run_process(
                [node, str(Path(__file__).resolve().parent.parent / "browser" / "status_page.mjs"), base, token],
                env={**os.environ, "TOOLGATE_PEERS_NODE_MODULES": str(NODE_BIN.parent)},
                check=False,
            )
        assert shown.returncode == 0, shown.stderr.decode()
        async with httpx2.AsyncClient(timeout=30) as http:
            metrics = await http.get(f"{base}/metrics", headers=auth)
        return {"page": json.loads(shown.stdout), "metrics": metrics.text}

    seen = run(body, timeout=180)
    page, metrics = seen["page"], metrics_totals(seen["metrics"])
    assert page["status"] == 200 and page["problems"] == [], page
    assert page["title"] == "toolgate status", page
    for name, value in page["figures"].items():
        assert value == metrics.get(name, 0), (name, value, metrics.get(name))
    assert page["figures"]["toolgate_group_loads_total"] == 2, page["figures"]
    assert page["figures"]["toolgate_tool_tokens_saved_total"] > 0, page["figures"]
    loads = metrics_by_label(seen["metrics"], "toolgate_group_loads_total", "group")
    assert {group: row["loads"] for group, row in page["groups"].items() if row["loads"]} == loads
    assert "time_now: " in page["groups"]["time"]["tools"], page["groups"]
    assert ["fixture", "running"] in page["upstreams"], page["upstreams"]
    for chart in ("chart-loads", "chart-saved"):
        assert page["charts"][chart]["points"] >= 1 and page["charts"][chart]["box"]["width"] > 0, page["charts"]
    assert page["charts"]["chart-saved"]["last"] == metrics["toolgate_tool_tokens_saved_total"]


def _metric_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, value = line.rsplit(" ", 1)
        name, _, labels = series.partition("{")
        pairs = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
        samples.append((name, pairs, float(value)))
    return samples


def metrics_totals(text: str) -> dict[str, float]:
    """Each metric of a Prometheus exposition, summed over its label sets."""
    totals: dict[str, float] = {}
    for name, _, value in _metric_samples(text):
        totals[name] = totals.get(name, 0) + value
    return totals


def metrics_by_label(text: str, metric: str, label: str) -> dict[str, float]:
    """One metric summed by the value of one label."""
    sums: dict[str, float] = {}
    for name, labels, value in _metric_samples(text):
        if name == metric and label in labels:
            sums[labels[label]] = sums.get(labels[label], 0) + value
    return sums
