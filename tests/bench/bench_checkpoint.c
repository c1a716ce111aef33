/* Benchmark: store-everything adjoint against binomial (Revolve) checkpointing.
 *
 * Problem: a Lotka-Volterra ensemble of E members (2E unknowns, distributed over the ranks;
 * member e starts at (1 + e/E, 1)), RK4 with l fixed steps of size dt, J with a terminal and a
 * running term. Defaults: E = 50,000 (10^5 unknowns, 8e5 bytes per state) and l = 5,000, so
 * storing every state takes l x 8e5 = 4e9 bytes. In one run it times rw_adjoint_solve for
 *   - RW_ADJOINT_CHECKPOINT with RW_SCHEDULE_BINOMIAL and c RAM slots, for each c of --slots
 *     (c counts the slot that holds y_0, as Revolve and rw_schedule.h do), and
 *   - RW_ADJOINT_STORE (every state kept in RAM; the adjoint step recomputes the stages).
 * For each variant it reports
 *   - the wall time of the rw_adjoint_solve call (max over ranks; median of --repeat runs),
 *     its forward and backward sweeps, and the ratio of the time to store-everything's;
 *   - advances (stats.advances, Revolve's count: forward steps whose adjoint does not follow
 *     at once) against t(l, c) from rw_binomial_advances: they must be EQUAL (exit 1 if not);
 *     for store-everything the count is l - 1 = t(l, c >= l - 1);
 *   - recomputations per step, stats.recomputed_steps / l, against the theory
 *     (t(l, c) - (l - 1)) / l = t(l, c)/l - (l - 1)/l: of the t(l, c) advances, the l - 1 of
 *     the first forward sweep are not recomputations (the first reversal takes step l - 1
 *     itself). Also checked for equality (exit 1 if not);
 *   - memory, per rank (largest rank): the bytes held in snapshots (stats.checkpoint_bytes)
 *     against the budget, c x state bytes (l x state bytes when storing everything), which
 *     they must not exceed (exit 1 if they do); the adjoint's peak through Rewind's counting
 *     allocator (stats.peak_alloc_bytes: snapshots plus the driver's and stepper's work
 *     vectors); and the process peak RSS (getrusage).
 * Peak RSS is monotone over a process, so the variants run in increasing-memory order: the
 * checkpoint variants by increasing c, then store-everything last; the RSS after a variant
 * is the peak so far, which is that variant's own peak as every earlier variant needed less.
 * Every checkpointed run must give store-everything's J, dJ/dp and dJ/dy0 bit for bit
 * (recomputation is deterministic: an invariant of the design); exit 1 if not. When storing
 * every state would need more than --max-store-bytes (summed over ranks: a single-node run
 * is assumed), store-everything is skipped with a message and the checkpoint variants are
 * compared with each other. A straight-line fit time = a + b x recomputed steps over the
 * checkpoint variants shows whether the time tracks the recomputation count: b is compared
 * with the cost of one forward step (forward sweep time / l).
 *
 * Output: a table for people, one JSON line ("BENCH_JSON {...}") for scripts. This is a
 * benchmark, not a test: it asserts nothing about speed; the ctest smoke runs use tiny sizes
 * only to keep it building and running. Exit status: 0, 1 (a check above failed or an error),
 * 2 (bad command line). */
#include "bench_util.h"
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rewind/rw_schedule.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SLOT_VARIANTS 64
#define MAX_PARAMS        8

typedef struct {
  long members, steps;
  int repeat;
  double dt;
  int nslots;
  int slots[MAX_SLOT_VARIANTS]; /* sorted, distinct */
  size_t max_store_bytes;
} bench_opts;

