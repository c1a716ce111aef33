#!/usr/bin/env bash
# A disk that is full, or fills up while a result is written: mounts small tmpfs file systems
# (needs root; skips with exit 77 otherwise) and checks that the app ends with a clear message
# and exit 1 on every rank, never a crash (HDF5 1.10 crashed in MPI_Finalize after a failed
# close) or a hang (ranks left HDF5's collective flush at different barriers), and leaves no
# partial file behind. 1. The disk is full before the run. 2. Another writer fills it while
# the run writes its snapshots (three start delays: the run may finish first, fail writing a
# snapshot, or fail closing; each must end cleanly).
# Usage: disk_fills.sh MPIEXEC NP APP [args...]
set -u
mpiexec=$1 np=$2 app=$3
shift 3
dir=$(mktemp -d)
if ! mount -t tmpfs -o size=256k tmpfs "$dir" 2>/dev/null; then
  rmdir "$dir"
  echo "SKIP: cannot mount a small tmpfs here (needs root and mount permission)"
  exit 77
fi
trap 'umount "$dir" 2>/dev/null; rmdir "$dir"' EXIT
fail=0
dd if=/dev/zero of="$dir/filler" bs=1k count=256 2>/dev/null
out=$(timeout 120 "$mpiexec" -n "$np" --oversubscribe "$app" "$@" -output "$dir/result.h5" \
  -progress off 2>&1)
rc=$?
echo "full disk: exit $rc"
echo "$out" | head -5
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc on a full disk (1 wanted: not 0, no crash, no hang)"; fail=1; }
echo "$out" | grep -q "not enough free space for '$dir/result.h5'" ||
  { echo "FAIL: no clear disk-full message"; fail=1; }
left=$(ls -A "$dir" | grep -v '^filler$')
[ -z "$left" ] || { echo "FAIL: left behind: $left"; fail=1; }
umount "$dir"
for delay in 0.4 0.8 1.2; do
  mount -t tmpfs -o size=48m tmpfs "$dir" || { echo "FAIL: cannot mount again"; exit 1; }
  (sleep "$delay"; dd if=/dev/zero of="$dir/filler" bs=1M count=64 2>/dev/null) &
  out=$(timeout 120 "$mpiexec" -n "$np" --oversubscribe "$app" "$@" -output "$dir/result.h5" \
    -progress off 2>&1)
  rc=$?
  wait
  left=$(ls -A "$dir" | grep -v '^filler$' | tr '\n' ' ')
  echo "filled after ${delay} s: exit $rc, left: ${left:-nothing}"
  echo "$out" | grep -m1 "error" | cut -c1-200
  case $rc in
  0) [ -f "$dir/result.h5" ] || { echo "FAIL: exit 0 without the result"; fail=1; } ;;
  1) echo "$out" | grep -q "error" || { echo "FAIL: exit 1 without a message"; fail=1; }
     ls "$dir" | grep -q 'partial' && { echo "FAIL: partial files left"; fail=1; } ;;
  *) echo "FAIL: exit $rc (a crash or a hang)"; fail=1 ;;
  esac
  umount "$dir"
done
[ "$fail" -eq 0 ] && echo "PASS: every run ended cleanly"
exit "$fail"
