#!/bin/sh
# decode_step_figures.sh - the README's "The whole decode step" tables: runs
# experiments/decode-step-ffd.yaml (dense vs FFD attention in one decode step, llama-3.2-1b and
# llama-3.1-8b, contexts 8K-32K) and experiments/decode-step-fusion.yaml (fusion none vs own vs
# mlp vs layer, batch 1 and 16), then prints both tables in Markdown with the machine, the load
# before and after, and the commands, ready to paste.
#
#   tests/bench/decode_step_figures.sh [--quick] [--ffd-only] [-o DIR]
#
# Default: the two experiments as they are (about 2-3 minutes on an idle 2-core machine: each
# point stops at max_repetitions or max_seconds_per_point, the 8b start-up is ~15 s a point).
# --quick: a check that the script works, not figures: 8K context and batch 1 only, with
# ktrial's --quick (at most 20 pairs). --ffd-only skips the fusion experiment.
# Env: KTRIAL (default build/ktrial), PYTHON (default python3). Archives go under DIR (default
# a new temporary folder, printed). Exit status: ktrial's (0 all kept, 1 rejected or
# inconclusive are both fine here), 2 or more on a failure of the script itself.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ktrial=${KTRIAL:-$root/build/ktrial}
python=${PYTHON:-python3}
quick=0
fusion=1
out=

while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --ffd-only) fusion=0 ;;
    -o) out=$2; shift ;;
    *) echo "usage: $0 [--quick] [--ffd-only] [-o DIR]" >&2; exit 64 ;;
    esac
    shift
done
[ -x "$ktrial" ] || { echo "$0: no ktrial at '$ktrial' (build it, or set KTRIAL)" >&2; exit 66; }
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/decode-step-figures.XXXXXX")
mkdir -p "$out"

# run NAME SPEC: runs SPEC into $out/NAME (quick mode: a reduced copy of the spec); a verdict
# exit (0, 1) is a result, anything else stops the script
run() {
    spec=$2
    flags=
    if [ $quick = 1 ]; then
        spec=$out/$1.yaml
        sed -e 's/^context_lengths: .*/context_lengths: [8192]/' \
            -e 's/^batch_sizes: .*/batch_sizes: [1]/' "$2" >"$spec"
        flags=--quick
    fi
    echo "$ $ktrial run $spec -o $out/$1 $flags" >&2
    rc=0
    "$ktrial" run "$spec" -o "$out/$1" $flags >"$out/$1.log" 2>&1 || rc=$?
    if [ $rc -gt 2 ] || [ ! -f "$out/$1/result.json" ]; then
        echo "$0: ktrial run $spec failed (exit $rc); see $out/$1.log:" >&2
        tail -20 "$out/$1.log" >&2
        exit 3
    fi
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
run ffd "$root/experiments/decode-step-ffd.yaml"
[ $fusion = 0 ] || run fusion "$root/experiments/decode-step-fusion.yaml"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "Load average (1, 5, 15 min) before: $load_before; after: $load_after;" \
    "$(($(date +%s) - start)) s in all.$([ $quick = 1 ] && echo ' QUICK MODE: not figures.')"
echo
echo "\`./build/ktrial run experiments/decode-step-ffd.yaml\`:"
echo
"$python" "$here/decode_step_table.py" ffd "$out/ffd/result.json"
if [ $fusion = 1 ]; then
    echo
    echo "\`./build/ktrial run experiments/decode-step-fusion.yaml\`, speedup against \`fusion: none\`:"
    echo
    "$python" "$here/decode_step_table.py" fusion "$out/fusion/result.json"
fi
echo
echo "archives: $out/ffd$([ $fusion = 1 ] && echo " $out/fusion")" >&2
