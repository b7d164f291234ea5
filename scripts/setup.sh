#!/usr/bin/env bash
# Installs the Debian 12 packages ktrial needs to build and test. Idempotent: prints nothing
# when everything is already there. Run as root (or through sudo).
set -euo pipefail
pkgs=(build-essential cmake pkg-config git libyaml-dev libgit2-dev libcjson-dev
      libopenblas-dev libcmocka-dev libssl-dev python3 python3-jsonschema python3-scipy python3-yaml
      slurm-wlm munge chromium libxml2-utils fonts-dejavu-core clang-format
      libdnnl-dev libmicrohttpd-dev libcurl4-openssl-dev
      libpython3-dev libdlpack-dev python3-numpy python3-torch)
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