static void usage(FILE *f, const char *prog)
{
  fprintf(f,
          "usage: %s [--members E] [--steps N] [--slots C1,C2,..] [--max-store-bytes B]\n"
          "          [--repeat R] [--dt DT]\n"
          "  --members E          Lotka-Volterra ensemble size, 2E unknowns (default 50000)\n"
          "  --steps N            RK4 steps (default 5000)\n"
          "  --slots C1,C2,..     binomial checkpoint slot counts, counting the slot of y_0\n"
          "                       (default 5,10,20,50,100; run in increasing order)\n"
          "  --max-store-bytes B  skip store-everything when it would hold more than B bytes\n"
          "                       over all ranks; suffixes K, M, G, T (or KiB..) are binary\n"
          "                       (default 6GiB)\n"
          "  --repeat R           runs of each variant, median time reported (default 1)\n"
          "  --dt DT              step size; the final time is N * DT (default 1e-3)\n",
          prog);
}

/* "6GiB", "6G", "4000000000", "512MiB": a non-negative size with an optional binary suffix. */

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* "5,10,20": positive integers; sorted and made distinct here. */
static int parse_slots(const char *s, bench_opts *o)
{
  int n = 0;
  const char *p = s;
  for (;;) {
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno || end == p || v < 1 || v > 1000000 || n >= MAX_SLOT_VARIANTS) return 1;
    o->slots[n++] = (int)v;
    if (*end == '\0') break;
    if (*end != ',') return 1;
    p = end + 1;
  }
  qsort(o->slots, (size_t)n, sizeof o->slots[0], cmp_int);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || o->slots[i] != o->slots[m - 1]) o->slots[m++] = o->slots[i];
  o->nslots = m;
  return 0;
}

/* Returns 0 to run, 1 to exit successfully (--help), 2 on a bad command line. Prints on rank
 * 0 only. */
static int parse_args(int argc, char **argv, int rank, bench_opts *o)
{
  memset(o, 0, sizeof *o);
  o->members = 50000;
  o->steps = 5000;
  o->repeat = 1;
  o->dt = 1e-3;
  o->max_store_bytes = (size_t)6 << 30;
  (void)parse_slots("5,10,20,50,100", o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (rank == 0) usage(stdout, argv[0]);
      return 1;
    }
    int known = !strcmp(a, "--members") || !strcmp(a, "--steps") || !strcmp(a, "--repeat") ||
                !strcmp(a, "--dt") || !strcmp(a, "--slots") || !strcmp(a, "--max-store-bytes");
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
    const char *expected = "a positive integer";
    if (!strcmp(a, "--members")) {
      bad = parse_long(v, 1, &n);
      o->members = n;
    } else if (!strcmp(a, "--steps")) {
      bad = parse_long(v, 1, &n) || n > (1L << 30);
      o->steps = n;
    } else if (!strcmp(a, "--repeat")) {
      bad = parse_long(v, 1, &n) || n > 1000;
      o->repeat = (int)n;
    } else if (!strcmp(a, "--slots")) {
      bad = parse_slots(v, o);
      expected = "a comma-separated list of positive integers";
    } else if (!strcmp(a, "--max-store-bytes")) {
      bad = parse_bytes(v, &o->max_store_bytes);
      expected = "a byte count such as 6GiB";
    } else {
      bad = parse_double(v, &o->dt);
      expected = "a positive finite number";
    }
    if (bad) {
      if (rank == 0)
        fprintf(stderr, "%s: invalid value '%s' for %s (expected %s)\n", argv[0], v, a, expected);
      return 2;
    }
  }
  return 0;
}

/* Max over ranks of a byte count (reported per rank: the largest rank's need). */

/* One variant: slots > 0 is binomial checkpointing with that many slots, 0 store-everything. */
typedef struct {
  int slots;
  int ran;
  double t_total, t_fwd, t_bwd; /* medians; max over ranks */
  double J, dJdp[MAX_PARAMS];
  N_Vector dJdy0;
  rw_adjoint_stats stats;
  int64_t t_lc;              /* t(l, c) (store: l - 1) */
  size_t ckpt, peak, theory; /* per rank, largest rank; theory: c (store: l) x state */
  size_t rss_after;          /* process peak RSS after this variant (max over ranks) */
  int counts_ok, bitwise;    /* advances / recomputations equal the theory; equal results */
} variant;

/* Runs variant v `repeat` times from the initial state; keeps the first run's results and the
 * median times. */
