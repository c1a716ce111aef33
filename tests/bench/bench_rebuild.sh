#!/usr/bin/env bash
# Benchmark (issue 8, "Figures"): peak memory and time of the memory-free adjoint modes against
# binomial checkpointing at equal memory, through the apps as a user runs them.
#   wave:  rewind-wave NX x NX, leapfrog, STEPS steps: reversible (inverse step, drift checks at
#          anchors), reversible with the exact fixed-point leapfrog, binomial checkpointing with
#          the same number of state slots, and store mode
#          when its states fit in MAX_STORE_MIB.
#   heat:  rewind-heat NH x NH, RK4: backsolve with drift checks (diffusive: every segment
#          falls back, so this is the fallback's cost), binomial at equal memory, store mode.
# For each run: wall time of the process, the forward and backward sweep times and the
# checkpoint bytes from the app's summary, the peak RSS (GNU time), drift and fallbacks. Each
# run's gradient is compared with the binomial run's (h5diff: exact; reversible: relative
# 2-norm of each dataset <= 1e-10, tests/scripts/h5_relnorm.py). All ratios are within this one run of the script (the machines are shared).
# Usage: bench_rebuild.sh BUILD_DIR [NP]   env: NX (512) STEPS (5000) NH (128) HSTEPS (2000)
#        SLOTS (20) MAX_STORE_MIB (4096) MPIEXEC (mpiexec)
# Output: a table and one "BENCH_JSON {...}" line; exit 1 when a gradient check fails.
set -u
build=$1 np=${2:-1}
nx=${NX:-512} steps=${STEPS:-5000} nh=${NH:-128} hsteps=${HSTEPS:-2000} slots=${SLOTS:-20}
maxstore=${MAX_STORE_MIB:-4096} mpiexec=${MPIEXEC:-mpiexec}
if [ ! -x /usr/bin/time ]; then # peak RSS of every run
  echo "FAIL: /usr/bin/time (GNU time) not found: apt-get install time (scripts/deps.sh installs it)"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
json=""
row() { # label app-args... ; sets globals from the run
  local label=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "RSS %M" "$mpiexec" -n "$np" --oversubscribe "$@" -progress off \
    -output "$work/$label.h5" >"$work/$label.out" 2>"$work/$label.err"
  local rc=$?
  t1=$(date +%s.%N)
  if [ $rc -ne 0 ]; then
    cat "$work/$label.out" "$work/$label.err"
    echo "FAIL: $label exited $rc"
    fail=1
    return
  fi
  local o wall fw bw rss ram drift fb
  o=$(cat "$work/$label.out")
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  fw=$(echo "$o" | sed -n 's/.*time: forward \([0-9.]*\) s, backward \([0-9.]*\) s.*/\1/p')
  bw=$(echo "$o" | sed -n 's/.*time: forward \([0-9.]*\) s, backward \([0-9.]*\) s.*/\2/p')
  ram=$(echo "$o" | sed -n 's/.*checkpoints: RAM \(.*\) per rank, disk.*/\1/p')
  rss=$(sed -n 's/^RSS //p' "$work/$label.err" | sort -n | tail -1)
  drift=$(echo "$o" | sed -n 's/.*drift: max \([^,]*\),.*/\1/p')
  fb=$(echo "$o" | sed -n 's/.*; \([0-9]*\) segments fell back, \([0-9]*\) steps recomputed.*/\1 (\2 steps)/p')
  local rec
  rec=$(echo "$o" | sed -n 's/.*recomputed steps \([0-9]*\).*/\1/p')
  printf "%-22s %8s %8s %8s %12s %10s %10s %s\n" "$label" "$wall" "$fw" "$bw" "$ram" \
    "$((rss / 1024))" "${drift:--}" "${fb:-${rec:+recomputed $rec}}"
  json="$json\"$label\":{\"wall_s\":$wall,\"forward_s\":${fw:-null},\"backward_s\":${bw:-null},\"rss_mib\":$((rss / 1024)),\"drift_max\":${drift:-null}},"
}
relnorm=$(dirname "$0")/../scripts/h5_relnorm.py
same() { # ref other [relative 2-norm tolerance]
  if [ -n "$3" ]; then
    if "$relnorm" "$work/$1.h5" "$work/$2.h5" /gradient "$3" >"$work/d.txt" 2>&1; then
      echo "  $2: gradient within $3 of $1's: $(tail -1 "$work/d.txt")"
    else
      cat "$work/d.txt"
      echo "FAIL: $2's gradient differs from $1's by more than $3"
      fail=1
    fi
    return
  fi
  if ! h5diff "$work/$1.h5" "$work/$2.h5" /gradient /gradient >"$work/d.txt" 2>&1; then
    head -5 "$work/d.txt"
    echo "FAIL: $2's gradient differs from $1's"
    fail=1
  else
    echo "  $2: gradient equals $1's bit for bit"
  fi
}
echo "bench_rebuild: $np rank(s), budget $slots state slots"
printf "%-22s %8s %8s %8s %12s %10s %10s %s\n" run wall_s fwd_s bwd_s ckpt_RAM RSS_MiB drift "fallbacks / recomputed"
wave=$build/apps/wave/rewind-wave
heat=$build/apps/heat/rewind-heat
# wave: dt within the CFL limit of the grid (h / (c_max sqrt 2), c_max = 1.2), dividing tf
wdt=$(awk -v n="$nx" 'BEGIN { printf "%.3g", 0.5 / (n - 1) }')
wtf=$(awk -v d="$wdt" -v s="$steps" 'BEGIN { printf "%.10g", d * s }')
wbase=(-nx "$nx" -ny "$nx" -dt "$wdt" -tf "$wtf" -output_every 0)
wargs=("${wbase[@]}" -checkpoint_slots "$slots" -checkpoint_ram 0)
echo "wave ${nx}^2, $steps leapfrog steps (dt $wdt)"
row wave_binomial "$wave" "${wargs[@]}" -adjoint_mode checkpoint
row wave_reversible "$wave" "${wargs[@]}" -adjoint_mode reversible
same wave_binomial wave_reversible 1e-10
# the fixed-point leapfrog: drift exactly 0; its gradient is that of a scheme rounded to
# 2^-s, within about the rounding of the plain one's
row wave_exact_rev "$wave" "${wargs[@]}" -adjoint_mode reversible -leapfrog_exact true \
  -leapfrog_exact_range 16
