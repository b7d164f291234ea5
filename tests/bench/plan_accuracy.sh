#!/bin/sh
# plan_accuracy.sh - the plan's estimate against the measured run, on three CPU specs of
# different sizes and a sim one, one after another: a table for docs/benchmarks/plan-accuracy.md.
#
#   tests/bench/plan_accuracy.sh [KTRIAL] [SPEC...]
#
# KTRIAL defaults to build/ktrial; the specs default to experiments/quickstart.yaml (2 attention
# points), tests/bench/plan-swiglu-point.yaml (one large SwiGLU point),
# experiments/deterministic-gemm.yaml (16 GEMM points) and tests/bench/plan-sim-decode.yaml (a
# llama-3.1-8b decode step on the sim): about 4 minutes on an idle 2-core machine, less on more
# cores. Give one spec to try it quickly.
#
# First 'validate --plan' measures this host's calibration (inputs, references, every arm) into
# a fresh cache, so each run starts from a plan like a user's second one; then each spec runs
# with --force (past its budget: the point is to compare) into a scratch folder. 'estimate' is
# the plan's figure printed by 'run' (timing.estimate_seconds); 'measured' is the wall-clock time
# of the whole 'run' command. The load column is the 1-minute load average before and after:
# run it on a quiet machine.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ktrial=${1:-$root/build/ktrial}
[ $# -gt 0 ] && shift
if [ $# -eq 0 ]; then
    set -- "$root/experiments/quickstart.yaml" "$here/plan-swiglu-point.yaml" \
        "$root/experiments/deterministic-gemm.yaml" "$here/plan-sim-decode.yaml"
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/kt_plan_accuracy.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export XDG_CACHE_HOME="$scratch/cache"
unset KT_CALIBRATION_FILE

load() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }

echo "| spec | points | estimate | measured | measured / estimate | load |"
echo "|---|---|---|---|---|---|"
i=0
for spec in "$@"; do
    i=$((i + 1))
    "$ktrial" validate --plan "$spec" > "$scratch/plan-$i.txt" 2>&1 ||
        { echo "validate failed on $spec:" >&2; cat "$scratch/plan-$i.txt" >&2; exit 1; }
    before=$(load)
    t0=$(now)
    rc=0
    "$ktrial" run "$spec" -o "$scratch/run-$i" --force > "$scratch/run-$i.txt" 2>&1 || rc=$?
    t1=$(now)
    after=$(load)
    if [ "$rc" -gt 2 ]; then
        echo "run failed ($rc) on $spec:" >&2
        tail -20 "$scratch/run-$i.txt" >&2
        exit 1
    fi
    python3 - "$scratch/run-$i/result.json" "$spec" "$root" "$t0" "$t1" "$before" "$after" <<'PY'
import json, os, sys
doc = json.load(open(sys.argv[1]))
spec, root = sys.argv[2], sys.argv[3]
t0, t1 = float(sys.argv[4]), float(sys.argv[5])
estimate = doc["timing"]["estimate_seconds"]
measured = t1 - t0
name = os.path.relpath(os.path.realpath(spec), root)
print(f"| `{name}` | {len(doc['points'])} | {estimate:.1f} s | {measured:.1f} s | "
      f"{measured / estimate:.2f} | {sys.argv[6]} → {sys.argv[7]} |")
PY
done
