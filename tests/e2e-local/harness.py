"""What the end-to-end suite drives the model through: a proxy that records every model call,
`toolgate chat` as a process, and a small MCP client with an agent loop for `toolgate serve`.

Standard library only, so the suite needs nothing but Python 3 and the built `toolgate`.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE / "tools"


@dataclass
class Call:
    """One tool call as it ran: the tool named by the model (a `call_tool` call is shown as the
    tool it runs, `via_call_tool` set), its arguments, and the result."""

    name: str
    arguments: object
    ok: bool | None = None
    output: str = ""
    via_call_tool: bool = False

    def line(self) -> str:
        mark = {True: "ok", False: "ERROR", None: "no result"}[self.ok]
        via = " (through call_tool)" if self.via_call_tool else ""
        arguments = json.dumps(self.arguments, ensure_ascii=False)
        return f"{self.name}{via} {arguments} -> {mark}: {self.output[:160]}"


@dataclass
class Turn:
    """One user message and what came of it."""

    front_end: str
    message: str
    calls: list[Call] = field(default_factory=list)
    answer: str = ""
    events: list[str] = field(default_factory=list)
    seconds: float = 0.0
    log: str = ""


class Recorder:
    """An HTTP proxy in front of the model's server that records each request and reply, so a
    transcript shows exactly what the model read and wrote."""

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.records: list[dict] = []
        self.lock = threading.Lock()
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                self.relay(None)

            def do_POST(self):
                length = int(self.headers.get("content-length", "0"))
                self.relay(self.rfile.read(length))

            def relay(self, body):
                path = self.path[len("/v1") :] if self.path.startswith("/v1") else self.path
                request = urllib.request.Request(
                    recorder.upstream + path,
                    data=body,
                    method=self.command,
                    headers={"content-type": "application/json"},
                )
                started = time.monotonic()
                try:
                    with urllib.request.urlopen(request, timeout=900) as response:
                        status, kind, data = response.status, response.headers.get("content-type", ""), response.read()
                except urllib.error.HTTPError as error:
                    status, kind, data = error.code, error.headers.get("content-type", ""), error.read()
                if body is not None:
                    recorder.record(body, kind, data, status, time.monotonic() - started)
                self.send_response(status)
                self.send_header("content-type", kind or "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def record(self, body: bytes, kind: str, data: bytes, status: int, seconds: float):
        text, usage = "", None
        if "event-stream" in kind:
            for line in data.decode("utf-8", "replace").splitlines():
                if not line.startswith("data:") or line.strip() == "data: [DONE]":
                    continue
                chunk = json.loads(line[5:])
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices", []):
                    text += (choice.get("delta") or {}).get("content") or ""
        else:
            answer = json.loads(data or b"{}")
            usage = answer.get("usage")
            choices = answer.get("choices") or [{}]
            text = (choices[0].get("message") or {}).get("content") or json.dumps(answer)
        with self.lock:
            self.records.append(
                {"request": json.loads(body), "reply": text, "status": status,
                 "usage": usage, "seconds": round(seconds, 2)}
            )

    def take(self) -> list[dict]:
        with self.lock:
            records, self.records = self.records, []
        return records


def clean_env(home: Path) -> dict:
    """A fresh home and XDG directories: nothing of the user's changes a result."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "NO_COLOR": "1"}
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        env[name] = str(home / name.lower())
    return env


def run_chat(toolgate: str, recorder: Recorder, model: str, home: Path, config: Path,
             conversation: str, message: str, extra: tuple = ()) -> Turn:
    """One `toolgate chat -m MESSAGE` process on the suite's tools; its calls read from what it
    prints on stderr."""
    command = [toolgate, "chat", "-m", message, "--base-url", recorder.url, "--model", model,
               "--config", str(config), "--manifests", str(TOOLS), "--no-builtins",
               "--store", str(home / "conversations.db"), "--conversation", conversation,
               "--max-model-calls", "8", *extra]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=clean_env(home),
                          cwd=home, timeout=1800)
    turn = Turn("chat", message, seconds=time.monotonic() - started, answer=done.stdout.strip())
    turn.log = f"$ toolgate {' '.join(command[1:])}\n(exit {done.returncode})\n{done.stderr}"
    for line in done.stderr.splitlines():
        body = line.strip()
        if body.startswith("→ "):
            name, _, arguments = body[2:].partition(" ")
            turn.calls.append(unwrap(name, arguments))
        elif body[:2] in ("← ", "✗ ") and turn.calls:
            name, _, output = body[2:].partition(": ")
            turn.calls[-1].ok = body.startswith("←")
            turn.calls[-1].output = output
        elif body.startswith(("⇣", "⇡", "⇢")):
            turn.events.append(body)
    if done.returncode != 0:
        turn.events.append(f"chat exited {done.returncode}")
    return turn


def unwrap(name: str, arguments: str) -> Call:
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = arguments
    if name == "call_tool" and isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
        return Call(parsed["name"], parsed.get("arguments", {}), via_call_tool=True)
    return Call(name, parsed)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Gateway:
    """A `toolgate serve` process on the suite's tools, over HTTP on loopback."""

    def __init__(self, toolgate: str, home: Path, config: Path, extra: tuple = ()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        command = [toolgate, "serve", "--listen", f"127.0.0.1:{self.port}", "--config", str(config),
                   "--manifests", str(TOOLS), "--no-builtins", "--store", str(home / "sessions.db"),
                   *extra]
        self.log = home / f"serve-{self.port}.log"
        self.process = subprocess.Popen(command, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
                                        env=clean_env(home), cwd=home)
        for _ in range(600):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"toolgate serve stopped: {self.log.read_text()}")
                time.sleep(0.2)
        raise RuntimeError("toolgate serve did not listen within 2 minutes")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=60)


