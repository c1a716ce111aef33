/* Benchmark: cost of the store-everything adjoint against the forward solve.
 *
 * Lotka-Volterra ensemble (E members, 2E unknowns, distributed over the ranks), RK4 with N
 * fixed steps, J with a terminal and a running term. In one run, repeated R times with the
 * three variants interleaved (so drifts in machine load hit all of them alike), it times
 *   (a) rw_forward_solve,
 *   (b) rw_adjoint_solve keeping the state of every step (the adjoint recomputes stages),
 *   (c) rw_adjoint_solve with store_stages = 1 (no recomputation, s times the memory),
 * and reports the median wall time of each (max over ranks), the ratios (b)/(a) and (c)/(a),
 * the adjoint's peak bytes through Rewind's allocator and its checkpoint bytes against the
 * theoretical snapshot bytes (N * state bytes, times s with stages), and the process peak
 * RSS. A table for people, one JSON line ("BENCH_JSON {...}") for scripts.
 *
 * This is a benchmark, not a test: it asserts nothing about speed. The ctest smoke run with
 * tiny sizes only keeps it building and running. It exits 1 if (b) and (c) disagree on J or
 * dJ/dp (they must agree bit for bit: the stored stages are the ones the forward step made),
 * and 2 on a bad command line. */
#include "bench_util.h"
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  long members, steps;
  int repeat;
  double dt;
} bench_opts;

static void usage(FILE *f, const char *prog)
{
  fprintf(f,
          "usage: %s [--members E] [--steps N] [--repeat R] [--dt DT]\n"
          "  --members E  Lotka-Volterra ensemble size, 2E unknowns (default 1000)\n"
          "  --steps N    RK4 steps (default 2000)\n"
          "  --repeat R   repetitions of each variant, median reported (default 5)\n"
          "  --dt DT      step size; the final time is N * DT (default 1e-3)\n",
          prog);
}

/* Returns 0 to run, 1 to exit successfully (--help), 2 on a bad command line. Prints on rank
 * 0 only. */
static int parse_args(int argc, char **argv, int rank, bench_opts *o)
{
  o->members = 1000;
  o->steps = 2000;
  o->repeat = 5;
  o->dt = 1e-3;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (rank == 0) usage(stdout, argv[0]);
      return 1;
    }
    int known = !strcmp(a, "--members") || !strcmp(a, "--steps") || !strcmp(a, "--repeat") ||
                !strcmp(a, "--dt");
    if (!known) {
      if (rank == 0) {
        fprintf(stderr, "%s: unknown option '%s'\n", argv[0], a);
        usage(stderr, argv[0]);
      }
      return 2;
    }
    if (i + 1 >= argc) {
      if (rank == 0) fprintf(stderr, "%s: option %s needs a value\n", argv[0], a);
      return 2;
    }
    const char *v = argv[++i];
    long n = 0;
    int bad = 0;
    if (!strcmp(a, "--members")) {
      bad = parse_long(v, 1, &n);
      o->members = n;
    } else if (!strcmp(a, "--steps")) {
      bad = parse_long(v, 1, &n);
      o->steps = n;
    } else if (!strcmp(a, "--repeat")) {
      bad = parse_long(v, 1, &n) || n > 1000;
      o->repeat = (int)n;
    } else {
      bad = parse_double(v, &o->dt);
    }
    if (bad) {
      if (rank == 0)
        fprintf(stderr, "%s: invalid value '%s' for %s (expected a positive %s)\n", argv[0], v, a,
                strcmp(a, "--dt") ? "integer" : "finite number");
      return 2;
    }
  }
  return 0;
}

enum { V_FWD, V_STATES, V_STAGES, NV };
static const char *vname[NV] = {"forward only", "fwd+adjoint, states", "fwd+adjoint, stages"};

/* Timings per run: the whole call, and the forward and backward sweeps inside it (the rest
 * is set-up: allocating and first touching the snapshots). */
enum { T_TOTAL, T_FSWEEP, T_BSWEEP, NT };

typedef struct {
  double J, dJdp[4];
  rw_adjoint_stats stats;
  size_t rss_after; /* process peak RSS after the first run of this variant */
} run_result;

