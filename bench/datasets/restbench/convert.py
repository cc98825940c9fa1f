#!/usr/bin/env python3
"""Convert RestBench (RestGPT) to the common tool-routing layout.

RestBench pairs human-written instructions with human-annotated gold solution paths over two real
REST APIs, described by the OpenAPI specs RestGPT ships: TMDB (54 endpoints) and Spotify (40).

Input (a checkout of https://github.com/Yifan-Song793/RestGPT):
  specs/tmdb_oas.json, specs/spotify_oas.json   OpenAPI 3 specs (one tool per operation)
  datasets/tmdb.json, datasets/spotify.json     [{"query", "solution": ["GET /path/{x}", ...]}]

Output (in --out):
  tools.jsonl    {"name","description","parameters","group", "service","endpoint","method","path",
                  "summary","operation_id"}
  groups.jsonl   {"group","description","n_tools","service","source_label"}
  queries.jsonl  {"id","query","tools","groups","service","solution"}

name   = the operation's own operationId (unique across both specs, at most 64 characters).
group  = Spotify: the path's `x-spotify-docs-category` (Spotify's own reference section);
         TMDB (its spec has no tags): the first path segment, which is how TMDB's v3 reference
         is sectioned (movie, tv, person, search, ...).
parameters = JSON Schema object from the operation's OpenAPI parameters (path-level and
         operation-level, $refs resolved) and its application/json request body's properties.

Stdlib only.  Usage: python3 convert.py --source RESTGPT_CHECKOUT --out DIR
"""
import argparse
import copy
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from layout import fail, load_json, write_layout  # noqa: E402  (bench/datasets/layout.py)

SERVICES = (
    # service, spec file, queries file, group prefix
    ("tmdb", "specs/tmdb_oas.json", "datasets/tmdb.json", "TMDB"),
    ("spotify", "specs/spotify_oas.json", "datasets/spotify.json", "Spotify"),
)
METHODS = ("get", "post", "put", "patch", "delete")
# Gold steps that name no endpoint of the spec, with the endpoint they mean (see README.md).
SOLUTION_FIXES = {
    ("spotify", "GET /track/{id}"): "GET /tracks/{id}",
}


REPOSITORY = "https://github.com/Yifan-Song793/RestGPT"


