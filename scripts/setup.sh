#!/usr/bin/env bash
# Installs the Debian 12 packages ktrial needs. Idempotent: prints nothing when everything is
# already there. Run as root (or through sudo).
#   scripts/setup.sh         what building and running ktrial need (the README's first command)
#   scripts/setup.sh --dev   that, and what the test suite needs (the README's second command):
#                            cmocka, Python's jsonschema/scipy/yaml/numpy/torch, a headless
#                            browser, Slurm and munge, clang-format, man, wrk and hyperfine
set -euo pipefail
# build and run: compiler and CMake, the libraries ktrial links (libyaml, libgit2, cJSON,
# OpenBLAS, libcrypto, oneDNN), the service trials' (libcurl, libmicrohttpd) and the Python
# arms' (libpython3, DLPack headers, NumPy; torch arms need python3-torch, which --dev adds)
pkgs=(build-essential cmake pkg-config git libyaml-dev libgit2-dev libcjson-dev
      libopenblas-dev libssl-dev libdnnl-dev libmicrohttpd-dev libcurl4-openssl-dev
      libpython3-dev libdlpack-dev python3-numpy)
case "${1:-}" in
    "") ;;
    --dev)
        # tests only: the unit tests' framework, the CLI tests' Python and its modules (schema
        # checks, scipy's statistics as the oracle, numpy and torch for the Python arm's tests),
        # the HTML report's browser check and fonts, xmllint for JUnit, the one-node Slurm
        # cluster, the format check, man for ktrial(1), the benchmarks' reference tools, and
        # ccache, which lets the reproduce test's second build of ktrial reuse its first's objects
        pkgs+=(libcmocka-dev python3 python3-jsonschema python3-scipy python3-yaml python3-numpy
               python3-torch chromium fonts-dejavu-core libxml2-utils slurm-wlm munge
               clang-format man-db wrk hyperfine ccache)
        ;;
    *)
        echo "usage: scripts/setup.sh [--dev]" >&2
        exit 64
        ;;
esac
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
