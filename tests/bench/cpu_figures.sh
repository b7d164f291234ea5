#!/bin/sh
# cpu_figures.sh - docs/benchmarks/cpu-ceilings.md, from one run of
# the CPU benchmarks: dense decode on every catalog head shape against the read and copy
# ceilings (bench_attention --dense), the tiled GEMM on every catalog gemm shape against
# OpenBLAS and oneDNN (bench_gemm --catalog), and a 2-thread dense decode with a CPU-bound
# co-runner on one core (bench_attention --contention). Markdown on stdout, progress on stderr.
#
# usage: tests/bench/cpu_figures.sh [BUILD_DIR] [--quick]
#   BUILD_DIR defaults to ./build; THREADS (environment) defaults to every online CPU.
#   --quick: 16K only, llama-3.2-1b's gemm shapes, one contention round (shows the script works;
#   its figures are not for docs/benchmarks).
# Takes about 5 minutes on an idle 2-core machine; run it when `cat /proc/loadavg` is under 1.
#
# OpenBLAS's kernels are its own choice for this CPU: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
# are unset here (some login shells export them), and the core it ran is printed. bench_gemm
# runs itself with OPENBLAS_THREAD_TIMEOUT=16 and GOMP_SPINCOUNT=2000, so that OpenBLAS's and
# oneDNN's (OpenMP) idle threads do not hold a core while the next variant is timed
# (docs/cpu-kernels.md), and prints the values.
set -eu

build=./build
quick=
for arg in "$@"; do
    case "$arg" in
    --quick) quick=--quick ;;
    *) build=$arg ;;
    esac
done
threads=${THREADS:-$(getconf _NPROCESSORS_ONLN)}
bench=$build/tests
for b in bench_attention bench_gemm; do
    if [ ! -x "$bench/$b" ]; then
        echo "cpu_figures.sh: $bench/$b not found; build with cmake --build $build" >&2
        exit 66
    fi
done
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
flags=$(grep -o -w -E 'avx512f|avx512_bf16|avx512_vnni|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')
start=$(date +%s)

echo "### CPU kernels at this machine's limits"
echo
echo "Machine: $cpu (family $family; $flags), $(getconf _NPROCESSORS_ONLN) CPUs," \
    "$(free -g | awk '/^Mem:/ {print $2}') GiB, $(uname -r), load average before the run" \
    "$(cut -d ' ' -f 1-3 /proc/loadavg). Threads: $threads. Command:" \
    "\`tests/bench/cpu_figures.sh $build\` ($(date -u +%Y-%m-%d))."
echo
echo "#### Dense decode against the read-only and copy bandwidth"
echo
echo "Batch 1, \`llm\` inputs, cold cache, medians, in the same rounds: \`dense\` (bf16: scores and"
echo "P V by AVX-512 BF16 dot products), \`bf16_dot scores\` (the scores only, P V in fp32 FMAs) and"
echo "\`bf16_dot off\` (keys and values widened to fp32)."
echo "\`read pass\`: both threads reading the call's own K and V once, cold, in the same rounds as the"
echo "kernels (rotating order); \`of read pass\` is the median over rounds of read pass time / dense time."
echo "\`of first read bw\` and \`of copy bw\` are against the ceilings measured once before the table."
echo "Roofline columns: \`compute ms\` is the MAC and softmax instructions over this CPU's measured"
echo "\`vdpbf16ps\` (bf16) or FMA (fp32) peak, \`bound ms\` max(read pass, compute), \`of bound\`"
echo "the kernel's fraction of it, \`85% reachable\` whether compute <= read pass / 0.85."
echo
echo "progress: dense decode" >&2
"$bench/bench_attention" "$threads" --dense $quick
echo
echo "#### Tiled GEMM against OpenBLAS and oneDNN"
echo
echo "progress: gemm" >&2
"$bench/bench_gemm" "$threads" --catalog $quick
echo
echo "#### A co-runner on one core"
echo
echo "2-thread dense bf16 decode, llama-3.1-8b heads, 4K context, 101 cold calls per row; the"
echo "co-runner is a process spinning on the last CPU."
echo
echo "progress: contention" >&2
"$bench/bench_attention" 2 --contention $quick
echo
echo "(run took $(($(date +%s) - start)) s)"
