#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] - builds the libFuzzer targets with clang, ASan and UBSan in
# build-fuzz/, then fuzzes the spec loader and the result loader for SECONDS each (default
# 60) from the seed corpora in tests/fuzz/corpus/. New inputs go to build-fuzz/corpus/, never
# into the repository. Exits non-zero on a crash, a leak or a sanitizer report (libFuzzer
# leaves the input as build-fuzz/crash-*). Without clang it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
if ! command -v clang >/dev/null; then
    echo "tests/fuzz/run.sh: clang not found; fuzzing skipped" >&2
    exit 0
fi
flags="-Wno-unknown-warning-option -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DKT_CUDA=OFF -DKT_BUILD_TESTS=OFF \
    -DKT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$flags" >/dev/null
cmake --build build-fuzz -j2 --target fuzz_spec fuzz_result >/dev/null
for target in spec result; do
    mkdir -p "build-fuzz/corpus/$target"
    echo "+ fuzz_$target for ${seconds}s"
    (cd build-fuzz && ./tests/fuzz/fuzz_$target -max_total_time="$seconds" -max_len=65536 \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "corpus/$target" "../tests/fuzz/corpus/$target" 2>&1 | tail -n 12)
done
