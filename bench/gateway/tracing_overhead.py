#!/usr/bin/env python3
"""What OpenTelemetry tracing adds to a `tools/call`: p50 and p99 with spans off and on.

Runs one `toolgate` build in two ways, alternating, round after round:

- off: no `[telemetry]`, so no span is made (metrics are counted, as always);
- on: `[telemetry] otlp_endpoint` set, so every request makes a server span, every tool call an
  `execute_tool` span, and the spans are batched and exported over OTLP/HTTP (protobuf) to a
  collector this script runs, which reads each export and answers 200;
- on, 10%: the same with `sample_ratio = 0.1`: spans are made for every request, one trace in
  ten is recorded and exported.

Each way is driven over HTTP and over stdio by the minimal client of `http_breakdown.py` (one
kept-alive connection, or JSON lines on the pipes), with its cases: `ping`, `tools/call time_now`
and `tools/call call_tool(time_now)`, sequential, after a warm-up; every answer is checked. The
collector's count of spans shows the "on" gateway did export them.

Run from the repository root:
    bench/gateway/.venv/bin/python bench/gateway/tracing_overhead.py --calls 2000 --rounds 3 --toolgate-bin target/release/toolgate
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from http_breakdown import CASES, HttpClient, StdioClient, measure  # noqa: E402
from tools_list import free_port, machine, start_gateway, stop_gateway  # noqa: E402


MODES = ("off", "on", "on, 10%")


class Collector(ThreadingHTTPServer):
    """Takes OTLP/HTTP exports and drops them, counting requests and bytes."""

    exports = 0
    bytes = 0


class ExportHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        server: Collector = self.server  # type: ignore[assignment]
        server.exports += 1
        server.bytes += len(body)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def run(args: argparse.Namespace) -> dict[str, Any]:
    binary = Path(args.toolgate_bin).resolve()
    collector = Collector(("127.0.0.1", 0), ExportHandler)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    results: dict[str, Any] = {"exports": 0, "export_bytes": 0}
    with tempfile.TemporaryDirectory(prefix="toolgate-tracing-") as tmp:
        configs = {mode: Path(tmp) / f"{mode}.toml" for mode in MODES}
        configs["off"].write_text("")
        configs["on"].write_text(f'[telemetry]\notlp_endpoint = "{endpoint}"\n')
        configs["on, 10%"].write_text(f'[telemetry]\notlp_endpoint = "{endpoint}"\nsample_ratio = 0.1\n')
        for round_ in range(args.rounds):
            for mode, config in configs.items():
                extra = ("--config", str(config))
                with (Path(tmp) / f"{mode}.log").open("a") as log:
                    stdio = StdioClient(binary, log, extra)
                    try:
                        results.setdefault(f"{mode} stdio", []).append(measure(stdio, args.calls, args.warmup))
                    finally:
                        stdio.close()
                    port = free_port()
                    proc = start_gateway(binary, ["--memory-store", *extra], log, port)
                    try:
                        client = HttpClient(port)
                        results.setdefault(f"{mode} http", []).append(measure(client, args.calls, args.warmup))
                        client.close()
                    finally:
                        stop_gateway(proc)
            print(f"round {round_ + 1} done", file=sys.stderr, flush=True)
    results["exports"] = collector.exports
    results["export_bytes"] = collector.bytes
    collector.shutdown()
    return results


def report(results: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"## tools/call with tracing off and on: {args.calls} sequential calls per case, {args.rounds} "
        "round(s), medians of the rounds' p50/p99 in µs (send to parsed answer)",
        "",
        f"date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; machine: {machine()}; "
        f"binary: {args.toolgate_bin}; the collector took {results['exports']} exports, "
        f"{results['export_bytes']:,} bytes",
        "",
        "| transport | case | off p50 | on p50 (change) | on, 10% p50 (change) | off p99 | on p99 | on, 10% p99 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for transport in ("stdio", "http"):
        for label in CASES:
            row = {}
            for mode in MODES:
                rounds = results[f"{mode} {transport}"]
                row[mode] = {key: statistics.median(r[label][key] for r in rounds) for key in ("p50", "p99")}

            def p50(mode: str) -> str:
                change = (row[mode]["p50"] / row["off"]["p50"] - 1) * 100
                return f"{row[mode]['p50']:.0f} ({change:+.1f}%)"

            lines.append(
                f"| {'HTTP' if transport == 'http' else 'stdio'} | {label} | {row['off']['p50']:.0f} | "
                f"{p50('on')} | {p50('on, 10%')} | {row['off']['p99']:.0f} | {row['on']['p99']:.0f} | "
                f"{row['on, 10%']['p99']:.0f} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per case (default 2000)")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating the modes (default 3)")
    parser.add_argument("--toolgate-bin", default="target/release/toolgate", help="the toolgate binary")
    parser.add_argument("--json", help="also write the raw figures here")
    args = parser.parse_args()
    results = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(report(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
