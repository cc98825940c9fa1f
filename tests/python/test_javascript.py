"""JavaScript tools of the gateway's `./tools` folder, through the official MCP Python SDK client.

`tools/mathx.json` + `tools/mathx.js` in the gateway's working directory make the group `mathx`;
each test runs over stdio and over streamable HTTP.
"""

from __future__ import annotations

from pathlib import Path

from harness import CORE_TOOLS, GatewayFactory, error_text, ok_text, run

MATHX_JSON = """[
  {"_meta": true, "display_name": "Math", "description": "Arithmetic in JavaScript"},
  {"name": "mathx_add", "function": "add", "description": "Adds a and b",
   "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                  "required": ["a", "b"]}},
  {"name": "mathx_mean", "function": "mean", "description": "Mean of a list of numbers",
   "parameters": {"type": "object", "properties": {"numbers": {"type": "array", "items": {"type": "number"}}},
                  "required": ["numbers"]}}
]
"""

MATHX_JS = """async function add({ a, b }) {
  return { sum: a + b };
}
function mean({ numbers }) {
  if (numbers.length === 0) {
    throw new Error("the mean of no numbers is undefined");
  }
  return numbers.reduce((total, x) => total + x, 0) / numbers.length;
}
"""


def write_mathx(folder: Path) -> None:
    tools = folder / "tools"
    tools.mkdir()
    (tools / "mathx.json").write_text(MATHX_JSON)
    (tools / "mathx.js").write_text(MATHX_JS)


def test_a_javascript_group_is_listed_loaded_and_called(gateways: GatewayFactory) -> None:
    write_mathx(gateways.tmp)
    gateway = gateways(extra_args=["--no-builtins"])

    async def body() -> None:
        async with gateway.connect() as client:
            tools = await client.tools()
            assert [tool.name for tool in tools] == CORE_TOOLS
            assert "- mathx: Arithmetic in JavaScript" in (tools[0].description or "")

            loaded = await client.load("mathx")
            assert ok_text(loaded).startswith("Loaded 2 tools from group 'Math':\n- mathx_add: Adds a and b")
            await client.wait_list_changed(1)
            assert await client.tool_names() == [*CORE_TOOLS, "mathx_add", "mathx_mean"]

            added = await client.call("mathx_add", {"a": 2, "b": 40})
            assert not added.is_error, added
            assert added.structured_content == {"sum": 42}
            mean = await client.call("mathx_mean", {"numbers": [1, 2, 4]})
            assert ok_text(mean) == "2.3333333333333335"
            # Through call_tool, as a client that never refreshed its list reaches it.
            via = await client.call("call_tool", {"name": "mathx_mean", "arguments": {"numbers": [5]}})
            assert ok_text(via) == "5"

    run(body)


def test_a_thrown_error_is_an_error_result_naming_the_line(gateways: GatewayFactory) -> None:
    write_mathx(gateways.tmp)
    gateway = gateways(extra_args=["--no-builtins"])

    async def body() -> None:
        async with gateway.connect() as client:
            await client.load("mathx")
            thrown = await client.call("mathx_mean", {"numbers": []})
            assert error_text(thrown) == (
                "Tool 'mathx_mean' failed: Error: the mean of no numbers is undefined (mathx.js, line 6)"
            )
            # The gateway keeps serving: the next call answers.
            again = await client.call("mathx_add", {"a": 1, "b": 1})
            assert again.structured_content == {"sum": 2}

    run(body)
