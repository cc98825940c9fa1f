#!/usr/bin/env python3
"""Convert UltraTool (1,000 real-world requests over 436 tools in 22 domains) to the common layout.

UltraTool's test data holds 1,000 requests that people wrote, in English and in Chinese, each with
a step-by-step plan whose steps call tools, the definitions of those tools, and the request's
domain (Finance, Document, Alarm, Flight...). The same tool keeps the same definition across
requests, so the union of the definitions is one catalog, and its domains are its groups.

Input (a checkout of https://github.com/JoeYing1019/UltraTool):
  data/English-dataset/test.json   one request per line: {"question", "plan": [{"step", "tool"}],
  data/Chinese-dataset/test.json   "tools": [{"name", "description", "arguments", "results"}],
                                   "domain"}; a step's "tool" is a call such as
                                   "file_write(file_path='...', content='...')", or no tool

Output (in --out):
  tools.jsonl    {"name","description","parameters","group","domains"}
  groups.jsonl   {"group","description","n_tools"}
  queries.jsonl  {"id","query","tools","groups","domain"}

group = the domain of most of the requests that define the tool (ties: the domain where it was
        defined first). 49 of the 436 tools are defined under several domains.
tools = the tools the plan calls, in the order of their first call; the groups are theirs, so a
        request may need a group other than its own domain.
id = ultratool-NNNN, the request's line (from 0): the same in both languages, so that a run on
     each tunes and reports on the same requests.
parameters = the tool's "arguments" (a JSON Schema object); its "results" are not sent to a model.
A request whose plan calls no tool it defines is dropped and counted.
Stdlib only.  Usage: python3 convert.py --source ULTRATOOL_CHECKOUT --out DIR [--language chinese]
"""
import argparse
import os
import re
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from layout import fail, read_jsonl, source_file, write_layout  # noqa: E402  (bench/datasets/layout.py)

FILES = {
    "english": os.path.join("data", "English-dataset", "test.json"),
    "chinese": os.path.join("data", "Chinese-dataset", "test.json"),
}
REPOSITORY = "https://github.com/JoeYing1019/UltraTool"
CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def called(request, defined):
    """The defined tools the plan calls, in the order of their first call."""
    out = []
    for step in request.get("plan") or []:
        match = CALL.match(step.get("tool") or "")
        if match and match.group(1) in defined and match.group(1) not in out:
            out.append(match.group(1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="checkout of github.com/JoeYing1019/UltraTool")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--language", choices=sorted(FILES), default="english",
                    help="which of the two translations to convert (default: english)")
    args = ap.parse_args()
    rel = FILES[args.language]
    requests = read_jsonl(source_file(args.source, rel, REPOSITORY), rel)

    definitions = {}                    # name -> the first definition, in catalog order
    domains = defaultdict(Counter)      # name -> {domain: requests defining it there}, in
                                        # the order the domains first define it
    redefined = set()
    for number, request in requests:
        domain = request.get("domain")
        if not isinstance(domain, str) or not domain:
            fail(f"{rel} line {number}: no domain")
        if not isinstance(request.get("question"), str):
            fail(f"{rel} line {number}: no question")
        for tool in request.get("tools") or []:
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                fail(f"{rel} line {number}: a tool without a name")
            if name not in definitions:
                definitions[name] = tool
            elif tool != definitions[name]:
                redefined.add(name)
            domains[name][domain] += 1

    def group_of(name):
        # max keeps the first of equals: on a tie, the domain that defined the tool first.
        return max(domains[name], key=domains[name].get)

    tools = [{
        "name": name,
        "description": tool.get("description") or "",
        "parameters": tool.get("arguments") or {"type": "object", "properties": {}},
        "group": group_of(name),
        "domains": sorted(domains[name]),
    } for name, tool in definitions.items()]
    sizes = Counter(tool["group"] for tool in tools)
    groups = [{"group": group, "description": "", "n_tools": sizes[group]}
              for group in sorted(sizes)]
    group = {tool["name"]: tool["group"] for tool in tools}

    queries, dropped = [], 0
    for number, request in requests:
        defined = {tool.get("name") for tool in request.get("tools") or []}
        gold = called(request, defined)
        if not gold:
            dropped += 1
            continue
        queries.append({
            "id": f"ultratool-{number - 1:04d}",
            "query": request["question"].strip(),
            "tools": gold,
            "groups": list(dict.fromkeys(group[name] for name in gold)),
            "domain": request["domain"],
        })

    write_layout(args.out, tools, groups, queries)
    print(f"{len(tools)} tools in {len(groups)} groups; {len(queries)} of {len(requests)} requests")
    shared = sum(1 for name in domains if len(domains[name]) > 1)
    print(f"  {shared} tools defined under several domains")
    if redefined:
        print(f"  {len(redefined)} tools defined differently by later requests; the first kept")
    if dropped:
        print(f"  {dropped} requests dropped: the plan calls no tool they define")
    per = Counter(len(q["groups"]) for q in queries)
    print("  gold groups per request: " + ", ".join(f"{k} -> {per[k]}" for k in sorted(per)))
    per = Counter(len(q["tools"]) for q in queries)
    print("  gold tools per request: " + ", ".join(f"{k} -> {per[k]}" for k in sorted(per)))


if __name__ == "__main__":
    main()
