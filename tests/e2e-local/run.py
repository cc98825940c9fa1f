#!/usr/bin/env python3
"""The end-to-end suite: a real model drives `toolgate chat` and, through a small MCP agent loop,
`toolgate serve`, on scripted tasks whose tools (tools/*.json and *.js) answer deterministically.

Each task writes its transcript (every model call as sent and as answered, every tool call and
result, the commands run) to OUT/TASK.md, and the summary goes to OUT/report.md and stdout. A
task passes when the model did what the task is about and answered right; a small model failing
one is a finding, reported as such. `scripts/e2e-local` installs and starts the model, builds
toolgate and runs this.

Usage: run.py --toolgate BIN --base-url URL --model NAME --out DIR [TASK ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

from harness import HERE, Gateway, McpClient, Recorder, Turn, mcp_turn, run_chat

DEFERRED = HERE / "deferred.toml"
IN_CONVERSATION = HERE / "deferred-conversation.toml"
WHOLE = HERE / "whole.toml"
# `toolgate chat`'s two places for a loaded group's schemas: the conversation (its default with
# native tool calls; the model calls loaded tools through call_tool) and the tool list (its
# default with prompted ones).
PLACEMENTS = {
    "": {"deferred": IN_CONVERSATION, "compact": HERE / "compact.toml"},
    "-tool-list": {"deferred": HERE / "deferred-tool-list.toml", "compact": HERE / "compact-tool-list.toml"},
}


def calls(turns: list[Turn]) -> list:
    return [call for turn in turns for call in turn.calls]


def succeeded(turns: list[Turn], name: str, **arguments) -> bool:
    """Whether `name` ran without error with these arguments (compared as text, any case)."""
    for call in calls(turns):
        given = call.arguments if isinstance(call.arguments, dict) else {}
        if call.name == name and call.ok and all(
                str(given.get(key, "")).strip().lower() == str(value).lower() for key, value in arguments.items()):
            return True
    return False


def loads(turns: list[Turn]) -> list:
    return [call for call in calls(turns) if call.name == "load_tool_group"]


def says(turn: Turn, *words: str) -> bool:
    return any(word.lower() in turn.answer.lower() for word in words)


def offers(record: dict, tool: str) -> bool:
    """Whether a model request offered `tool` in its tool list, or (prompted) in its system
    prompt's tool section."""
    messages = record["request"].get("messages") or [{}]
    system = messages[0].get("content") if messages[0].get("role") == "system" else ""
    return f"## {tool}\n" in (system or "") or any(
        (t.get("function") or {}).get("name") == tool for t in record["request"].get("tools", []))


def refused(turns: list[Turn]) -> list:
    return [call for call in calls(turns) if call.ok is False and "is not available" in call.output]


# Each task: (name, front end, what it shows, function(context) -> (turns, [(check, passed)])).

def chat_load_then_call(context, configs):
    turn = context.chat(configs["deferred"], "What is tomorrow's weather forecast for Oslo?")
    return [turn], [
        ("loaded the weather group", any(c.arguments.get("group_name") == "weather" for c in loads([turn]) if isinstance(c.arguments, dict))),
        ("weather_forecast ran for Oslo", succeeded([turn], "weather_forecast", city="Oslo")),
        ("the answer gives the forecast (-3, 2 or snow)", says(turn, "-3", "snow", "2°", " 2 ")),
    ]


def chat_tool_level_load(context, configs):
    turn = context.chat(configs["deferred"], "Load only the pdf_info tool of the pdf group, not the whole group, "
                                  "then tell me how many pages reports/q3.pdf has.")
    tool_loads = [c for c in loads([turn]) if isinstance(c.arguments, dict) and c.arguments.get("tools")]
    return [turn], [
        ("a load named tools: pdf_info only", any(c.arguments.get("tools") == ["pdf_info"] for c in tool_loads)),
        ("pdf_info ran", succeeded([turn], "pdf_info", path="reports/q3.pdf")),
        ("the answer is 3 pages", says(turn, "3", "three")),
    ]


