#!/usr/bin/env bash
# Installs dependencies, builds the CI configuration (Debug, AddressSanitizer + UBSan,
# -Werror, CUDA when nvcc is present) and runs every test through ctest. Ends with the line
# "N passed, N failed[, N skipped]" and exits non-zero when a test failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
. scripts/env.sh
preset=${REWIND_TEST_PRESET:-ci}
cmake --preset "$preset" >/dev/null
blog=$(mktemp)
if ! cmake --build --preset "$preset" -j "$(nproc)" >"$blog" 2>&1; then
  grep -E -B2 -A8 "error|Error" "$blog" | tail -80
  echo "0 passed, 1 failed (the build failed)"
  exit 1
fi
rm -f "$blog"
log=$(mktemp)
set +e
ctest --preset "$preset" -j "$(nproc)" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
passed=$(grep -cE "Test +#[0-9]+: .* +Passed" "$log" || true)
failed=$(grep -cE "Test +#[0-9]+: .*\*\*\*(Failed|Exception|Timeout)|Test +#[0-9]+: .* +Not Run" "$log" || true)
skipped=$(grep -cE "Test +#[0-9]+: .*\*\*\*Skipped" "$log" || true)
rm -f "$log"
line="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
echo "$line"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
