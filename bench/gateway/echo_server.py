"""Tiny stdio MCP fixture server: one tool, `echo(message: str) -> str`.

It is the upstream for every target in latency.py, so its own cost is small and
identical whether it is called directly or through a gateway.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo", log_level="WARNING")


@server.tool()
def echo(message: str) -> str:
    """Return `message` unchanged."""
    return message


if __name__ == "__main__":
    server.run("stdio")
