#!/usr/bin/env bash
# Every ISA's hand-vectorised rows give the same bits (rw_kernels.h: 8 doubles a vector for
# AVX-512, 4 for AVX2, 2 for the baseline). Runs APP in store and checkpoint mode with the
# widest instantiation this CPU has, then again with each narrower one (REWIND_SIMD), and
# compares the groups SIMD_GROUPS names (default: /gradient and the trajectory snapshots,
# /snapshots) with the widest run's by h5diff (exact comparison).
# Usage: [SIMD_GROUPS="/a /b"] simd_widths.sh MPIEXEC NP APP [app args...]
set -u
mpiexec=$1 np=$2 app=$3
shift 3
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
isas=()
case " $flags " in *" avx512f "*) isas+=(avx512) ;; esac
case " $flags " in *" avx2 "*) isas+=(avx2) ;; esac
if [ ${#isas[@]} -eq 0 ] || [ "$(uname -m)" != x86_64 ]; then
  echo "SKIP: only the baseline instantiation runs on this CPU (no AVX2 or AVX-512F, or not x86-64)"
  exit 77
fi
isas+=(baseline)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
for mode in store checkpoint; do
  ref=""
  for isa in "${isas[@]}"; do
    out="$work/$mode-$isa.h5"
    if ! o=$(REWIND_SIMD=$isa "$mpiexec" -n "$np" --oversubscribe "$app" "$@" -progress off \
      -adjoint_mode "$mode" -output "$out" 2>&1); then
      echo "$o"
      echo "FAIL [$mode, $isa]: the run failed"
      fail=1
      continue
    fi
    if [ -z "$ref" ]; then
      ref=$out
      continue
    fi
    for grp in ${SIMD_GROUPS:-/gradient /snapshots}; do
      if ! h5diff "$ref" "$out" "$grp" "$grp" >"$work/diff.txt" 2>&1; then
        head -20 "$work/diff.txt"
        echo "FAIL [$mode]: $grp with REWIND_SIMD=$isa differs from ${isas[0]}'s"
        fail=1
      fi
    done
    [ $fail -eq 0 ] && echo "ok [$mode]: $isa gives ${isas[0]}'s bits"
  done
done
[ $fail -eq 0 ] && echo "PASS"
exit $fail