class McpClient:
    """Just enough of MCP over streamable HTTP: initialize, tools/list and tools/call."""

    VERSION = "2025-06-18"

    def __init__(self, url: str, session: str | None = None):
        self.url, self.session, self.next_id = url, session, 0
        self.instructions = ""

    def post(self, message: dict) -> dict | None:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "mcp-protocol-version": self.VERSION}
        if self.session:
            headers["mcp-session-id"] = self.session
        request = urllib.request.Request(self.url, json.dumps(message).encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=300) as response:
            self.session = response.headers.get("mcp-session-id") or self.session
            data = response.read().decode()
            if "id" not in message or not data.strip():
                return None
            if "event-stream" in response.headers.get("content-type", ""):
                for line in data.splitlines():
                    if line.startswith("data:") and line[5:].strip():
                        answer = json.loads(line[5:])
                        if answer.get("id") == message["id"]:
                            return answer
                raise RuntimeError(f"no answer to {message['method']} in the stream")
            return json.loads(data)

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        answer = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def initialize(self):
        result = self.request("initialize", {"protocolVersion": self.VERSION, "capabilities": {},
                                             "clientInfo": {"name": "e2e-local", "version": "0"}})
        self.instructions = result.get("instructions") or ""
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tools(self) -> list[dict]:
        return self.request("tools/list", {})["tools"]

    def call(self, name: str, arguments: dict) -> tuple[bool, str]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        text = "\n".join(item.get("text", "") for item in result.get("content", []) if item.get("type") == "text")
        return not result.get("isError", False), text


# The prompted form of toolgate-llm's `tool_calls = "prompted"`, word for word, for the MCP agent
# loop: the tools in the system prompt, one JSON step per reply, held to a schema.
BASE_PROMPT = ("You are a helpful assistant with access to tools. "
               "Use them when they help answer the user; answer directly when they do not.")
STEP_RULES = (
    'Reply with exactly one JSON object and nothing else:\n'
    '- to call a tool: {"tool": "<tool name>", "arguments": {<its arguments>}}\n'
    '- to answer the user when you need no more tools: {"answer": "<your answer>"}\n'
    'A tool\'s result comes back in the next message, after "Result of <tool name>:".'
)


def tool_section(tools: list[dict]) -> str:
    section = "# Tools\n\nYou can call these tools, one per reply:\n"
    for tool in tools:
        schema = json.dumps(tool.get("inputSchema", {}), separators=(",", ":"))
        section += f"\n## {tool['name']}\n{tool.get('description', '').strip()}\nArguments (JSON Schema): {schema}\n"
    return section + "\n" + STEP_RULES


def step_schema(tools: list[dict]) -> dict:
    steps = []
    for tool in tools:
        arguments = tool.get("inputSchema") or {"type": "object"}
        if "$ref" in json.dumps(arguments):
            arguments = {"type": "object"}
        steps.append({"type": "object", "properties": {"tool": {"const": tool["name"]}, "arguments": arguments},
                      "required": ["tool", "arguments"], "additionalProperties": False})
    steps.append({"type": "object", "properties": {"answer": {"type": "string"}},
                  "required": ["answer"], "additionalProperties": False})
    return {"anyOf": steps}


def add_user(messages: list[dict], text: str):
    if messages and messages[-1]["role"] == "user":
        messages[-1]["content"] += "\n\n" + text
    else:
        messages.append({"role": "user", "content": text})


def mcp_turn(client: McpClient, recorder: Recorder, model: str, history: list[dict], message: str,
             max_steps: int = 8) -> Turn:
    """One user message through the MCP agent loop: list the tools, ask the model for a step, run
    the call through the gateway, until the model answers. `history` carries on across turns."""
    turn = Turn("serve", message)
    started = time.monotonic()
    add_user(history, message)
    for _ in range(max_steps):
        tools = client.tools()
        system = BASE_PROMPT
        if client.instructions:
            system += "\n\n---\n\n" + client.instructions
        system += "\n\n" + tool_section(tools)
        body = {"model": model, "messages": [{"role": "system", "content": system}, *history],
                "stream": False,
                "response_format": {"type": "json_schema", "json_schema": {"name": "step", "schema": step_schema(tools)}}}
        request = urllib.request.Request(recorder.url + "/chat/completions", json.dumps(body).encode(),
                                         {"content-type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=900) as response:
            reply = json.loads(response.read())["choices"][0]["message"]["content"] or ""
        try:
            step = json.loads(reply)
        except ValueError:
            step = {"answer": reply}
        if "answer" in step or "tool" not in step:
            turn.answer = str(step.get("answer", reply))
            history.append({"role": "assistant", "content": json.dumps({"answer": turn.answer})})
            break
        name, arguments = step["tool"], step.get("arguments") or {}
        history.append({"role": "assistant", "content": json.dumps({"tool": name, "arguments": arguments},
                                                                    separators=(",", ":"))})
        call = unwrap(name, json.dumps(arguments))
        call.ok, call.output = client.call(name, arguments)
        turn.calls.append(call)
        add_user(history, f"{'Result of' if call.ok else 'Error from'} {name}:\n{call.output}")
    else:
        turn.events.append(f"no answer after {max_steps} model calls")
    turn.seconds = time.monotonic() - started
    return turn
