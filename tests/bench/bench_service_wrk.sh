#!/bin/sh
# bench_service_wrk.sh - does the service trials' load generator agree with wrk? Starts
# examples/serving's kt_serve on a free loopback port, then drives its non-streaming endpoint
# (the request of examples/serving/wrk_post.lua) in closed loop at 1 connection and at CONC
# connections, alternately with wrk and with ktrial's generator (tests/bench/bench_loadgen.c),
# REPS times each (which goes first alternates), in one run. Every run is a window of
# SECONDS_PER_RUN seconds and counts, as wrk -d does, the requests completed within it (the
# generator's still out when the window closes are cut and not counted). Then each tool's
# ceiling: GET /health at 1 connection, where the server does next to nothing.
#
# Prints, per concurrency, both medians (pooled over the runs, wrk's from its full latency
# histogram) and both rates (completed / window), and checks what issue 40 asks:
#  - the medians agree within 10%;
#  - the generator sustains at least wrk's rate at 1 connection: the ratio of the rates, with a
#    95% interval from the paired runs (each generator run against the wrk run next to it), is
#    not below 1 beyond that interval (the server sets the rate; two equal generators would
#    read lower half the time by noise alone).
# Exit 1 when a check fails (never with --quick, whose figures mean nothing).
#
#   tests/bench/bench_service_wrk.sh [--quick] [BUILD_DIR]
#
# Environment: REPS (default 10), SECONDS_PER_RUN (5), SETTLE_S (3), CONC (4), SERVE_ARGS (default
# "--model qwen2.5-0.5b --layers 1 --context 256"). --quick: 1 rep of 2 s, to see that it
# works. Exits 69 without wrk or kt_serve.
#
# Like with like: wrk times a request from its write on the connection to the response's end;
# the generator from when the request was due (closed loop: when its connection freed) to the
# end, a few microseconds more. Both keep their connections alive, on 1 thread each, and both
# start each window on an idle server with no connection open (see settle below).
set -eu
reps=${REPS:-10}
secs=${SECONDS_PER_RUN:-5}
settle_s=${SETTLE_S:-3}
quick=0
if [ "${1:-}" = "--quick" ]; then
    reps=1
    secs=2
    settle_s=1
    quick=1
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

# Before every run the server is left SETTLE_S seconds to finish the requests the last run cut
# at its window's end (a server decodes an abandoned request to its end): each window starts on
# an idle server, and neither tool opens its connections before it (no warm-up round).
settle() { sleep "$settle_s"; }
run_wrk() { # conc rep
    settle
    KT_WRK_OUT=$tmp/wrk_c$1_$2.txt wrk -t1 -c"$1" -d"${secs}s" --timeout 60s \
        -s tests/bench/wrk_latencies.lua "$url" >/dev/null
}
run_gen() { # conc rep
    settle
    "$gen" --port "$port" --body "$body" --concurrency "$1" --duration "$secs" --warmup 0 \
        --timeout 60 --raw "$tmp/gen_c$1_$2.txt" >"$tmp/gen_c$1_$2.line"
}

echo "bench_service_wrk: kt_serve on port $port; $reps reps of $secs s at 1 and $conc connections; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
KT_WRK_OUT=$tmp/warm.txt wrk -t1 -c1 -d1s --timeout 60s -s tests/bench/wrk_latencies.lua "$url" >/dev/null
rep=1
while [ $rep -le "$reps" ]; do
    for c in 1 "$conc"; do
        if [ $((rep % 2)) -eq 1 ]; then
            run_wrk "$c" $rep
            run_gen "$c" $rep
        else
            run_gen "$c" $rep
            run_wrk "$c" $rep
        fi
    done
    rep=$((rep + 1))
done
# the ceilings: GET /health, 1 connection: wrk for 3 s, the generator 20000 requests (its rate
# over the round's span: a window would also time its setting up of 20000 records)
settle
wrk -t1 -c1 -d3s "http://127.0.0.1:$port/health" >"$tmp/wrk_health.txt"
"$gen" --port "$port" --method GET --path /health --body "" --concurrency 1 --requests 20000 \
    >"$tmp/gen_health.line"
