#!/usr/bin/env python3
"""Fixture MCP server for the official MCP conformance suite (@modelcontextprotocol/conformance).

It offers every tool, resource, resource template and prompt that the suite's *server*
scenarios call, with the behaviour the suite checks, so that:

* run over stdio (the default), it is the upstream that toolgate's gateway fronts while the
  suite runs against the gateway (see scripts/conformance);
* run with ``--http PORT``, it serves Streamable HTTP at ``http://127.0.0.1:PORT/mcp`` and the
  suite can run against it directly (``scripts/conformance --direct``), which shows what a
  conforming server scores with these fixtures.

Written against the low-level ``mcp.server.lowlevel.Server`` of the Python SDK (mcp 2.x, pinned
in tests/peers/requirements.txt) so every schema and result is spelled out exactly as sent.

Usage:
    python tests/conformance/fixture_server.py                # stdio
    python tests/conformance/fixture_server.py --http 3001    # Streamable HTTP on 127.0.0.1:3001/mcp
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import logging
import struct
import sys
import warnings
import wave
import zlib
from typing import Any

import mcp.types as types
from mcp.server import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

# Logging, sampling and the handshake era are deprecated by the 2026-07-28 spec revision, but the
# conformance suite (spec 2025-06-18 / 2025-11-25) exercises exactly those features.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

LOG = logging.getLogger("conformance-fixture")


# --------------------------------------------------------------------------- test data


def _png_1x1_red() -> bytes:
    """A valid 1x1 red RGB PNG, built here rather than pasted in."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit, truecolour
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0, then R G B
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence() -> bytes:
    """A valid mono 8 kHz 16-bit WAV holding 8 samples of silence."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 8)
    return buf.getvalue()


PNG_BYTES = _png_1x1_red()
PNG_B64 = base64.b64encode(PNG_BYTES).decode("ascii")
WAV_B64 = base64.b64encode(_wav_silence()).decode("ascii")

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}

LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class State:
    """Process-wide state (one fixture process serves one gateway, or the suite directly)."""

    log_level: str = "debug"
    subscriptions: set[str] = set()


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


async def log(ctx: ServerRequestContext, level: str, message: str) -> None:
    """Send notifications/message on the calling request's stream, honouring logging/setLevel."""
    if LOG_LEVELS.index(level) < LOG_LEVELS.index(State.log_level):
        return
    await ctx.session.send_log_message(
        level=level, data=message, logger="conformance-fixture", related_request_id=ctx.request_id
    )


# --------------------------------------------------------------------------------- tools

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"

ELICIT_SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

ELICIT_SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}

