#!/usr/bin/env bash
# Builds, tests and times the CUDA variants in one go on a lent GPU machine (H200, sm_90;
# about 8 minutes in all). Writes under $OUT (default build/gpu-out):
#   bench_cuda.txt     achieved TFLOP/s and TB/s per variant against measured ceilings
#   <name>/            the archive folders of the short experiments
# Exit status: that of `ctest -L gpu` (the timings are reported, never judged here).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/build/gpu-out}
mkdir -p "$OUT"
jobs=$(nproc)

scripts/setup.sh || { echo "run.sh: setup failed" >&2; exit 1; }
cmake -S . -B build -DKT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
    > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
grep -A12 'feature summary' "$OUT/configure.log"
cmake --build build -j"$jobs" > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }

echo "== ctest -L gpu"
(cd build && timeout 240 ctest -L gpu --output-on-failure) 2>&1 | tee "$OUT/ctest-gpu.txt"
tests_rc=${PIPESTATUS[0]}

echo "== bench_cuda (median of 20, L2 flushed, bf16)"
timeout 120 ./build/tests/bench_cuda 2>&1 | tee "$OUT/bench_cuda.txt"

for spec in experiments/gpu/*.yaml; do
    name=$(basename "$spec" .yaml)
    echo "== ktrial run $spec"
    timeout 60 ./build/ktrial run "$spec" --backend cuda -o "$OUT/$name" 2>&1 | tail -25
    echo "$name: exit ${PIPESTATUS[0]}"
done
exit "$tests_rc"
