# private-root.sh - sourced by run.sh and check-deps.sh: unpacks the .deb files in
# .gpu-deps/ (tests/gpu/fetch-deps.sh) into .gpu-root/ (beside it, so that carrying
# .gpu-deps carries the 22 MB of .deb files only) and points pkg-config, the compiler and
# the loader at it. Never writes outside the repository.
kt_private_root() {
    local root=$PWD/.gpu-root f
    ls .gpu-deps/*.deb >/dev/null 2>&1 || { echo "no .deb files in .gpu-deps" >&2; return 1; }
    mkdir -p "$root"
    for f in .gpu-deps/*.deb; do dpkg -x "$f" "$root" || return 1; done
    local lib=$root/usr/lib/x86_64-linux-gnu
    export PKG_CONFIG=$root/usr/bin/pkgconf
    export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$root/usr/share/pkgconfig
    export PKG_CONFIG_PATH=$PKG_CONFIG_LIBDIR
    export PKG_CONFIG_SYSROOT_DIR=$root
    export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread:$root/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # multiarch headers (openssl/opensslconf.h, configuration.h): the compiler searches
    # /usr/include/x86_64-linux-gnu by itself, but not the root's
    export C_INCLUDE_PATH=$root/usr/include/x86_64-linux-gnu${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}
    export KT_PRIVATE_ROOT=$root
}
