#!/bin/sh
# bench_process_overhead.sh - what one call of the process backend costs: ktrial runs an empty
# command (/bin/true) as baseline and candidate of a command trial, and hyperfine runs the same
# command without a shell (-N), in the same invocation of this script, on the same host.
#
#   tests/bench/bench_process_overhead.sh [--quick] [BUILD_DIR]
#
# Default: 1000 pairs (2000 calls) for ktrial and 2000 runs for hyperfine, about 10 to 30 s on an
# idle machine; --quick: 100 pairs and 200 runs, to check that it works. Prints a markdown
# table for docs/benchmarks/command-trials.md:
#   spawn-to-reap: the per-call wall time each tool measures for /bin/true (its own figure)
#   per call, all in: the tool's whole wall time divided by its calls (bookkeeping included)
# hyperfine is optional: without it, its rows say so.
set -eu
pairs=1000
runs=2000
if [ "${1:-}" = "--quick" ]; then
    pairs=100
    runs=200
    shift
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
ktrial=$build/ktrial
[ -x "$ktrial" ] || { echo "no $ktrial: build it first (cmake --build build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
true_bin=$(command -v true)
case $true_bin in /*) ;; *) true_bin=/bin/true ;; esac

cat > "$tmp/overhead.yaml" <<SPEC
version: 1
name: process-overhead
op: command
backend: process
baseline: {run: ["$true_bin"]}
candidates: [{name: again, run: ["$true_bin"]}]
trials: {warmup: 20, min_repetitions: $pairs, max_repetitions: $pairs, max_seconds_per_point: 3600}
SPEC

now() { date +%s.%N; }
t0=$(now)
"$ktrial" run "$tmp/overhead.yaml" -o "$tmp/run" --force >/dev/null 2>&1 || true
t1=$(now)
python3 - "$tmp/run/result.json" "$t0" "$t1" "$runs" "$tmp" "$true_bin" <<'PY'
import json, os, shutil, subprocess, sys, time
result, t0, t1, runs, tmp, true_bin = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
doc = json.load(open(result))
p = doc["points"][0]
arms = [p["baseline"]] + [c for c in p["candidates"]]
calls = sum(a["metrics"]["calls"]["value"] for a in [p["baseline"], p["candidates"][0]])
spawn_ms = p["baseline"]["metrics"]["wall_ms"]["value"]
rows = [("ktrial (process backend)", f"{calls:.0f}", f"{spawn_ms * 1e3:.0f} us",
         f"{(t1 - t0) / calls * 1e6:.0f} us")]
if shutil.which("hyperfine"):
    out = os.path.join(tmp, "hf.json")
    h0 = time.monotonic()
    subprocess.run(["hyperfine", "-N", "--warmup", "20", "--runs", str(runs), "--export-json", out,
                    "--style", "none", true_bin], check=True, capture_output=True)
    h1 = time.monotonic()
    mean = json.load(open(out))["results"][0]["mean"]
    rows.append((f"hyperfine -N ({subprocess.run(['hyperfine', '--version'], capture_output=True, text=True).stdout.strip()})",
                 str(runs), f"{mean * 1e6:.0f} us", f"{(h1 - h0) / runs * 1e6:.0f} us"))
else:
    rows.append(("hyperfine", "-", "not installed", "-"))
print(f"empty command: {true_bin}; host: {os.uname().nodename}, {os.cpu_count()} CPUs, "
      f"load {os.getloadavg()[0]:.2f}")
print("| tool | calls | spawn-to-reap per call (its own figure) | per call, all in |")
print("|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
PY
