"""The dataset converters (bench/datasets), run on small checkouts written here.

These decide what `toolgate eval` measures: which group a tool belongs to, which tools a query
needs, and what a wrong `--source` says.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ULTRATOOL = ROOT / "bench" / "datasets" / "ultratool" / "convert.py"


def tool(name: str) -> dict:
    return {
        "name": name,
        "description": f"does {name}",
        "arguments": {"type": "object", "properties": {"x": {"type": "string"}}},
        "results": {"type": "object", "properties": {}},
    }


def request(question: str, domain: str, defined: list[str], calls: list[str]) -> dict:
    plan = [{"step": "1. Start", "tool": "null"}, {"step": "1.1 Gather", "tool": "No tool required"}]
    plan += [{"step": f"1.{i + 2} Call", "tool": f"{call}(x='a(b)')"} for i, call in enumerate(calls)]
    tools = [tool(name) for name in defined]
    return {"question": question + "\n", "plan": plan, "tools": tools, "domain": domain}


def checkout(root: Path, language: str, requests: list[dict]) -> Path:
    folder = root / "data" / f"{language}-dataset"
    folder.mkdir(parents=True)
    (folder / "test.json").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests), encoding="utf-8"
    )
    return root


def convert(source: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ULTRATOOL), "--source", str(source), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


REQUESTS = [
    request("Write a file, then back it up", "Document",
            ["file_write", "send_notice"], ["file_write", "send_notice"]),
    request("Tell the team about the transfer", "Finance",
            ["send_notice", "transfer"], ["transfer", "send_notice"]),
    request("Notify everyone", "Finance", ["send_notice"], ["send_notice"]),
    request("Only think about it", "Document", ["file_write"], []),
    request("Book and rate", "Hotel", ["rate"], ["rate"]),
    request("Rate the flight", "Flight", ["rate"], ["rate"]),
]


def test_a_tool_belongs_to_the_domain_of_most_requests_that_define_it(tmp_path: Path) -> None:
    source = checkout(tmp_path / "src", "English", REQUESTS)
    done = convert(source, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    groups = {t["name"]: t["group"] for t in rows(tmp_path / "out" / "tools.jsonl")}
    # send_notice: Document once, Finance twice; rate: Hotel and Flight once each, Hotel first.
    assert groups == {
        "file_write": "Document",
        "send_notice": "Finance",
        "transfer": "Finance",
        "rate": "Hotel",
    }
    listed = rows(tmp_path / "out" / "groups.jsonl")
    assert [(g["group"], g["n_tools"]) for g in listed] == [("Document", 1), ("Finance", 2), ("Hotel", 1)]
    assert "1 requests dropped: the plan calls no tool they define" in done.stdout


def test_a_query_needs_the_tools_its_plan_calls_in_call_order_and_their_groups(tmp_path: Path) -> None:
    source = checkout(tmp_path / "src", "English", REQUESTS)
    assert convert(source, tmp_path / "out").returncode == 0
    queries = rows(tmp_path / "out" / "queries.jsonl")
    # The request without a call (line 3) is dropped; the others keep their line's id.
    assert [q["id"] for q in queries] == [f"ultratool-000{n}" for n in (0, 1, 2, 4, 5)]
    first, second = queries[0], queries[1]
    assert first["query"] == "Write a file, then back it up"
    assert first["tools"] == ["file_write", "send_notice"]
    assert first["groups"] == ["Document", "Finance"]
    assert first["domain"] == "Document"
    assert second["tools"] == ["transfer", "send_notice"]
    assert second["groups"] == ["Finance"]
    # The Flight request needs the Hotel group: its one tool belongs there.
    assert queries[-1]["groups"] == ["Hotel"]


def test_the_chinese_translation_keeps_names_ids_and_gold(tmp_path: Path) -> None:
    only = request("写入文件", "Document", ["file_write"], ["file_write"])
    source = checkout(tmp_path / "src", "Chinese", [only])
    done = convert(source, tmp_path / "out", "--language", "chinese")
    assert done.returncode == 0, done.stderr
    (query,) = rows(tmp_path / "out" / "queries.jsonl")
    assert query == {
        "id": "ultratool-0000",
        "query": "写入文件",
        "tools": ["file_write"],
        "groups": ["Document"],
        "domain": "Document",
    }
    assert "写入文件" in (tmp_path / "out" / "queries.jsonl").read_text(encoding="utf-8")


def test_a_wrong_source_names_the_missing_file_and_writes_nothing(tmp_path: Path) -> None:
    done = convert(tmp_path, tmp_path / "out")
    assert done.returncode != 0
    assert "convert.py: missing data/English-dataset/test.json under --source" in done.stderr
    assert "https://github.com/JoeYing1019/UltraTool" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_malformed_line_is_named_by_its_number(tmp_path: Path) -> None:
    source = checkout(tmp_path / "src", "English", REQUESTS[:1])
    with (source / "data" / "English-dataset" / "test.json").open("a", encoding="utf-8") as f:
        f.write("{not json\n")
    done = convert(source, tmp_path / "out")
    assert done.returncode != 0
    assert "data/English-dataset/test.json line 2:" in done.stderr


def test_a_request_without_a_question_is_named_by_its_line_past_blank_lines(tmp_path: Path) -> None:
    source = checkout(tmp_path / "src", "English", REQUESTS[:1])
    questionless = dict(REQUESTS[1])
    del questionless["question"]
    with (source / "data" / "English-dataset" / "test.json").open("a", encoding="utf-8") as f:
        f.write("\n" + json.dumps(questionless) + "\n")
    done = convert(source, tmp_path / "out")
    assert done.returncode != 0
    assert "data/English-dataset/test.json line 3: no question" in done.stderr
    assert not (tmp_path / "out").exists()
