#!/usr/bin/env python3
"""Convert LiveMCPBench (70 real MCP servers, 95 annotated tasks) to the common tool-routing layout.

LiveMCPBench ships the tools/list answers of 70 MCP servers it ran (527 tools) and 95 tasks
written by people, each annotated with the tools that solve it. A server is what an MCP gateway
turns into one tool group, so this is the gateway's own situation: real MCP servers, real
requests, and tools several servers share (read_file, search, fetch).

Input (a checkout of https://github.com/icip-cas/LiveMCPBench):
  tools/LiveMCPTool/tools.json      [{"name", "description", "category", "tools": {KEY:
                                    {"tools": [MCP Tool objects]}}}], KEY the server's name in
                                    the benchmark's MCP configuration
  baseline/annotation/claude-sonnet-4-20250514_Qwen3-Embedding-0.6B.json
                                    the 95 tasks, each with "Question", "category", "Annotator
                                    Metadata" (its "Tools": "1. name\\n2. name..."), and one
                                    agent's run ("messages"), read only to tell which server a
                                    shared tool name was meant from

Output (in --out):
  tools.jsonl    {"name","description","parameters","group","server","tool"}
  groups.jsonl   {"group","description","n_tools","server","category"}
  queries.jsonl  {"id","query","tools","groups","category"}

group = the server's configuration name (KEY), as `toolgate serve` names an upstream's group.
name  = the tool's own name; when an earlier server (tools.json order) already has it,
        KEY__name, as `toolgate serve` exposes a taken name.
A gold name several servers offer is the one of the server that also offers another of the
task's gold tools; else the server the recorded run called it on; else the first server that
has it (the one whose tool keeps the bare name). A task with a gold name no server offers is
dropped and counted.
Stdlib only.  Usage: python3 convert.py --source LIVEMCPBENCH_CHECKOUT --out DIR
"""
import argparse
import json
import os
import re
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from layout import fail, load_json, write_layout  # noqa: E402  (bench/datasets/layout.py)

TOOLS = os.path.join("tools", "LiveMCPTool", "tools.json")
TASKS = os.path.join("baseline", "annotation",
                     "claude-sonnet-4-20250514_Qwen3-Embedding-0.6B.json")
EXECUTE = "execute-tool"  # the recorded run's tool that calls a server's tool


REPOSITORY = "https://github.com/icip-cas/LiveMCPBench"


def gold_names(task):
    """The annotated tool names of a task, in order, without their "1. " numbering."""
    text = (task.get("Annotator Metadata") or {}).get("Tools") or ""
    names = []
    for line in text.splitlines():
        name = re.sub(r"^\s*\d+\s*[.)]\s*", "", line).strip()
        if name and name not in names:
            names.append(name)
    return names


def called_servers(task):
    """{tool name: [server KEY, ...]} the recorded run called, in call order."""
    out = defaultdict(list)
    for message in task.get("messages") or []:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if function.get("name") != EXECUTE:
                continue
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                continue
            tool, server = arguments.get("tool_name"), arguments.get("server_name")
            if isinstance(tool, str) and isinstance(server, str) and server not in out[tool]:
                out[tool].append(server)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="checkout of github.com/icip-cas/LiveMCPBench")
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args()
    servers = load_json(args.source, TOOLS, REPOSITORY)
    tasks = load_json(args.source, TASKS, REPOSITORY)

    tools, groups = [], []
    exposed = {}                      # (server KEY, tool name) -> exposed name
    offered_by = defaultdict(list)    # tool name -> [server KEY, ...] in catalog order
    taken = set()
    for server in servers:
        entries = server.get("tools") or {}
        if len(entries) != 1:
            fail(f"{TOOLS}: server {server.get('name')!r} has {len(entries)} configurations, "
                 "expected one")
        (key, listing), = entries.items()
        server_tools = listing.get("tools") or []
        for tool in server_tools:
            name = tool["name"]
            public = name if name not in taken else f"{key}__{name}"
            if public in taken:
                fail(f"{TOOLS}: {key} lists {name!r} twice")
            taken.add(public)
            exposed[(key, name)] = public
            offered_by[name].append(key)
            tools.append({
                "name": public,
                "description": tool.get("description") or "",
                "parameters": tool.get("inputSchema") or {"type": "object", "properties": {}},
                "group": key,
                "server": server.get("name", key),
                "tool": name,
            })
        groups.append({
            "group": key,
            "description": (server.get("description") or "").strip(),
            "n_tools": len(server_tools),
            "server": server.get("name", key),
            "category": server.get("category", ""),
        })

    queries, dropped, how = [], Counter(), Counter()
    for task in tasks:
        names = gold_names(task)
        unknown = [n for n in names if n not in offered_by]
        if unknown or not names:
            dropped["a gold tool no server offers" if unknown else "no gold tool"] += 1
            continue
        sole = {offered_by[n][0] for n in names if len(offered_by[n]) == 1}
        called = called_servers(task)
        gold = []
        for name in names:
            candidates = offered_by[name]
            if len(candidates) == 1:
                key = candidates[0]
            elif any(c in sole for c in candidates):
                key = next(c for c in candidates if c in sole)
                how["shared name: the server of another gold tool"] += 1
            elif any(c in candidates for c in called.get(name, [])):
                key = next(c for c in called[name] if c in candidates)
                how["shared name: the server the recorded run called"] += 1
            else:
                key = candidates[0]
                how["shared name: the first server (the bare name)"] += 1
            gold.append((exposed[(key, name)], key))
        queries.append({
            "id": task["task_id"],
            "query": task["Question"].strip(),
            "tools": [name for name, _ in gold],
            "groups": list(dict.fromkeys(key for _, key in gold)),
            "category": task.get("category", ""),
        })

    write_layout(args.out, tools, groups, queries)
    print(f"{len(tools)} tools in {len(groups)} groups; {len(queries)} of {len(tasks)} tasks")
    for reason, count in sorted(how.items()):
        print(f"  {count} gold mentions resolved by {reason}")
    for reason, count in sorted(dropped.items()):
        print(f"  {count} tasks dropped: {reason}")
    per = Counter(len(q["groups"]) for q in queries)
    print("  gold groups per task: " + ", ".join(f"{k} -> {per[k]}" for k in sorted(per)))


if __name__ == "__main__":
    main()
