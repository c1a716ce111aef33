#!/bin/sh
# A/B of library builds on one benchmark: runs the same command with LD_LIBRARY_PATH pointing
# at each of two or more copies of librewind in turn (A, B, A, B, ...) for R rounds, reads the
# chosen keys of each run's BENCH_JSON line, and prints per build the median (min - max) of
# each key over the rounds, and each build's ratio to the first build's value in the same
# round (paired, so a drift of the machine's speed between rounds cancels), as a median with
# its range. On a shared VM whose speed moves by 10-30 % between runs minutes apart, only such
# alternated, paired figures say whether a change is faster.
#
#   tests/bench/ab_libs.sh [-n R] [-k KEYS] [-p NP] [-o logdir] DIR_A DIR_B [DIR ...] -- CMD ARGS
#   e.g. (the copy of a build's library, then the change built, copied and compared):
#     cp -a build/release/core/librewind.so* /tmp/libA/
#     ... change, cmake --build build/release ...
#     cp -a build/release/core/librewind.so* /tmp/libB/
#     tests/bench/ab_libs.sh -n 6 /tmp/libA /tmp/libB -- \
#         build/release/tests/bench/bench_pde --problem heat3d --n 128 --stage 10 --repeat 5
#
# -k: comma-separated BENCH_JSON keys with numbers (default: bench_pde --stage's t_step,
# t_adjoint_all, t_adjoint_y0, r_adjoint_all_median, r_adjoint_y0_median); -p NP: each run under
# mpiexec -n NP (MPIEXEC, MPIEXEC_FLAGS as run_pde_scaling.sh); -o: where each run's output is
# kept (default a new directory under $TMPDIR). The command must link librewind dynamically
# (the project's default build). Exit status: 0; 1 when a run failed or printed no BENCH_JSON
# (its output is printed); 2 on a bad command line.
set -u
rounds=5
keys="t_step,t_adjoint_all,t_adjoint_y0,r_adjoint_all_median,r_adjoint_y0_median"
np=""
logdir=""
while [ $# -gt 0 ]; do
  case "$1" in
  -n) rounds="$2"; shift 2 ;;
  -k) keys="$2"; shift 2 ;;
  -p) np="$2"; shift 2 ;;
  -o) logdir="$2"; shift 2 ;;
  -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
  --) break ;;
  -*) echo "ab_libs.sh: unknown option '$1'" >&2; exit 2 ;;
  *) break ;;
  esac
done
dirs=""
ndirs=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ ! -d "$1" ] || ! ls "$1"/librewind.so* >/dev/null 2>&1; then
    echo "ab_libs.sh: '$1' is not a directory holding librewind.so*" >&2
    exit 2
  fi
  dirs="$dirs $1"
  ndirs=$((ndirs + 1))
  shift
done
if [ "$ndirs" -lt 2 ] || [ $# -lt 2 ]; then
  echo "ab_libs.sh: two library directories or more, then -- and the command (-h: usage)" >&2
  exit 2
fi
shift
. "$(dirname "$0")/bench_common.sh"
bench_rounds ab_libs.sh "$rounds"
case "$np" in
*[!0-9]*) echo "ab_libs.sh: -p '$np': a rank count" >&2; exit 2 ;;
esac
bench_setup ab_libs.sh "$logdir"

k=1
while [ "$k" -le "$rounds" ]; do
  i=0
  for d in $dirs; do
    log="$logdir/r${k}_lib$i.log"
    if [ -n "$np" ]; then
      # shellcheck disable=SC2086
      LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" $mpiexec $flags -n "$np" "$@" \
        >"$log" 2>&1
    else
      LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@" >"$log" 2>&1
    fi
    rc=$?
    if [ "$rc" -ne 0 ] || ! grep -q '^BENCH_JSON ' "$log"; then
      echo "ab_libs.sh: round $k, library $d: exit status $rc$(grep -q '^BENCH_JSON ' "$log" || echo ', no BENCH_JSON line'):" >&2
      cat "$log" >&2
      exit 1
    fi
    echo "round $k of $rounds, library $i ($d): done"
    i=$((i + 1))
  done
  k=$((k + 1))
done

python3 - "$logdir" "$rounds" "$keys" $dirs <<'EOF'
import json, statistics, sys
logdir, rounds, keys, dirs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4:]
vals = {}  # (lib, key) -> [value per round]
for r in range(1, rounds + 1):
    for i in range(len(dirs)):
        line = [l for l in open(f"{logdir}/r{r}_lib{i}.log") if l.startswith("BENCH_JSON ")][-1]
        j = json.loads(line[len("BENCH_JSON "):])
        for key in keys:
            if not isinstance(j.get(key), (int, float)):
                sys.exit(f"ab_libs.sh: BENCH_JSON has no number '{key}' (round {r}, {dirs[i]})")
            vals.setdefault((i, key), []).append(float(j[key]))
def span(v):
    return f"{statistics.median(v):.4g} ({min(v):.4g} - {max(v):.4g})"
print(f"\n{rounds} rounds, libraries alternated in turn; median (min - max) over the rounds")
for i, d in enumerate(dirs):
    print(f"library {i}: {d}")
    for key in keys:
        v = vals[(i, key)]
        line = f"  {key:28s} {span(v)}"
        if i > 0:
            ratio = [a / b for a, b in zip(v, vals[(0, key)]) if b != 0]
            if ratio:
                line += f"   / library 0's, paired by round: {span(ratio)}"
        print(line)
out = {"rounds": rounds, "libraries": dirs, "keys": keys,
       "values": {key: [vals[(i, key)] for i in range(len(dirs))] for key in keys}}
print("AB_JSON " + json.dumps(out))
EOF
