#!/usr/bin/env bash
# Installs the Debian 12 packages Rewind needs to build, test and run. Idempotent and quiet
# when everything is already there. Needs root (or sudo) only when something is missing.
set -euo pipefail
PKGS=(build-essential cmake pkg-config ca-certificates
      openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
      libsundials-dev petsc-dev libyaml-dev libcriterion-dev libopenblas-dev libxsmm-dev
      python3 python3-h5py python3-numpy python3-matplotlib libxml2-utils time)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "rewind: installing Debian packages: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "rewind: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
