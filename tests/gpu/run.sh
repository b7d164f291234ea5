#!/usr/bin/env bash
# tests/gpu/run.sh - the one script to run on a lent GPU machine (H200, sm_90), bounded to
# 8 minutes in all: builds for sm_90 only, runs the GPU tests (test_cuda_kernels, then
# test_cuda_decoder; a skip or a missing device is a failure here, never a pass),
# compute-sanitizer memcheck and racecheck on a small case, bench_cuda, the three
# experiments/gpu specs and experiments/decode-step-cuda.yaml (--quick), tests/gpu/python-arm.yaml
# (torch arms on device buffers; unavailable without a CUDA build of torch), and
# tests/gpu/profile.yaml under --profile
# (CUPTI counters, NVML energy; tests/gpu/check_profile.py). Writes into $OUT (default ./gpu-results):
#   summary.json          every check (name, status, seconds, detail) and bench_cuda's figures
#   run.log               everything printed
#   bench_cuda.json       bench_cuda's figures alone
#   <spec>.result.json    the result of each experiments/gpu spec
#   profile.result.json   the result of tests/gpu/profile.yaml
# A machine without a registry: run tests/gpu/fetch-deps.sh here first and carry .gpu-deps;
# the .deb files are unpacked into a private root (tests/gpu/private-root.sh), never into /.
# Exit: 0 every check passed; 1 some check failed; 69 no GPU (nothing built or run).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
budget=${KT_GPU_BUDGET_S:-470} # seconds; the device tool's 8-minute bound, less the transfers
build=${KT_GPU_BUILD_DIR:-build-gpu}
jobs=$(nproc)
checks=()
failed=0

json_str() {
    local s=$1
    s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\t'/ }; s=${s//$'\r'/}
    s=$(printf '%s' "$s" | tr -d '\000-\010\013-\037')
    printf '"%s"' "$s"
}
# check NAME STATUS SECONDS DETAIL: STATUS pass | fail | skip | unavailable ('fail' fails the run)
check() {
    checks+=("{\"name\": $(json_str "$1"), \"status\": \"$2\", \"seconds\": $3, \"detail\": $(json_str "$4")}")
    [ "$2" = fail ] && failed=1
    printf 'run.sh: %-28s %s (%ss) %s\n' "$1" "$2" "$3" "${4%%$'\n'*}"
}
left() { echo $((budget - SECONDS)); }
# step_timeout CAP: CAP seconds, or what is left of the budget less 10 s, whichever is smaller
step_timeout() { local l=$(($(left) - 10)); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }
# have_time NAME: whether 20 s of the budget are left; if not, NAME fails as not run
have_time() {
    [ "$(left)" -ge 20 ] && return 0
    check "$1" fail 0 "not run: the ${budget}s budget is spent"
    return 1
}
summary() {
    local status=$1 device=${2:-} bench=null IFS=,
    [ -s "$OUT/bench_cuda.json" ] && bench=$(cat "$OUT/bench_cuda.json")
    cat >"$OUT/summary.json" <<JSON
{
  "schema": "ktrial-gpu-run/1",
  "status": "$status",
  "commit": $(json_str "$(git rev-parse HEAD 2>/dev/null || echo unknown)"),
  "device": $(json_str "$device"),
  "seconds": $SECONDS,
  "budget_seconds": $budget,
  "checks": [${checks[*]}],
  "bench": $bench
}
JSON
}

# ---- 1. a GPU, before anything is built ----------------------------------------------------
t0=$SECONDS
device=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)
if [ $? -ne 0 ] || [ -z "$device" ]; then
    why=${device:-nvidia-smi printed nothing}
    command -v nvidia-smi >/dev/null || why="nvidia-smi not found"
    check gpu fail $((SECONDS - t0)) "no GPU: $why"
    summary "no GPU"
    echo "run.sh: no GPU ($why): nothing built or run" >&2
    exit 69
fi
check gpu pass $((SECONDS - t0)) "$device"