def chat_hint(context, configs):
    # With the schemas in the tool list, chat offers no call_tool, and a reply held to the schema
    # can only name listed tools: the model writes its calls as text instead, free to name any.
    extra = () if configs["deferred"] == IN_CONVERSATION else ("--tool-calls", "prompted-text")
    turn = context.chat(configs["deferred"], "Call pdf_info on reports/q3.pdf and tell me the document's title.",
                        extra=extra)
    blocked = refused([turn])
    after = calls([turn])[calls([turn]).index(blocked[0]) + 1:] if blocked else []
    return [turn], [
        ("a call was refused as not available", bool(blocked)),
        ("then load_tool_group pdf", any(c.name == "load_tool_group" and isinstance(c.arguments, dict)
                                         and c.arguments.get("group_name") == "pdf" for c in after)),
        ("then pdf_info ran", succeeded([Turn("", "", calls=after)], "pdf_info")),
        ("the answer gives the title", says(turn, "Third Quarter Report")),
    ]


def chat_whole(context, configs):
    turn = context.chat(WHOLE, "How many toner cartridges are in stock?")
    sent = turn_requests(context, turn)
    system = sent[0]["request"]["messages"][0]["content"] if sent else ""
    return [turn], [
        ("the catalog was sent whole (no load_tool_group offered)",
         "## inventory_count" in system and "## load_tool_group" not in system),
        ("inventory_count ran at once", succeeded([turn], "inventory_count") and not loads([turn])),
        ("the answer is 4", says(turn, "4", "four")),
    ]


def chat_restore(context, configs):
    conversation = f"restore-{uuid.uuid4().hex[:8]}"
    first = context.chat(configs["deferred"], "What is tomorrow's weather forecast for Oslo?", conversation)
    second = context.chat(configs["deferred"], "Are there any weather alerts for Bergen?", conversation)
    # Whether the model loads the group again is its own choice (it is told the group stays
    # loaded; a small one repeats what it did before): the transcript shows it, the checks
    # look at what toolgate restored.
    sent = context.records_of(second)
    if configs["deferred"] == IN_CONVERSATION:
        # Schemas in the conversation: only a call shows what the restored set admits.
        before_load = calls([second])[:next((i for i, c in enumerate(calls([second])) if c.name == "load_tool_group"), None)]
        restored = ("the restarted chat admitted weather_alerts before any new load",
                    succeeded([Turn("", "", calls=before_load)], "weather_alerts"))
    else:
        restored = ("the restarted chat offered weather_alerts in its first request",
                    bool(sent) and offers(sent[0], "weather_alerts"))
    return [first, second], [
        ("turn 1 ran weather_forecast", succeeded([first], "weather_forecast")),
        restored,
        ("weather_alerts ran for Bergen, with no call refused", succeeded([second], "weather_alerts", city="Bergen")
         and not refused([second])),
        ("the answer gives the flood warning", says(second, "flood")),
    ]


def chat_compaction(context, configs):
    conversation = f"compact-{uuid.uuid4().hex[:8]}"
    turns = [context.chat(configs["compact"], message, conversation) for message in (
        "What is tomorrow's weather forecast for Oslo?",
        "And for Bergen?",
        "And for Lisbon?",
        "Are there weather alerts for Bergen?",
    )]
    compacted = [i for i, turn in enumerate(turns) if any("compact" in e for e in turn.events)]
    later = turns[compacted[0]:] if compacted else []
    return turns, [
        ("the conversation was compacted", bool(compacted)),
        ("after it, a weather tool ran without a refusal", any(c.ok for c in calls(later) if c.name.startswith("weather_"))
         and not refused(later)),
        ("the last answer gives the flood warning", says(turns[-1], "flood")),
    ]


