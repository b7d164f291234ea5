#!/bin/sh
# bench_service_wrk.sh - does the service trials' load generator agree with wrk? Starts
# examples/serving's kt_serve on a free loopback port, then drives its non-streaming endpoint
# (the request of examples/serving/wrk_post.lua) in closed loop at 1 connection and at C
# connections, alternately with wrk and with ktrial's generator (tests/bench/bench_loadgen.c),
# REPS times each, in one run. Each generator run sends as many requests as the wrk run next to
# it completed, so both see the same load. Prints, per concurrency, both medians (pooled over
# the runs, wrk's from its full latency histogram) and both rates, then checks what issue 40
# asks: the medians agree within 10%, and the generator's rate at one connection is at least
# wrk's (exit 1 when either fails).
#
#   tests/bench/bench_service_wrk.sh [--quick] [BUILD_DIR]
#
# Environment: REPS (default 4), SECONDS_PER_RUN (8), CONC (4), SERVE_ARGS (the model, default
# "--model qwen2.5-0.5b --layers 1 --context 256"). --quick: 1 rep of 2 s, to see that it
# works (figures from it mean nothing). Exits 69 without wrk or kt_serve.
#
# Like with like: wrk times a request from its write on the connection to the response's end;
# the generator from when the request was due (closed loop: when its connection freed) to the
# end, a few microseconds more. Both keep their connections alive, 1 thread each.
set -eu
reps=${REPS:-4}
secs=${SECONDS_PER_RUN:-8}
if [ "${1:-}" = "--quick" ]; then
    reps=1
    secs=2
    shift
fi
conc=${CONC:-4}
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
serve=$build/kt_serve
gen=$build/tests/bench_loadgen
command -v wrk >/dev/null || { echo "bench_service_wrk: no wrk (apt-get install wrk)" >&2; exit 69; }
[ -x "$serve" ] || { echo "bench_service_wrk: no $serve (libmicrohttpd-dev)" >&2; exit 69; }
[ -x "$gen" ] || { echo "bench_service_wrk: no $gen: build it first" >&2; exit 1; }
cd "$here"
body=$(sed -n "s/^wrk.body = '\(.*\)'$/\1/p" examples/serving/wrk_post.lua)
[ -n "$body" ] || { echo "bench_service_wrk: no wrk.body in wrk_post.lua" >&2; exit 1; }
tmp=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086 # SERVE_ARGS is a list of words
"$serve" --port 0 ${SERVE_ARGS:---model qwen2.5-0.5b --layers 1 --context 256} \
    2>"$tmp/serve.log" &
pid=$!
port=
i=0
while [ -z "$port" ] && [ $i -lt 600 ]; do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve.log")
    sleep 0.1
    i=$((i + 1))
done
[ -n "$port" ] || { echo "bench_service_wrk: kt_serve did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1; }
until grep -q "prepared" "$tmp/serve.log"; do
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log" >&2; exit 1; }
    sleep 0.1
done
url=http://127.0.0.1:$port/v1/completions

run_wrk() { # conc rep
    KT_WRK_OUT=$tmp/wrk_c$1_$2.txt wrk -t1 -c"$1" -d"${secs}s" --timeout 60s \
        -s tests/bench/wrk_latencies.lua "$url" >/dev/null
}
run_gen() { # conc rep requests
    "$gen" --port "$port" --body "$body" --concurrency "$1" --requests "$3" --timeout 60 \
        --raw "$tmp/gen_c$1_$2.txt" >"$tmp/gen_c$1_$2.line"
}
wrk_count() { sed -n 's/^requests \([0-9]*\).*/\1/p' "$tmp/wrk_c$1_$2.txt"; }

echo "bench_service_wrk: kt_serve on port $port; $reps reps of $secs s at 1 and $conc connections; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
KT_WRK_OUT=$tmp/warm.txt wrk -t1 -c1 -d1s --timeout 60s -s tests/bench/wrk_latencies.lua "$url" >/dev/null
last1=$((secs * 5))
lastc=$((secs * 5))
rep=1
while [ $rep -le "$reps" ]; do
    for c in 1 "$conc"; do
        if [ $((rep % 2)) -eq 1 ]; then # wrk first, the generator matches its count
            run_wrk "$c" $rep
            run_gen "$c" $rep "$(wrk_count "$c" $rep)"
        else # the generator first, with the last wrk count at this concurrency
            if [ "$c" = 1 ]; then n=$last1; else n=$lastc; fi
            run_gen "$c" $rep "$n"
            run_wrk "$c" $rep
        fi
        if [ "$c" = 1 ]; then last1=$(wrk_count 1 $rep); else lastc=$(wrk_count "$c" $rep); fi
    done
    rep=$((rep + 1))
done
echo "bench_service_wrk: done; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

/usr/bin/python3 - "$tmp" "$reps" "$conc" <<'PY'
import glob, statistics, sys
tmp, reps, conc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = True
rates = {}
print("| connections | tool | requests | errors | rate (req/s) | p50 (ms) | p90 (ms) | p99 (ms) |")
print("|---|---|---|---|---|---|---|---|")
def q(v, p):
    v = sorted(v)
    pos = p * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)
meds = {}
for c in sorted({1, conc}):
    for tool in ("wrk", "gen"):
        lat, n, err, dur = [], 0, 0, 0.0
        for rep in range(1, reps + 1):
            lines = open(f"{tmp}/{tool}_c{c}_{rep}.txt").read().split("\n")
            if tool == "wrk":
                tail = [l for l in lines if l.startswith("requests")][0].split()
                n += int(tail[1]); err += int(tail[3]); dur += int(tail[5]) / 1e6
                lat += [float(l) / 1e3 for l in lines if l and not l.startswith("requests")]
            else:
                lat += [float(l) / 1e3 for l in lines if l]
                kv = dict(w.split("=") for w in open(f"{tmp}/gen_c{c}_{rep}.line").read().split()[1:])
                n += int(kv["completed"]); err += int(kv["errors"]); dur += float(kv["duration_s"])
        rates[(c, tool)] = n / dur
        meds[(c, tool)] = q(lat, 0.5)
        name = "wrk" if tool == "wrk" else "ktrial loadgen"
        print(f"| {c} | {name} | {n} | {err} | {n / dur:.2f} | {q(lat, .5):.1f} | {q(lat, .9):.1f} | {q(lat, .99):.1f} |")
print()
for c in sorted({1, conc}):
    r = meds[(c, "gen")] / meds[(c, "wrk")]
    good = abs(r - 1) <= 0.10
    ok &= good
    print(f"{'PASS' if good else 'FAIL'}: {c} connection(s): median ktrial/wrk = {r:.3f} (within 10%)")
r = rates[(1, "gen")] / rates[(1, "wrk")]
good = r >= 1.0
ok &= good
print(f"{'PASS' if good else 'FAIL'}: 1 connection: rate ktrial/wrk = {r:.3f} (at least 1)")
sys.exit(0 if ok else 1)
PY
