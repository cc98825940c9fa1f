"""pytest wiring for tests/python: see harness.py for the gateway and client helpers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from harness import NODE_BIN, VENV, GatewayFactory, toolgate_bin


def pytest_report_header(config: pytest.Config) -> list[str]:
    binary = toolgate_bin()
    info = f"toolgate binary: {binary}"
    if binary.exists():
        info += f" (built {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(binary.stat().st_mtime))})"
    else:
        info += " (MISSING: run `cargo build -p toolgate-cli`)"
    return [info, f"peers: node bin {NODE_BIN}, venv {VENV}"]


@pytest.fixture(scope="session", autouse=True)
def _require_binary() -> None:
    if not toolgate_bin().is_file():
        pytest.exit(f"toolgate binary not found at {toolgate_bin()}; run `cargo build -p toolgate-cli`", 2)


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def gateways(transport: str, tmp_path: Path) -> Any:
    """Starts gateways over the test's transport (stdio or HTTP) in its temp dir."""
    factory = GatewayFactory(transport, tmp_path)
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def http_gateways(tmp_path: Path) -> Any:
    factory = GatewayFactory("http", tmp_path)
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def stdio_gateways(tmp_path: Path) -> Any:
    factory = GatewayFactory("stdio", tmp_path)
    try:
        yield factory
    finally:
        factory.stop_all()
