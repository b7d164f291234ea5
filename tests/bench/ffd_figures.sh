#!/bin/sh
# ffd_figures.sh - docs/benchmarks/ffd-heads.md: FFD against dense on
# the 8 catalog models' heads at 8K, 32K and 128K (bf16, batch 1, llm inputs, one thread,
# default delta), with the error on two input sets, the byte-model bound and the phase split.
#
# usage: tests/bench/ffd_figures.sh [BUILD_DIR]      (default: build)
# Run it on a quiet machine (load average under 1): the times are wall clock. It pins itself
# to one core with taskset when taskset is there. Extra arguments after BUILD_DIR go to
# bench_ffd_sweep (e.g. --contexts=32768 for the 32K rows alone). Then, where it is built,
# bench_ffd_scan --cold prints the int8 selection alone per model at 32K (about a minute).
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
bench="$build/tests/bench_ffd_sweep"
if [ ! -x "$bench" ]; then
    echo "ffd_figures.sh: $bench not found: build it with cmake --build $build --target bench_ffd_sweep" >&2
    exit 66
fi
pin=""
if command -v taskset >/dev/null 2>&1; then
    pin="taskset -c $(($(nproc) - 1))"
fi
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores;" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
$pin "$bench" 1 "$@"
# the int8 selection alone, cold, block 64 (the default) at 32K: where selection's time goes
scan="$build/tests/bench_ffd_scan"
if [ -x "$scan" ]; then
    echo
    $pin "$scan" --cold --reps=15
fi
echo "took $(($(date +%s) - start)) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
