#!/usr/bin/env bash
# Restart from disk checkpoints (issue 7): a run under the two-level RAM + disk schedule is
# killed during its forward sweep, then continued with -restart_from; its gradient must equal
# the store-everything gradient bit for bit (h5diff, exact), and the checkpoint directory must
# be empty afterwards. Kills are injected after a disk write (REWIND_FAULT_INJECT, see
# rw_store.h): SIGKILL of rank 0 (a crash or a lost node), SIGTERM of every rank (a batch
# system ending the job), and a write torn by the crash (a byte of the last snapshot flipped,
# then SIGKILL: the restart must not trust that snapshot and resumes from an earlier one).
# Refusals: a restart with another deck, or another rank count, exits non-zero naming what
# differs, prints no gradient and leaves the files for the right restart.
# RESTART_HOST=BYTES: a device run with a host tier as well (three tiers).
# RESTART_SCHEDULE=online: the online schedule (periodic disk checkpoints, the period doubled
# when the disk slots fill) instead of the binomial one; RESTART_LATE=K adds a kill after the
# K-th disk write (a resume point past a doubling), RESTART_FLIP=K damages the restarted
# run's K-th write instead of its first (the online schedule frees most of its snapshots
# unread, and the failed-restart case needs one that the backward sweep reads).
# RESTART_REFERENCE=uninterrupted: the gradient to match is the same run's not killed (adaptive
# runs, which store mode refuses), instead of store mode's.
# With RESTART_QUICK=1 only the SIGKILL and torn-write cases run (the 4-rank tests, to keep
# the suite's time down; the others run at 1 and 2 ranks).
# Usage: restart.sh MPIEXEC NP APP [app args...]
set -u
mpiexec=$1 np=$2 app=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/ckpt"
run() { "$mpiexec" -n "$np" --oversubscribe "$app" "$@" -progress off 2>&1; }
disk=(-adjoint_mode checkpoint -checkpoint_schedule "${RESTART_SCHEDULE:-binomial}" -checkpoint_ram "${RESTART_HOST:-0}"
  -checkpoint_slots 2 -checkpoint_disk_slots 4 -checkpoint_write_cost 0.5 -checkpoint_read_cost 0.5
  -checkpoint_dir "$work/ckpt")
# RESTART_HOST=BYTES (a device run, -device in the app's arguments): a host tier of that budget
# under the three-tier schedule, its copy costs given; its slots are lost with the run as RAM's.
[ -n "${RESTART_HOST:-}" ] && disk+=(-checkpoint_ram_write_cost 0.25 -checkpoint_ram_read_cost 0.25)
# The reference: store mode's gradient, or with RESTART_REFERENCE=uninterrupted (an adaptive
# run, which store mode refuses) the same checkpointed run not killed.
if [ "${RESTART_REFERENCE:-store}" = uninterrupted ]; then
  out=$(run "$@" "${disk[@]}" -output "$work/ref.h5") ||
    { echo "$out"; echo "FAIL: the uninterrupted run failed"; exit 1; }
else
  out=$(run "$@" -adjoint_mode store -output "$work/ref.h5") ||
    { echo "$out"; echo "FAIL: the store-mode run failed"; exit 1; }