def serve_load_then_call(context, configs):
    gateway = context.gateway(DEFERRED)
    try:
        client = McpClient(gateway.url)
        client.initialize()
        turn = context.serve_turn(client, [], "What is tomorrow's weather forecast for Lisbon?")
    finally:
        gateway.stop()
    return [turn], [
        ("loaded the weather group", any(isinstance(c.arguments, dict) and c.arguments.get("group_name") == "weather" for c in loads([turn]))),
        ("weather_forecast ran for Lisbon", succeeded([turn], "weather_forecast", city="Lisbon")),
        ("the answer gives the forecast (13, 21 or sunny)", says(turn, "13", "21", "sunny")),
    ]


def serve_search_then_call(context, configs):
    gateway = context.gateway(DEFERRED, "--route")
    try:
        client = McpClient(gateway.url)
        client.initialize()
        turn = context.serve_turn(client, [], "How many staplers are in stock? Search for the right tool first.")
    finally:
        gateway.stop()
    searched = [c for c in calls([turn]) if c.name == "find_tool_groups"]
    return [turn], [
        ("find_tool_groups was called", bool(searched)),
        ("inventory_count ran", succeeded([turn], "inventory_count")),
        ("the answer is 37", says(turn, "37")),
    ]


def serve_restore(context, configs):
    gateway = context.gateway(DEFERRED)
    history: list = []
    try:
        client = McpClient(gateway.url)
        client.initialize()
        first = context.serve_turn(client, history, "What is tomorrow's weather forecast for Bergen?")
    finally:
        gateway.stop()
    gateway = context.gateway(DEFERRED)
    try:
        # The same session on a new gateway, without initializing again.
        again = McpClient(gateway.url, client.session)
        again.instructions = client.instructions
        restored = sorted(tool["name"] for tool in again.tools())
        second = context.serve_turn(again, history, "Are there any weather alerts for Bergen?")
        second.events.insert(0, f"tools after the restart: {', '.join(restored)}")
    finally:
        gateway.stop()
    return [first, second], [
        ("turn 1 ran weather_forecast", succeeded([first], "weather_forecast")),
        ("the restarted gateway listed the loaded tools", "weather_alerts" in restored),
        ("weather_alerts ran, with no call refused", succeeded([second], "weather_alerts") and not refused([second])),
        ("the answer gives the flood warning", says(second, "flood")),
    ]


CHAT_LOADING = [
    ("chat-load-then-call", "load a group, then call", chat_load_then_call),
    ("chat-tool-level-load", "load one tool of a group", chat_tool_level_load),
    ("chat-not-available-hint", "follow the hint after a blocked call", chat_hint),
    ("chat-restore", "loaded tools after a restart", chat_restore),
    ("chat-compaction", "loaded tools after a compaction", chat_compaction),
]
TASKS = [
    *[(name + suffix, "chat", about + (" (schemas in the tool list)" if suffix else " (schemas in the conversation)"),
       run, configs) for suffix, configs in PLACEMENTS.items() for name, about, run in CHAT_LOADING],
    ("chat-sent-whole", "chat", "a small catalog sent whole", chat_whole, {}),
    ("serve-load-then-call", "serve", "load a group, then call", serve_load_then_call, {}),
    ("serve-search-then-call", "serve", "search, then call", serve_search_then_call, {}),
    ("serve-restore", "serve", "a session after a restart", serve_restore, {}),
]


def turn_requests(context, turn: Turn) -> list:
    return context.records_of(turn)


class Context:
    def __init__(self, args, home: Path):
        self.args, self.home = args, home
        self.recorder = Recorder(args.base_url)
        self.records: dict[int, list] = {}

    def chat(self, config: Path, message: str, conversation: str | None = None, extra: tuple = ()) -> Turn:
        turn = run_chat(self.args.toolgate, self.recorder, self.args.model, self.home, config,
                        conversation or uuid.uuid4().hex[:12], message, extra)
        self.records[id(turn)] = self.recorder.take()
        return turn

    def gateway(self, config: Path, *extra: str) -> Gateway:
        return Gateway(self.args.toolgate, self.home, config, extra)

    def serve_turn(self, client: McpClient, history: list, message: str) -> Turn:
        turn = mcp_turn(client, self.recorder, self.args.model, history, message)
        self.records[id(turn)] = self.recorder.take()
        return turn

    def records_of(self, turn: Turn) -> list:
        return self.records.get(id(turn), [])


