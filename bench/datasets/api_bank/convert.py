#!/usr/bin/env python3
"""Convert API-Bank (level-1 and level-2 dialogues) to the common tool-routing layout.

API-Bank (EMNLP 2023) ships human-annotated multi-turn dialogues in which an assistant calls APIs,
and a table of the benchmark's 101 APIs with the application scenario each belongs to.

Input (a checkout of https://github.com/AlibabaResearch/DAMO-ConvAI, or its api-bank/ folder):
  api-bank/data/all_apis.csv        id, 类型 (API type), 应用场景 (application scenario), 类名 (class
                                    name), 路径 (apis/<file>.py), api_info (description and
                                    input/output parameters as Python source), ...
  api-bank/apis/*.py                the 51 implemented APIs: class attributes description,
                                    input_parameters, output_parameters (what the benchmark shows)
  api-bank/lv1-lv2-samples/{level-1-given-desc,level-2-toolsearcher}/*.jsonl
                                    one dialogue per file: {"role": "User"|"AI", "text"} and
                                    {"role": "API", "api_name", "param_dict", "result"} lines

Output (in --out):
  tools.jsonl    {"name","description","parameters","group", "scenario_zh","api_type_zh",
                  "implemented","returns"}
  groups.jsonl   {"group","description","n_tools","scenario_zh"}
  queries.jsonl  one line per user turn: {"id","query","tools","groups","conversation_id","turn",
                  "level","calls"}; level = the folder (level-1-given-desc, level-2-toolsearcher); tools = the APIs called after this user turn and before the
                  next one (none for turns that only talk), ToolSearcher left out.

name  = the API's class name (e.g. AddAgenda).
group = the API's 应用场景 (application scenario) column of all_apis.csv, in English (11 scenarios;
        the Chinese label is kept as scenario_zh).
Stdlib only.  Usage: python3 convert.py --source DAMO_CONVAI_CHECKOUT --out DIR
"""
import argparse
import ast
import csv
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from layout import fail, read_jsonl, write_layout  # noqa: E402  (bench/datasets/layout.py)

SCENARIOS = {  # all_apis.csv 应用场景 -> group id (English rendering of the label)
    "账户管理": "Account Management",
    "日程安排和管理": "Schedule Management",
    "财务管理": "Financial Management",
    "信息查询和处理": "Information Query and Processing",
    "健康管理": "Health Management",
    "智能家居控制": "Smart Home Control",
    "娱乐消遣": "Entertainment",
    "旅游出行": "Travel",
    "钉钉": "DingTalk",
    "学习科研相关": "Study and Research",
    "工作相关": "Work",
}
DIALOGUE_DIRS = ("lv1-lv2-samples/level-1-given-desc", "lv1-lv2-samples/level-2-toolsearcher")
RETRIEVER = "ToolSearcher"  # level-2's API-retrieval tool: the router's job here, not a gold tool
SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
           "dict": "object", "object": "object", "datetime": "string"}


def find_root(source):
    for root in (os.path.join(source, "api-bank"), source):
        if os.path.isfile(os.path.join(root, "data", "all_apis.csv")):
            return root
    fail(f"missing api-bank/data/all_apis.csv under --source {source} (expected a checkout of "
         "https://github.com/AlibabaResearch/DAMO-ConvAI)")


def literal_attributes(body):
    """The `name = <literal>` assignments among `body` statements."""
    out = {}
    for node in body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                pass  # not a literal: not one of the attributes read here
    return out


def definition(root, row):
    """(description, input_parameters, output_parameters, implemented) of one all_apis.csv row."""
    path = os.path.join(root, row["路径"])
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=row["路径"])
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == row["类名"]]
        if len(classes) != 1:
            fail(f"{row['路径']}: expected one class {row['类名']}")
        attrs, implemented = literal_attributes(classes[0].body), True
    else:
        try:
            tree = ast.parse(row["api_info"])
        except SyntaxError:
            fail(f"all_apis.csv: {row['类名']} has no {row['路径']} and its api_info does not parse")
        attrs, implemented = literal_attributes(tree.body), False
    inputs, outputs = attrs.get("input_parameters"), attrs.get("output_parameters")
    return (attrs.get("description") or "", inputs if isinstance(inputs, dict) else {},
            outputs if isinstance(outputs, dict) else {}, implemented)


def json_type(raw):
    """API-Bank's Python-style type names -> a JSON Schema fragment."""
    raw = (raw or "str").strip()
    m = re.fullmatch(r"(?i)list(?:\((\w+)\)|\[(\w+)\])?", raw)
    if m:
        inner = m.group(1) or m.group(2)
        return {"type": "array", "items": {"type": SCALARS[inner]}} if inner in SCALARS \
            else {"type": "array"}
    return {"type": SCALARS.get(raw, "string")}


