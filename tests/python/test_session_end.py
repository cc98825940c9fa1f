"""Ending an HTTP session the way the official Python SDK does when its client closes: a DELETE
naming the session. The gateway answers it with a status the SDK accepts (200 or 204; anything
else makes the SDK warn "Session termination failed" at every session's end), and a session it
does not know, the one just ended included, with 404.
"""

from __future__ import annotations

import logging

import httpx2
import pytest

from harness import CORE_TOOLS, GatewayFactory, run


def test_the_sdk_ends_its_session_without_a_warning_and_the_ended_session_is_unknown(
    http_gateways: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp.client.streamable_http")
    gateway = http_gateways()

    async def body() -> str:
        async with gateway.connect("ending") as client:
            assert await client.tool_names() == CORE_TOOLS
            assert client.session_id
            version = client.init_result.protocol_version if client.init_result else ""
            session_id = client.session_id
        # Leaving the block sent the SDK's DELETE; the session is gone.
        headers = {"mcp-session-id": session_id, "mcp-protocol-version": version}
        async with httpx2.AsyncClient(timeout=30.0) as http:
            again = await http.delete(gateway.url, headers=headers)
            assert again.status_code == 404, again.text
            assert f"session '{session_id}' is unknown" in again.text
            listed = await http.post(
                gateway.url,
                headers={**headers, "accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            )
            assert listed.status_code == 404, listed.text
            never = await http.delete(gateway.url, headers={**headers, "mcp-session-id": "never-opened"})
            assert never.status_code == 404, never.text
        return session_id

    run(body)
    said = [record.getMessage() for record in caplog.records if record.name == "mcp.client.streamable_http"]
    assert not [line for line in said if "termination" in line], said
