"""What the converters in bench/datasets share: a clear stop, the checkout's files, the layout.

Each `<dataset>/convert.py` imports this module from the folder above its own, so a converter
runs from anywhere inside the repository. Stdlib only.
"""
import json
import os
import sys

LAYOUT = ("tools.jsonl", "groups.jsonl", "queries.jsonl")


def fail(message):
    """Stop the converter with `message`, named as convert.py's."""
    sys.exit(f"convert.py: {message}")


def source_file(source, rel, repository):
    """The path of `rel` in the checkout `source`, or a stop that names it and `repository`."""
    path = os.path.join(source, rel)
    if not os.path.isfile(path):
        fail(f"missing {rel} under --source {source} (expected a checkout of {repository})")
    return path


def load_json(source, rel, repository):
    """The JSON document `rel` of the checkout `source`."""
    with open(source_file(source, rel, repository), encoding="utf-8") as f:
        return json.load(f)


def read_jsonl(path, shown):
    """The JSON objects of the file `path`, one a line (blank lines skipped), each with its line
    number; a malformed line stops the converter, named as `shown` and its number."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as e:
                fail(f"{shown} line {number}: {e}")
    return rows


def write_layout(out, tools, groups, queries):
    """Writes the three files of the common layout into `out` (created if missing), one JSON
    object a line, non-ASCII text as it is."""
    os.makedirs(out, exist_ok=True)
    for name, rows in zip(LAYOUT, (tools, groups, queries)):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
