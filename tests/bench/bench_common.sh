# Sourced by the benchmark scripts (run_pde_scaling.sh, ab_libs.sh): the checks and settings
# each starts with. NAME is the script's name for its messages; each check exits with status 2.

# bench_rounds NAME VALUE: VALUE must be a whole number >= 1 (-n).
bench_rounds() {
  case "$2" in
  '' | *[!0-9]* | 0) echo "$1: -n '$2': the rounds must be a whole number >= 1" >&2; exit 2 ;;
  esac
}

# bench_setup NAME LOGDIR: python3 must be there (the scripts read BENCH_JSON with it); sets
# mpiexec and flags (OpenMPI: no core binding, the project's test setting; MPIEXEC and
# MPIEXEC_FLAGS="" for others) and logdir (LOGDIR, or a new directory under $TMPDIR), made.
bench_setup() {
  command -v python3 >/dev/null 2>&1 || { echo "$1: python3 needed" >&2; exit 2; }
  mpiexec=${MPIEXEC:-mpiexec}
  flags=${MPIEXEC_FLAGS---bind-to none}
  logdir=$2
  [ -n "$logdir" ] || logdir=$(mktemp -d "${TMPDIR:-/tmp}/${1%.sh}.XXXXXX")
  mkdir -p "$logdir"
}
