#!/usr/bin/env bash
# Faults of the disk tier: each must end the run on every rank with a non-zero exit and a
# message that says what happened, with no gradient printed and no result file (or partial
# file) left behind. A flipped byte and a truncation are injected after a disk write
# (REWIND_FAULT_INJECT, see rw_store.h); a full disk is a real small tmpfs filled after the
# second write (skipped, saying why, where tmpfs cannot be mounted); the others are set-up
# errors found before the first step.
# DISK_FAULTS_SCHEDULE=online: the online schedule instead of the binomial one (with an
# adaptive run in the app args: the disk then fills at its time record's write);
# DISK_FAULTS_DAMAGE=K: the flip and the truncation after the K-th write instead of the 2nd
# (the online schedule frees most snapshots unread; those cases need one that is read).
# Usage: disk_faults.sh MPIEXEC NP APP [app args...]
set -u
mpiexec=$1 np=$2 app=$3
shift 3
work=$(mktemp -d)
mnt=""
cleanup() {
  [ -n "$mnt" ] && umount "$mnt" 2>/dev/null && rmdir "$mnt"
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/ckpt"
fail=0
disk=(-adjoint_mode checkpoint -checkpoint_schedule "${DISK_FAULTS_SCHEDULE:-binomial}" -checkpoint_slots 2
  -checkpoint_disk_slots 6 -checkpoint_write_cost 0.5 -checkpoint_read_cost 0.5)
expect_fail() { # name, regex, dir, then env and args
  local name=$1 regex=$2 dir=$3
  shift 3
  local o rc
  o=$(env "$@" 2>&1)
  rc=$?
  local bad=""
  [ $rc -ne 0 ] || bad="exit status 0"
  echo "$o" | grep -qE "$regex" || bad="$bad; no message matching '$regex'"
  echo "$o" | grep -q "dJ/d" && bad="$bad; a gradient was printed"
  ls "$work"/out.h5* >/dev/null 2>&1 && bad="$bad; result file left: $(ls "$work"/out.h5*)"
  [ -n "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ] && bad="$bad; files left in $dir: $(ls "$dir")"
  if [ -n "$bad" ]; then
    echo "$o" | tail -8
    echo "FAIL [$name]: $bad"
    fail=1
  else
    echo "ok [$name]: exit $rc, $(echo "$o" | grep -E "$regex" | head -1 | cut -c1-150)"
  fi
  rm -f "$work"/out.h5 "$work"/out.h5.partial "$work"/out.xmf "$work"/out.xmf.partial
}
cmd=("$mpiexec" -n "$np" --oversubscribe "$app" "$@" "${disk[@]}" -output "$work/out.h5" -progress off)
k=${DISK_FAULTS_DAMAGE:-2}
expect_fail flip "is damaged.*(checksum|another step)" "$work/ckpt" REWIND_FAULT_INJECT=flip@$k "${cmd[@]}" -checkpoint_dir "$work/ckpt"
expect_fail truncate "is damaged" "$work/ckpt" REWIND_FAULT_INJECT=truncate@$k "${cmd[@]}" -checkpoint_dir "$work/ckpt"
expect_fail missing_dir "checkpoint_dir '$work/nope' does not exist" "" "${cmd[@]}" -checkpoint_dir "$work/nope"
touch "$work/afile"
expect_fail dir_is_file "checkpoint_dir '$work/afile' does not exist or is not a directory" "" "${cmd[@]}" -checkpoint_dir "$work/afile"
expect_fail restart_from_file "restart_from' = '$work/afile' \\(from command line\\): not a directory" "" "${cmd[@]}" -checkpoint_dir "$work/ckpt" -restart_from "$work/afile"
rm -f "$work/afile"
expect_fail budget_below_snapshot "checkpoint_disk budget of 16 bytes is smaller than one snapshot" "$work/ckpt" "${cmd[@]}" -checkpoint_dir "$work/ckpt" -checkpoint_disk_slots 0 -checkpoint_disk 16
# A run that keeps its files, then the same run again: refused, naming the file and how to
# restart.
o=$("${cmd[@]}" -checkpoint_dir "$work/ckpt" -checkpoint_keep true 2>&1) ||
  { echo "$o" | tail -5; echo "FAIL [keep]: the run failed"; fail=1; }
rm -f "$work"/out.h5 "$work"/out.xmf
[ -n "$(ls -A "$work/ckpt")" ] || { echo "FAIL [keep]: checkpoint_keep left no files"; fail=1; }
expect_fail occupied "already exists.*restart" "" "${cmd[@]}" -checkpoint_dir "$work/ckpt"
# The disk-cost probe's files a run killed while it measured left (named after the run id):
# the same run again, with measured costs, replaces them and succeeds, leaving nothing. It was
# refused, told to restart from them, and the restart found no checkpoint files.
rm -f "$work"/ckpt/*
auto=(-checkpoint_dir "$work/ckpt" -checkpoint_write_cost auto -checkpoint_read_cost auto)
"${cmd[@]}" "${auto[@]}" -checkpoint_keep true >/dev/null 2>&1 # its files name the run id
id=$(ls "$work"/ckpt | sed -n 's/^rewind-ckpt-\([0-9A-Za-z_-]*\)\.0-of-.*/\1/p')
rm -f "$work"/ckpt/*
probe=$(python3 -c 'import sys
h = 2166136261
for c in sys.argv[1].encode():
    h = ((h ^ c) * 16777619) & 0xffffffff
print("%.40s-probe-%08x" % (sys.argv[1], h))' "$id")
for ((r = 0; r < np; r++)); do
  head -c 1000 /dev/zero >"$work/ckpt/rewind-ckpt-$probe.$r-of-$np.h5"
done
o=$("${cmd[@]}" "${auto[@]}" 2>&1)
rc=$?
if [ -z "$id" ] || [ $rc -ne 0 ] || [ -n "$(ls -A "$work/ckpt")" ]; then
  echo "$o" | tail -5
  echo "FAIL [probe_left]: run id '$id', exit $rc, left: $(ls "$work/ckpt")"
  fail=1
else
  echo "ok [probe_left]: the stale probe files of run $id replaced"
fi
rm -f "$work"/ckpt/* "$work"/out.h5 "$work"/out.xmf
# A restart from a directory with nothing but such probe files: there are no checkpoints to
# continue from (it was refused as another run's files whose deck differs in every key).
for ((r = 0; r < np; r++)); do
  head -c 1000 /dev/zero >"$work/ckpt/rewind-ckpt-$probe.$r-of-$np.h5"
done
expect_fail probe_only "restart_from '$work/ckpt': no checkpoint files of a Rewind run there" "" \
  "${cmd[@]}" "${auto[@]}" -restart_from "$work/ckpt"
rm -f "$work"/ckpt/*
mnt=$(mktemp -d)
if mount -t tmpfs -o size=256k tmpfs "$mnt" 2>/dev/null; then
  # every slot the schedule wants must fit: 256 KiB cannot hold them and HDF5's overhead
  expect_fail budget_above_free_space "has [0-9]+ bytes free" "$mnt" "${cmd[@]}" -checkpoint_dir "$mnt" -checkpoint_disk_slots 0 -checkpoint_disk 1GiB
  umount "$mnt"
  mount -t tmpfs -o size=4m tmpfs "$mnt"
  # A disk that fills during the forward sweep: the checkpoints written so far are kept and the
  # message says how to continue; with the space back, the restart gives the clean run's J.
  # The disk is filled leaving 0, 8 and 12 KiB free, so that the room runs out at another
  # write each time: in a snapshot's data, in a tag table's flush, or a write later. (HDF5
  # 1.10 does not survive a metadata write that fails halfway: without the room each write
  # reserves, the file was left with an unreadable step table that the restart refused, or
  # half closed, and the run crashed in MPI_Finalize. And a failed write found first by the
  # backward sweep was reported as a damaged slot and the files removed.)
  jc=$("${cmd[@]}" -checkpoint_dir "$work/ckpt" 2>&1 | grep "objective J")
  rm -f "$work"/out.h5 "$work"/out.xmf
  for leave in 0 8192 12288; do
    expect_fail "disk_full:$leave" "file system is full.*kept in checkpoint_dir '$mnt'.*-restart_from $mnt" "" REWIND_FAULT_INJECT=fill@2:$leave "${cmd[@]}" -checkpoint_dir "$mnt"
    rm -f "$mnt/rewind-fault-fill"
    [ -n "$(ls "$mnt"/rewind-ckpt-* 2>/dev/null)" ] || { echo "FAIL [disk_full:$leave]: no checkpoints kept"; fail=1; }
    o=$("${cmd[@]}" -checkpoint_dir "$mnt" -restart_from "$mnt" 2>&1)
    rc=$?
    rm -f "$work"/out.h5 "$work"/out.xmf
    if [ $rc -ne 0 ] || ! echo "$o" | grep -q "resumed from the disk checkpoint" ||
      [ -z "$jc" ] || [ "$(echo "$o" | grep "objective J")" != "$jc" ]; then
      echo "$o" | grep -v "^  from" | head -5
      echo "FAIL [disk_full_restart:$leave]: exit $rc; J '$(echo "$o" | grep "objective J")', the clean run's '$jc'"
      fail=1
    else
      echo "ok [disk_full_restart:$leave]: $(echo "$o" | grep -o "resumed from the disk checkpoint of step [0-9]*"), $jc as the clean run"
    fi
    [ -z "$(ls -A "$mnt")" ] || { echo "FAIL [disk_full:$leave]: left after the restart: $(ls "$mnt")"; fail=1; }
    rm -f "$mnt"/*
  done
else
  rmdir "$mnt"
  mnt=""
  echo "skip [disk_full, budget_above_free_space]: cannot mount a small tmpfs here (needs root)"
fi
[ $fail -eq 0 ] && echo "PASS"
exit $fail
