#!/usr/bin/env bash
# Builds each program from clean (release, wall time), reports binary sizes,
# then runs the benchmarks and the sandbox probes one after another.
# Usage: bench/js-engines/run.sh   (from anywhere; writes nothing outside target/)
#        SKIP_CLEAN=1 bench/js-engines/run.sh   (incremental builds: the figures, not the build times)
set -euo pipefail
cd "$(dirname "$0")"

echo "# $(date -u +%FT%TZ), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "# rustc: $(rustc --version)"
echo "# load before builds: $(cut -d' ' -f1-3 /proc/loadavg)"
how="after cargo clean"
if [ -n "${SKIP_CLEAN:-}" ]; then how="incremental"; fi
for program in baseline quickjs boa; do
    (
        cd "$program"
        if [ -z "${SKIP_CLEAN:-}" ]; then cargo clean --quiet; fi
        start=$(date +%s.%N)
        cargo build --release --quiet
        end=$(date +%s.%N)
        binary=target/release/js-engine-$program
        strip -o target/stripped "$binary"
        printf "%s: release build (%s) %.1f s, binary %d bytes, stripped %d bytes\n" \
            "$program" "$how" "$(echo "$end - $start" | bc)" "$(stat -c %s "$binary")" "$(stat -c %s target/stripped)"
    )
done

for program in baseline quickjs boa; do
    echo "## $program bench"
    "$program/target/release/js-engine-$program" bench
done

probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
echo '{"secret": "read from the disk"}' > "$probe_dir/probe.json"
echo "## quickjs probes (200 ms interrupt, 64 MiB, 512 KiB stack)"
(cd "$probe_dir" && timeout 60 "$OLDPWD/quickjs/target/release/js-engine-quickjs" probe)
echo "## boa probes (one process each: 20 s timeout, 2 GiB address space)"
for probe in loop loop-in-calls alloc-arrays alloc-string recursion async globals import import-file import-file-default thrown; do
    status=0
    output=$(cd "$probe_dir" && ulimit -v 2097152 && timeout 20 "$OLDPWD/boa/target/release/js-engine-boa" probe "$probe" 2>&1) || status=$?
    case $status in
        0) echo "$output" | cut -c1-240 ;;
        124) echo "$probe: still running after 20 s (killed by timeout)" ;;
        *) echo "$probe: process died, exit $status: $(echo "$output" | grep -m1 -E 'memory|panicked|abort' || true)" ;;
    esac
done
