#!/usr/bin/env python3
"""Regroups a converted dataset by its tools' `subgroup`: each plugin its own group.

ToolBench's tools are RapidAPI plugins (a few endpoints each) filed under 47 categories, and
Seal-Tools' are fields under 146 domains; their conversions group by the category or domain and
keep the plugin or field as `subgroup`. Grouped by it instead, the same tools and queries make a
catalog of many small groups, as a gateway in front of hundreds of one-tool plugins or small MCP
servers sees: the case where one listing line per group costs as much as the schemas.

A group's description is its first tool's description (the conversions keep no plugin-level
text), and each query's gold groups become its gold tools' new groups. Stdlib only.

    python3 bench/datasets/regroup.py --source data/toolbench_stable --out data/toolbench_plugins
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout import fail, read_jsonl, write_layout  # noqa: E402


def group_id(subgroup):
    """A group id toolgate accepts: lower case, runs of other characters as one `_`."""
    return re.sub(r"[^a-z0-9]+", "_", subgroup.lower()).strip("_")[:64] or "group"


def regroup(source):
    """The three files' rows of `source`, regrouped by subgroup."""
    paths = {name: os.path.join(source, f"{name}.jsonl") for name in ("tools", "queries")}
    for name, path in paths.items():
        if not os.path.isfile(path):
            fail(f"missing {name}.jsonl under --source {source}")
    tools = [row for _, row in read_jsonl(paths["tools"], "tools.jsonl")]
    queries = [row for _, row in read_jsonl(paths["queries"], "queries.jsonl")]
    groups = {}
    for number, tool in enumerate(tools, 1):
        subgroup = tool.get("subgroup")
        if not subgroup:
            fail(f"tools.jsonl line {number}: no subgroup to regroup by")
        gid = group_id(subgroup)
        tool["group"] = gid
        group = groups.setdefault(gid, {"group": gid, "description": tool.get("description", ""), "n_tools": 0})
        group["n_tools"] += 1
    group_of = {tool["name"]: tool["group"] for tool in tools}
    for query in queries:
        gold = []
        for name in query.get("tools", []):
            gid = group_of.get(name)
            if gid and gid not in gold:
                gold.append(gid)
        query["groups"] = gold
    return tools, list(groups.values()), queries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="a converted dataset with subgroups")
    parser.add_argument("--out", required=True, help="where to write the regrouped dataset")
    args = parser.parse_args()
    tools, groups, queries = regroup(args.source)
    write_layout(args.out, tools, groups, queries)
    print(f"{len(tools)} tools in {len(groups)} groups, {len(queries)} queries")


if __name__ == "__main__":
    main()
