#!/bin/sh
# Strong scaling of bench_pde: runs it at each rank count (default 1 and 2) with the same
# arguments, keeps every run's full output, and prints the speedup t(1 rank) / t(n ranks) of
# the forward solve and of each adjoint variant (binomial, store-everything) read from the
# BENCH_JSON lines, with the parallel efficiency (speedup / n) and the adjoint/forward ratio
# at every size. The load average (uptime) before and after each run goes in the output too:
# on a shared machine timings are noisy. With -n R the sweep over the rank counts runs R times
# in turn (1, 2, 1, 2, ...): each round's speedups pair runs made minutes apart at most, and
# the speedups reported are the median over the rounds, with their range.
#
#   tests/bench/run_pde_scaling.sh [-b path/to/bench_pde] [-r "1 2"] [-n R] [-o logdir]
#                                  [-- ARGS]
#   e.g. run_pde_scaling.sh -b build/tests/bench/bench_pde -n 5 -- --problem grayscott --n 512
#
# Output: the table (round 1's times), the speedups per round when R > 1, then one
# machine-readable line
#   SCALING_JSON {"problem":..,"ranks":[1,2],"runs":[<round 1's BENCH_JSON objects>],
#                 "speedup":{"forward":[..],"binomial":[..],"store":[..]},
#                 "speedup_rounds":{"binomial":[[..round 1..],..],..},"rounds":R,..}
# (speedups listed per rank count, the median over the rounds, null where a variant did not
# run). Before it, per round, the halo waits of the least and the most waiting rank (shares of the
# forward and binomial times; a wide range: one rank was slower). Exit status: 0; 1 when a run
# failed (its output is printed); 2 on a bad command line.
set -u
bench=""
ranks="1 2"
rounds=1
logdir=""
while [ $# -gt 0 ]; do
  case "$1" in
  -b) bench="$2"; shift 2 ;;
  -r) ranks="$2"; shift 2 ;;
  -n) rounds="$2"; shift 2 ;;
  -o) logdir="$2"; shift 2 ;;
  --) shift; break ;;
  -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
  *) echo "run_pde_scaling.sh: unknown option '$1' (bench_pde flags go after --)" >&2; exit 2 ;;
  esac
done
if [ -z "$bench" ]; then
  for c in ./bench_pde ./tests/bench/bench_pde ./build/tests/bench/bench_pde; do
    if [ -x "$c" ]; then bench="$c"; break; fi
  done
fi
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
  echo "run_pde_scaling.sh: bench_pde not found; pass -b path/to/bench_pde" >&2
  exit 2
fi
. "$(dirname "$0")/bench_common.sh"
bench_rounds run_pde_scaling.sh "$rounds"
bench_setup run_pde_scaling.sh "$logdir"

k=1
while [ "$k" -le "$rounds" ]; do
  for np in $ranks; do
    log="$logdir/np${np}_r$k.log"
    echo "== round $k of $rounds: $mpiexec -n $np $bench $*" | tee "$log"
    echo "load before: $(uptime)" | tee -a "$log"
    # shellcheck disable=SC2086
    "$mpiexec" -n "$np" $flags "$bench" "$@" >>"$log" 2>&1
    rc=$?
    echo "load after:  $(uptime)" >>"$log"
    if [ $rc -ne 0 ]; then
      cat "$log"
      echo "run_pde_scaling.sh: the run at $np rank(s) failed with exit status $rc" >&2
      exit 1
    fi
    [ "$k" -eq 1 ] && grep -v -e '^BENCH_JSON ' -e '^== ' -e '^load before: ' "$log"
  done
  k=$((k + 1))
done

# shellcheck disable=SC2086 # $ranks: one argument per rank count
python3 - "$logdir" "$rounds" $ranks <<'EOF'
import json, statistics, sys
logdir, rounds, ranks = sys.argv[1], int(sys.argv[2]), [int(r) for r in sys.argv[3:]]
def load(np, k):
    with open(f"{logdir}/np{np}_r{k}.log") as f:
        lines = [l[len("BENCH_JSON "):] for l in f if l.startswith("BENCH_JSON ")]
    if len(lines) != 1:
        sys.exit(f"run_pde_scaling.sh: {len(lines)} BENCH_JSON lines at {np} rank(s), round {k}")
    return json.loads(lines[0])
allruns = [[load(np, k) for np in ranks] for k in range(1, rounds + 1)]
runs = allruns[0]
base = runs[0]
modes = ["forward", "binomial", "store"]
def t(run, m):
    return next((v["time"] for v in run["variants"] if v["mode"] == m), None)
