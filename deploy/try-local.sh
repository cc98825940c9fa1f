#!/usr/bin/env bash
# The topology of compose.yaml without Docker: three `toolgate serve` processes on one PostgreSQL
# database, nginx in front with deploy/nginx.conf (its upstreams pointed at the local ports), and
# deploy/toolgate.toml (its [store] url replaced by the one given).
#
# Usage: deploy/try-local.sh [--check] POSTGRES_URL
#   (default)  run until Ctrl-C; prints the endpoint and the token
#   --check    instead, open a session through nginx, load a group through one replica, check
#              that the next requests (other replicas) list its tools, then stop everything
# Env: TOOLGATE_BIN (default target/debug/toolgate), PORT (nginx, default 8080), NGINX (default
#      nginx). The password, if the URL has none, comes from PGPASSWORD.
# Example with the test database: .peers/venv/bin/python scripts/with-postgres \
#   sh -c 'deploy/try-local.sh --check "$TOOLGATE_TEST_POSTGRES_URL"'
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLGATE_BIN="${TOOLGATE_BIN:-$ROOT/target/debug/toolgate}"
NGINX="${NGINX:-nginx}"
PORT="${PORT:-8080}"

check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  shift
fi
url="${1:?usage: deploy/try-local.sh [--check] POSTGRES_URL}"

work="$(mktemp -d)"
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT

# deploy/toolgate.toml with this database: its other settings (pool_size) unchanged.
grep -v '^password_file' "$ROOT/deploy/toolgate.toml" \
  | sed "s|^url = .*|url = \"$url\"|" >"$work/toolgate.toml"
export TOOLGATE_TOKEN="${TOOLGATE_TOKEN:-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')}"
mkdir -p "$work/files" "$work/cache"
echo "shared by every replica" >"$work/files/notes.txt"

ports=()
for replica in 1 2 3; do
  log="$work/toolgate-$replica.log"
  XDG_CACHE_HOME="$work/cache" "$TOOLGATE_BIN" serve --listen 127.0.0.1:0 \
    --config "$work/toolgate.toml" --files-root "$work/files" 2>"$log" &
  pids+=("$!")
  for _ in $(seq 100); do
    grep -q '^Listening on' "$log" && break
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  port="$(sed -n 's|^Listening on http://127.0.0.1:\([0-9]*\)/mcp|\1|p' "$log")"
  [[ -n "$port" ]] || { echo "replica $replica did not start:" >&2; cat "$log" >&2; exit 1; }
  ports+=("$port")
done

# deploy/nginx.conf with local upstreams, port, pid and temporary files.
sed -e "s|toolgate-1:8848|127.0.0.1:${ports[0]}|" \
    -e "s|toolgate-2:8848|127.0.0.1:${ports[1]}|" \
    -e "s|toolgate-3:8848|127.0.0.1:${ports[2]}|" \
    -e "s|listen 8080;|listen 127.0.0.1:$PORT;|" \
    -e "s|^pid .*|pid $work/nginx.pid;|" \
    -e "s|^http {|http {\n    client_body_temp_path $work/body;\n    proxy_temp_path $work/proxy;\n    fastcgi_temp_path $work/fastcgi;\n    uwsgi_temp_path $work/uwsgi;\n    scgi_temp_path $work/scgi;|" \
    -e "s|access_log /dev/stdout|access_log $work/access.log|" \
    "$ROOT/deploy/nginx.conf" >"$work/nginx.conf"
"$NGINX" -t -q -c "$work/nginx.conf" -p "$work/"
"$NGINX" -c "$work/nginx.conf" -p "$work/" -g 'daemon off;' &
pids+=("$!")
endpoint="http://127.0.0.1:$PORT/mcp"
for _ in $(seq 50); do
  curl -s -o /dev/null "$endpoint" && break
  sleep 0.1
done

if [[ $check == 0 ]]; then
  echo "Replicas on 127.0.0.1 ports ${ports[*]}; nginx at $endpoint"
  echo "Token: $TOOLGATE_TOKEN"
  echo "Press Ctrl-C to stop."
  wait
  exit 0
fi

# One JSON-RPC request through nginx; prints the answer's JSON (an SSE `data:` line or a body).
rpc() {
  curl -sS -D "$work/headers" -X POST "$endpoint" \
    -H "Authorization: Bearer $TOOLGATE_TOKEN" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    ${session:+-H "Mcp-Session-Id: $session"} ${session:+-H 'MCP-Protocol-Version: 2025-11-25'} \
    -d "$1" | sed -n 's/^data: //p'
}
session=""
rpc '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"try-local","version":"0"}}}' >/dev/null
session="$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' "$work/headers")"
[[ -n "$session" ]] || { echo "no Mcp-Session-Id from initialize" >&2; exit 1; }
rpc '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
loaded="$(rpc '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"load_tool_group","arguments":{"group_name":"time"}}}')"
[[ "$(jq -r '.result.isError // false' <<<"$loaded")" == false ]] || { echo "load failed: $loaded" >&2; exit 1; }
for id in 3 4 5; do
  tools="$(rpc "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"tools/list\"}" | jq -r '[.result.tools[].name] | join(" ")')"
  [[ " $tools " == *" time_now "* ]] || { echo "request $id: time_now not listed: $tools" >&2; exit 1; }
done
# Which replica answered what (the last field of nginx's log).
served="$(awk '{print $NF}' "$work/access.log" | sort | uniq -c | tr '\n' ' ')"
echo "try-local: one session over 3 replicas through nginx: ok (requests per replica: $served)"