fi
fail=0
bad() {
  echo "FAIL [$1]: $2"
  fail=1
}
# kill: name, fault, extra args; the run must die with no gradient and leave its files
kill_run() {
  local name=$1 fault=$2
  shift 2
  local o rc
  o=$(REWIND_FAULT_INJECT=$fault run "$@" "${disk[@]}" -output "$work/$name.h5")
  rc=$?
  [ $rc -ne 0 ] || { echo "$o" | tail -5; bad "$name" "the killed run exited 0"; return 1; }
  echo "$o" | grep -q "dJ/d" && { bad "$name" "the killed run printed a gradient"; return 1; }
  [ -n "$(ls -A "$work/ckpt")" ] || { bad "$name" "the killed run left no checkpoint files"; return 1; }
  return 0
}
# restart: name, regex the summary must match, extra args
restart_run() {
  local name=$1 want=$2
  shift 2
  local o rc
  o=$(run "$@" "${disk[@]}" -output "$work/$name.h5" -restart_from "$work/ckpt")
  rc=$?
  last_out=$o
  if [ $rc -ne 0 ]; then
    echo "$o" | tail -8
    bad "$name" "the restart exited $rc"
    rm -f "$work"/ckpt/*
    return
  fi
  if ! h5diff "$work/ref.h5" "$work/$name.h5" /gradient /gradient >"$work/diff.txt" 2>&1; then
    head -20 "$work/diff.txt"
    bad "$name" "the restarted gradient differs from store mode"
  fi
  local line
  line=$(echo "$o" | grep "restart:")
  echo "$line" | grep -qE "$want" || { echo "$o"; bad "$name" "summary does not match '$want'"; }
  [ -z "$(ls -A "$work/ckpt")" ] || bad "$name" "checkpoint files left: $(ls "$work/ckpt")"
  rm -f "$work"/ckpt/*
  echo "ok [$name]: bit for bit;$line"
}
resumed="resumed from the disk checkpoint of step [1-9][0-9]*"
tool=$(dirname "$0")/../../tools/rewind_ckpt.py
# tools/rewind_ckpt.py reads rank 0's file (the rank the fault killed right after a write;
# the other ranks were stopped by the launcher anywhere) and finds the torn snapshot in it
# (exit 77: no h5py here)
check_tool() { # name, expected exit status
  local o rc
  o=$(/usr/bin/python3 "$tool" "$work"/ckpt/*.0-of-"$np".h5 --verify 2>&1)
  rc=$?
  if [ $rc -eq 77 ]; then
    echo "skip [tool_$1]: $o"
  elif [ $rc -ne "$2" ] || ! echo "$o" | grep -q "rewind-restart 1 steps="; then
    echo "$o" | tail -5
    bad "tool_$1" "rewind_ckpt.py --verify exited $rc, expected $2"
  else
    echo "ok [tool_$1]: $(echo "$o" | grep -cE "checksums ok") slots verified, $(echo "$o" | grep -c DAMAGED) damaged"
  fi
}
kill_run sigkill kill@2 "$@" && check_tool sigkill 0 && restart_run sigkill "$resumed" "$@"
[ -n "${RESTART_LATE:-}" ] && kill_run late kill@"$RESTART_LATE" "$@" &&
  restart_run late "$resumed" "$@"
quick=${RESTART_QUICK:-0}
if [ "$quick" != 1 ]; then
  kill_run sigterm term@3 "$@" && restart_run sigterm "$resumed" "$@"
  kill_run stages kill@2 "$@" -adjoint_store_stages true &&
    restart_run stages "$resumed" "$@" -adjoint_store_stages true
fi
# The torn snapshot is the third one written: the restart must resume from an earlier one.
kill_run torn torn@3 "$@" && { check_tool torn 1; restart_run torn "resumed from the disk checkpoint of step [0-9]+" "$@"; }
# ... and says that it skipped a snapshot whose data fail their checksums (not silently)
[ "${last_out+set}" = set ] && ! echo "$last_out" | grep -qE "warning: restart: [0-9]+ later resume point\(s\) in .* fail their checksums" &&
  bad torn_warning "the restart past the torn snapshot did not say it skipped it"
# Refusals: files of another deck or rank count are named and left alone.
if [ "$quick" != 1 ] && kill_run refuse kill@2 "$@"; then
  o=$(run "$@" "${disk[@]}" -output "$work/r.h5" -restart_from "$work/ckpt" -checkpoint_slots 3)
  rc=$?
  if [ $rc -eq 0 ] || ! echo "$o" | grep -q "deck differs from that of '$work/ckpt/rewind-ckpt-[0-9a-f]*\.[0-9]*-of-$np\.h5': checkpoint_slots: 2 there, checkpoint_slots: 3 here" ||
    echo "$o" | grep -q "dJ/d" || [ -e "$work/r.h5" ]; then
    echo "$o" | tail -5
    bad refuse_deck "exit $rc; expected a refusal naming checkpoint_slots, no gradient, no result"
  else
    echo "ok [refuse_deck]: exit $rc, $(echo "$o" | grep -o "the deck differs.*" | head -1)"
  fi
  if [ "$np" -gt 1 ]; then
    o=$("$mpiexec" -n $((np - 1)) --oversubscribe "$app" "$@" -progress off "${disk[@]}" \
      -output "$work/r.h5" -restart_from "$work/ckpt" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] || ! echo "$o" | grep -q "written by $np ranks, this run has $((np - 1)) ('$work/ckpt/rewind-ckpt-[0-9a-f]*\.[0-9]*-of-$np\.h5' is one of them)"; then
      echo "$o" | tail -5
      bad refuse_ranks "exit $rc; expected a refusal naming the rank counts"
    else
      echo "ok [refuse_ranks]: exit $rc"
    fi
  fi
  [ -n "$(ls -A "$work/ckpt")" ] || bad refuse "a refused restart removed the checkpoint files"
  restart_run after_refusals "$resumed" "$@"
fi
# A new run into a directory that holds a killed run's files is refused (no overwrite).
if [ "$quick" != 1 ] && kill_run occupied kill@2 "$@"; then
  o=$(run "$@" "${disk[@]}" -output "$work/r.h5")
  echo "$o" | grep -q "already exists.*restart" || { echo "$o" | tail -3; bad occupied "not refused"; }
  restart_run occupied "$resumed" "$@"
fi
# A directory missing one rank's file of the run: the refusal names that file and says the
# others are the same run's (not "another run"); a file that is not HDF5 is called damaged,
# with no stale system error text.
if [ "$quick" != 1 ] && [ "$np" -gt 1 ] && kill_run missing kill@2 "$@"; then
  last=$(ls "$work"/ckpt/*."$((np - 1))"-of-"$np".h5)
  rm -f "$last"
  o=$(run "$@" "${disk[@]}" -output "$work/r.h5" -restart_from "$work/ckpt")
  rc=$?
  if [ $rc -eq 0 ] || ! echo "$o" | grep -q "file for rank $((np - 1)), '$last', is missing (the other ranks' files of the same run"; then
    echo "$o" | tail -5
    bad missing_file "exit $rc; expected a refusal naming the missing file"
  else
    echo "ok [missing_file]: exit $rc"
  fi
  # the tool agrees: the directory lacks a rank's file (it once listed the others, exit 0)
  o=$(/usr/bin/python3 "$tool" "$work/ckpt" --verify 2>&1)
  rc=$?
  if [ $rc -eq 77 ]; then
    echo "skip [tool_missing_file]: $o"
  elif [ $rc -ne 1 ] || ! echo "$o" | grep -qF "the file of rank(s) $((np - 1)) is missing ($(basename "$last"))"; then
    echo "$o" | tail -5
    bad tool_missing_file "rewind_ckpt.py --verify exited $rc; expected 1 naming the missing file"
  else
    echo "ok [tool_missing_file]: exit $rc"
  fi
  first=$(ls "$work"/ckpt/*.0-of-"$np".h5)
  head -c 4096 /dev/urandom >"$first"
  o=$(run "$@" "${disk[@]}" -output "$work/r.h5" -restart_from "$work/ckpt")
  rc=$?
  if [ $rc -eq 0 ] || ! echo "$o" | grep -q "it is damaged or not an HDF5 file (HDF5 cannot read its superblock)" ||
    echo "$o" | grep -q "No such file\|File exists"; then
    echo "$o" | tail -5
    bad damaged_file "exit $rc; expected a refusal calling '$first' damaged"
  else
    echo "ok [damaged_file]: exit $rc"
  fi
  rm -f "$work"/ckpt/*
fi
# A damaged stamp table in the last rank's file (a flipped byte, found by the table's
# checksum): the restart is refused naming the file, on every rank, with no gradient, and
# every file stays (it once made every slot look incomplete: the run started again
# from y0, released the good slots of every rank, failed on its first write with a message
# about free space and deleted all the files). Needs h5py to find the table in the file.
flip_table() { # file, dataset: flips a byte of its first chunk (exit 77: no h5py)
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import sys
try:
    import h5py
except ImportError:
    sys.exit(77)
with h5py.File(sys.argv[1], "r") as f:
    off = f[sys.argv[2]].id.get_chunk_info(0).byte_offset + 8
with open(sys.argv[1], "r+b") as g:
    g.seek(off)
    b = g.read(1)
    g.seek(off)
    g.write(bytes([b[0] ^ 1]))
EOF
}
# A restart that fails after opening the files (here: the first snapshot it writes is damaged
# on purpose, so reading it back in the backward sweep fails its checksum) leaves the earlier
# run's files for the next restart (it once deleted them all), which continues bit for bit.
if [ "$quick" != 1 ] && kill_run failed_restart kill@2 "$@"; then
  o=$(REWIND_FAULT_INJECT=flip@"${RESTART_FLIP:-1}" run "$@" "${disk[@]}" -output "$work/fr.h5" -restart_from "$work/ckpt")
  rc=$?
  if [ $rc -eq 0 ] || echo "$o" | grep -q "dJ/d" || [ -z "$(ls -A "$work/ckpt")" ]; then
    echo "$o" | tail -5
    bad failed_restart "exit $rc; expected a failure that keeps the checkpoint files"
    rm -f "$work"/ckpt/*
  else
    echo "ok [failed_restart]: exit $rc, files kept: $(ls "$work/ckpt" | wc -l)"
    restart_run after_failed_restart "resumed from the disk checkpoint of step [0-9]+" "$@"
  fi
fi
if [ "$quick" != 1 ] && kill_run stamp_table kill@2 "$@"; then
  last=$(ls "$work"/ckpt/*."$((np - 1))"-of-"$np".h5)
  flip_table "$last" stamp
  frc=$?
  if [ $frc -eq 77 ]; then
    echo "skip [stamp_table]: no h5py"
  else
    # names and sizes (HDF5 clears the killed run's "open for writing" flag in the superblock
    # when the refused restart closes the file)
    sums=$(ls -l "$work"/ckpt | awk '{print $5, $9}')
    o=$(run "$@" "${disk[@]}" -output "$work/r.h5" -restart_from "$work/ckpt")
    rc=$?
    if [ $frc -ne 0 ] || [ $rc -eq 0 ] ||
      ! echo "$o" | grep -q "'$last' is damaged: its stamp table fails its checksum" ||
      echo "$o" | grep -q "dJ/d" || [ "$(ls -l "$work"/ckpt | awk '{print $5, $9}')" != "$sums" ]; then
      echo "$o" | tail -5
      bad stamp_table "exit $rc; expected a refusal calling '$last' damaged, the files left"
    else
      echo "ok [stamp_table]: exit $rc, files left"
    fi
    # the tool says so too, with no Python traceback
    o=$(/usr/bin/python3 "$tool" "$last" --verify 2>&1)
    rc=$?
    if [ $rc -ne 1 ] || ! echo "$o" | grep -q "stamp table: DAMAGED" || echo "$o" | grep -q Traceback; then
      echo "$o" | tail -5
      bad tool_stamp_table "rewind_ckpt.py --verify exited $rc; expected 1 calling the stamp table damaged"
    else
      echo "ok [tool_stamp_table]: exit $rc"
    fi
  fi
  rm -f "$work"/ckpt/*
fi
# An adaptive run's time record damaged in the last rank's file (a byte of its first chunk
# flipped): every resume point needs it, so the restart says it skipped them as damaged and
# starts again from step 0, bit for bit.
if [ "$quick" != 1 ] && [ "${RESTART_REFERENCE:-}" = uninterrupted ] &&
  kill_run times_record kill@6 "$@"; then
  last=$(ls "$work"/ckpt/*."$((np - 1))"-of-"$np".h5)
  flip_table "$last" times
  frc=$?
  if [ $frc -eq 77 ]; then
    echo "skip [times_record]: no h5py"
    rm -f "$work"/ckpt/*
  elif [ $frc -ne 0 ]; then
    bad times_record "could not flip a byte of /times in '$last'"
    rm -f "$work"/ckpt/*
  else
    o=$(/usr/bin/python3 "$tool" "$last" --verify 2>&1)
    rc=$?
    if [ $rc -ne 1 ] || ! echo "$o" | grep -q "adaptive time record: .*DAMAGED"; then
      echo "$o" | tail -3
      bad tool_times_record "rewind_ckpt.py --verify exited $rc; expected 1 calling the record damaged"
    else
      echo "ok [tool_times_record]: exit $rc"
    fi
    restart_run times_record "resumed from the disk checkpoint of step 0 .*no later one" "$@"
    echo "$last_out" | grep -qE "warning: restart: [0-9]+ later resume point\(s\) in .* fail their checksums" ||
      bad times_record_warning "the restart past the damaged time record did not say it skipped resume points"
  fi
fi
# Files with no time record (an adaptive run's, written by a version of Rewind that kept
# none; here: /times deleted from every rank's file): the adaptive restart is refused saying
# so, with no gradient, and the files stay.
if [ "$quick" != 1 ] && [ "${RESTART_REFERENCE:-}" = uninterrupted ] &&
  kill_run no_record kill@6 "$@"; then
  /usr/bin/python3 -c '
import sys
try:
    import h5py
except ImportError:
    sys.exit(77)
for p in sys.argv[1:]:
    with h5py.File(p, "r+") as f:
        del f["times"]
' "$work"/ckpt/*.h5
  frc=$?
  if [ $frc -eq 77 ]; then
    echo "skip [no_record]: no h5py"
  else
    n=$(ls "$work"/ckpt | wc -l)
    o=$(run "$@" "${disk[@]}" -output "$work/r.h5" -restart_from "$work/ckpt")
    rc=$?
    if [ $frc -ne 0 ] || [ $rc -eq 0 ] || ! echo "$o" | grep -q "hold no adaptive time record" ||
      echo "$o" | grep -q "dJ/d" || [ "$(ls "$work"/ckpt | wc -l)" != "$n" ]; then
      echo "$o" | tail -5
      bad no_record "exit $rc; expected a refusal saying the files hold no time record, the files left"
    else
      echo "ok [no_record]: exit $rc, files left"
    fi
  fi
  rm -f "$work"/ckpt/*
fi
# A slot whose data are another step's while its tag and stamp name the step the schedule put
# there (a write the crash cut between the data and the tag; here: the first slot's chunks
# copied over the last full slot's in the last rank's file). Every chunk passes its Fletcher32,
# so only the stamp tells: the restart resumes from an earlier step, bit for bit, and
# rewind_ckpt.py --verify calls the slot damaged (it once said "checksums ok").
if [ "$quick" != 1 ] && kill_run stale_data kill@3 "$@"; then
  last=$(ls "$work"/ckpt/*."$((np - 1))"-of-"$np".h5)
  /usr/bin/python3 - "$last" <<'EOF'
import sys
try:
    import h5py
except ImportError:
    sys.exit(77)
with h5py.File(sys.argv[1], "r") as f:
    d, steps = f["snapshots"], f["step"][...]
    full = [i for i, s in enumerate(steps) if s >= 0]
    src, dst = full[0], full[-1]
    cs = [(d.id.get_chunk_info_by_coord((src, k, 0)), d.id.get_chunk_info_by_coord((dst, k, 0)))
          for k in range(d.shape[1])]
with open(sys.argv[1], "r+b") as g:
    for a, b in cs:
        g.seek(a.byte_offset)
        data = g.read(a.size)
        g.seek(b.byte_offset)
        g.write(data)
EOF
  frc=$?
  if [ $frc -eq 77 ]; then
    echo "skip [stale_data]: no h5py"
    rm -f "$work"/ckpt/*
  else
    o=$(/usr/bin/python3 "$tool" "$last" --verify 2>&1)
    rc=$?
    if [ $frc -ne 0 ] || [ $rc -ne 1 ] || ! echo "$o" | grep -q "DAMAGED: its stamp does not match"; then
      echo "$o" | tail -5
      bad tool_stale_data "rewind_ckpt.py --verify exited $rc; expected 1 calling the slot damaged"
    else
      echo "ok [tool_stale_data]: exit $rc"
    fi
    restart_run stale_data "resumed from the disk checkpoint of step [0-9]+" "$@"
  fi
fi
[ $fail -eq 0 ] && echo "PASS"
exit $fail
