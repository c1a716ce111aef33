#!/usr/bin/env bash
# theta_out / gradient_out on a full file system: mounts a 64 KiB tmpfs (needs root; skips
# with exit 77 otherwise), fills it to about 16 KiB free, and runs rewind-neuralode with the
# reference-format file there (35912 bytes: it does not fit) and the HDF5 result on a healthy
# disk. The run must fail (exit status 1, an output error, on every rank) with errno's text
# and the key, and keep the complete result file (h5dump reads /model/theta, and in mode
# gradient /gradient/dJdtheta), leaving nothing on the full disk.
# Usage: neuralode_save_full.sh MPIEXEC APP DATA_DIR OUT_DIR
set -u
mpiexec=$1 app=$2 data=$3 out=$4
dir=$(mktemp -d)
if ! mount -t tmpfs -o size=64k tmpfs "$dir" 2>/dev/null; then
  rmdir "$dir"
  echo "SKIP: cannot mount a small tmpfs here (needs root and mount permission)"
  exit 77
fi
trap 'umount "$dir"; rmdir "$dir"' EXIT
dd if=/dev/zero of="$dir/fill" bs=1k count=48 status=none
fail=0
check() { # name, result file, datasets, key, then the app's arguments
  local name=$1 h5=$2 datasets=$3 key=$4
  shift 4
  rm -f "$h5" "$out/full_rc."*
  local o r
  # every rank's own exit status (Open MPI: the job is not torn down at the first one)
  o=$("$mpiexec" -n 2 --oversubscribe --bind-to none --mca orte_abort_on_non_zero_status 0 \
    sh -c '"$@"; c=$?; echo $c >"'"$out"'/full_rc.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}"; exit $c' sh \
    "$app" "$@" -output "$h5" -progress off 2>&1)
  echo "$o"
  # (mpiexec's own status is 0 when the job is not torn down: each rank's is checked)
  for r in 0 1; do
    [ "$(cat "$out/full_rc.$r" 2>/dev/null)" = 1 ] ||
      { echo "FAIL ($name): rank $r exited with '$(cat "$out/full_rc.$r" 2>/dev/null)', not 1"; fail=1; }
  done
  echo "$o" | grep -q "key '$key' (from command line): writing '$dir/[a-z]*.bin' failed: No space left on device; the result file '$h5' is complete" ||
    { echo "FAIL ($name): no message naming $key, the file and errno's text"; fail=1; }
  [ -f "$h5" ] && [ ! -e "$h5.partial" ] ||
    { echo "FAIL ($name): the result file $h5 is missing or incomplete"; fail=1; }
  for d in $datasets; do
    h5dump -d "$d" "$h5" >/dev/null 2>&1 || { echo "FAIL ($name): $h5 has no readable $d"; fail=1; }
  done
  local left
  left=$(ls -A "$dir" | grep -v '^fill$')
  [ -z "$left" ] || { echo "FAIL ($name): left on the full disk: $left"; fail=1; }
}
check train "$out/full_train.h5" "/model/theta /train/loss" theta_out \
  -epochs 3 -widths 2,64,64,2 -theta_out "$dir/t.bin"
check gradient "$out/full_gradient.h5" "/model/theta /gradient/dJdtheta" gradient_out \
  -mode gradient -theta_file "$data/p0_theta.bin" -problem_file "$data/problem_T1.bin" \
  -stepper rk38 -dt 0.01 -gradient_out "$dir/g.bin"
[ "$fail" -eq 0 ] && echo "PASS: the result files are kept, the failed file reported"
exit "$fail"