echo "bench_service_wrk: done; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

/usr/bin/python3 - "$tmp" "$reps" "$conc" "$secs" "$quick" <<'PY'
import math, statistics, sys
tmp, reps, conc, secs, quick = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"

def quantile(v, p):
    v = sorted(v)
    pos = p * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)

def gen_line(path):
    return dict(w.split("=") for w in open(path).read().split()[1:])

def run(tool, c, rep):
    """(latencies in ms, completed, errors, window s) of one run"""
    lines = open(f"{tmp}/{tool}_c{c}_{rep}.txt").read().split("\n")
    if tool == "wrk":
        tail = [l for l in lines if l.startswith("requests")][0].split()
        lat = [float(l) / 1e3 for l in lines if l and not l.startswith("requests")]
        return lat, int(tail[1]), int(tail[3]), int(tail[5]) / 1e6
    kv = gen_line(f"{tmp}/gen_c{c}_{rep}.line")
    lat = [float(l) / 1e3 for l in lines if l]
    return lat, int(kv["completed"]), int(kv["errors"]), float(kv["duration_s"])

ok = True
med, log_ratios = {}, {}
print(f"| connections | tool | runs x window | completed | errors | rate (req/s) | p50 (ms) | p90 (ms) | p99 (ms) |")
print("|---|---|---|---|---|---|---|---|---|")
for c in sorted({1, conc}):
    rates = {}
    for tool, name in (("wrk", "wrk"), ("gen", "ktrial loadgen")):
        runs = [run(tool, c, r) for r in range(1, reps + 1)]
        lat = [x for r in runs for x in r[0]]
        n, err, dur = sum(r[1] for r in runs), sum(r[2] for r in runs), sum(r[3] for r in runs)
        rates[tool] = [r[1] / r[3] for r in runs]
        med[(c, tool)] = quantile(lat, 0.5)
        print(f"| {c} | {name} | {reps} x {secs} s | {n} | {err} | {n / dur:.2f} | "
              f"{quantile(lat, .5):.1f} | {quantile(lat, .9):.1f} | {quantile(lat, .99):.1f} |")
    log_ratios[c] = [math.log(g / w) for g, w in zip(rates["gen"], rates["wrk"]) if g > 0 and w > 0]
wrk_health = [l for l in open(f"{tmp}/wrk_health.txt") if l.startswith("Requests/sec")][0].split()[1]
gh = gen_line(f"{tmp}/gen_health.line")
print(f"| 1, GET /health | wrk | 1 x 3 s | | | {float(wrk_health):.0f} | | | |")
print(f"| 1, GET /health | ktrial loadgen | 20000 requests | {gh['completed']} | {gh['errors']} | "
      f"{float(gh['rate_per_s']):.0f} | {float(gh['p50_ms']):.3f} | {float(gh['p90_ms']):.3f} | "
      f"{float(gh['p99_ms']):.3f} |")
print()
for c in sorted({1, conc}):
    r = med[(c, "gen")] / med[(c, "wrk")]
    good = abs(r - 1) <= 0.10
    ok &= good
    print(f"{'PASS' if good else 'FAIL'}: {c} connection(s): median ktrial/wrk = {r:.3f} (within 10%)")
for c in sorted({1, conc}):
    lr = log_ratios[c]
    m = statistics.mean(lr)
    if len(lr) > 1:
        try:
            from scipy.stats import t
            tq = t.ppf(0.975, len(lr) - 1)
        except ImportError:
            tq = 2.0
        half = tq * statistics.stdev(lr) / math.sqrt(len(lr))
    else:
        half = float("inf")
    lo, hi = math.exp(m - half), math.exp(m + half)
    line = f"{c} connection(s): rate ktrial/wrk = {math.exp(m):.3f}, 95% interval [{lo:.3f}, {hi:.3f}] over {len(lr)} paired runs"
    if c == 1:
        good = hi >= 1.0
        ok &= good
        print(f"{'PASS' if good else 'FAIL'}: {line} (not below 1 beyond the interval)")
    else:
        print(f"info: {line}")
if quick:
    print("(--quick: the checks above are not enforced)")
sys.exit(0 if ok or quick else 1)
PY