def resolve(obj, spec, seen=()):
    """Replace every local $ref with a copy of its target (a ref cycle is left as the bare $ref)."""
    if isinstance(obj, dict):
        ref = obj.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if ref in seen:
                return {"$ref": ref}
            target = spec
            for part in ref[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            return resolve(target, spec, seen + (ref,))
        return {k: resolve(v, spec, seen) for k, v in obj.items()}
    if isinstance(obj, list):
        return [resolve(v, spec, seen) for v in obj]
    return obj


BOOLEAN_KEYWORDS = {"additionalProperties", "nullable", "deprecated", "readOnly", "writeOnly",
                    "uniqueItems"}


def fix_booleans(obj):
    """Spotify's spec writes some booleans as strings (`"additionalProperties": "true"`); JSON Schema
    wants booleans there."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in BOOLEAN_KEYWORDS and v in ("true", "false"):
                v = v == "true"
            out[k] = fix_booleans(v)
        return out
    if isinstance(obj, list):
        return [fix_booleans(v) for v in obj]
    return obj


def to_schema(path_item, op, spec):
    props, required, body_clashes = {}, [], 0
    params = {}
    # operation-level parameters override path-level ones with the same (name, in)
    for p in (path_item.get("parameters") or []) + (op.get("parameters") or []):
        p = resolve(p, spec)
        params[(p["name"], p.get("in"))] = p
    for (name, _where), p in params.items():
        prop = copy.deepcopy(p.get("schema") or {"type": "string"})
        if p.get("description") and "description" not in prop:
            prop = {"description": p["description"].strip(), **prop}
        props[name] = prop
        if p.get("required") in (True, "true") and name not in required:  # Spotify writes "false"
            required.append(name)
    body = resolve(op.get("requestBody") or {}, spec)
    schema = ((body.get("content") or {}).get("application/json") or {}).get("schema") or {}
    for name, prop in (schema.get("properties") or {}).items():
        key = name if name not in props else "body_" + name
        body_clashes += key != name
        props[key] = prop
        if name in (schema.get("required") or []) and key not in required:
            required.append(key)
    out = {"type": "object", "properties": fix_booleans(props)}
    if required:
        out["required"] = required
    return out, body_clashes


def endpoint_key(endpoint):
    """'GET /person/{movie_id}/x' -> ('GET', '/person/{}/x'): placeholder names do not matter."""
    method, _, path = endpoint.strip().partition(" ")
    return method.upper(), re.sub(r"\{[^}]*\}", "{}", path.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="checkout of github.com/Yifan-Song793/RestGPT")
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args()

    inputs = {s: (load_json(args.source, spec, REPOSITORY),
                  load_json(args.source, data, REPOSITORY))
              for s, spec, data, _ in SERVICES}

    tools, by_endpoint, queries = [], {}, []
    stats = Counter()
    for service, _spec_file, _data_file, prefix in SERVICES:
        spec, data = inputs[service]
        for path, item in spec["paths"].items():
            for method in METHODS:
                op = item.get(method)
                if op is None:
                    continue
                if service == "spotify":
                    label = item["x-spotify-docs-category"]
                else:
                    label = path.strip("/").split("/")[0]
                parameters, clashes = to_schema(item, op, spec)
                stats["body_param_renamed"] += clashes
                endpoint = f"{method.upper()} {path}"
                tool = {
                    "name": op["operationId"],
                    "description": (op.get("description") or op.get("summary") or "").strip(),
                    "parameters": parameters,
                    "group": f"{prefix} {label}",
                    "service": service,
                    "endpoint": endpoint,
                    "method": method.upper(),
                    "path": path,
                    "summary": (op.get("summary") or "").strip(),
                    "operation_id": op["operationId"],
                    "source_label": label,
                }
                key = (service,) + endpoint_key(endpoint)
                if key in by_endpoint:
                    fail(f"two operations of {service} match {endpoint}")
                by_endpoint[key] = tool
                tools.append(tool)
        for index, q in enumerate(data):
            names, groups, unresolved = [], [], []
            for step in q["solution"]:
                stats["gold_steps"] += 1
                stats["steps_with_stray_spaces"] += step != step.strip()
                if (service, step.strip()) in SOLUTION_FIXES:
                    stats["steps_fixed"] += 1
                    step = SOLUTION_FIXES[(service, step.strip())]
                tool = by_endpoint.get((service,) + endpoint_key(step))
                if tool is None:
                    unresolved.append(step)
                    continue
                stats["steps_other_placeholder_name"] += tool["endpoint"] != step.strip()
                if tool["name"] not in names:
                    names.append(tool["name"])
                if tool["group"] not in groups:
                    groups.append(tool["group"])
            stats["unresolved_steps"] += len(unresolved)
            queries.append({
                "id": f"{service}/{index:03d}",
                "query": q["query"].strip(),
                "tools": names,
                "groups": groups,
                "service": service,
                "solution": q["solution"],
            })

    names = Counter(t["name"] for t in tools)
    clash = [n for n, c in names.items() if c > 1]
    bad = [t["name"] for t in tools if not re.fullmatch(r"[A-Za-z0-9_./-]{1,64}", t["name"])]
    if clash or bad:
        fail(f"tool names not unique or not valid: {clash + bad}")

    tools.sort(key=lambda t: (t["group"], t["name"]))
    counts = Counter(t["group"] for t in tools)
    first = {t["group"]: t for t in reversed(tools)}
    groups_out = [{"group": g, "description": "", "n_tools": n,
                   "service": first[g]["service"], "source_label": first[g]["source_label"]}
                  for g, n in sorted(counts.items())]
    for t in tools:
        del t["source_label"]

    write_layout(args.out, tools, groups_out, queries)

    print(f"tools={len(tools)} groups={len(groups_out)} queries={len(queries)} "
          f"body_params_renamed={stats['body_param_renamed']}")
    print(f"gold steps={stats['gold_steps']}: stray spaces={stats['steps_with_stray_spaces']} "
          f"fixed={stats['steps_fixed']} other placeholder name="
          f"{stats['steps_other_placeholder_name']} unresolved={stats['unresolved_steps']}")
    print("queries per service:", dict(Counter(q["service"] for q in queries)))
    print("tools per query:", dict(sorted(Counter(len(q["tools"]) for q in queries).items())),
          "groups per query:", dict(sorted(Counter(len(q["groups"]) for q in queries).items())))


if __name__ == "__main__":
    main()
