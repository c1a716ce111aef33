#!/usr/bin/env bash
# Disk checkpoints on a full disk, and a restart from a checkpoint file that is empty: mounts a
# small tmpfs (needs root; skips with exit 77 otherwise). 1. The checkpoint files cannot be
# created: exit 1 with the message, and no empty file left that the next run would take for a
# stopped run's checkpoints. 2. A kept run's files, one of them truncated to 0 bytes: the
# restart is refused naming it as empty, and the other file is left as it was (a refused
# restart opened them for writing, which changed their superblocks).
# Usage: ckpt_disk_full.sh MPIEXEC NP APP [args...]  (args: a run with disk checkpoints)
set -u
mpiexec=$1 np=$2 app=$3
shift 3
dir=$(mktemp -d) out=$(mktemp -d)
if ! mount -t tmpfs -o size=64k tmpfs "$dir" 2>/dev/null; then
  rmdir "$dir" "$out"
  echo "SKIP: cannot mount a small tmpfs here (needs root and mount permission)"
  exit 77
fi
trap 'umount "$dir"; rmdir "$dir"; rm -rf "$out"' EXIT
fail=0
dd if=/dev/zero of="$dir/filler" bs=1k count=64 2>/dev/null
msg=$("$mpiexec" -n "$np" --oversubscribe "$app" "$@" -checkpoint_dir "$dir" \
  -output "$out/r.h5" -progress off 2>&1)
rc=$?
echo "$msg" | grep -m1 error
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc on a full checkpoint_dir (1 wanted)"; fail=1; }
echo "$msg" | grep -q "cannot create checkpoint file.*No space left" ||
  { echo "FAIL: no clear message"; fail=1; }
left=$(ls -A "$dir" | grep -v '^filler$')
[ -z "$left" ] || { echo "FAIL: left behind: $left"; fail=1; }
ck="$out/ck"
mkdir -p "$ck"
"$mpiexec" -n "$np" --oversubscribe "$app" "$@" -checkpoint_dir "$ck" -checkpoint_keep true \
  -output "$out/k.h5" -progress off > /dev/null 2>&1 || { echo "FAIL: the kept run failed"; exit 1; }
files=("$ck"/rewind-ckpt-*.h5)
[ "${#files[@]}" -eq "$np" ] || { echo "FAIL: ${#files[@]} checkpoint files, $np wanted"; exit 1; }
: > "${files[0]}"
sums=$(md5sum "${files[@]:1}" 2>/dev/null)
msg=$("$mpiexec" -n "$np" --oversubscribe "$app" "$@" -checkpoint_dir "$ck" -restart_from "$ck" \
  -output "$out/x.h5" -progress off 2>&1)
rc=$?
echo "$msg" | grep -m1 error
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc restarting from an empty file (1 wanted)"; fail=1; }
echo "$msg" | grep -q "is empty (0 bytes)" || { echo "FAIL: the empty file is not named"; fail=1; }
[ "$(md5sum "${files[@]:1}" 2>/dev/null)" = "$sums" ] ||
  { echo "FAIL: the refused restart changed the other files"; fail=1; }
[ -s "${files[0]}" ] && { echo "FAIL: the empty file was written"; fail=1; }
[ "$fail" -eq 0 ] && echo "PASS: clean refusals, nothing left, nothing changed"
exit "$fail"
