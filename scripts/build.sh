#!/usr/bin/env bash
# Installs dependencies, configures and builds Rewind (Release, preset "release") into
# build/release. Usage: scripts/build.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
preset=${1:-release}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" >/dev/null
