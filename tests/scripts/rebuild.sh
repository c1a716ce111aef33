#!/usr/bin/env bash
# The memory-free adjoint modes (reversible, backsolve) against store mode, run through the
# apps with mpiexec. Each case asserts numbers read from the summary and from /stats.
# Every case with NP > 1 also runs the mode on one rank: the gradient must agree to 1e-12.
# Usage: rebuild.sh MPIEXEC NP CASE APP [app args...]
#   fallback:   backsolve on a diffusive problem: every segment drifts past drift_tol, falls
#               back, and the gradient equals store mode's bit for bit (h5diff, exact); abort
#               exits non-zero with the drift message and no result file; warn reports the
#               gradient with the drift it accepted.
#   reversible: the leapfrog's inverse step: drift at rounding level (<= 1e-11), no fallback,
#               every /gradient dataset within 1e-10 of store mode (relative 2-norm); with a drift_tol
#               below the rounding every segment falls back and the gradient is bitwise
#               (skipped when REBUILD_SKIP_ALL_FALLBACK=1).
#   exact:      the fixed-point leapfrog (-leapfrog_exact true in the app args): drift exactly
#               0, no fallback, and the gradient equals store mode's (same stepper) bit for bit.
#   With REBUILD_DISK_ARGS (disk options for the memory-free runs) and REBUILD_DISK_DIR the
#   anchors live in the HDF5 store: each is written and read once, and no file is left.
#   close:      backsolve on a smooth ODE: no fallback at the default tolerance and the
#               gradient within 1e-6 of store mode (relative 2-norm of each dataset).
set -u
mpiexec=$1 np=$2 case=$3 app=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
relnorm=$(dirname "$0")/h5_relnorm.py
run() { "$mpiexec" -n "$np" --oversubscribe "$app" "$@" -progress off 2>&1; }
fail=0
die() { echo "FAIL: $*"; fail=1; }
attr() { # file name -> value of /stats attribute
  h5dump -a "/stats/$2" "$1" 2>/dev/null | sed -n 's/^ *(0): *//p' | head -1 | tr -d '"'
}
out=$(run "$@" -adjoint_mode store -output "$work/ref.h5") || { echo "$out"; echo "FAIL: store run"; exit 1; }
mode=backsolve
[ "$case" = reversible ] || [ "$case" = exact ] && mode=reversible
# shellcheck disable=SC2206 # REBUILD_DISK_ARGS: options, split on blanks
disk=(${REBUILD_DISK_ARGS:-})
o=$(run "$@" "${disk[@]}" -adjoint_mode "$mode" -output "$work/m.h5") || { echo "$o"; echo "FAIL: $mode run"; exit 1; }
echo "$o" | grep -E "adjoint mode|drift:"
segs=$(attr "$work/m.h5" drift_segments)
fb=$(attr "$work/m.h5" drift_fallbacks)
dmax=$(attr "$work/m.h5" drift_max)
[ -n "$segs" ] && [ "$segs" -ge 2 ] || die "expected >= 2 drift segments in /stats, got '$segs'"
# Anchors on disk (REBUILD_DISK_ARGS, e.g. "-checkpoint_disk_slots 8 -checkpoint_dir D", given
# to the memory-free runs, and REBUILD_DISK_DIR = D): every anchor went through the HDF5
# store, written once and read once, and the files are gone.
if [ -n "${REBUILD_DISK_DIR:-}" ]; then
  na=$(attr "$work/m.h5" anchors)
  dw=$(attr "$work/m.h5" disk_writes)
  dr=$(attr "$work/m.h5" disk_reads)
  ds=$(attr "$work/m.h5" checkpoint_disk_slots)
  [ -n "$na" ] && [ "$ds" = "$na" ] && [ "$dw" = "$na" ] && [ "$dr" = "$na" ] ||
    die "disk anchors: $na anchors, $ds disk slots, $dw writes, $dr reads (expected all equal)"
  [ -z "$(ls -A "$REBUILD_DISK_DIR")" ] || die "anchor files left in $REBUILD_DISK_DIR"
  echo "disk anchors: $na written and read once each"
