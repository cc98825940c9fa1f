#!/usr/bin/env python3
"""Converts a split of the Schema-Guided Dialogue dataset (SGD) into the normalized layout
`toolgate eval --replay` reads: tools.jsonl, groups.jsonl and queries.jsonl.

Source: https://github.com/google-research-datasets/dstc8-schema-guided-dialogue (CC BY-SA 4.0),
a split directory (`test/`, `dev/` or `train/`) holding `schema.json` and `dialogues_NNN.json`.

- A service (`Restaurants_2`) is a group; each of its intents is a tool named
  `<service>.<intent>` (`Restaurants_2.ReserveRestaurant`), whose parameters are the intent's
  required and optional slots (strings; a categorical slot lists its values as an enum).
- A dialogue is a conversation; each USER turn is one query line, and its ground truth is the
  service calls of the SYSTEM turn that answers it, written as Python calls
  (`Restaurants_2.ReserveRestaurant(date='2019-03-08', ...)`), as bfcl_multi_turn writes them.

Usage: sgd_convert.py SPLIT_DIR OUT_DIR [--files N]   (N: only the first N dialogue files)
"""

import argparse
import json
import pathlib


def tool_name(service, intent):
    return f"{service}.{intent}"


def convert_schema(schema):
    tools, groups = [], []
    for service in schema:
        name = service["service_name"]
        slots = {slot["name"]: slot for slot in service["slots"]}
        groups.append({"group": name, "description": service["description"],
                       "n_tools": len(service["intents"])})
        for intent in service["intents"]:
            properties = {}
            for slot_name in intent["required_slots"] + list(intent["optional_slots"]):
                slot = slots[slot_name]
                prop = {"type": "string", "description": slot["description"]}
                if slot["is_categorical"] and slot["possible_values"]:
                    prop["enum"] = slot["possible_values"]
                properties[slot_name] = prop
            tools.append({
                "name": tool_name(name, intent["name"]),
                "description": intent["description"],
                "parameters": {"type": "object", "properties": properties,
                               "required": intent["required_slots"]},
                "group": name,
            })
    return tools, groups


def python_call(name, parameters):
    arguments = ", ".join(f"{key}={value!r}" for key, value in parameters.items())
    return f"{name}({arguments})"


def convert_dialogue(dialogue):
    lines = []
    turns = dialogue["turns"]
    for index, turn in enumerate(turns):
        if turn["speaker"] != "USER":
            continue
        calls = []
        answer = turns[index + 1] if index + 1 < len(turns) else None
        if answer is not None:
            for frame in answer["frames"]:
                call = frame.get("service_call")
                if call:
                    calls.append(python_call(tool_name(frame["service"], call["method"]),
                                             call["parameters"]))
        number = len(lines)
        lines.append({
            "id": f"{dialogue['dialogue_id']}/turn{number}",
            "query": turn["utterance"],
            "tools": sorted({c.split("(")[0] for c in calls}),
            "groups": sorted({c.split("(")[0].split(".")[0] for c in calls}),
            "conversation_id": dialogue["dialogue_id"],
            "turn": number,
            "ground_truth_calls": calls,
            "services": dialogue["services"],
        })
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("split", type=pathlib.Path)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--files", type=int, default=None)
    args = parser.parse_args()
    schema = json.loads((args.split / "schema.json").read_text())
    tools, groups = convert_schema(schema)
    files = sorted(args.split.glob("dialogues_*.json"))
    if args.files is not None:
        files = files[: args.files]
    queries = []
    for path in files:
        for dialogue in json.loads(path.read_text()):
            queries.extend(convert_dialogue(dialogue))
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in [("tools.jsonl", tools), ("groups.jsonl", groups), ("queries.jsonl", queries)]:
        with open(args.out / name, "w") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    conversations = len({q["conversation_id"] for q in queries})
    print(f"{len(tools)} tools in {len(groups)} groups; {conversations} conversations, "
          f"{len(queries)} user turns from {len(files)} files")


if __name__ == "__main__":
    main()
