#!/bin/sh
# gemv_batch1.sh - at batch 1, does a naive scalar GEMM (tests/bench/gemm_naive.c) still beat
# the built-in baselines? Builds the plugin, then runs one ktrial experiment per baseline
# (blas: OpenBLAS sgemv at batch 1; onednn: oneDNN's matmul; tiled: ktrial's own engine) with
# the naive plugin as the candidate, on the decode projections of qwen2.5-0.5b at batch 1, in
# fp32 and bf16, one thread. Prints each run's summary; the figures of docs/benchmarks/gemv.md
# come from here. Not a test: it takes minutes and its figures depend on the machine.
#     sh tests/bench/gemv_batch1.sh [BUILD_DIR]
set -eu
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
ktrial="$root/$build/ktrial"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC -I"$root/include" "$root/tests/bench/gemm_naive.c" -o "$work/libgemm_naive.so"
echo "openblas core: $(/usr/bin/python3 -c '
import ctypes; b = ctypes.CDLL("libopenblas.so.0"); b.openblas_get_corename.restype = ctypes.c_char_p
print(b.openblas_get_corename().decode())')"
echo "commit: $(git -C "$root" rev-parse --short HEAD)  load: $(cut -d" " -f1-3 /proc/loadavg)"
for dtype in fp32 bf16; do
  for baseline in blas onednn tiled; do
    cat > "$work/spec.yaml" <<SPEC
version: 1
name: gemv-batch1-$dtype-$baseline
plugins: [$work/libgemm_naive.so]
op: gemm
backend: cpu
dtype: $dtype
threads: 1
models: [qwen2.5-0.5b]
batch_sizes: [1]
context_lengths: [64]
phases: [decode]
roles: [qkv, o, gate_up, down]
inputs: {distribution: normal, seed: 5, sets: 3}
baseline: {variant: $baseline}
candidates:
  - {name: naive, variant: naive}
trials: {warmup: 3, min_repetitions: 20, max_repetitions: 200, max_seconds_per_point: 10}
thresholds:
  numerics: {max_rel_l2: 1.0e-2}
  latency: {min_speedup: 1.0}
budget: {max_minutes: 10}
SPEC
    echo "== $dtype, baseline $baseline"
    "$ktrial" run "$work/spec.yaml" --output "$work/run-$dtype-$baseline" 2>&1 | grep -E "^qwen|^candidate|onednn|openblas" || true
  done
done