static int run_variant(rw_problem prob, rw_stepper st, const bench_opts *o,
                       const rw_adjoint_options *base, N_Vector y, double *tbuf, variant *v)
{
  rw_adjoint_options opt = *base;
  if (v->slots > 0) {
    opt.mode = RW_ADJOINT_CHECKPOINT;
    opt.schedule = RW_SCHEDULE_BINOMIAL;
    opt.ram_slots = v->slots;
  } else {
    opt.mode = RW_ADJOINT_STORE;
  }
  MPI_Comm comm = rw_context_comm(rw_problem_context(prob));
  int R = o->repeat;
  for (int r = 0; r < R; r++) {
    double J = 0.0, dJdp[MAX_PARAMS] = {0};
    rw_adjoint_stats s;
    RW_CALL(rw_ode_initial_state(prob, y));
    RW_CALL_MPI(MPI_Barrier(comm));
    double t0 = rw_wtime();
    RW_CALL(rw_adjoint_solve(prob, st, &opt, y, &J, dJdp, v->dJdy0, &s));
    double t[3] = {rw_wtime() - t0, s.time_forward, s.time_backward};
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, t, 3, MPI_DOUBLE, MPI_MAX, comm));
    for (int k = 0; k < 3; k++)
      tbuf[k * R + r] = t[k];
    if (r == 0) {
      v->J = J;
      memcpy(v->dJdp, dJdp, sizeof dJdp);
      v->stats = s;
      v->rss_after = max_bytes(comm, rw_peak_rss());
    }
  }
  v->t_total = median(&tbuf[0], R);
  v->t_fwd = median(&tbuf[R], R);
  v->t_bwd = median(&tbuf[2 * R], R);
  v->ran = 1;
  return 0;
}

/* 1 when a and b have bitwise equal J, dJ/dp and dJ/dy0 on every rank. */
static int same_results(MPI_Comm comm, const variant *a, const variant *b, int np)
{
  int same = memcmp(&a->J, &b->J, sizeof a->J) == 0 &&
             memcmp(a->dJdp, b->dJdp, (size_t)np * sizeof a->dJdp[0]) == 0 &&
             memcmp(rw_vec_data(a->dJdy0), rw_vec_data(b->dJdy0),
                    (size_t)rw_vec_local_length(a->dJdy0) * sizeof(double)) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, comm);
  return same;
}

static void variant_name(const variant *v, char *buf, size_t len)
{
  if (v->slots > 0)
    snprintf(buf, len, "binomial c=%d", v->slots);
  else
    snprintf(buf, len, "store everything");
}

