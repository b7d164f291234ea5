#!/usr/bin/env bash
# Builds, tests and times the CUDA variants in one go on a lent GPU machine (H200, sm_90;
# about 8 minutes in all). Writes under $OUT (default build/gpu-out), six files at most, as the
# device tool brings back only a few:
#   ctest-gpu.txt        the gpu-labelled tests
#   bench_cuda.txt       achieved TFLOP/s and TB/s per variant against measured ceilings
#   <name>.result.json   the result of each short experiment (archives stay in build/gpu-runs)
# On a device machine with no registry: run tests/gpu/fetch-deps.sh here first, carry .gpu-deps.
# Exit status: that of `ctest -L gpu` (the timings are reported, never judged here).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/build/gpu-out}
mkdir -p "$OUT"
jobs=$(nproc)

# A GPU machine here reaches no package registry: tests/gpu/fetch-deps.sh downloads the .deb
# files beforehand, the device tool carries .gpu-deps, and they are unpacked into a private root.
if [ -d .gpu-deps ] && ls .gpu-deps/*.deb >/dev/null 2>&1; then
    root=$PWD/.gpu-deps/root
    for f in .gpu-deps/*.deb; do dpkg -x "$f" "$root"; done
    lib=$root/usr/lib/x86_64-linux-gnu
    export PKG_CONFIG=$root/usr/bin/pkgconf
    export PKG_CONFIG_PATH=$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$root/usr/share/pkgconfig
    export PKG_CONFIG_SYSROOT_DIR=$root
    export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH=$root/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
else
    scripts/setup.sh || { echo "run.sh: setup failed (no registry? see tests/gpu/fetch-deps.sh)" >&2; exit 1; }
fi
cmake -S . -B build -DKT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
    > build-configure.log 2>&1 || { tail -30 build-configure.log; exit 1; }
grep -A12 'feature summary' build-configure.log
cmake --build build -j"$jobs" > build-make.log 2>&1 || { tail -40 build-make.log; exit 1; }

echo "== ctest -L gpu"
(cd build && timeout 240 ctest -L gpu --output-on-failure) 2>&1 | tee "$OUT/ctest-gpu.txt"
tests_rc=${PIPESTATUS[0]}

echo "== bench_cuda (median of 20, L2 flushed, bf16)"
timeout 120 ./build/tests/bench_cuda 2>&1 | tee "$OUT/bench_cuda.txt"

for spec in experiments/gpu/*.yaml; do
    name=$(basename "$spec" .yaml)
    echo "== ktrial run $spec"
    rm -rf "build/gpu-runs/$name"
    timeout 60 ./build/ktrial run "$spec" --backend cuda -o "build/gpu-runs/$name" 2>&1 | tail -25
    echo "$name: exit ${PIPESTATUS[0]}"
    cp "build/gpu-runs/$name/result.json" "$OUT/$name.result.json" 2>/dev/null
done
exit "$tests_rc"
