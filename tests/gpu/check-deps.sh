#!/usr/bin/env bash
# Proves .gpu-deps complete on a CPU machine: configures and builds ktrial, the GPU test and
# bench_cuda against the private root (tests/gpu/private-root.sh) in a mount namespace where
# every -dev package of this machine is hidden: the .pc directories are empty and
# /usr/include holds only the C/C++ toolchain's headers (libc6-dev, linux-libc-dev,
# libcrypt-dev, libnsl-dev, libtirpc-dev, libstdc++/libgcc -dev). Needs root (unshare -m).
#   tests/gpu/check-deps.sh [BUILD_DIR]     (default build-deps-check; exit 0 = complete)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-deps-check}
if [ "${KT_IN_NAMESPACE:-}" != 1 ]; then
    tests/gpu/fetch-deps.sh
    [ "$(id -u)" -eq 0 ] || { echo "check-deps: needs root for unshare -m" >&2; exit 77; }
    exec env KT_IN_NAMESPACE=1 unshare -m --propagation private "$0" "$@"
fi

# /usr/include with the toolchain's headers only
inc=$(mktemp -d /tmp/kt-include.XXXXXX)
toolchain=$(dpkg-query -W -f '${Package}\n' | grep -E \
    '^(libc6-dev|linux-libc-dev|libcrypt-dev|libnsl-dev|libtirpc-dev|libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev)$')
dpkg -L $toolchain | grep '^/usr/include/' | while read -r f; do
    if [ -f "$f" ] && [ ! -L "$f" ]; then mkdir -p "$inc$(dirname "$f")" && cp -p "$f" "$inc$f"; fi
done
# symlinked directories of the toolchain (e.g. asm -> x86_64-linux-gnu/asm)
(cd /usr/include && find . -maxdepth 1 -type l) | while read -r l; do
    t=$(readlink "/usr/include/$l")
    if [ -e "$inc/usr/include/$t" ]; then ln -s "$t" "$inc/usr/include/$l"; fi
done
mount --bind "$inc/usr/include" /usr/include
empty=$(mktemp -d /tmp/kt-empty.XXXXXX)
for d in /usr/lib/x86_64-linux-gnu/pkgconfig /usr/lib/pkgconfig /usr/share/pkgconfig \
    /usr/local/lib/pkgconfig /usr/local/share/pkgconfig; do
    if [ -d "$d" ]; then mount --bind "$empty" "$d"; fi
done
hidden=$(dpkg-query -W -f '${Package}\n' | grep -- '-dev$' | grep -v -x -F "$toolchain" | wc -l)
echo "check-deps: $hidden -dev packages hidden; /usr/include has $(find /usr/include -type f | wc -l) toolchain headers"
for h in git2.h yaml.h cjson/cJSON.h cmocka.h openssl/sha.h zlib.h pcre2.h; do
    [ ! -e "/usr/include/$h" ] || { echo "check-deps: /usr/include/$h is still visible" >&2; exit 1; }
done

. tests/gpu/private-root.sh
kt_private_root
rm -rf "$build"
cmake -S . -B "$build" -DKT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
    >"$build.configure.log" 2>&1 || { tail -30 "$build.configure.log"; echo "check-deps: configure FAILED"; exit 1; }
grep -E 'OpenBLAS|libyaml|libgit2|cJSON' "$build.configure.log"
cmake --build "$build" -j"${JOBS:-2}" --target ktrial test_cuda_kernels bench_cuda \
    >"$build.build.log" 2>&1 || { tail -30 "$build.build.log"; echo "check-deps: build FAILED"; exit 1; }
# every library ktrial loads from Debian resolves into the private root
ldd "$build/ktrial" | grep -E 'yaml|git2|cjson|openblas|crypto|pcre2|libz' | tee "$build.ldd.log"
if grep -E 'yaml|git2|cjson|openblas' "$build.ldd.log" | grep -v -q "$KT_PRIVATE_ROOT"; then
    echo "check-deps: a library resolved outside the private root" >&2; exit 1
fi
"$build/ktrial" --version
echo "check-deps: configure and build against the private root succeeded"