same wave_binomial wave_exact_rev 1e-8
store_mib=$((nx * nx * 16 * steps / 1048576))
if [ "$store_mib" -le "$maxstore" ]; then
  row wave_store "$wave" "${wbase[@]}" -adjoint_mode store # store mode takes no budget
  same wave_binomial wave_store ""
else
  echo "wave_store             SKIPPED: $store_mib MiB of states > MAX_STORE_MIB $maxstore"
fi
hbase=(-N "$nh" -tf 1 -dt "$(awk -v s="$hsteps" 'BEGIN { printf "%.10g", 1 / s }')" -output_every 0)
hargs=("${hbase[@]}" -checkpoint_slots "$slots" -checkpoint_ram 0)
echo "heat ${nh}^2, $hsteps RK4 steps"
row heat_binomial "$heat" "${hargs[@]}" -adjoint_mode checkpoint
row heat_backsolve "$heat" "${hargs[@]}" -adjoint_mode backsolve
# bit for bit when every segment fell back (the case on a diffusive problem); segments
# accepted within drift_tol change the gradient by about the drift, which an elementwise
# comparison does not bound, so a mixed run is only reported
if grep -q "over \([0-9]*\) segments.*; \1 segments fell back" "$work/heat_backsolve.out"; then
  same heat_binomial heat_backsolve ""
else
  "$relnorm" "$work/heat_binomial.h5" "$work/heat_backsolve.h5" /gradient 1 | tail -1 |
    sed 's/^/  heat_backsolve: some segments accepted within drift_tol: /'

fi
store_mib=$((nh * nh * 8 * hsteps / 1048576))
if [ "$store_mib" -le "$maxstore" ]; then
  row heat_store "$heat" "${hbase[@]}" -adjoint_mode store
  same heat_binomial heat_store ""
else
  echo "heat_store             SKIPPED: $store_mib MiB of states > MAX_STORE_MIB $maxstore"
fi
echo "BENCH_JSON {\"ranks\":$np,\"slots\":$slots,\"wave_n\":$nx,\"wave_steps\":$steps,\"heat_n\":$nh,\"heat_steps\":$hsteps,${json%,},\"checks_passed\":$([ $fail -eq 0 ] && echo true || echo false)}"
exit $fail
