#!/bin/sh
# dense_before_after.sh - dense decode of two builds (say main before a change and the branch
# after it) on every catalog head shape at 16K and 32K, bf16 and fp32: for each model the two
# builds' bench_attention --dense run back to back, alternating which goes first, so load from
# elsewhere falls on both alike. Prints one markdown table: per shape both times, both fractions
# of read bandwidth (each run's read pass over the same K and V in the same rounds, or, from a
# bench that predates it, its run's first read ceiling) and the after build's fraction of its
# roofline bound (bench_roofline.h). Progress on stderr.
#
# usage: tests/bench/dense_before_after.sh BEFORE_BUILD AFTER_BUILD [--quick]
#   BEFORE_BUILD, AFTER_BUILD: build directories with tests/bench_attention (the before build's
#   bench may predate the roofline columns: its rows are read by column name).
#   --quick: 16K, 3 rounds, two models (shows the script works; not figures).
# Takes about 3 minutes on an idle 2-core machine; run it when `cat /proc/loadavg` is under 1.
set -eu

if [ $# -lt 2 ]; then
    echo "usage: $0 BEFORE_BUILD AFTER_BUILD [--quick]" >&2
    exit 64
fi
before=$1/tests/bench_attention
after=$2/tests/bench_attention
quick=${3:-}
for b in "$before" "$after"; do
    if [ ! -x "$b" ]; then
        echo "dense_before_after.sh: $b not found" >&2
        exit 66
    fi
done
threads=${THREADS:-$(getconf _NPROCESSORS_ONLN)}
models="llama-3.1-8b llama-3.1-70b llama-3.2-1b qwen2.5-0.5b qwen2.5-7b qwen2.5-72b mistral-7b-v0.3 gemma-2-9b"
if [ "$quick" = --quick ]; then
    models="llama-3.1-70b qwen2.5-0.5b"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# bench_attention's dense rows as "model dtype context ms of_read of_bound" (of_bound "-" where
# the bench has no roofline columns), from the header's column names.
rows() {
    awk -F '|' '
        /^\| model \| d \|/ {
            for (i = 2; i < NF; i++) {
                name = $i
                gsub(/^ +| +$/, "", name)
                col[name] = i
            }
            next
        }
        /^\| [a-z]/ && col["dense ms"] && $col["dtype"] ~ /bf16|fp32/ {
            b = col["of bound"] ? $col["of bound"] : "-"
            r = col["of read pass"] ? $col["of read pass"] : $col["of read bw"]
            printf "%s %s %s %s %s %s\n", $2, $col["dtype"], $col["context"], $col["dense ms"],
                r, b
        }' "$1" | tr -s ' '
}

i=0
for m in $models; do
    echo "progress: $m" >&2
    if [ $((i % 2)) -eq 0 ]; then order="before after"; else order="after before"; fi
    for which in $order; do
        if [ "$which" = before ]; then bin=$before; else bin=$after; fi
        "$bin" "$threads" --dense --model="$m" $quick > "$tmp/$which.$m"
        rows "$tmp/$which.$m" >> "$tmp/$which.rows"
    done
    i=$((i + 1))
done

echo "Dense decode before and after, $threads threads, each model's two runs back to back:"
echo
echo "| model | dtype | context | before ms | after ms | speedup | before of read bw | after of read bw | after of roofline bound |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
awk 'NR == FNR { key = $1 " " $2 " " $3; ms[key] = $4; rd[key] = $5; next }
     { key = $1 " " $2 " " $3
       if (!(key in ms)) next
       printf "| %s | %s | %s | %s | %s | %.2fx | %s | %s | %s |\n", $1, $2, $3, ms[key], $4,
           ms[key] / $4, rd[key], $5, $6 }' "$tmp/before.rows" "$tmp/after.rows"
