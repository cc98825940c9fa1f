"""The client snippets of docs/clients.md, run as they are written: the official Python SDK and
the official TypeScript SDK, each against a gateway of its own, print what the page says.

Only the URL is replaced (by the one the test's gateway listens on); a change to the snippets, to
the SDKs' use or to what the gateway answers fails here.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from harness import NODE22, NODE_BIN, REPO, VENV_BIN, GatewayFactory

PAGE = REPO / "docs" / "clients.md"
SHOWN_URL = "http://127.0.0.1:8848/mcp"
TIMEOUT = 120


def block(marker: str) -> str:
    """The fenced block after `<!-- marker -->` on docs/clients.md."""
    found = re.search(rf"<!-- {re.escape(marker)} -->\n```[a-z]*\n(.*?)```\n", PAGE.read_text(), re.S)
    assert found, f"no block marked {marker!r} in {PAGE}"
    return found.group(1)


def run_snippet(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, f"{command}: {done.stderr}"
    return done.stdout


def test_the_python_snippet_prints_what_the_page_shows(http_gateways: GatewayFactory, tmp_path: Path) -> None:
    gateway = http_gateways()
    script = tmp_path / "client.py"
    script.write_text(block("run: python-client").replace(SHOWN_URL, gateway.url))
    printed = run_snippet([str(VENV_BIN / "python"), str(script)], tmp_path)
    assert printed == block("output: client-snippets")


def test_the_typescript_snippet_prints_what_the_page_shows(http_gateways: GatewayFactory, tmp_path: Path) -> None:
    gateway = http_gateways()
    # The SDK from the npm test peers (tests/peers/package-lock.json), found as a project's
    # node_modules is.
    (tmp_path / "node_modules").symlink_to(NODE_BIN.parent, target_is_directory=True)
    script = tmp_path / "client.mjs"
    script.write_text(block("run: typescript-client").replace(SHOWN_URL, gateway.url))
    node = NODE22 or "node"
    printed = run_snippet([node, str(script)], tmp_path)
    assert printed == block("output: client-snippets")