def speedups(rr, m):
    return [t(rr[0], m) / t(r, m) if t(rr[0], m) and t(r, m) else None for r in rr]
# per round and rank count; the reported speedup is the median over the rounds
rnd = {m: [speedups(rr, m) for rr in allruns] for m in modes}
def med(m, i):
    xs = [s[i] for s in rnd[m] if s[i] is not None]
    return statistics.median(xs) if xs else None
speed = {m: [med(m, i) for i in range(len(runs))] for m in modes}
eff = {m: [] for m in modes}
ratio = {m: [] for m in modes if m != "forward"}
for i, run in enumerate(runs):
    p = run["ranks"] / base["ranks"]
    for m in modes:
        s = speed[m][i]
        eff[m].append(s / p if s else None)
        if m != "forward":
            b, f = t(run, m), t(run, "forward")
            ratio[m].append(b / f if b and f else None)
print(f"\nstrong scaling: {base['problem']} n = {base['n']}, {base['steps']} steps, "
      f"c = {base['slots']} (speedup = t({base['ranks']} rank) / t(n ranks); eff = speedup / "
      f"(n / {base['ranks']}); times: round 1's"
      + (f"; speedups: the median of {rounds} rounds" if rounds > 1 else "") + ")")
fmt = lambda x, w=8, p=3: f"{x:{w}.{p}f}" if x is not None else f"{'-':>{w}}"
print(f"{'ranks':>5} {'fwd [s]':>9} {'bin [s]':>9} {'store [s]':>9} {'S fwd':>8} {'S bin':>8} "
      f"{'S store':>8} {'E fwd':>8} {'E bin':>8} {'bin/fwd':>8} {'sto/fwd':>8} "
      f"{'RSS/rank MiB':>12}")
for i, run in enumerate(runs):
    rss = max(v["rss_after"] for v in run["variants"]) / 2**20
    print(f"{run['ranks']:>5} {fmt(t(run, 'forward'), 9)} {fmt(t(run, 'binomial'), 9)} "
          f"{fmt(t(run, 'store'), 9)} {fmt(speed['forward'][i])} {fmt(speed['binomial'][i])} "
          f"{fmt(speed['store'][i])} {fmt(eff['forward'][i])} {fmt(eff['binomial'][i])} "
          f"{fmt(ratio['binomial'][i])} {fmt(ratio['store'][i])} {rss:12.1f}")
if rounds > 1:
    for i, run in enumerate(runs[1:], 1):
        for m in modes:
            xs = [s[i] for s in rnd[m]]
            if any(x is None for x in xs):
                continue
            print(f"speedup {m:8s} at {run['ranks']} ranks, per round: "
                  + " ".join(f"{x:.2f}" for x in xs)
                  + f"; median {statistics.median(xs):.2f} (min {min(xs):.2f}, max {max(xs):.2f})")
# halo waits (bench_pde's halo_wait: least and most waiting rank's share of the variant's time):
# a wide range says a rank was slower that round (each step waits for the slowest neighbour)
for i, run in enumerate(runs[1:], 1):
    for m in ("forward", "binomial"):
        ws = [next((v.get("halo_wait") for v in rr[i]["variants"] if v["mode"] == m), None)
              for rr in allruns]
        if any(w is None for w in ws):
            continue
        print(f"halo waits {m:8s} at {run['ranks']} ranks, per round (least - most waiting "
              "rank): " + " ".join(f"{w[0]:.2f}-{w[1]:.2f}" for w in ws))
same = all(r["J"] == base["J"] for rr in allruns for r in rr)
rel = lambda a, b: abs(a - b) / max(abs(a), abs(b), 1e-300)
dj = max(rel(r["J"], base["J"]) for rr in allruns for r in rr)
dp = max((rel(a, b) for rr in allruns for r in rr for a, b in zip(r["dJdp"], base["dJdp"])),
         default=0.0)
print(f"J at every size: {'bitwise equal' if same else 'differs'} "
      f"({', '.join(repr(r['J']) for r in runs)}); max relative difference over sizes: "
      f"J {dj:.2e}, dJ/dp {dp:.2e} (sums over ranks change the rounding)")
out = {"problem": base["problem"], "n": base["n"], "steps": base["steps"],
       "slots": base["slots"], "ranks": [r["ranks"] for r in runs], "speedup": speed,
       "efficiency": eff, "adjoint_over_forward": ratio, "rounds": rounds,
       "speedup_rounds": rnd,
       "J_bitwise_equal_across_ranks": same,
       "J_max_rel_diff": dj, "dJdp_max_rel_diff": dp, "logdir": logdir, "runs": runs}
print("SCALING_JSON " + json.dumps(out, separators=(",", ":")))
EOF