TOOLS: list[types.Tool] = [
    types.Tool(name="test_simple_text", description="Returns one fixed text content item.", input_schema=NO_ARGS),
    types.Tool(name="test_image_content", description="Returns a 1x1 PNG image content item.", input_schema=NO_ARGS),
    types.Tool(name="test_audio_content", description="Returns a tiny audio/wav content item.", input_schema=NO_ARGS),
    types.Tool(
        name="test_embedded_resource",
        description="Returns an embedded text resource (test://embedded-resource).",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_multiple_content_types",
        description="Returns text, image and embedded resource content together.",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_tool_with_logging",
        description="Sends three info log notifications, 50 ms apart, while running.",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_error_handling",
        description="Always fails: returns isError true with a message.",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_tool_with_progress",
        description="Reports progress 0/100, 50/100, 100/100, 50 ms apart, when given a progressToken.",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_sampling",
        description="Asks the client for an LLM completion (sampling/createMessage) of the prompt.",
        input_schema={
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
            "required": ["prompt"],
        },
    ),
    types.Tool(
        name="test_elicitation",
        description="Asks the client for user input (elicitation/create): username and email.",
        input_schema={
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to show the user"}},
            "required": ["message"],
        },
    ),
    types.Tool(
        name="test_elicitation_sep1034_defaults",
        description="Elicitation whose schema has defaults for every primitive type (SEP-1034).",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="test_elicitation_sep1330_enums",
        description="Elicitation whose schema has all five enum variants (SEP-1330).",
        input_schema=NO_ARGS,
    ),
    types.Tool(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        input_schema={
            "$schema": JSON_SCHEMA_2020_12,
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
    types.Tool(
        name="test_reconnection",
        description="Closes the SSE stream mid-call (Streamable HTTP with an event store), then answers (SEP-1699).",
        input_schema=NO_ARGS,
    ),
]


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    name = params.name
    args = params.arguments or {}
    ok = types.CallToolResult

    if name == "test_simple_text":
        return ok(content=[text("This is a simple text response for testing.")])

    if name == "test_image_content":
        return ok(content=[types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")])

    if name == "test_audio_content":
        return ok(content=[types.AudioContent(type="audio", data=WAV_B64, mime_type="audio/wav")])

    if name == "test_embedded_resource":
        resource = types.TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return ok(content=[types.EmbeddedResource(type="resource", resource=resource)])

    if name == "test_multiple_content_types":
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}),
        )
        return ok(
            content=[
                text("Multiple content types test:"),
                types.ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
                types.EmbeddedResource(type="resource", resource=resource),
            ]
        )

    if name == "test_tool_with_logging":
        await log(ctx, "info", "Tool execution started")
        await asyncio.sleep(0.05)
        await log(ctx, "info", "Tool processing data")
        await asyncio.sleep(0.05)
        await log(ctx, "info", "Tool execution completed")
        return ok(content=[text("Tool with logging executed successfully")])

    if name == "test_error_handling":
        return ok(is_error=True, content=[text("This tool intentionally returns an error for testing")])

    if name == "test_tool_with_progress":
        token = (ctx.meta or {}).get("progress_token")
        for step, value in enumerate((0, 50, 100)):
            if step:
                await asyncio.sleep(0.05)
            if token is not None:
                await ctx.session.send_progress_notification(
                    progress_token=token,
                    progress=value,
                    total=100,
                    message=f"Completed step {value} of 100",
                    related_request_id=ctx.request_id,
                )
        return ok(content=[text(f"Progress reported (token: {token})")])

    if name == "test_sampling":
        prompt = str(args.get("prompt", ""))
        try:
            result = await ctx.session.create_message(
                messages=[types.SamplingMessage(role="user", content=text(prompt))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
        except Exception as exc:  # the client may not support sampling
            return ok(is_error=True, content=[text(f"Sampling failed: {exc}")])
        reply = result.content.text if result.content.type == "text" else f"<{result.content.type} content>"
        return ok(content=[text(f"LLM response: {reply}")])

    if name in ("test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
        if name == "test_elicitation":
            message = str(args.get("message", ""))
            schema: dict[str, Any] = {
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            }
        elif name == "test_elicitation_sep1034_defaults":
            message, schema = "Test client default value handling - please accept with defaults", ELICIT_SEP1034_SCHEMA
        else:
            message, schema = "Please select values using different enum schema types", ELICIT_SEP1330_SCHEMA
        try:
            result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except Exception as exc:  # the client may not support elicitation
            return ok(is_error=True, content=[text(f"Elicitation failed: {exc}")])
        content = json.dumps(result.content or {}, sort_keys=True)
        prefix = "User response" if name == "test_elicitation" else "Elicitation completed"
        return ok(content=[text(f"{prefix}: action={result.action}, content={content}")])

    if name == "json_schema_2020_12_tool":
        return ok(content=[text(f"json_schema_2020_12_tool called with {json.dumps(args, sort_keys=True)}")])

    if name == "test_reconnection":
        await log(ctx, "info", "Before disconnect")
        if ctx.close_sse_stream is not None:  # only on Streamable HTTP with an event store
            await ctx.close_sse_stream()
            await asyncio.sleep(0.2)  # give the client time to reconnect with Last-Event-ID
        await log(ctx, "info", "After reconnect")
        return ok(content=[text("Reconnection test completed")])

    return ok(is_error=True, content=[text(f"Unknown tool: {name}")])


async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


# ----------------------------------------------------------------------------- resources

STATIC_TEXT = "This is the content of the static text resource."
WATCHED_TEXT = "Watched resource content"

RESOURCES = [
    types.Resource(
        uri="test://static-text",
        name="static-text",
        description="A static text resource",
        mime_type="text/plain",
    ),
    types.Resource(
        uri="test://static-binary",
        name="static-binary",
        description="A static binary resource (1x1 PNG)",
        mime_type="image/png",
    ),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        description="A resource that can be subscribed to",
        mime_type="text/plain",
    ),
]

TEMPLATES = [
    types.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template-data",
        description="JSON data for the given id",
        mime_type="application/json",
    )
]

TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"


async def list_resources(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_resource_templates(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)


async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "test://static-text":
        contents: list[Any] = [types.TextResourceContents(uri=uri, mime_type="text/plain", text=STATIC_TEXT)]
    elif uri == "test://static-binary":
        contents = [types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG_B64)]
    elif uri == "test://watched-resource":
        contents = [types.TextResourceContents(uri=uri, mime_type="text/plain", text=WATCHED_TEXT)]
    elif uri.startswith(TEMPLATE_PREFIX) and uri.endswith(TEMPLATE_SUFFIX):
        ident = uri[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)]
        body = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"})
        contents = [types.TextResourceContents(uri=uri, mime_type="application/json", text=body)]
    else:
        raise MCPError(code=-32002, message=f"Resource not found: {uri}", data={"uri": uri})
    return types.ReadResourceResult(contents=contents)


async def subscribe(ctx: ServerRequestContext, params: types.SubscribeRequestParams) -> types.EmptyResult:
    State.subscriptions.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx: ServerRequestContext, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    State.subscriptions.discard(str(params.uri))
    return types.EmptyResult()


# ------------------------------------------------------------------------------- prompts

PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt without arguments"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two required arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource",
        arguments=[types.PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt that includes an image"),
]


def user(content: Any) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


async def list_prompts(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx: ServerRequestContext, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    args = params.arguments or {}
    if params.name == "test_simple_prompt":
        messages = [user(text("This is a simple prompt for testing."))]
    elif params.name == "test_prompt_with_arguments":
        messages = [user(text(f"Prompt with arguments: arg1='{args.get('arg1', '')}', arg2='{args.get('arg2', '')}'"))]
    elif params.name == "test_prompt_with_embedded_resource":
        resource = types.TextResourceContents(
            uri=args.get("resourceUri", "test://example-resource"),
            mime_type="text/plain",
            text="Embedded resource content for testing.",
        )
        messages = [
            user(types.EmbeddedResource(type="resource", resource=resource)),
            user(text("Please process the embedded resource above.")),
        ]
    elif params.name == "test_prompt_with_image":
        messages = [
            user(types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")),
            user(text("Please analyze the image above.")),
        ]
    else:
        raise MCPError(code=-32602, message=f"Unknown prompt: {params.name}")
    return types.GetPromptResult(description=f"Fixture prompt {params.name}", messages=messages)


# ------------------------------------------------------------------- completion, logging

COMPLETIONS = {"arg1": ["paris", "park", "party"], "arg2": ["red", "green", "blue"]}


async def complete(ctx: ServerRequestContext, params: types.CompleteRequestParams) -> types.CompleteResult:
    candidates = COMPLETIONS.get(params.argument.name, [])
    values = [v for v in candidates if v.startswith(params.argument.value)]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))


async def set_logging_level(ctx: ServerRequestContext, params: types.SetLevelRequestParams) -> types.EmptyResult:
    State.log_level = params.level
    return types.EmptyResult()


# ------------------------------------------------------------------------------ transport


class MemoryEventStore(EventStore):
    """Keeps every SSE event so a client reconnecting with Last-Event-ID gets the rest (SEP-1699)."""

    def __init__(self) -> None:
        self._events: list[tuple[str, int, Any]] = []

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = len(self._events) + 1
        self._events.append((stream_id, event_id, message))
        return str(event_id)

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        try:
            last = int(last_event_id)
        except ValueError:
            return None
        if not 1 <= last <= len(self._events):
            return None
        stream_id = self._events[last - 1][0]
        for sid, event_id, message in self._events[last:]:
            if sid == stream_id and message is not None:  # None marks a priming event
                await send_callback(EventMessage(message, str(event_id)))
        return stream_id


def build_server() -> Server:
    return Server(
        "toolgate-conformance-fixture",
        version="1.0.0",
        instructions="Fixture server for the MCP conformance suite.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
        on_set_logging_level=set_logging_level,
    )


async def run_stdio(server: Server) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_http(server: Server, host: str, port: int) -> None:
    import uvicorn

    # On a loopback host the SDK turns on DNS-rebinding protection (Host/Origin checks) itself.
    app = server.streamable_http_app(event_store=MemoryEventStore(), retry_interval=100, host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp")
    parser.add_argument("--host", default="127.0.0.1", help="host for --http (default 127.0.0.1)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    server = build_server()
    if args.http is not None:
        run_http(server, args.host, args.http)
    else:
        asyncio.run(run_stdio(server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