/* One timed run of variant v from the initial state; times are the max over ranks. */
static int run_variant(rw_problem prob, rw_stepper st, const rw_adjoint_options *base, int v,
                       N_Vector y, run_result *res, double t[NT])
{
  rw_adjoint_options opt = *base;
  opt.store_stages = v == V_STAGES;
  MPI_Comm comm = rw_context_comm(rw_problem_context(prob));
  RW_CALL(rw_ode_initial_state(prob, y));
  RW_CALL_MPI(MPI_Barrier(comm));
  double t0 = rw_wtime();
  if (v == V_FWD)
    RW_CALL(rw_forward_solve(prob, st, &opt, y, &res->J, &res->stats));
  else
    RW_CALL(rw_adjoint_solve(prob, st, &opt, y, &res->J, res->dJdp, NULL, &res->stats));
  t[T_TOTAL] = rw_wtime() - t0;
  t[T_FSWEEP] = res->stats.time_forward;
  t[T_BSWEEP] = res->stats.time_backward;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, t, NT, MPI_DOUBLE, MPI_MAX, comm));
  return 0;
}

/* Max over ranks of a byte count (reported per rank: the largest rank's need). */

static int bench(const bench_opts *o, int *mismatch)
{
  int ierr = 0;
  rw_context ctx = NULL;
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL;
  double *times = NULL; /* times[(v * NT + k) * repeat + r] */
  RW_CALL(rw_context_create(MPI_COMM_WORLD, &ctx));
  MPI_Comm comm = rw_context_comm(ctx);
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);

  rw_ode_config cfg = {.model = "lotkavolterra",
                       .ensemble = o->members,
                       .y0 = {1.0, 1.0},
                       .spread = 1e-3,
                       .target = {1.0, 1.0},
                       .terminal_weight = 1.0,
                       .running_weight = 0.1};
  RW_TRY(rw_ode_problem_create(ctx, &cfg, &prob));
  const rw_tableau *tab = rw_tableau_find("rk4");
  RW_CHECK_GOTO(tab != NULL, RW_ERR_INTERNAL, "tableau rk4 missing");
  RW_TRY(rw_stepper_create_erk(prob, tab, &st));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_calloc((size_t)NV * NT * (size_t)o->repeat, sizeof *times, "bench timings", &times));

  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.t0 = 0.0;
  opt.dt = o->dt;
  opt.tf = (double)o->steps * o->dt;

  run_result res[NV];
  memset(res, 0, sizeof res);
  for (int r = 0; r < o->repeat; r++)
    for (int v = 0; v < NV; v++) {
      run_result cur;
      double t[NT];
      memset(&cur, 0, sizeof cur);
      RW_TRY(run_variant(prob, st, &opt, v, y, &cur, t));
      for (int k = 0; k < NT; k++)
        times[(v * NT + k) * o->repeat + r] = t[k];
      if (r == 0) {
        cur.rss_after = max_bytes(comm, rw_peak_rss());
        res[v] = cur;
      }
    }

  double med[NV][NT];
  for (int v = 0; v < NV; v++)
    for (int k = 0; k < NT; k++)
      med[v][k] = median(&times[(v * NT + k) * o->repeat], o->repeat);
  double tf = med[V_FWD][T_TOTAL];
  *mismatch = res[V_STATES].J != res[V_STAGES].J ||
              memcmp(res[V_STATES].dJdp, res[V_STAGES].dJdp, sizeof res[V_STATES].dJdp) != 0;

  long N = res[V_STATES].stats.steps;
  int s = rw_stepper_num_stage_vectors(st);
  size_t state_bytes = max_bytes(comm, rw_vec_bytes(y));
  size_t theory[NV] = {0, (size_t)N * state_bytes, (size_t)N * (size_t)s * state_bytes};
  size_t peak[NV], ckpt[NV];
  for (int v = 0; v < NV; v++) {
    peak[v] = max_bytes(comm, res[v].stats.peak_alloc_bytes);
    ckpt[v] = max_bytes(comm, res[v].stats.checkpoint_bytes);
  }

  if (rank == 0) {
    printf("bench_adjoint_lv: Lotka-Volterra, %ld members (%ld unknowns) on %d rank(s), RK4, "
           "%ld steps of dt = %g, median of %d\n",
           o->members, 2 * o->members, size, N, o->dt, o->repeat);
    printf("J = %.15e   dJ/d(alpha, beta, gamma, delta) = (%.6e, %.6e, %.6e, %.6e)\n",
           res[V_STATES].J, res[V_STATES].dJdp[0], res[V_STATES].dJdp[1], res[V_STATES].dJdp[2],
           res[V_STATES].dJdp[3]);
    printf("state: %zu bytes per rank (largest rank), %d stage vectors per step; memory columns "
           "are per rank (largest)\n\n",
           state_bytes, s);
    printf("%-20s %9s %6s %9s %9s %8s %8s %10s %10s %10s %10s\n", "variant", "time [s]", "/fwd",
           "fwd sweep", "bwd sweep", "rhs fwd", "rhs bwd", "peak MiB", "ckpt MiB", "theory MiB",
           "RSS MiB");
    for (int v = 0; v < NV; v++) {
      printf("%-20s %9.4f %6.2f %9.4f ", vname[v], med[v][T_TOTAL], med[v][T_TOTAL] / tf,
             med[v][T_FSWEEP]);
      if (v == V_FWD) /* the forward solve keeps no snapshots and reports no peak */
        printf("%9s %8ld %8s %10s %10s %10s", "-", res[v].stats.rhs_forward, "-", "-", "-", "-");
      else
        printf("%9.4f %8ld %8ld %10.2f %10.2f %10.2f", med[v][T_BSWEEP], res[v].stats.rhs_forward,
               res[v].stats.rhs_backward, mib(peak[v]), mib(ckpt[v]), mib(theory[v]));
      printf(" %10.2f\n", mib(res[v].rss_after));
    }
    printf("\ntime: whole call (median); /fwd: over the forward-only time; sweeps: inside the "
           "call (the rest is allocating the snapshots)\n"
           "peak: adjoint's peak through Rewind's allocator; ckpt: bytes held in snapshots; "
           "theory: N x state bytes (x %d with stages)\n"
           "RSS: process peak resident set after the first run of the variant (monotone)\n"
           "(b) and (c) gradients %s bit for bit\n",
           s, *mismatch ? "DIFFER" : "agree");
    printf("BENCH_JSON {\"bench\":\"adjoint_lv\",\"ranks\":%d,\"members\":%ld,\"unknowns\":%ld,"
           "\"steps\":%ld,\"dt\":%g,\"repeat\":%d,\"stages\":%d,\"state_bytes\":%zu,"
           "\"t_forward\":%.6e,\"t_adjoint_states\":%.6e,\"t_adjoint_stages\":%.6e,"
           "\"ratio_states\":%.4f,\"ratio_stages\":%.4f,"
           "\"t_fsweep_states\":%.6e,\"t_bsweep_states\":%.6e,"
           "\"t_fsweep_stages\":%.6e,\"t_bsweep_stages\":%.6e,"
           "\"rhs_backward_states\":%ld,\"rhs_backward_stages\":%ld,"
           "\"peak_alloc_states\":%zu,\"peak_alloc_stages\":%zu,"
           "\"checkpoint_states\":%zu,\"checkpoint_stages\":%zu,"
           "\"theory_states\":%zu,\"theory_stages\":%zu,"
           "\"rss_forward\":%zu,\"rss_states\":%zu,\"rss_stages\":%zu,"
           "\"J\":%.17g,\"gradients_match\":%s}\n",
           size, o->members, 2 * o->members, N, o->dt, o->repeat, s, state_bytes, tf,
           med[V_STATES][T_TOTAL], med[V_STAGES][T_TOTAL], med[V_STATES][T_TOTAL] / tf,
           med[V_STAGES][T_TOTAL] / tf, med[V_STATES][T_FSWEEP], med[V_STATES][T_BSWEEP],
           med[V_STAGES][T_FSWEEP], med[V_STAGES][T_BSWEEP], res[V_STATES].stats.rhs_backward,
           res[V_STAGES].stats.rhs_backward, peak[V_STATES], peak[V_STAGES], ckpt[V_STATES],
           ckpt[V_STAGES], theory[V_STATES], theory[V_STAGES], res[V_FWD].rss_after,
           res[V_STATES].rss_after, res[V_STAGES].rss_after, res[V_STATES].J,
           *mismatch ? "false" : "true");
    fflush(stdout);
  }

cleanup:
  rw_free(&times);
  rw_vec_destroy(&y);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
  return ierr;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  bench_opts o;
  int pa = parse_args(argc, argv, rank, &o);
  if (pa) {
    MPI_Finalize();
    return pa == 1 ? 0 : 2;
  }
  int mismatch = 0;
  int ierr = bench(&o, &mismatch);
  if (ierr) fprintf(stderr, "bench_adjoint_lv: error %d: %s\n", ierr, rw_error_message());
  MPI_Finalize();
  return ierr ? 1 : mismatch ? 1 : 0;
}
