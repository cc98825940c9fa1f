#!/usr/bin/env bash
# Turn-1 tokens of toolgate in front of the five reference MCP servers (the test peers):
# writes a toolgate.toml for them into a temporary directory and runs
#   toolgate catalog --config <that toml> --no-builtins [extra args, e.g. --json]
# which starts every upstream, lists its tools, and prints the tokens of all their schemas
# against toolgate's turn 1 (core tools + one line per group).
#
# Upstreams (all stdio, eager so their tools are listed):
#   everything  mcp-server-everything stdio              (Node 22 from .peers)
#   filesystem  mcp-server-filesystem <tmp>/files         (Node 22)
#   memory      mcp-server-memory, MEMORY_FILE_PATH=<tmp>/memory.jsonl (Node 22)
#   time        mcp-server-time --local-timezone UTC      (.peers venv)
#   git         mcp-server-git --repository <tmp>/repo    (.peers venv; a fresh one-commit repo)
#
# Needs .peers/ (scripts/install-peers) and the binary (cargo build --release -p toolgate-cli).
# Usage, from anywhere:  bench/gateway/turn1.sh [--json] [--encoding cl100k_base]
# Env: TOOLGATE_BIN (default target/release/toolgate under the repo root),
#      KEEP_TOML=1 prints the generated TOML to stderr,
#      POLYMORPHIC=1 exposes every group as one polymorphic tool ([groups."*"]).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${TOOLGATE_BIN:-$root/target/release/toolgate}"
env_file="$root/.peers/env"
[[ -f "$env_file" ]] || { echo "turn1.sh: $env_file missing: run scripts/install-peers" >&2; exit 1; }
[[ -x "$bin" ]] || { echo "turn1.sh: no binary at $bin: cargo build --release -p toolgate-cli" >&2; exit 1; }
# shellcheck disable=SC1090
set -a; . "$env_file"; set +a
node_bin="$TOOLGATE_PEERS_NODE_BIN"
venv_bin="$TOOLGATE_PEERS_VENV/bin"
node22="$TOOLGATE_NODE22"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-turn1.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/files" "$tmp/memory" "$tmp/repo"
echo "hello" >"$tmp/files/hello.txt"
git -C "$tmp/repo" init --quiet
echo "bench" >"$tmp/repo/README"
git -C "$tmp/repo" add README
git -C "$tmp/repo" -c user.name=bench -c user.email=bench@example.invalid commit --quiet -m init

# JSON strings are valid TOML basic strings.
q() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
js() { readlink -f "$node_bin/$1"; }

cat >"$tmp/toolgate.toml" <<EOF
[[upstream]]
name = "everything"
command = $(q "$node22")
args = [$(q "$(js mcp-server-everything)"), "stdio"]
eager = true

[[upstream]]
name = "filesystem"
command = $(q "$node22")
args = [$(q "$(js mcp-server-filesystem)"), $(q "$tmp/files")]
eager = true

[[upstream]]
name = "memory"
command = $(q "$node22")
args = [$(q "$(js mcp-server-memory)")]
env = { MEMORY_FILE_PATH = $(q "$tmp/memory/memory.jsonl") }
eager = true

[[upstream]]
name = "time"
command = $(q "$venv_bin/mcp-server-time")
args = ["--local-timezone", "UTC"]
eager = true

[[upstream]]
name = "git"
command = $(q "$venv_bin/mcp-server-git")
args = ["--repository", $(q "$tmp/repo")]
eager = true
EOF
if [[ "${POLYMORPHIC:-0}" == 1 ]]; then
  printf '\n[groups."*"]\nexpose = "polymorphic"\n' >>"$tmp/toolgate.toml"
fi
[[ "${KEEP_TOML:-0}" == 1 ]] && cat "$tmp/toolgate.toml" >&2

cd "$tmp"
"$bin" catalog --config "$tmp/toolgate.toml" --no-builtins "$@"
