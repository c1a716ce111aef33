#!/usr/bin/env bash
# A full disk: mounts a 2 MiB tmpfs (needs root; skips with exit 77 otherwise), runs an app
# whose result does not fit, and checks that it fails on every rank with a message naming
# the file, and leaves no result, partial file or sidecar behind.
# Usage: disk_full.sh MPIEXEC NP APP [args...]
set -u
mpiexec=$1 np=$2 app=$3
shift 3
dir=$(mktemp -d)
if ! mount -t tmpfs -o size=2m tmpfs "$dir" 2>/dev/null; then
  rmdir "$dir"
  echo "SKIP: cannot mount a small tmpfs here (needs root and mount permission)"
  exit 77
fi
trap 'umount "$dir"; rmdir "$dir"' EXIT
out=$("$mpiexec" -n "$np" --oversubscribe "$app" "$@" -output "$dir/result.h5" -progress off 2>&1)
rc=$?
echo "$out"
[ "$rc" -ne 0 ] || { echo "FAIL: the run succeeded on a full disk"; exit 1; }
echo "$out" | grep -q "not enough free space for '$dir/result.h5'" ||
  { echo "FAIL: no clear disk-full message"; exit 1; }
left=$(ls -A "$dir")
[ -z "$left" ] || { echo "FAIL: left behind: $left"; exit 1; }
echo "PASS: exit $rc, clear message, nothing left behind"
