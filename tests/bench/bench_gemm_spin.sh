#!/bin/sh
# bench_gemm_spin.sh - tiled fp32 against OpenBLAS on the catalog's gemm shapes at M = 64 and
# 256, before and after bench_gemm kept oneDNN's idle OpenMP threads short: "spin"
# runs `bench_gemm --catalog --no-bf16 --omp-spin` (libgomp's default, 300,000 pauses after each
# oneDNN call, as in the earlier catalog runs of docs/benchmarks/gemm.md), "short" the same with
# GOMP_SPINCOUNT=2000 (bench_gemm's default now). The variable is read when libgomp loads, so
# each is its own process; they alternate model by model, so load from elsewhere falls on both
# alike. Both set OPENBLAS_THREAD_TIMEOUT=16. Markdown on stdout, progress on stderr.
#
# usage: tests/bench/bench_gemm_spin.sh [BUILD_DIR] [--all]
#   BUILD_DIR defaults to ./build; THREADS (environment) defaults to 2.
#   By default llama-3.2-1b and qwen2.5-0.5b, whose 0.3-3 ms calls a spinning thread hurts most
#   (about 1 minute on an idle 2-core machine); --all: every catalog model (the 70B shapes take
#   seconds a call: 10 minutes or more). Run it when `cat /proc/loadavg` is under 1.
# See docs/cpu-kernels.md, "Tiled GEMM at M = 256 with small N and K".
set -eu

build=./build
all=
for arg in "$@"; do
    case "$arg" in
    --all) all=1 ;;
    *) build=$arg ;;
    esac
done
threads=${THREADS:-2}
bench=$build/tests/bench_gemm
if [ ! -x "$bench" ] || [ ! -x "$build/ktrial" ]; then
    echo "bench_gemm_spin.sh: $bench or $build/ktrial not found; build with cmake --build $build" >&2
    exit 66
fi
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE OMP_WAIT_POLICY GOMP_SPINCOUNT
export OPENBLAS_THREAD_TIMEOUT=16
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)

# The catalog's models, one per set of gemm shapes (mistral-7b-v0.3 has llama-3.1-8b's).
"$build/ktrial" models | awk 'NR > 1 && !seen[$2 " " $3 " " $4 " " $5 " " $6]++ { print $1 }' \
    >"$tmp/models"
if [ -z "$all" ]; then
    grep -x -e llama-3.2-1b -e qwen2.5-0.5b "$tmp/models" >"$tmp/small" || true
    mv "$tmp/small" "$tmp/models"
fi

# The fp32 rows of one bench_gemm --catalog run: model role M N K blas tiled onednn.
rows() {
    awk -F '|' '$7 ~ /fp32/ { gsub(/ /, ""); print $2, $3, $4, $5, $6, $8, $9, $10 }'
}

echo "load average before: $(cut -d ' ' -f 1-3 /proc/loadavg)"
echo
echo "| model | role | M | N | K | blas (spin) | tiled (spin) | onednn (spin) | tiled of blas (spin) |" \
    "blas (short) | tiled (short) | onednn (short) | tiled of blas (short) |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
while read -r model; do
    echo "progress: $model" >&2
    "$bench" "$threads" --catalog --no-bf16 --model="$model" --omp-spin | rows >"$tmp/spin"
    GOMP_SPINCOUNT=2000 "$bench" "$threads" --catalog --no-bf16 --model="$model" | rows >"$tmp/short"
    paste -d ' ' "$tmp/spin" "$tmp/short" | awk '
        function ratio(b, t) { return (b + 0 > 0 && t + 0 > 0) ? sprintf("%.2fx", t / b) : "-" }
        {
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                $1, $2, $3, $4, $5, $6, $7, $8, ratio($6, $7), $14, $15, $16, ratio($14, $15)
        }' >>"$tmp/table"
done <"$tmp/models"
cat "$tmp/table"
echo
awk -F '|' '{
        s = $10 + 0; t = $14 + 0
        if (s > 0 && (lo_s == "" || s < lo_s)) lo_s = s
        if (t > 0 && (lo_t == "" || t < lo_t)) lo_t = t
    }
    END {
        printf "tiled fp32 at M >= 64, lowest fraction of OpenBLAS: %.2fx (spin), %.2fx (short);", lo_s, lo_t
        printf " target 0.9x\n"
    }' \
    "$tmp/table"
echo "load average after: $(cut -d ' ' -f 1-3 /proc/loadavg); $(($(date +%s) - start)) s"
