#!/usr/bin/env bash
# A restart from another app's checkpoint files: refused on every rank, no gradient, the files
# left, and the message names the file it compared and the deck lines on both sides (the keys
# of the other app there only, this app's here only, and how many more differ). It once showed
# six of the other app's keys and nothing of this one's, and named no file.
# Usage: disk_foreign.sh MPIEXEC NP APP_THERE APP_HERE
set -u
mpiexec=$1 np=$2 there=$3 here=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
disk=(-adjoint_mode checkpoint -checkpoint_schedule binomial -checkpoint_ram 0 -checkpoint_slots 2
  -checkpoint_disk_slots 4 -checkpoint_write_cost 0.5 -checkpoint_read_cost 0.5
  -checkpoint_dir "$work" -progress off)
REWIND_FAULT_INJECT=kill@2 "$mpiexec" -n "$np" --oversubscribe "$there" -N 16 "${disk[@]}" \
  -output "$work/k.h5" >/dev/null 2>&1
rm -f "$work"/k.h5* "$work"/k.xmf*
files=$(ls "$work")
[ -n "$files" ] || { echo "FAIL: the killed run left no checkpoint files"; exit 1; }
o=$("$mpiexec" -n "$np" --oversubscribe "$here" -N 16 "${disk[@]}" -output "$work/r.h5" \
  -restart_from "$work" 2>&1)
rc=$?
fail=0
[ $rc -ne 0 ] || { echo "FAIL: the restart exited 0"; fail=1; }
echo "$o" | grep -q "dJ/d" && { echo "FAIL: a gradient was printed"; fail=1; }
msg=$(echo "$o" | grep "error: restart_from")
echo "$msg" | grep -qE "deck differs from that of '$work/rewind-ckpt-[0-9a-f]+\.[0-9]+-of-$np\.h5'" ||
  { echo "FAIL: the message names no file"; fail=1; }
echo "$msg" | grep -q "there only" || { echo "FAIL: no key of the other app's deck"; fail=1; }
echo "$msg" | grep -q "here only" || { echo "FAIL: no key of this app's deck"; fail=1; }
echo "$msg" | grep -qE "and [0-9]+ more" || { echo "FAIL: no count of the other differences"; fail=1; }
[ "$(ls "$work" | grep -v '^r\.')" = "$files" ] || { echo "FAIL: files changed: $(ls "$work")"; fail=1; }
[ $fail -eq 0 ] || { echo "$o" | tail -5; exit 1; }
echo "ok: $msg" | cut -c1-400
echo "PASS"