static int bench(const bench_opts *o, int *failed)
{
  int ierr = 0;
  rw_context ctx = NULL;
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL;
  double *tbuf = NULL;
  int nv = o->nslots + 1; /* checkpoint variants by increasing c, then store-everything */
  variant vars[MAX_SLOT_VARIANTS + 1];
  memset(vars, 0, sizeof vars);
  RW_CALL(rw_context_create(MPI_COMM_WORLD, &ctx));
  MPI_Comm comm = rw_context_comm(ctx);
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);

  rw_ode_config cfg = {.model = "lotkavolterra",
                       .ensemble = o->members,
                       .y0 = {1.0, 1.0},
                       .spread = 1.0 / (double)o->members,
                       .target = {1.0, 1.0},
                       .terminal_weight = 1.0,
                       .running_weight = 0.1};
  RW_TRY(rw_ode_problem_create(ctx, &cfg, &prob));
  int np = rw_problem_nparams(prob);
  RW_CHECK_GOTO(np <= MAX_PARAMS, RW_ERR_INTERNAL, "%d parameters, the bench keeps %d", np,
                MAX_PARAMS);
  const rw_tableau *tab = rw_tableau_find("rk4");
  RW_CHECK_GOTO(tab != NULL, RW_ERR_INTERNAL, "tableau rk4 missing");
  RW_TRY(rw_stepper_create_erk(prob, tab, &st));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_calloc(3 * (size_t)o->repeat, sizeof *tbuf, "bench timings", &tbuf));
  for (int i = 0; i < nv; i++) {
    vars[i].slots = i < o->nslots ? o->slots[i] : 0;
    RW_TRY(rw_vec_clone(y, &vars[i].dJdy0));
  }

  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.t0 = 0.0;
  opt.dt = o->dt;
  opt.tf = (double)o->steps * o->dt;
  long N = 0;
  double last = 0.0;
  RW_TRY(rw_time_grid(opt.t0, opt.tf, opt.dt, &N, &last));
  size_t state_bytes = max_bytes(comm, rw_vec_bytes(y));
  size_t store_need = sum_bytes(comm, (size_t)N * rw_vec_bytes(y));
  int store_skipped = store_need > o->max_store_bytes;
  size_t rss_base = max_bytes(comm, rw_peak_rss());

  if (rank == 0) {
    printf("bench_checkpoint: Lotka-Volterra, %ld members (%ld unknowns) on %d rank(s), RK4, "
           "l = %ld steps of dt = %g, %s%d run%s per variant\n",
           o->members, 2 * o->members, size, N, o->dt, o->repeat > 1 ? "median of " : "", o->repeat,
           o->repeat > 1 ? "s" : "");
    printf("state: %zu bytes per rank (largest rank); storing every state: %.3f GiB over all "
           "ranks (--max-store-bytes %.3f GiB)\n",
           state_bytes, gib(store_need), gib(o->max_store_bytes));
    if (store_skipped)
      printf("store-everything SKIPPED: it would hold %zu bytes (%.3f GiB) > --max-store-bytes "
             "%zu; the checkpoint variants are compared with each other instead\n",
             store_need, gib(store_need), o->max_store_bytes);
    printf("order: binomial by increasing c, then store-everything (increasing memory, so the "
           "monotone peak RSS after each variant is its own peak)\n");
    fflush(stdout);
  }

  for (int i = 0; i < nv; i++) {
    variant *v = &vars[i];
    if (v->slots == 0 && store_skipped) continue;
    RW_TRY(run_variant(prob, st, o, &opt, y, tbuf, v));
    if (rank == 0) {
      char name[64];
      variant_name(v, name, sizeof name);
      printf("  done: %-18s %9.3f s\n", name, v->t_total);
      fflush(stdout);
    }
  }

  /* Counts and memory against the theory. */
  int counts_ok = 1, bitwise_ok = 1;
  for (int i = 0; i < nv; i++) {
    variant *v = &vars[i];
    if (!v->ran) continue;
    if (v->slots > 0)
      RW_TRY(rw_binomial_advances(N, v->slots, NULL, &v->t_lc));
    else
      v->t_lc = N - 1;
    v->counts_ok = v->stats.steps == N && (int64_t)v->stats.advances == v->t_lc &&
                   (int64_t)v->stats.optimal_advances == v->t_lc &&
                   (int64_t)v->stats.recomputed_steps == v->t_lc - (N - 1);
    counts_ok = counts_ok && v->counts_ok;
    v->ckpt = max_bytes(comm, v->stats.checkpoint_bytes);
    v->peak = max_bytes(comm, v->stats.peak_alloc_bytes);
    v->theory = (size_t)(v->slots > 0 ? v->slots : N) * state_bytes;
    /* The snapshots never exceed the budget (c slots; fewer when the schedule needs fewer). */
    v->counts_ok = v->counts_ok && v->ckpt <= v->theory;
  }
  /* Bitwise agreement with the reference: store-everything, else the smallest c. */
  variant *ref = store_skipped ? &vars[0] : &vars[nv - 1];
  for (int i = 0; i < nv; i++)
    if (vars[i].ran) {
      vars[i].bitwise = same_results(comm, &vars[i], ref, np);
      bitwise_ok = bitwise_ok && vars[i].bitwise;
    }

  /* time = a + b * recomputed steps over the checkpoint variants; tau = one forward step. */
  double a = NAN, b = NAN, tau = NAN;
  {
    int k = 0;
    double sr = 0, stime = 0, taus[MAX_SLOT_VARIANTS];
    for (int i = 0; i < o->nslots; i++) {
      sr += (double)vars[i].stats.recomputed_steps;
      stime += vars[i].t_total;
      taus[k++] = vars[i].t_fwd / (double)N;
    }
    double rm = sr / k, tm = stime / k, sxx = 0, sxy = 0;
    for (int i = 0; i < o->nslots; i++) {
      double dr = (double)vars[i].stats.recomputed_steps - rm;
      sxx += dr * dr;
      sxy += dr * (vars[i].t_total - tm);
    }
    if (sxx > 0) {
      b = sxy / sxx;
      a = tm - b * rm;
    }
    tau = median(taus, k);
  }

  if (rank == 0) {
    const variant *sv = &vars[nv - 1];
    char refname[96];
    snprintf(refname, sizeof refname, "binomial c=%d's (store-everything skipped)", ref->slots);
    printf("\nJ = %.15e   dJ/d(alpha, beta, gamma, delta) = (%.6e, %.6e, %.6e, %.6e)\n", ref->J,
           ref->dJdp[0], ref->dJdp[1], ref->dJdp[2], ref->dJdp[3]);
    printf("baseline peak RSS before the variants: %.1f MiB; memory columns are per rank "
           "(largest)\n\n",
           mib(rss_base));
    printf("%-18s %9s %7s %8s %8s %8s %8s %8s %8s %9s %9s %9s %9s %8s\n", "variant", "time [s]",
           "/store", "fwd [s]", "bwd [s]", "advances", "t(l,c)", "recomp/l", "theory", "ckpt MiB",
           "bdgt MiB", "peak MiB", "RSS MiB", "bitwise");
    for (int i = 0; i < nv; i++) {
      const variant *v = &vars[i];
      char name[64];
      variant_name(v, name, sizeof name);
      if (!v->ran) {
        printf("%-18s skipped (needs %zu bytes > --max-store-bytes)\n", name, store_need);
        continue;
      }
      char ratio[32];
      if (sv->ran)
        snprintf(ratio, sizeof ratio, "%7.3f", v->t_total / sv->t_total);
      else
        snprintf(ratio, sizeof ratio, "%7s", "-");
      double rl = (double)v->stats.recomputed_steps / (double)N;
      double th = (double)(v->t_lc - (N - 1)) / (double)N;
      printf("%-18s %9.3f %s %8.3f %8.3f %8ld %8lld %8.4f %8.4f %9.2f %9.2f %9.2f %9.1f %8s%s\n",
             name, v->t_total, ratio, v->t_fwd, v->t_bwd, v->stats.advances, (long long)v->t_lc, rl,
             th, mib(v->ckpt), mib(v->theory), mib(v->peak), mib(v->rss_after),
             v->bitwise ? "equal" : "DIFFER",
             v->counts_ok ? "" : "  <- counts or bytes differ from theory");
    }
    printf("\ntime: the rw_adjoint_solve call (max over ranks); /store: over store-everything's "
           "time; fwd, bwd: its sweeps\n"
           "advances: stats.advances (Revolve's count), must equal t(l,c) = "
           "rw_binomial_advances(l, c) (store: l - 1)\n"
           "recomp/l: stats.recomputed_steps / l; theory: (t(l,c) - (l-1)) / l = t(l,c)/l - "
           "(l-1)/l (the first sweep's l-1 advances are not recomputations)\n"
           "ckpt: stats.checkpoint_bytes; bdgt: c x state bytes (store: l x state bytes), ckpt "
           "must not exceed it; peak: stats.peak_alloc_bytes (snapshots + work vectors)\n"
           "RSS: process peak RSS (getrusage, monotone) after the variant; variants run in "
           "increasing-memory order, so it is the variant's own peak\n"
           "bitwise: J, dJ/dp and dJ/dy0 equal to %s bit for bit\n",
           store_skipped ? refname : "store-everything's");
    if (isfinite(b))
      printf("fit over the checkpoint variants: time = %.4f s + %.4e s x recomputed steps; "
             "one forward step (fwd sweep / l) = %.4e s, so a recomputation costs %.2f forward "
             "steps\n",
             a, b, tau, b / tau);
    if (isfinite(b) && sv->ran)
      printf("store-everything: %.4f s vs the fit's zero-recomputation time %.4f s (%.3fx)\n",
             sv->t_total, a, sv->t_total / a);
    printf("advances and recomputations %s the theory; gradients %s bit for bit\n",
           counts_ok ? "equal" : "DIFFER FROM", bitwise_ok ? "agree" : "DIFFER");

    printf("BENCH_JSON {\"bench\":\"checkpoint\",\"ranks\":%d,\"members\":%ld,\"unknowns\":%ld,"
           "\"steps\":%ld,\"dt\":%g,\"repeat\":%d,\"state_bytes\":%zu,\"store_bytes\":%zu,"
           "\"max_store_bytes\":%zu,\"store_skipped\":%s,\"rss_baseline\":%zu,"
           "\"order\":\"increasing_memory\",\"variants\":[",
           size, o->members, 2 * o->members, N, o->dt, o->repeat, state_bytes, store_need,
           o->max_store_bytes, store_skipped ? "true" : "false", rss_base);
    int first = 1;
    for (int i = 0; i < nv; i++) {
      const variant *v = &vars[i];
      if (!v->ran) continue;
      char ratio[32];
      if (sv->ran)
        snprintf(ratio, sizeof ratio, "%.4f", v->t_total / sv->t_total);
      else
        snprintf(ratio, sizeof ratio, "null");
      printf("%s{\"mode\":\"%s\",\"slots\":%d,\"time\":%.6e,\"ratio_to_store\":%s,"
             "\"t_forward\":%.6e,\"t_backward\":%.6e,\"advances\":%ld,\"t_lc\":%lld,"
             "\"recomputed_steps\":%ld,\"recomp_per_step\":%.6f,\"recomp_per_step_theory\":%.6f,"
             "\"restores\":%ld,\"rhs_forward\":%ld,\"rhs_backward\":%ld,"
             "\"checkpoint_bytes\":%zu,\"budget_bytes\":%zu,\"peak_alloc_bytes\":%zu,"
             "\"rss_after\":%zu,\"counts_match\":%s,\"bitwise\":%s}",
             first ? "" : ",", v->slots > 0 ? "binomial" : "store", v->slots > 0 ? v->slots : 0,
             v->t_total, ratio, v->t_fwd, v->t_bwd, v->stats.advances, (long long)v->t_lc,
             v->stats.recomputed_steps, (double)v->stats.recomputed_steps / (double)N,
             (double)(v->t_lc - (N - 1)) / (double)N, v->stats.restores, v->stats.rhs_forward,
             v->stats.rhs_backward, v->ckpt, v->theory, v->peak, v->rss_after,
             v->counts_ok ? "true" : "false", v->bitwise ? "true" : "false");
      first = 0;
    }
    printf("],\"fit_intercept\":");
    if (isfinite(b))
      printf("%.6e,\"fit_seconds_per_recomputation\":%.6e,", a, b);
    else
      printf("null,\"fit_seconds_per_recomputation\":null,");
    printf("\"forward_step_seconds\":%.6e,\"J\":%.17g,\"counts_match\":%s,"
           "\"gradients_match\":%s}\n",
           tau, ref->J, counts_ok ? "true" : "false", bitwise_ok ? "true" : "false");
    fflush(stdout);
  }
  *failed = !counts_ok || !bitwise_ok;

cleanup:
  for (int i = 0; i < nv; i++)
    rw_vec_destroy(&vars[i].dJdy0);
  rw_free(&tbuf);
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
  int failed = 0;
  int ierr = bench(&o, &failed);
  if (ierr) fprintf(stderr, "bench_checkpoint: error %d: %s\n", ierr, rw_error_message());
  MPI_Finalize();
  return ierr || failed ? 1 : 0;
}