# ---- 2. dependencies ---------------------------------------------------------------------
t0=$SECONDS
if ls .gpu-deps/*.deb >/dev/null 2>&1; then
    . tests/gpu/private-root.sh
    if kt_private_root; then
        check deps pass $((SECONDS - t0)) "private root $KT_PRIVATE_ROOT from .gpu-deps"
    else
        check deps fail $((SECONDS - t0)) "cannot unpack .gpu-deps"
    fi
elif pkg-config --exists yaml-0.1 libgit2 libcjson openblas libcrypto cmocka 2>/dev/null ||
    scripts/setup.sh; then
    check deps pass $((SECONDS - t0)) "system packages"
else
    check deps fail $((SECONDS - t0)) "no .gpu-deps and scripts/setup.sh failed (no registry? run tests/gpu/fetch-deps.sh where one answers and carry .gpu-deps)"
fi

# ---- 3. build (sm_90 only) -----------------------------------------------------------------
built=0
if [ $failed -eq 0 ]; then
    t0=$SECONDS
    if timeout "$(step_timeout 60)" cmake -S . -B "$build" -DKT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 &&
        timeout "$(step_timeout 200)" cmake --build "$build" -j"$jobs" \
            --target ktrial test_cuda_kernels test_cuda_decoder bench_cuda >"$build.build.log" 2>&1; then
        built=1
        check build pass $((SECONDS - t0)) "$(grep -m1 'CUDA backend' "$build.configure.log")"
    else
        check build fail $((SECONDS - t0)) "$(tail -25 "$build.configure.log" "$build.build.log" 2>/dev/null)"
    fi
fi

# ---- 4. the GPU tests: a skip (77) is a failure here ---------------------------------------
# gpu_test CHECK PROGRAM CAP: runs tests/PROGRAM of the build for at most CAP seconds; a check
# per cmocka test ('test/<name>') and CHECK for the program
gpu_test() {
    local t0=$SECONDS tout rc
    echo "== $2"
    tout=$(CMOCKA_MESSAGE_OUTPUT=stdout timeout "$(step_timeout "$3")" "$build/tests/$2" 2>&1)
    rc=$?
    printf '%s\n' "$tout"
    while read -r tag name; do
        [ "$tag" = OK ] && check "test/$name" pass 0 "" || check "test/$name" fail 0 "see run.log"
    done < <(printf '%s\n' "$tout" | sed -n 's/^\[ *\(OK\|FAILED\) *\] \(test_[a-z0-9_]*\)$/\1 \2/p')
    case $rc in
    0) check "$1" pass $((SECONDS - t0)) "$2: all passed" ;;
    77) check "$1" fail $((SECONDS - t0)) "GPU test SKIPPED, so nothing was checked: $(printf '%s' "$tout" | tail -3)" ;;
    124) check "$1" fail $((SECONDS - t0)) "$2 timed out" ;;
    *) check "$1" fail $((SECONDS - t0)) "$2 exit $rc" ;;
    esac
}
if [ $built -eq 1 ]; then
    gpu_test gpu-tests test_cuda_kernels 150
    # the decoder_layer variant: float64 checks, none vs graph, the per-stage profile (~10 s)
    have_time gpu-tests/decoder && gpu_test gpu-tests/decoder test_cuda_decoder 60

    # ---- 5. compute-sanitizer on the small case ----------------------------------------
    # sanitize CHECK TOOL PROGRAM CAP: compute-sanitizer TOOL on 'tests/PROGRAM --small'
    sanitize() {
        local t0=$SECONDS sout rc
        have_time "$1" || return 0
        if ! command -v compute-sanitizer >/dev/null; then
            check "$1" unavailable 0 "compute-sanitizer not found"
            return 0
        fi
        sout=$(timeout "$(step_timeout "$4")" compute-sanitizer --tool "$2" --error-exitcode 3 \
            "$build/tests/$3" --small 2>&1)
        rc=$?
        printf '%s\n' "$sout" | tail -15
        if printf '%s' "$sout" | grep -q -i 'device not supported'; then
            check "$1" unavailable $((SECONDS - t0)) "compute-sanitizer: device not supported on this machine"
        elif [ $rc -eq 0 ]; then
            check "$1" pass $((SECONDS - t0)) "$(printf '%s' "$sout" | grep -m1 'ERROR SUMMARY')"
        else
            check "$1" fail $((SECONDS - t0)) "exit $rc: $(printf '%s' "$sout" | tail -8)"
        fi
    }
    for tool in memcheck racecheck; do
        sanitize "sanitizer/$tool" "$tool" test_cuda_kernels 45
    done

    # ---- 6. figures --------------------------------------------------------------------
    if have_time bench; then
        t0=$SECONDS
        echo "== bench_cuda"
        timeout "$(step_timeout 100)" "$build/tests/bench_cuda" --json "$OUT/bench_cuda.json"
        rc=$?
        if [ $rc -eq 0 ] && [ -s "$OUT/bench_cuda.json" ]; then
            check bench pass $((SECONDS - t0)) "figures in bench_cuda.json and under \"bench\""
        else
            check bench fail $((SECONDS - t0)) "bench_cuda exit $rc"
            rm -f "$OUT/bench_cuda.json"
        fi
    fi

    # ---- 7. the experiments: a verdict (0, 1, 2) is a completed run ---------------------
    verdicts=(KEEP REJECT INCONCLUSIVE)
    # decode-step-cuda.yaml (fusion none vs graph) with --quick: its budget is minutes
    for spec in experiments/gpu/*.yaml experiments/decode-step-cuda.yaml; do
        name=$(basename "$spec" .yaml)
        t0=$SECONDS
        have_time "experiment/$name" || continue
        rm -rf "$build/gpu-runs/$name"
        echo "== ktrial run $spec"
        quick=() cap=40
        # its start-up (two llama-3.2-1b blocks at 8K, float64 references) is ~20 s on 16 cores
        [ "$name" = decode-step-cuda ] && quick=(--quick) cap=90
        timeout "$(step_timeout $cap)" "$build/ktrial" run "$spec" --backend cuda ${quick[@]+"${quick[@]}"} \
            -o "$build/gpu-runs/$name" 2>&1 | tail -12
        rc=${PIPESTATUS[0]}
        cp "$build/gpu-runs/$name/result.json" "$OUT/$name.result.json" 2>/dev/null
        case $rc in
        0 | 1 | 2) check "experiment/$name" pass $((SECONDS - t0)) "exit $rc (${verdicts[$rc]})" ;;
        *) check "experiment/$name" fail $((SECONDS - t0)) "exit $rc" ;;
        esac
    done

    # ---- 7a. Python arms on device buffers (DLPack kDLCUDA): needs a CUDA build of torch ----
    t0=$SECONDS
    if have_time python-arm; then
        if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
            check python-arm unavailable 0 "no torch with CUDA here (Debian's python3-torch is CPU-only)"
        else
            rm -rf "$build/gpu-runs/python-arm"
            echo "== ktrial run tests/gpu/python-arm.yaml"
            timeout "$(step_timeout 60)" "$build/ktrial" run tests/gpu/python-arm.yaml \
                -o "$build/gpu-runs/python-arm" 2>&1 | tail -12
            rc=${PIPESTATUS[0]}
            cp "$build/gpu-runs/python-arm/result.json" "$OUT/python-arm.result.json" 2>/dev/null
            # both arms must pass their checks: no failure recorded for either
            if [ "$rc" -le 2 ] && python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
bad = [c["name"] + ": " + str(c["failure"]) for p in d["points"] for c in p["candidates"] if c["failed"]]
print("\n".join(bad)); sys.exit(1 if bad else 0)' "$OUT/python-arm.result.json"; then
                check python-arm pass $((SECONDS - t0)) "exit $rc (${verdicts[$rc]})"
            else
                check python-arm fail $((SECONDS - t0)) "exit $rc, or an arm failed (see run.log)"
            fi
        fi
    fi

    # ---- 7b. memcheck on the decoder_layer variant's small case (last: the kernels come first)
    sanitize sanitizer/memcheck-decoder memcheck test_cuda_decoder 40

    # ---- 8. the GPU half of the profiling pass (CUPTI counters, NVML energy) ------------
    t0=$SECONDS
    if have_time profile; then
        rm -rf "$build/gpu-runs/profile"
        echo "== ktrial run tests/gpu/profile.yaml --profile"
        timeout "$(step_timeout 60)" "$build/ktrial" run tests/gpu/profile.yaml --profile \
            -o "$build/gpu-runs/profile" 2>&1 | tail -12
        rc=${PIPESTATUS[0]}
        cp "$build/gpu-runs/profile/result.json" "$OUT/profile.result.json" 2>/dev/null
        if [ "$rc" -gt 2 ]; then
            check profile fail $((SECONDS - t0)) "ktrial run exit $rc"
        else
            pout=$(python3 tests/gpu/check_profile.py "$OUT/profile.result.json" 2>&1)
            case $? in
            0) check profile pass $((SECONDS - t0)) "$(printf '%s' "$pout" | tail -2)" ;;
            3) check profile unavailable $((SECONDS - t0)) "$(printf '%s' "$pout" | tail -2)" ;;
            *) check profile fail $((SECONDS - t0)) "$(printf '%s' "$pout" | tail -8)" ;;
            esac
        fi
    fi
fi

status=pass
[ $failed -eq 0 ] || status=fail
summary "$status" "$device"
echo "run.sh: $status in ${SECONDS}s; summary in $OUT/summary.json"
[ $failed -eq 0 ]