fi
# Rank invariance: the same mode on one rank gives the same gradient (fields bit for bit, the
# dJ/dp sums up to their order over ranks: 1e-12 relative 2-norm covers both)
# (with the same anchors: a byte budget gives each rank count its own slot count)
if [ "$np" -gt 1 ]; then
  k=$(attr "$work/m.h5" anchor_interval)
  nslots=$(( $(attr "$work/m.h5" anchors) + $(attr "$work/m.h5" fallback_slots) ))
  o1=$("$mpiexec" -n 1 "$app" "$@" "${disk[@]}" -adjoint_mode "$mode" -progress off -output "$work/one.h5" \
    -checkpoint_ram 0 -checkpoint_slots "$nslots" -drift_interval "$k" 2>&1) ||
    { echo "$o1"; die "$mode run on 1 rank failed"; }
  "$relnorm" "$work/one.h5" "$work/m.h5" /gradient 1e-12 >"$work/d.txt" 2>&1 ||
    { cat "$work/d.txt"; die "$mode gradient on $np ranks differs from 1 rank"; }
  echo "ranks: $(tail -1 "$work/d.txt") against 1 rank"
fi
case $case in
fallback)
  [ "$fb" = "$segs" ] || die "every segment should fall back: $fb of $segs did"
  h5diff "$work/ref.h5" "$work/m.h5" /gradient /gradient >"$work/d.txt" 2>&1 ||
    { head "$work/d.txt"; die "fallback gradient differs from store mode"; }
  o=$(run "$@" -adjoint_mode backsolve -drift_action abort -output "$work/abort.h5")
  rc=$?
  [ $rc -ne 0 ] || die "drift_action abort exited 0"
  echo "$o" | grep -q "drifted by .* above drift_tol" || { echo "$o"; die "no drift message"; }
  echo "$o" | grep -q "objective J\|dJ/d" && die "abort printed a result"
  ls "$work"/abort.h5* >/dev/null 2>&1 && die "abort left a result file"
  o=$(run "$@" -adjoint_mode backsolve -drift_action warn -output "$work/warn.h5") || { echo "$o"; die "warn run failed"; }
  echo "$o" | grep -q "WARNING: drift .* above drift_tol" || die "warn did not warn"
  acc=$(attr "$work/warn.h5" drift_accepted_max)
  awk -v a="$acc" 'BEGIN { exit !(a > 1e-6) }' || die "warn: drift_accepted_max '$acc' not recorded"
  ;;
reversible)
  [ "$fb" = 0 ] || die "reversible fell back $fb times"
  awk -v d="$dmax" 'BEGIN { exit !(d <= 1e-11) }' || die "reversible drift $dmax > 1e-11"
  "$relnorm" "$work/ref.h5" "$work/m.h5" /gradient 1e-10 >"$work/d.txt" 2>&1 ||
    { cat "$work/d.txt"; die "reversible gradient differs from store mode by more than 1e-10 relative"; }
  tail -1 "$work/d.txt"
  if [ "${REBUILD_SKIP_ALL_FALLBACK:-0}" != 1 ]; then
    o=$(run "$@" -adjoint_mode reversible -drift_tol 1e-300 -output "$work/fb.h5") || { echo "$o"; die "run failed"; }
    h5diff "$work/ref.h5" "$work/fb.h5" /gradient /gradient >"$work/d.txt" 2>&1 ||
      { head "$work/d.txt"; die "all-fallback gradient differs from store mode"; }
  else
    echo "not run here: the all-fallback case (drift_tol below the rounding, bitwise against" \
      "store mode), REBUILD_SKIP_ALL_FALLBACK=1: the shorter cases run it (suite time)"
  fi
  ;;
exact)
  [ "$fb" = 0 ] || die "exact leapfrog fell back $fb times"
  [ "$dmax" = 0 ] || die "exact leapfrog drift $dmax, expected exactly 0"
  h5diff "$work/ref.h5" "$work/m.h5" /gradient /gradient >"$work/d.txt" 2>&1 ||
    { head "$work/d.txt"; die "exact reversible gradient differs from store mode"; }
  echo "drift 0, gradient bit for bit"
  ;;
close)
  [ "$fb" = 0 ] || die "backsolve fell back $fb times on a smooth problem"
  "$relnorm" "$work/ref.h5" "$work/m.h5" /gradient 1e-6 >"$work/d.txt" 2>&1 ||
    { cat "$work/d.txt"; die "backsolve gradient differs from store mode by more than 1e-6 relative"; }
  tail -1 "$work/d.txt"
  ;;
esac
[ $fail -eq 0 ] && echo "PASS"
exit $fail
