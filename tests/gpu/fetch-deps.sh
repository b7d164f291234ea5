#!/usr/bin/env bash
# Downloads (here, where Debian's registry answers) the .deb files of everything ktrial's
# configure and build read from Debian, into .gpu-deps/ (git-ignored), for a GPU machine
# that reaches no registry: carry .gpu-deps with the device tool and tests/gpu/run.sh unpacks
# them into a private root (never into /).
#
# The list is every .pc file's Requires/Requires.private closure (libgit2.pc requires
# libpcre2-8 and zlib), the headers and link-time .so symlinks (the -dev packages), and the
# shared libraries those load (the runtime packages). tests/gpu/check-deps.sh proves it
# complete: it configures and builds against the private root with every -dev package of
# this machine hidden. Under 64 MiB with the tree, as the device tool requires.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-deps
cd .gpu-deps
pkgs=(
    # the libraries ktrial links (-dev: .pc, headers, .so symlink; then the runtime library)
    libyaml-dev libyaml-0-2 libcjson-dev libcjson1 libcmocka-dev libcmocka0 libssl-dev libssl3
    libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5
    libgit2-dev libgit2-1.5
    # libgit2.pc: Requires.private: libpcre2-8 zlib (pkg-config reads them even for --cflags)
    libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 zlib1g-dev zlib1g
    # what libgit2-1.5 loads
    libhttp-parser2.9 libssh2-1 libmbedtls14 libmbedx509-1 libmbedcrypto7
    libgssapi-krb5-2 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0 libkeyutils1
    # pkg-config itself (the device image has CMake but not necessarily pkg-config)
    pkgconf pkgconf-bin libpkgconf3)
for p in "${pkgs[@]}"; do
    ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download -q "$p" >/dev/null 2>&1 ||
        { echo "fetch-deps: cannot download $p" >&2; exit 1; }
done
du -ch ./*.deb | tail -1