def to_schema(inputs):
    props = {}
    for name, spec in inputs.items():
        spec = spec if isinstance(spec, dict) else {}
        prop = json_type(spec.get("type"))
        if spec.get("description"):
            prop["description"] = spec["description"]
        props[name] = prop
    # API-Bank shows parameters without a required flag, so none is claimed here.
    return {"type": "object", "properties": props}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True,
                    help="checkout of github.com/AlibabaResearch/DAMO-ConvAI (or its api-bank/)")
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args()
    root = find_root(args.source)
    for rel in DIALOGUE_DIRS:
        if not os.path.isdir(os.path.join(root, rel)):
            fail(f"missing api-bank/{rel}/ under --source {args.source}")

    with open(os.path.join(root, "data", "all_apis.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    tools = []
    for row in rows:
        scenario = row["应用场景"].strip()
        if scenario not in SCENARIOS:
            fail(f"all_apis.csv: unknown scenario {scenario!r} for {row['类名']}")
        description, inputs, outputs, implemented = definition(root, row)
        tools.append({
            "name": row["类名"].strip(),
            "description": description.strip(),
            "parameters": to_schema(inputs),
            "group": SCENARIOS[scenario],
            "scenario_zh": scenario,
            "api_type_zh": row["类型"].strip(),
            "implemented": implemented,
            "returns": outputs,
        })
    names = Counter(t["name"] for t in tools)
    bad = [n for n, c in names.items() if c > 1 or not re.fullmatch(r"[A-Za-z0-9_./-]{1,64}", n)]
    if bad:
        fail(f"tool names not unique or not valid: {bad}")
    by_name = {t["name"]: t for t in tools}

    queries, stats = [], Counter()
    seen_dialogues = {}
    for rel in DIALOGUE_DIRS:
        level = os.path.basename(rel)
        folder = os.path.join(root, rel)
        for fname in sorted(os.listdir(folder)):
            if not fname.endswith(".jsonl"):
                continue
            conversation = f"{level}/{fname[:-len('.jsonl')]}"
            lines = [row for _, row in read_jsonl(os.path.join(folder, fname), f"{rel}/{fname}")]
            if not any(x.get("role") == "User" for x in lines):
                stats["dialogues_without_user_turn"] += 1
                print(f"note: {rel}/{fname} has no user turn ({len(lines)} lines); skipped")
                continue
            user_texts = tuple(x["text"] for x in lines if x.get("role") == "User")
            if user_texts in seen_dialogues:
                stats["duplicate_dialogues"] += 1
                print(f"note: {conversation} repeats {seen_dialogues[user_texts]}")
            seen_dialogues.setdefault(user_texts, conversation)
            stats["dialogues"] += 1
            turns = []
            for x in lines:
                role = x.get("role")
                if role == "User":
                    turns.append({"text": x["text"], "calls": []})
                elif role == "API":
                    if not turns:
                        fail(f"{rel}/{fname}: an API call before the first user turn")
                    turns[-1]["calls"].append(x)
            for k, turn in enumerate(turns):
                tnames, groups, calls = [], [], []
                for call in turn["calls"]:
                    api = call["api_name"]
                    calls.append({"api_name": api, "param_dict": call.get("param_dict")})
                    if api == RETRIEVER:
                        stats["toolsearcher_calls_left_out"] += 1
                        continue
                    if api not in by_name:
                        fail(f"{rel}/{fname}: API {api} is not in all_apis.csv")
                    stats["gold_calls"] += 1
                    if api not in tnames:
                        tnames.append(api)
                    if by_name[api]["group"] not in groups:
                        groups.append(by_name[api]["group"])
                stats["turns_with_gold" if tnames else "turns_without_gold"] += 1
                queries.append({
                    "id": f"{conversation}/turn{k}",
                    "query": turn["text"],
                    "tools": tnames,
                    "groups": groups,
                    "conversation_id": conversation,
                    "turn": k,
                    "level": level,
                    "calls": calls,
                })

    tools.sort(key=lambda t: (t["group"], t["name"]))
    counts = Counter(t["group"] for t in tools)
    zh = {v: k for k, v in SCENARIOS.items()}
    groups_out = [{"group": g, "description": "", "n_tools": n, "scenario_zh": zh[g]}
                  for g, n in sorted(counts.items())]

    write_layout(args.out, tools, groups_out, queries)

    used = {t for q in queries for t in q["tools"]}
    print(f"tools={len(tools)} (implemented {sum(t['implemented'] for t in tools)}, "
          f"used as gold {len(used)}) groups={len(groups_out)} "
          f"queries={len(queries)} (with gold {stats['turns_with_gold']}, "
          f"context-only {stats['turns_without_gold']}) dialogues={stats['dialogues']}")
    print(f"gold calls={stats['gold_calls']} ToolSearcher calls left out="
          f"{stats['toolsearcher_calls_left_out']} repeated dialogues={stats['duplicate_dialogues']} "
          f"skipped without a user turn={stats['dialogues_without_user_turn']}")
    print("dialogues per level:", dict(Counter(q["level"] for q in queries if q["turn"] == 0)))
    gold = [q for q in queries if q["tools"]]
    print("tools per gold turn:", dict(sorted(Counter(len(q["tools"]) for q in gold).items())),
          "groups per gold turn:", dict(sorted(Counter(len(q["groups"]) for q in gold).items())))


if __name__ == "__main__":
    main()
