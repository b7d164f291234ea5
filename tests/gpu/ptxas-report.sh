#!/usr/bin/env bash
# Compiles every kernels/cuda/*.cu for sm_90 (-O3, as a Release build) with ptxas -v and
# prints one line per kernel: registers, spill stores/loads, shared and stack bytes.
# Exit 1 when any kernel spills or uses a stack frame. Needs nvcc only (no GPU).
#   tests/gpu/ptxas-report.sh [ARCH]      (default 90)
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=${1:-90}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for f in kernels/cuda/*.cu; do
    "$nvcc" -O3 -std=c++17 -DKT_HAVE_CUDA=1 -D_GNU_SOURCE -Iinclude -Ikernels -Ikernels/cuda \
        --generate-code=arch=compute_$arch,code=sm_$arch -Xptxas -v -c "$f" -o /dev/null 2>"$tmp"
    awk -v file="$(basename "$f")" '
        /Compiling entry function/ { match($0, /_Z[A-Za-z0-9_]+/); fn = substr($0, RSTART, RLENGTH) }
        /bytes stack frame/ { stack = $1; spill_st = $5; spill_ld = $9 }
        /Used [0-9]+ registers/ {
            match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15)
            smem = 0; if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH - 11)
            cmd = "c++filt -p " fn; cmd | getline name; close(cmd)
            printf "%-14s %-62s regs %3d  spill %s/%s B  stack %s B  smem %s B\n",
                file, substr(name, 1, 62), regs, spill_st, spill_ld, stack, smem
        }' "$tmp"
done | tee "$tmp.out"
if awk '{ for (i = 1; i <= NF; i++) if ($i == "spill") { split($(i + 1), s, "/"); if (s[1] + 0 > 0 || s[2] + 0 > 0) bad = 1 }
          for (i = 1; i <= NF; i++) if ($i == "stack" && $(i + 1) + 0 > 0) bad = 1 }
     END { exit !bad }' "$tmp.out"; then
    rm -f "$tmp.out"
    echo "ptxas-report: some kernel spills or uses a stack frame" >&2
    exit 1
fi
rm -f "$tmp.out"
echo "ptxas-report: no spills, no stack frames (sm_$arch)"
