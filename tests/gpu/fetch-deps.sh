#!/usr/bin/env bash
# Downloads (here, where Debian's registry answers) the .deb files of the libraries ktrial links,
# into .gpu-deps/ (git-ignored), for a GPU machine that reaches no registry: carry .gpu-deps
# with the device tool and tests/gpu/run.sh unpacks them into a private root (never into /).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-deps
cd .gpu-deps
pkgs=(libyaml-dev libyaml-0-2 libgit2-dev libgit2-1.5 libhttp-parser2.9 libssh2-1 libmbedtls14
      libmbedx509-1 libmbedcrypto7 libpcre2-8-0 libgssapi-krb5-2 libkrb5-3 libk5crypto3
      libcom-err2 libkrb5support0 libkeyutils1 libcjson-dev libcjson1 libopenblas-dev
      libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5 libcmocka-dev
      libcmocka0 libssl-dev libssl3 pkgconf pkgconf-bin libpkgconf3)
for p in "${pkgs[@]}"; do
    ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download -q "$p" >/dev/null 2>&1 || { echo "fetch-deps: cannot download $p" >&2; exit 1; }
done
du -sh .