def transcript(name: str, about: str, turns: list[Turn], checks, context: Context) -> str:
    out = [f"# {name}: {about}\n"]
    for check, passed in checks:
        out.append(f"- [{'x' if passed else ' '}] {check}")
    for number, turn in enumerate(turns, 1):
        out.append(f"\n## Turn {number} ({turn.front_end}, {turn.seconds:.0f} s): {turn.message}\n")
        for call in turn.calls:
            out.append(f"- call: {call.line()}")
        for event in turn.events:
            out.append(f"- {event}")
        out.append(f"- answer: {turn.answer!r}")
        for index, record in enumerate(context.records_of(turn), 1):
            request = record["request"]
            messages = request.get("messages", [])
            out.append(f"\n### Model call {index} ({record['seconds']} s, usage {json.dumps(record['usage'])})\n")
            if index == 1 and messages and messages[0]["role"] == "system":
                out.append("System prompt:\n\n```text\n" + messages[0]["content"] + "\n```\n")
            last = messages[-1] if messages else {}
            out.append(f"Last message ({last.get('role')}):\n\n```text\n{last.get('content')}\n```\n")
            out.append(f"Reply:\n\n```text\n{record['reply']}\n```")
        if turn.log:
            out.append("\nCommand and its stderr:\n\n```text\n" + turn.log.strip() + "\n```")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolgate", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("tasks", nargs="*", help="task names (default: all)")
    args = parser.parse_args()
    unknown = set(args.tasks) - {task[0] for task in TASKS}
    if unknown:
        parser.error(f"unknown tasks: {', '.join(sorted(unknown))}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows, started = [], time.monotonic()
    with tempfile.TemporaryDirectory(prefix="toolgate-e2e-") as home:
        context = Context(args, Path(home))
        for name, front_end, about, run, configs in TASKS:
            if args.tasks and name not in args.tasks:
                continue
            print(f"{name}: running", file=sys.stderr, flush=True)
            task_started = time.monotonic()
            try:
                turns, checks = run(context, configs)
            except Exception as error:  # noqa: BLE001 - a broken task is reported, the others run
                turns, checks = [], [(f"the task ran ({error!r})", False)]
            passed = all(ok for _, ok in checks)
            (args.out / f"{name}.md").write_text(transcript(name, about, turns, checks, context))
            steps = "; ".join(
                [f"{c.name}{'*' if c.via_call_tool else ''}({'ok' if c.ok else 'error'})" for c in calls(turns)]
                + [f"answer {t.answer[:60]!r}" for t in turns[-1:]])
            failed = [check for check, ok in checks if not ok]
            rows.append((name, front_end, "pass" if passed else "FAIL", time.monotonic() - task_started,
                         sum(len(context.records_of(t)) for t in turns), steps, "; ".join(failed)))
            print(f"{name}: {rows[-1][2]} ({rows[-1][3]:.0f} s) {steps}", file=sys.stderr, flush=True)
    report = ["| task | front end | result | seconds | model calls | what the model did (* through call_tool) | failed checks |",
              "|---|---|---|---|---|---|---|"]
    for name, front_end, result, seconds, model_calls, steps, failed in rows:
        report.append(f"| {name} | {front_end} | {result} | {seconds:.0f} | {model_calls} | {steps} | {failed} |")
    total = sum(row[2] == "pass" for row in rows)
    report.append(f"\n{total} passed, {len(rows) - total} failed in {time.monotonic() - started:.0f} s; "
                  f"model {args.model}; transcripts in this folder.")
    (args.out / "report.md").write_text("\n".join(report) + "\n")
    print("\n".join(report))
    return 0 if total == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
