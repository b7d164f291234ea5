#!/bin/sh
# decode_step_figures.sh - docs/benchmarks/decode-step.md's tables: runs
# experiments/decode-step-ffd.yaml (dense vs FFD attention in one decode step, llama-3.2-1b and
# llama-3.1-8b, contexts 8K-32K), experiments/decode-step-fusion.yaml (fusion none vs own vs
# mlp vs layer, batch 1 and 16) and experiments/prefill-chunk.yaml (a 128-token prefill chunk
# beside a decode step at 4K: fusion none vs all GEMMs on OpenBLAS vs fusion layer), then
# prints the tables in Markdown with the machine, the load before and after, and the commands,
# ready to paste.
#
#   tests/bench/decode_step_figures.sh [--full | --smoke] [--ffd-only] [--no-prefill] [-o DIR]
#
# Default (bounded, about 4 minutes on an idle 2-core machine, the prefill experiment about 50 s
# of it): every point of the experiments, with ktrial's --quick (at most 20 timed pairs per
# point; with flush_cache each llama-3.1-8b call first flushes about 1 GB). --full: the
# experiments as they are (up to 60 pairs, about 8-10 minutes). --smoke: the first context and
# batch only, with --quick: shows that the script works, not figures. --ffd-only skips the
# fusion and prefill experiments, --no-prefill the prefill one.
# Env: KTRIAL (default build/ktrial), PYTHON (default python3). Archives go under DIR (default
# a new temporary folder, printed on stderr). Exit status 0 when the tables were printed
# (whatever the verdicts), 3 when a run failed, 64/66 on usage.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ktrial=${KTRIAL:-$root/build/ktrial}
python=${PYTHON:-python3}
mode=bounded
fusion=1
prefill=1
out=

while [ $# -gt 0 ]; do
    case $1 in
    --full) mode=full ;;
    --smoke) mode=smoke ;;
    --ffd-only) fusion=0; prefill=0 ;;
    --no-prefill) prefill=0 ;;
    -o) out=$2; shift ;;
    *) echo "usage: $0 [--full | --smoke] [--ffd-only] [--no-prefill] [-o DIR]" >&2; exit 64 ;;
    esac
    shift
done
[ -x "$ktrial" ] || { echo "$0: no ktrial at '$ktrial' (build it, or set KTRIAL)" >&2; exit 66; }
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/decode-step-figures.XXXXXX")
mkdir -p "$out"

# run NAME SPEC: runs SPEC into $out/NAME (smoke: a copy cut to the first context and batch);
# a verdict exit (0, 1, 2) is a result, anything else stops the script
run() {
    spec=$2
    flags=--quick
    case $mode in
    full) flags= ;;
    smoke)
        spec=$out/$1.yaml
        sed -e 's/^context_lengths: \[\([0-9]*\).*/context_lengths: [\1]/' \
            -e 's/^batch_sizes: \[\([0-9]*\).*/batch_sizes: [\1]/' "$2" >"$spec"
        ;;
    esac
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
[ $prefill = 0 ] || run prefill "$root/experiments/prefill-chunk.yaml"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "Load average (1, 5, 15 min) before: $load_before; after: $load_after;" \
    "$(($(date +%s) - start)) s in all; mode $mode$([ $mode = smoke ] && echo ': NOT FIGURES')."
echo
q=$([ $mode = full ] || echo ' --quick')
echo "\`./build/ktrial run experiments/decode-step-ffd.yaml$q\`:"
echo
"$python" "$here/decode_step_table.py" ffd "$out/ffd/result.json"
if [ $fusion = 1 ]; then
    echo
    echo "\`./build/ktrial run experiments/decode-step-fusion.yaml$q\`, speedup against \`fusion: none\`:"
    echo
    "$python" "$here/decode_step_table.py" fusion "$out/fusion/result.json"
fi
if [ $prefill = 1 ]; then
    echo
    echo "\`./build/ktrial run experiments/prefill-chunk.yaml$q\`, speedup against \`fusion: none\`:"
    echo
    "$python" "$here/decode_step_table.py" prefill "$out/prefill/result.json"
fi
echo
echo "archives: $out/ffd$([ $fusion = 1 ] && echo " $out/fusion")$([ $prefill = 1 ] && echo " $out/prefill")" >&2
