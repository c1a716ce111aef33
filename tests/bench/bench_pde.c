/* Benchmark: forward and adjoint cost of the distributed PDE problems (issue 4, "Figures").
 *
 * Problems (--problem):
 *   grayscott  2-D Gray-Scott on a periodic N x N grid (default N = 512), the PETSc ex5adj
 *              set-up of rw_grayscott.h (D_u, D_v, gamma, kappa, initial patch, point
 *              objective J = u + v at node (N/2 - 1, N/2 - 1) at T). ex5adj's dt = 0.5 is
 *              for N = 128; RK4's stability limit falls with h^2, so the default dt is
 *              0.5 (128/N)^2 for N > 128 (0.03125 at N = 512; the RK4 diffusion limit
 *              2.785 h^2 / (4 dim D_u) is 0.104 there). Gradient: J, dJ/dp (4), dJ/dy0.
 *   heat3d     3-D heat u_t = div(kappa grad u) + q s(x) of rw_heat.h on [0, 1]^3 with
 *              N^3 nodes (default N = 128), zero Dirichlet boundary, kappa = 0.01 + 0.01
 *              exp(-|x - (0.35, 0.6, 0.5)|^2 / (2 0.12^2)) (the app's kappa_true), q = 1,
 *              u0 a Gaussian bump (centre 0.5, width 0.2), 27 sensors on a regular
 *              sub-grid with data d_s(t) = 0 (J = 1/2 sum_s int u(x_s, t)^2 dt: the data
 *              only shift J, the cost of every operator is the same), dt = 0.9 x the
 *              explicit limit h^2 / (2 dim kappa_max). Gradient: J, dJ/dq, dJ/dy0 and the
 *              field dJ/dkappa.
 * Both run classic RK4 with l = --steps fixed steps (default 1000).
 *
 * In ONE run (at whatever size mpiexec gives), after an untimed two-step forward warm-up (first
 * touch of the work arrays, MPI connections), it measures, in this order:
 *   1. forward: the rw_forward_solve call (no storage; J only);
 *   2. binomial: rw_adjoint_solve with RW_ADJOINT_CHECKPOINT, RW_SCHEDULE_BINOMIAL and c =
 *      --slots RAM slots (counting the slot of y_0, as Revolve and rw_schedule.h do);
 *   3. store: rw_adjoint_solve with RW_ADJOINT_STORE (every state kept in RAM; the adjoint
 *      step recomputes the stages of its step). Skipped, with a message, when the states
 *      would need more than --max-store-bytes summed over the ranks (a single node is
 *      assumed): heat3d at 128^3 x 1000 steps needs 16.8 GB.
 * For each: the wall time of the call (max over ranks, median of --repeat runs), the
 * adjoint's forward and backward sweeps, and the ratio of the time to the forward solve's;
 * the schedule's advances (stats.advances) against t(l, c) = rw_binomial_advances (store:
 * l - 1) and the recomputed steps against t(l, c) - (l - 1); the snapshot bytes against the
 * budget (c, or l, states); and memory per rank (the largest rank): Rewind's allocator peak
 * during the call (rw_mem_peak over rw_mem_current before it) and the process peak RSS
 * (getrusage) after it. Peak RSS is monotone over a process, so the variants run in
 * increasing-memory order (forward, binomial, store): the RSS after a variant is its own
 * peak. Checked (exit 1 when broken): the counts equal the theory, the snapshots stay
 * within the budget, every adjoint variant's J equals the forward solve's bit for bit, and,
 * when both adjoint variants ran, binomial checkpointing gives store-everything's J, dJ/dp,
 * dJ/dy0 (and dJ/dkappa) bit for bit (recomputation is deterministic by design).
 *
 * Strong scaling 1 -> 2 ranks: run it under mpiexec -n 1 and -n 2 and compare the JSON
 * lines (tests/bench/run_pde_scaling.sh does that and prints the speedups).
 *
 * Output: a table for people and one JSON line ("BENCH_JSON {...}") for scripts. This is a
 * benchmark, not a test: it asserts nothing about speed; the ctest smoke runs use tiny sizes
 * only to keep it building and running. Exit status: 0; 1 (a check above failed, or an
 * error); 2 (bad command line). */
#include "bench_util.h"
#include "rewind/rw_adjoint.h"
#include "rewind/rw_device.h"
#include "rewind/rw_grayscott.h"
#include "rewind/rw_grid.h"
#include "rewind/rw_heat.h"
#include "rewind/rw_kernels.h"
#include "rewind/rw_schedule.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAMS   8
#define HEAT_SENSORS 27

typedef enum { PROB_GRAYSCOTT = 0, PROB_HEAT3D = 1 } bench_problem;

typedef struct {
  bench_problem problem;
  long n, steps;
  int slots, repeat;
  double dt; /* 0: the problem's default */
  size_t max_store_bytes;
  long stage; /* --stage K: the stage roofline with K steps per timing (0: the variants) */
  int device; /* --device: 0 (cpu), RW_DEVICE_EMULATED or RW_DEVICE_CUDA */
  int host_slots, disk_slots; /* --host-slots, --disk-slots: tiers above the --slots ones */
  int host_sync;              /* --host-sync 1: the host tier's copies synchronous */
  int flush_subnormals;       /* --flush-subnormals 1: rw_fp_flush_subnormals(1) */
  int wave;                   /* --wave 0: whole steps stage by stage (rw_grid_set_wave -1) */
  long wave_rows;             /* --wave-rows R: rows per tile of the wave (0: by bytes) */
  long wave_layers;           /* --wave-layers W: layers per window of the wave (0: by bytes) */
  int disk_sync;              /* --disk-sync 1: the disk tier's device copies synchronous */
  double host_cost;           /* --host-cost: a host copy's cost in steps (-1: measured) */
  double disk_cost;           /* --disk-cost: a disk copy's cost in steps (-1: measured) */
  char ckpt_dir[512];         /* --checkpoint-dir (disk tier) */
} bench_opts;

static void usage(FILE *f, const char *prog)
{
  fprintf(f,
          "usage: %s [--problem grayscott|heat3d] [--n N] [--steps L] [--slots C]\n"
          "          [--max-store-bytes B] [--repeat R] [--dt DT] [--device D]\n"
          "          [--host-slots H] [--disk-slots D] [--checkpoint-dir DIR]\n"
          "  --problem P          grayscott (2-D, N x N) or heat3d (N^3) (default grayscott)\n"
          "  --n N                nodes per dimension (default 512 for grayscott, 128 for "
          "heat3d)\n"
          "  --steps L            RK4 steps (default 1000)\n"
          "  --slots C            binomial checkpoint slots, counting the slot of y_0 "
          "(default 20)\n"
          "  --max-store-bytes B  skip store-everything when it would hold more than B bytes\n"
          "                       over all ranks; suffixes K, M, G, T (or KiB..) are binary\n"
          "                       (default 6GiB)\n"
          "  --repeat R           runs of each variant, median time reported (default 1)\n"
          "  --dt DT              step size (default: grayscott 0.5 min(1, (128/N)^2), heat3d\n"
          "                       0.9 x the explicit stability limit)\n"
          "  --stage K            instead of the variants: the stage roofline (issue 10), each\n"
          "                       time the best of --repeat runs (at least 5) of K steps\n"
          "  --device D           cpu (default), cuda (one GPU per rank) or emulated (the GPU\n"
          "                       code on the CPU). On a device the copy\n"
          "                       bandwidth is a device-to-device copy\n"
          "  --host-slots H       a host tier above the --slots ones (page-locked host RAM on a\n"
          "                       GPU): the binomial variant runs the optimal three-tier\n"
          "                       schedule, copy costs measured at start-up\n"
          "  --disk-slots D       a disk tier (HDF5 files in --checkpoint-dir, default .), disk\n"
          "                       costs measured at start-up\n"
          "  --checkpoint-dir DIR directory of the disk tier's files\n"
          "  --host-cost C, --disk-cost C\n"
          "                       the tier's write and read costs in steps, given instead of\n"
          "                       measured (so the schedule does not depend on the machine's\n"
          "                       speed)\n"
          "  --host-sync 0|1      1: the host tier's copies synchronous (no staging, no\n"
          "                       read-ahead), to measure what overlapping them gains\n"
          "  --disk-sync 0|1      1: the disk tier's copies from device memory synchronous (no\n"
          "                       device staging snapshot)\n"
          "  --wave 0|1           0: every RK step stage by stage; 1 (default): a step, an\n"
          "                       adjoint's recomputation of a step's stages and the adjoint\n"
          "                       step itself run as one sweep where the grid suits it\n"
          "                       (rw_grid_erk_wave)\n"
          "  --wave-layers W      layers per window of that sweep (default: as many as fit\n"
          "                       256 KiB, and none on a block under four windows)\n"
          "  --wave-rows R        rows per tile of that sweep on a 3-D block (default: as\n"
          "                       many as keep its live rows within 1.5 MiB)\n"
          "  --flush-subnormals 0|1  1: subnormals flushed to zero (rw_fp_flush_subnormals;\n"
          "                       the real Gray-Scott initial state decays into them far from\n"
          "                       its patch, the stage roofline's filled state does not)\n",
          prog);
}

/* "6GiB", "6G", "4000000000", "512MiB": a non-negative size with an optional binary suffix. */

/* Returns 0 to run, 1 to exit successfully (--help), 2 on a bad command line. Prints on rank
 * 0 only. */
static int parse_args(int argc, char **argv, int rank, bench_opts *o)
{
  memset(o, 0, sizeof *o);
  o->problem = PROB_GRAYSCOTT;
  o->n = 0; /* per problem */
  o->steps = 1000;
  o->slots = 20;
  o->repeat = 1;
  o->host_cost = o->disk_cost = -1.0;
  o->wave = 1;
  o->max_store_bytes = (size_t)6 << 30;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (rank == 0) usage(stdout, argv[0]);
      return 1;
    }
    int known =
        !strcmp(a, "--problem") || !strcmp(a, "--n") || !strcmp(a, "--steps") ||
        !strcmp(a, "--slots") || !strcmp(a, "--max-store-bytes") || !strcmp(a, "--repeat") ||
        !strcmp(a, "--dt") || !strcmp(a, "--stage") || !strcmp(a, "--device") ||
        !strcmp(a, "--host-slots") || !strcmp(a, "--disk-slots") ||
        !strcmp(a, "--checkpoint-dir") || !strcmp(a, "--host-sync") || !strcmp(a, "--disk-sync") ||
        !strcmp(a, "--flush-subnormals") || !strcmp(a, "--wave") || !strcmp(a, "--wave-rows") ||
        !strcmp(a, "--wave-layers") || !strcmp(a, "--host-cost") || !strcmp(a, "--disk-cost");
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
    if (!strcmp(a, "--problem")) {
      if (!strcmp(v, "grayscott"))
        o->problem = PROB_GRAYSCOTT;
      else if (!strcmp(v, "heat3d"))
        o->problem = PROB_HEAT3D;
      else
        bad = 1;
      expected = "grayscott or heat3d";
    } else if (!strcmp(a, "--n")) {
      bad = parse_long(v, 4, &n) || n > 100000;
      o->n = n;
      expected = "an integer from 4 to 100000";
    } else if (!strcmp(a, "--steps")) {
      bad = parse_long(v, 1, &n) || n > (1L << 30);
      o->steps = n;
    } else if (!strcmp(a, "--slots")) {
      bad = parse_long(v, 1, &n) || n > 1000000;
      o->slots = (int)n;
    } else if (!strcmp(a, "--flush-subnormals")) {
      bad = parse_long(v, 0, &n) || n > 1;
      o->flush_subnormals = (int)n;
      expected = "0 or 1";
    } else if (!strcmp(a, "--wave-layers")) {
      bad = parse_long(v, 1, &n) || n > 100000;
      o->wave_layers = n;
    } else if (!strcmp(a, "--wave-rows")) {
      bad = parse_long(v, 1, &n) || n > 100000;
      o->wave_rows = n;
    } else if (!strcmp(a, "--wave")) {
      bad = parse_long(v, 0, &n) || n > 1;
      o->wave = (int)n;
      expected = "0 or 1";
    } else if (!strcmp(a, "--host-sync") || !strcmp(a, "--disk-sync")) {
      bad = parse_long(v, 0, &n) || n > 1;
      *(!strcmp(a, "--host-sync") ? &o->host_sync : &o->disk_sync) = (int)n;
      expected = "0 or 1";
    } else if (!strcmp(a, "--host-slots") || !strcmp(a, "--disk-slots")) {
      bad = parse_long(v, 0, &n) || n > 1000000;
      if (!strcmp(a, "--host-slots"))
        o->host_slots = (int)n;
      else
        o->disk_slots = (int)n;
      expected = "an integer from 0 to 1000000";
    } else if (!strcmp(a, "--host-cost") || !strcmp(a, "--disk-cost")) {
      bad = parse_double(v, !strcmp(a, "--host-cost") ? &o->host_cost : &o->disk_cost);
      expected = "a positive finite number of steps";
    } else if (!strcmp(a, "--checkpoint-dir")) {
      bad = strlen(v) >= sizeof o->ckpt_dir;
      snprintf(o->ckpt_dir, sizeof o->ckpt_dir, "%s", v);
      expected = "a directory path shorter than 512 characters";
    } else if (!strcmp(a, "--repeat")) {
      bad = parse_long(v, 1, &n) || n > 1000;
      o->repeat = (int)n;
    } else if (!strcmp(a, "--stage")) {
      bad = parse_long(v, 1, &n) || n > 100000;
      o->stage = n;
    } else if (!strcmp(a, "--device")) {
      if (!strcmp(v, "cpu"))
        o->device = 0;
      else if (!strcmp(v, "cuda"))
        o->device = RW_DEVICE_CUDA;
      else if (!strcmp(v, "emulated"))
        o->device = RW_DEVICE_EMULATED;
      else
        bad = 1;
      expected = "cpu, cuda or emulated";
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
  if (o->n == 0) o->n = o->problem == PROB_GRAYSCOTT ? 512 : 128;
  return 0;
}

/* The problem, its initial state and step size. */
typedef struct {
  rw_problem prob;
  N_Vector y0;
  double dt, dt_limit; /* dt_limit: the stability bound dt was checked against */
  char desc[320];
} pde_setup;

/* Gray-Scott, the ex5adj set-up on an N x N grid. Returns RW_ERR_ARG (a bad --dt or --n for
 * the rank count) with a message. Collective. */
static int setup_grayscott(rw_context ctx, const bench_opts *o, pde_setup *S)
{
  rw_gs_config cfg;
  rw_gs_config_default(&cfg);
  cfg.dim = 2;
  cfg.n = o->n;
  RW_CALL(rw_gs_problem_create(ctx, &cfg, &S->prob));
  RW_CALL(rw_problem_new_state(S->prob, &S->y0));
  RW_CALL(rw_gs_initial_state(S->prob, S->y0));
  double h = cfg.length / (double)cfg.n, r = 128.0 / (double)cfg.n;
  const double *p = rw_problem_params(S->prob);
  double dmax = fmax(p[0], p[1]);
  /* RK4's stability interval on the negative real axis is [-2.785, 0]; the 5-point
   * Laplacian's eigenvalues reach -4 dim / h^2. */
  S->dt_limit = 2.785 * h * h / (4.0 * cfg.dim * dmax);
  S->dt = o->dt > 0.0 ? o->dt : 0.5 * fmin(1.0, r * r);
  RW_CHECK(S->dt <= S->dt_limit, RW_ERR_ARG,
           "grayscott: dt = %g exceeds RK4's diffusion stability limit 2.785 h^2 / (4 dim D) = "
           "%.4g at N = %ld",
           S->dt, S->dt_limit, cfg.n);
  long pt[3];
  rw_gs_point(S->prob, pt);
  snprintf(S->desc, sizeof S->desc,
           "Gray-Scott 2-D, %ld x %ld periodic grid on [0, %g)^2 (%ld unknowns), ex5adj "
           "parameters, J = u + v at node (%ld, %ld) at T",
           cfg.n, cfg.n, cfg.length, 2 * cfg.n * cfg.n, pt[0], pt[1]);
  return 0;
}

/* 3-D heat on N^3 nodes (see the header comment). Collective. */
static int setup_heat3d(rw_context ctx, const bench_opts *o, pde_setup *S)
{
  int ierr = 0;
  double *zeros = NULL;
  rw_heat_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.dim = 3;
  for (int d = 0; d < 3; d++) {
    cfg.n[d] = o->n;
    cfg.length[d] = 1.0;
    cfg.source_center[d] = 0.5;
  }
  cfg.bc = RW_BC_DIRICHLET;
  cfg.boundary_value = 0.0;
  cfg.source_width = 0.1;
  cfg.nsensors = HEAT_SENSORS;
  RW_CALL(rw_heat_problem_create(ctx, &cfg, &S->prob));
  rw_problem_params(S->prob)[0] = 1.0; /* q */
  const double kc[3] = {0.35, 0.6, 0.5}, uc[3] = {0.5, 0.5, 0.5};
  RW_CALL(rw_heat_fill_gaussian(S->prob, rw_problem_field(S->prob), 0.01, 0.01, kc, 0.12));
  RW_CALL(rw_problem_new_state(S->prob, &S->y0));
  RW_CALL(rw_heat_fill_gaussian(S->prob, S->y0, 0.0, 1.0, uc, 0.2));
  double kmin, kmax, t0 = 0.0;
  RW_CALL(rw_heat_kappa_range(S->prob, &kmin, &kmax));
  S->dt_limit = rw_heat_stability_limit(S->prob, kmax);
  S->dt = o->dt > 0.0 ? o->dt : 0.9 * S->dt_limit;
  RW_CHECK(S->dt <= S->dt_limit, RW_ERR_ARG,
           "heat3d: dt = %g exceeds the explicit stability limit h^2 / (2 dim kappa_max) = %.4g "
           "at N = %ld",
           S->dt, S->dt_limit, o->n);
  int ns = rw_heat_num_sensors(S->prob);
  RW_TRY(rw_calloc((size_t)ns, sizeof *zeros, "heat bench data", &zeros));
  RW_TRY(rw_heat_set_data(S->prob, 1, &t0, zeros));
  snprintf(S->desc, sizeof S->desc,
           "3-D heat, %ld^3 nodes on [0, 1]^3 (%ld unknowns), zero Dirichlet boundary, kappa in "
           "[%.4g, %.4g] (field), q = 1, %d sensors with zero data",
           o->n, o->n * o->n * o->n, kmin, kmax, ns);
cleanup:
  rw_free(&zeros);
  return ierr;
}

typedef enum { VAR_FORWARD = 0, VAR_BINOMIAL = 1, VAR_STORE = 2, NVAR = 3 } variant_kind;

static const char *const var_names[NVAR] = {"forward", "binomial", "store"};

typedef struct {
  variant_kind kind;
  int ran;
  double t_total, t_fwd, t_bwd; /* medians; max over ranks */
  double J, dJdp[MAX_PARAMS];
  N_Vector dJdy0, dJdfield;
  rw_adjoint_stats stats;
  int64_t t_lc;            /* t(l, c) (store: l - 1) */
  size_t ckpt, budget;     /* per rank, largest rank */
  size_t alloc_peak;       /* allocator peak over the call, per rank (largest rank) */
  size_t rss_after;        /* process peak RSS after this variant (max over ranks) */
  double wait_lo, wait_hi; /* halo waits over the first run, least and most waiting rank, as
                              shares of that run's time (rw_grid_halo_wait) */
  int counts_ok, J_same;   /* counts equal the theory; J equals the forward solve's bitwise */
} variant;

/* This rank's halo waits so far on the problem's grids (heat's adjoint sweep runs on a grid of
 * its own). */
static double halo_wait(const pde_setup *S, const bench_opts *o)
{
  if (o->problem == PROB_GRAYSCOTT) return rw_grid_halo_wait(rw_gs_grid(S->prob));
  rw_grid ug = rw_heat_grid(S->prob), ag = rw_heat_adjoint_grid(S->prob);
  return rw_grid_halo_wait(ug) + (ag && ag != ug ? rw_grid_halo_wait(ag) : 0.0);
}

/* Runs variant v `repeat` times from y0; keeps the first run's results and the median times. */
static int run_variant(const pde_setup *S, rw_stepper st, const bench_opts *o,
                       const rw_adjoint_options *base, N_Vector y, double *tbuf, variant *v)
{
  rw_adjoint_options opt = *base;
  opt.mode = v->kind == VAR_BINOMIAL ? RW_ADJOINT_CHECKPOINT : RW_ADJOINT_STORE;
  opt.schedule = RW_SCHEDULE_BINOMIAL;
  opt.ram_slots = o->slots;
  if (v->kind == VAR_BINOMIAL && (o->host_slots > 0 || o->disk_slots > 0)) {
    opt.host_slots = o->host_slots;
    opt.host_sync = o->host_sync;
    opt.disk_sync = o->disk_sync;
    opt.disk_slots = o->disk_slots;
    opt.disk_dir = o->ckpt_dir[0] ? o->ckpt_dir : ".";
    opt.run_id = "bench-pde";
    opt.host_write_cost = opt.host_read_cost = o->host_cost; /* -1: measured at start-up */
    opt.write_cost = opt.read_cost = o->disk_cost;
  }
  MPI_Comm comm = rw_context_comm(rw_problem_context(S->prob));
  N_Vector fadj = rw_problem_field_adjoint(S->prob);
  int R = o->repeat;
  for (int r = 0; r < R; r++) {
    double J = 0.0, dJdp[MAX_PARAMS] = {0};
    rw_adjoint_stats s;
    memset(&s, 0, sizeof s);
    rw_vec_copy(S->y0, y);
    RW_CALL_MPI(MPI_Barrier(comm));
    size_t mem0 = rw_mem_current();
    rw_mem_reset_peak();
    const double w0 = halo_wait(S, o);
    double t0 = rw_wtime();
    if (v->kind == VAR_FORWARD)
      RW_CALL(rw_forward_solve(S->prob, st, &opt, y, &J, &s));
    else
      RW_CALL(rw_adjoint_solve(S->prob, st, &opt, y, &J, dJdp, v->dJdy0, &s));
    RW_CALL(rw_device_sync(rw_vec_device(y)));
    double t[3] = {rw_wtime() - t0, s.time_forward, s.time_backward};
    double w[2] = {halo_wait(S, o) - w0, 0.0};
    w[1] = -w[0];
    size_t alloc = rw_mem_peak() - mem0;
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, t, 3, MPI_DOUBLE, MPI_MAX, comm));
    for (int k = 0; k < 3; k++)
      tbuf[k * R + r] = t[k];
    if (r == 0) {
      v->J = J;
      memcpy(v->dJdp, dJdp, sizeof dJdp);
      v->stats = s;
      if (fadj && v->dJdfield) rw_vec_copy(fadj, v->dJdfield);
      v->alloc_peak = max_bytes(comm, alloc);
      v->rss_after = max_bytes(comm, rw_peak_rss());
      RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, w, 2, MPI_DOUBLE, MPI_MAX, comm));
      v->wait_hi = w[0] / t[0], v->wait_lo = -w[1] / t[0];
    }
  }
  v->t_total = median(&tbuf[0], R);
  v->t_fwd = median(&tbuf[R], R);
  v->t_bwd = median(&tbuf[2 * R], R);
  v->ran = 1;
  return 0;
}

/* This rank's entries on the host (device vectors are copied), malloc'ed; NULL on failure. */
static double *host_values(N_Vector v)
{
  double *h = malloc(((size_t)rw_vec_local_length(v) + 1) * sizeof(double));
  if (h && rw_vec_to_host(v, h) != 0) {
    free(h);
    h = NULL;
  }
  return h;
}

static int same_vec(N_Vector a, N_Vector b)
{
  if (!a || !b) return a == b;
  double *ha = host_values(a), *hb = host_values(b);
  int same = ha && hb && memcmp(ha, hb, (size_t)rw_vec_local_length(a) * sizeof(double)) == 0;
  free(ha);
  free(hb);
  return same;
}

/* 1 when a and b have bitwise equal J, dJ/dp, dJ/dy0 and dJ/dfield on every rank. */
static int same_results(MPI_Comm comm, const variant *a, const variant *b, int np)
{
  int same = memcmp(&a->J, &b->J, sizeof a->J) == 0 &&
             memcmp(a->dJdp, b->dJdp, (size_t)np * sizeof a->dJdp[0]) == 0 &&
             same_vec(a->dJdy0, b->dJdy0) && same_vec(a->dJdfield, b->dJdfield);
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, comm);
  return same;
}

/* Global 2-norm of a distributed vector (for the summary line). */
static double norm2(MPI_Comm comm, N_Vector v)
{
  double *d = host_values(v), s = 0.0;
  for (sunindextype i = 0; d && i < rw_vec_local_length(v); i++)
    s += d[i] * d[i];
  free(d);
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, comm);
  return sqrt(s);
}

/* --- Stage roofline (issue 10) -------------------------------------------------------------
 * The memory-bandwidth bound of an RK4 step: the bytes the step must move at least, over the
 * bandwidth of a plain array copy measured here: memcpy of one state vector to the next around a
 * ring of 16 of them (the step's working set: y, y_{n+1}, 4 stage inputs, 4 slopes, the ghosted
 * copy and the adjoint's vectors), read + write counted, best of the rounds; when the ring
 * outgrows the last-level cache this is the DRAM copy bandwidth the step also sees. At least, per
 * step: stage i reads the vectors of its input combination (y, then y and K_{i-1}) and writes K_i,
 * and the update reads y, K_1..K_4 and writes y_{n+1}: 12 reads + 5 writes = 17 state vectors; the
 * heat problem also reads its conductivity field in each of the 4 stages (21). Halo faces are not
 * counted. The stage time is the step time over 4. The adjoint step is timed with the stages given
 * (stored) in two ways: as a store-stages run's backward sweep meets them (K forward steps keep
 * each step's stages in vectors of their own, and the K adjoint steps read them in reverse, from
 * memory once they outgrow the cache), and as a checkpointed sweep does (each adjoint step timed
 * right after the untimed step that recomputes its stages, in cache); each once with every
 * parameter differentiated and once with the parameters and the field
 * frozen (dJ/dy0 only, what PETSc's ex5adj_mf computes), against the plain forward step. Times are
 * the max over ranks; every variant is timed once a round, in turn, and reported as the best of
 * its rounds. Gray-Scott runs here from a state that fills the grid (v = 0.25 + 0.05
 * sin(0.37 m) at local node m, u = 1 - 2 v), not from ex5adj's compact patch: the diffusing tails
 * of the patch are subnormal numbers for the first thousands of steps at N = 512, and x86 takes a
 * slow microcode path for each operation on them, so the timing would measure that path, not the
 * memory traffic the roofline is about. */
#define RING 16

static double time_max(MPI_Comm comm, double t0)
{
  double t = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
  return t;
}

static int stage_roofline(const pde_setup *S, rw_stepper st, const bench_opts *o, MPI_Comm comm,
                          int rank)
{
  int ierr = 0;
  N_Vector y = NULL, lam = NULL, fill = NULL, *stg = NULL, *ys = NULL, *dring = NULL;
  double *ring = NULL, *fh = NULL, pbar[MAX_PARAMS];
  double *rall = NULL, *ry0 = NULL; /* each round's adjoint / forward ratios (the goal lines) */
  /* and every gradient's adjoint over that round's forward step keeping its stages: the forward
   * step of the sweep whose stages the adjoint reads (the store-stages mode's own pair) */
  double *rst = NULL;
  rw_device dev = rw_vec_device(S->y0);
  const int reps = o->repeat < 5 ? 5 : o->repeat, ns = rw_stepper_num_stage_vectors(st);
  const long K = o->stage;
  {
    unsigned long long all = (unsigned long long)rw_vec_bytes(S->y0);
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    const unsigned long long need = all * (unsigned long long)(K + 1 + (long)ns * K);
    if (need > o->max_store_bytes) {
      if (rank == 0)
        fprintf(stderr,
                "bench_pde: --stage %ld keeps %ld steps' states and stages, %.3f GiB over all "
                "ranks > --max-store-bytes %.3f GiB; take fewer steps or raise the limit\n",
                K, K, gib((size_t)need), gib(o->max_store_bytes));
      return 1;
    }
  }
  RW_TRY(rw_vec_clone(S->y0, &y));
  RW_TRY(rw_vec_clone(S->y0, &lam));
  /* a store-stages sweep of K steps: each step's start state and stages in vectors of their
   * own, written by the forward steps that keep them and read back in reverse by the adjoint;
   * allocated as the store mode's trajectory is (rw_vec_clone_array_slots: whole mappings,
   * huge pages where the kernel gives them), so the adjoint reads them as a solve would */
  RW_TRY(rw_vec_clone_array_slots(S->y0, (int)(K + 1), &ys));
  RW_TRY(rw_vec_clone_array_slots(S->y0, ns * (int)K, &stg));
  size_t nb = rw_vec_bytes(y);
  const size_t len = nb / sizeof(double) + 8;
  if (dev) { /* the ring on the device, copied device to device */
    RW_TRY(rw_vec_clone_array(S->y0, RING, &dring));
    for (int k = 0; k < RING; k++)
      N_VConst((double)k, dring[k]);
  } else {
    RW_TRY(rw_calloc(len * RING, sizeof(double), "copy bench", &ring));
    for (size_t m = 0; m < len * RING; m++) /* first touch */
      ring[m] = (double)(m % 13);
  }
  N_Vector start = S->y0;
  if (o->problem == PROB_GRAYSCOTT) {
    RW_TRY(rw_vec_clone(S->y0, &fill));
    RW_TRY(rw_calloc((size_t)rw_vec_local_length(fill) + 1, sizeof(double), "fill", &fh));
    for (sunindextype m = 0; m + 1 < rw_vec_local_length(fill); m += 2) {
      double v = 0.25 + 0.05 * sin(0.37 * (double)(m / 2));
      fh[m] = 1.0 - 2.0 * v, fh[m + 1] = v;
    }
    RW_TRY(rw_vec_from_host(fill, fh));
    start = fill;
  }
  double tcopy = 1e300, tfwd = 1e300, tfwd_st = 1e300, tadj_all = 1e300, tadj_y0 = 1e300,
         trec_all = 1e300, trec_y0 = 1e300, tback = 1e300, tback2 = 1e300;
  double tf_r = 0.0; /* this round's forward step, to pair the round's adjoint steps with */
  RW_TRY(rw_calloc((size_t)reps, sizeof(double), "ratios", &rall));
  RW_TRY(rw_calloc((size_t)reps, sizeof(double), "ratios", &ry0));
  RW_TRY(rw_calloc((size_t)reps, sizeof(double), "ratios", &rst));
  rw_grid sg = o->problem == PROB_GRAYSCOTT ? rw_gs_grid(S->prob) : rw_heat_grid(S->prob);
  /* the rows per tile (3-D) and layers per window (2-D) of the last round's forward and adjoint
   * (every gradient) waves: chosen by measurement unless --wave-rows / --wave-layers set them */
  rw_grid ag = o->problem == PROB_HEAT3D ? rw_heat_adjoint_grid(S->prob) : rw_gs_grid(S->prob);
  long rows_f = 0, rows_a = 0, lay_f = 0, lay_a = 0;
  long waves = 0; /* forward steps (nothing stored) run as one sweep */
  long pairs = 0; /* backward steps run as one sweep (rw_grid_erk_wave_pair) */
  /* the steps below run as inside a solve (what the drivers bracket them with) */
  RW_TRY(rw_problem_solve_begin(S->prob));
  /* Each round times every variant once, in turn (the copy, the forward step, the forward step
   * keeping its stages, the adjoint step with every gradient and with dJ/dy0 only), and each
   * figure is the best of the rounds: a ratio of two figures then compares times taken minutes
   * apart at most, not a whole block of one variant against a later block of the other, on a
   * machine whose speed drifts. */
  /* the stored stages' pages touched before the rounds: the first round's forward step keeping
   * its stages took page faults (Gray-Scott 512^2: 10 x the later rounds'), which its best-of
   * hid but its paired ratio did not. Touched by plain writes, not by steps that keep their
   * stages: those would be the sweeps the grid times to choose its tiles (rw_grid.c,
   * rw_wave_tune_pick), and the faults made the candidates timed first look slow (heat 128^3 on
   * an Intel Xeon VM: 64-row tiles kept, 31 ms a step against 22 in the rule's tiles) */
  for (long k = 0; k <= K; k++)
    N_VConst(0.0, ys[k]);
  for (long k = 0; k < K * ns; k++)
    N_VConst(0.0, stg[k]);
  for (int r = 0; r < reps; r++) {
    MPI_Barrier(comm); /* a ring of RING vectors: the step's working set */
    double t0 = MPI_Wtime();
    for (long k = 0; k < K * RING; k++) {
      if (dev) {
        rw_vec_copy(dring[k % RING], dring[(k + 1) % RING]);
        continue;
      }
      memcpy(ring + (size_t)((k + 1) % RING) * len, ring + (size_t)(k % RING) * len, nb);
      ring[(size_t)(k % RING) * len] += 1.0; /* the copies are not dead code */
    }
    RW_TRY(rw_device_sync(dev));
    tcopy = fmin(tcopy, time_max(comm, t0) / (double)(K * RING));
    rw_vec_copy(start, y); /* forward steps, nothing stored */
    const long waves0 = rw_grid_waves(sg);
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    /* in place, as the checkpoint driver's forward sweep steps (rw_source_checkpoint.c): the
     * update writes y_{n+1} over y_n, whose lines it has just read */
    for (long k = 0; k < K; k++)
      RW_TRY(rw_stepper_step(st, (double)k * S->dt, S->dt, y, y, NULL, NULL));
    RW_TRY(rw_device_sync(dev));
    tf_r = time_max(comm, t0) / (double)K;
    tfwd = fmin(tfwd, tf_r);
    waves += rw_grid_waves(sg) - waves0;
    rows_f = rw_grid_wave_rows_used(sg), lay_f = rw_grid_wave_layers_used(sg);
    rw_vec_copy(start, ys[0]); /* forward steps that keep their stages, each its own */
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    for (long k = 0; k < K; k++)
      RW_TRY(rw_stepper_step(st, (double)k * S->dt, S->dt, ys[k], ys[k + 1], stg + k * ns, NULL));
    RW_TRY(rw_device_sync(dev));
    const double tfs_r = time_max(comm, t0) / (double)K;
    tfwd_st = fmin(tfwd_st, tfs_r);
    for (int frozen = 0; frozen < 2; frozen++) { /* adjoint steps from those stages, backward */
      rw_problem_set_active(S->prob, !frozen, !frozen);
      rw_vec_copy(start, lam);
      memset(pbar, 0, sizeof pbar);
      MPI_Barrier(comm);
      t0 = MPI_Wtime();
      for (long k = K - 1; k >= 0; k--)
        RW_TRY(
            rw_stepper_adjoint_step(st, (double)k * S->dt, S->dt, ys[k], stg + k * ns, lam, pbar));
      RW_TRY(rw_device_sync(dev));
      double t = time_max(comm, t0) / (double)K;
      if (!frozen) rows_a = rw_grid_wave_rows_used(ag), lay_a = rw_grid_wave_layers_used(ag);
      if (frozen)
        tadj_y0 = fmin(tadj_y0, t), ry0[r] = t / tf_r;
      else
        tadj_all = fmin(tadj_all, t), rall[r] = t / tf_r, rst[r] = t / tfs_r;
    }
    for (int frozen = 0; frozen < 2; frozen++) { /* as a checkpointed sweep: each adjoint step */
      rw_problem_set_active(S->prob, !frozen, !frozen); /* right after its step's recomputation */
      rw_vec_copy(start, lam);
      memset(pbar, 0, sizeof pbar);
      double t = 0.0;
      for (long k = K - 1; k >= 0; k--) {
        RW_TRY(rw_stepper_step(st, (double)k * S->dt, S->dt, ys[k], y, stg, NULL));
        RW_TRY(rw_device_sync(dev));
        MPI_Barrier(comm);
        t0 = MPI_Wtime();
        RW_TRY(rw_stepper_adjoint_step(st, (double)k * S->dt, S->dt, ys[k], stg, lam, pbar));
        RW_TRY(rw_device_sync(dev));
        t += time_max(comm, t0);
      }
      if (frozen)
        trec_y0 = fmin(trec_y0, t / (double)K);
      else
        trec_all = fmin(trec_all, t / (double)K);
    }
    rw_problem_set_active(S->prob, 1, 1);
    /* the checkpoint driver's backward step: the adjoint step given y_n alone, which
     * recomputes its stage inputs itself (rw_erk_adjoint_step), every gradient */
    for (int pair = 1; pair >= 0; pair--) { /* one sweep (rw_grid_erk_wave_pair), then two */
      rw_grid_set_wave_pair(sg, pair);
      rw_vec_copy(start, lam);
      memset(pbar, 0, sizeof pbar);
      const long pairs0 = rw_grid_wave_pairs(sg);
      MPI_Barrier(comm);
      t0 = MPI_Wtime();
      for (long k = K - 1; k >= 0; k--)
        RW_TRY(rw_stepper_adjoint_step(st, (double)k * S->dt, S->dt, ys[k], NULL, lam, pbar));
      RW_TRY(rw_device_sync(dev));
      const double t = time_max(comm, t0) / (double)K;
      if (pair)
        tback = fmin(tback, t), pairs += rw_grid_wave_pairs(sg) - pairs0;
      else
        tback2 = fmin(tback2, t);
    }
    rw_grid_set_wave_pair(sg, 1);
  }
  rw_problem_set_active(S->prob, 1, 1);
  rw_problem_solve_end(S->prob);
  int passes = o->problem == PROB_HEAT3D ? 21 : 17, size = 1;
  MPI_Comm_size(comm, &size);
  size_t vb = max_bytes(comm, nb);
  double bw = 2.0 * (double)vb / tcopy, tbound = (double)passes * (double)vb / bw;
  if (rank == 0) {
    printf("stage roofline: %ld steps per timing, best of %d rounds (each variant once a round, "
           "in turn); state vector %.2f MiB per rank\n",
           K, reps, mib(vb));
    printf("  copy bandwidth (%s around a ring of %d state vectors, read + write) %.2f GB/s\n",
           dev ? "device-to-device copy" : "memcpy", RING, bw * 1e-9);
    printf("  forward step %.3f ms, per RK stage %.3f ms; bound %d vectors x %.2f MiB / copy "
           "bandwidth = %.3f ms per step, %.3f ms per stage; step / bound = %.2f (goal <= 1.5)\n",
           tfwd * 1e3, tfwd * 250.0, passes, mib(vb), tbound * 1e3, tbound * 250.0, tfwd / tbound);
    printf("  forward steps run as one sweep (rw_grid_erk_wave): %ld of %ld\n", waves,
           K * (long)reps);
    if (o->problem == PROB_HEAT3D)
      printf("  rows per tile of the last round's waves (%s): forward %ld, adjoint %ld (of %ld)\n",
             o->wave_rows > 0 ? "set by --wave-rows" : "chosen by measurement", rows_f, rows_a,
             o->n);
    else
      printf("  layers per window of the last round's waves (%s): forward %ld, adjoint %ld\n",
             o->wave_layers > 0 ? "set by --wave-layers" : "chosen by measurement", lay_f, lay_a);
    printf("  forward step keeping its stages %.3f ms (%.2f x)\n", tfwd_st * 1e3, tfwd_st / tfwd);
    printf("  adjoint step, stages stored (a store-stages sweep's, each step's own, written %ld "
           "steps before at most): every gradient %.3f ms (%.2f x forward step), dJ/dy0 only "
           "%.3f ms (%.2f x; goal <= 1.5)\n",
           K, tadj_all * 1e3, tadj_all / tfwd, tadj_y0 * 1e3, tadj_y0 / tfwd);
    printf("  adjoint step, stages just recomputed (a checkpointed sweep's): every gradient %.3f "
           "ms (%.2f x forward step), dJ/dy0 only %.3f ms (%.2f x; goal <= 1.5)\n",
           trec_all * 1e3, trec_all / tfwd, trec_y0 * 1e3, trec_y0 / tfwd);
    printf("  backward step of a checkpointed sweep (the adjoint step given y_n alone, its stage "
           "inputs recomputed inside), every gradient: %.3f ms (%.2f x forward step; %ld of %ld "
           "steps as one sweep, rw_grid_erk_wave_pair); as two sweeps (the pair off) %.3f ms "
           "(%.2f x); %s %.2f; the recomputation keeping its stages and the adjoint step apart: "
           "%.2f x\n",
           tback * 1e3, tback / tfwd, pairs, K * (long)reps, tback2 * 1e3, tback2 / tfwd,
           pairs ? "one sweep / two =" : "no pair ran (both timings are two sweeps), their ratio",
           tback / tback2, (tfwd_st + trec_all) / tfwd);
    const double mall = median(rall, reps), my0 = median(ry0, reps); /* sorts them */
    const double mst = median(rst, reps);
    printf("  the same goal lines paired within each round (adjoint step / that round's forward "
           "step), median (min - max) of %d: every gradient %.2f (%.2f - %.2f), dJ/dy0 only "
           "%.2f (%.2f - %.2f)\n",
           reps, mall, rall[0], rall[reps - 1], my0, ry0[0], ry0[reps - 1]);
    printf("  every gradient's adjoint step over that round's forward step keeping its stages "
           "(the store-stages sweep's own forward step), median (min - max) of %d: %.2f (%.2f - "
           "%.2f)\n",
           reps, mst, rst[0], rst[reps - 1]);
    printf("BENCH_JSON "
           "{\"bench\":\"pde_stage\",\"device\":\"%s\",\"problem\":\"%s\",\"n\":%ld,\"ranks\":%d,"
           "\"vector_bytes\":%zu,\"copy_bw\":%.6e,\"t_step\":%.6e,\"t_bound\":%.6e,"
           "\"t_step_stages\":%.6e,\"t_adjoint_all\":%.6e,\"t_adjoint_y0\":%.6e,"
           "\"t_adjoint_all_recomputed\":%.6e,\"t_adjoint_y0_recomputed\":%.6e,"
           "\"t_backward_step\":%.6e,\"t_backward_two_sweeps\":%.6e,\"pairs\":%ld,"
           "\"waves\":%ld,\"r_adjoint_all_median\":%.4f,\"r_adjoint_y0_median\":%.4f,"
           "\"r_adjoint_all_stages_median\":%.4f,"
           "\"rows_forward\":%ld,\"rows_adjoint\":%ld,\"layers_forward\":%ld,"
           "\"layers_adjoint\":%ld}\n",
           dev ? rw_device_name(dev) : "cpu", o->problem == PROB_HEAT3D ? "heat3d" : "grayscott",
           o->n, size, vb, bw, tfwd, tbound, tfwd_st, tadj_all, tadj_y0, trec_all, trec_y0, tback,
           tback2, pairs, waves, mall, my0, mst, rows_f, rows_a, lay_f, lay_a);
  }
cleanup:
  rw_free(&rall);
  rw_free(&ry0);
  rw_free(&rst);
  rw_free(&ring);
  rw_free(&fh);
  rw_vec_destroy_array(&dring, RING);
  rw_vec_destroy(&y);
  rw_vec_destroy(&lam);
  rw_vec_destroy(&fill);
  rw_vec_destroy_array(&ys, (int)(K + 1));
  rw_vec_destroy_array(&stg, ns * (int)K);
  return ierr;
}

static int bench(const bench_opts *o, int *failed, int *badargs)
{
  int ierr = 0;
  rw_context ctx = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL;
  double *tbuf = NULL;
  pde_setup S;
  variant vars[NVAR];
  memset(&S, 0, sizeof S);
  memset(vars, 0, sizeof vars);
  rw_device dev = NULL;
  RW_CALL(rw_context_create(MPI_COMM_WORLD, &ctx));
  if (o->flush_subnormals) RW_CALL(rw_fp_flush_subnormals(1));
  MPI_Comm comm = rw_context_comm(ctx);
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);
  if (o->device) {
    ierr = rw_device_create(ctx, (rw_device_kind)o->device, &dev);
    ierr = rw_error_agree(comm, ierr);
    if (ierr) goto cleanup;
    rw_context_set_device(ctx, dev);
    if (rank == 0) printf("device: %s (rank 0)\n", rw_device_name(dev));
  }

  /* A bad --dt or --n (too large a step, too many ranks for N) is the command line's fault:
   * exit status 2. Every rank reaches these checks alike. */
  ierr = o->problem == PROB_GRAYSCOTT ? setup_grayscott(ctx, o, &S) : setup_heat3d(ctx, o, &S);
  if (ierr == RW_ERR_ARG) *badargs = 1;
  if (ierr) goto cleanup;
  int np = rw_problem_nparams(S.prob);
  RW_CHECK_GOTO(np <= MAX_PARAMS, RW_ERR_INTERNAL, "%d parameters, the bench keeps %d", np,
                MAX_PARAMS);
  const rw_tableau *tab = rw_tableau_find("rk4");
  RW_CHECK_GOTO(tab != NULL, RW_ERR_INTERNAL, "tableau rk4 missing");
  RW_TRY(rw_stepper_create_erk(S.prob, tab, &st));
  RW_TRY(rw_problem_new_state(S.prob, &y));
  RW_TRY(rw_calloc(3 * (size_t)o->repeat, sizeof *tbuf, "bench timings", &tbuf));
  N_Vector field = rw_problem_field(S.prob);
  for (int i = 0; i < NVAR; i++) {
    vars[i].kind = (variant_kind)i;
    if (i == VAR_FORWARD) continue;
    RW_TRY(rw_vec_clone(y, &vars[i].dJdy0));
    if (field) RW_TRY(rw_vec_clone(field, &vars[i].dJdfield));
  }

  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.t0 = 0.0;
  opt.dt = S.dt;
  opt.tf = (double)o->steps * S.dt;
  long N = 0;
  double last = 0.0;
  RW_TRY(rw_time_grid(opt.t0, opt.tf, opt.dt, &N, &last));
  size_t state_bytes = max_bytes(comm, rw_vec_bytes(y));
  size_t state_total = sum_bytes(comm, rw_vec_bytes(y));
  size_t store_need = sum_bytes(comm, (size_t)N * rw_vec_bytes(y));
  int store_skipped = store_need > o->max_store_bytes;
  size_t rss_base = max_bytes(comm, rw_peak_rss());
  size_t mem_base = max_bytes(comm, rw_mem_current());
  int dims[3] = {1, 1, 1}, coords[3];
  rw_grid_topology(o->problem == PROB_GRAYSCOTT ? rw_gs_grid(S.prob) : rw_heat_grid(S.prob), dims,
                   coords);
  rw_grid_set_wave_rows(o->problem == PROB_GRAYSCOTT ? rw_gs_grid(S.prob) : rw_heat_grid(S.prob),
                        o->wave_rows);
  if (o->wave_layers > 0)
    rw_grid_set_wave(o->problem == PROB_GRAYSCOTT ? rw_gs_grid(S.prob) : rw_heat_grid(S.prob),
                     o->wave_layers);
  if (!o->wave)
    rw_grid_set_wave(o->problem == PROB_GRAYSCOTT ? rw_gs_grid(S.prob) : rw_heat_grid(S.prob), -1);

  if (rank == 0) {
    printf("bench_pde: %s\n", S.desc);
    char pgrid[64];
    if (o->problem == PROB_HEAT3D)
      snprintf(pgrid, sizeof pgrid, "%d x %d x %d", dims[0], dims[1], dims[2]);
    else
      snprintf(pgrid, sizeof pgrid, "%d x %d", dims[0], dims[1]);
    printf("%d rank(s) (process grid %s), RK4, l = %ld steps of dt = %.6g (stability bound "
           "%.4g), T = %.6g; binomial c = %d slots; %s%d run%s per variant%s\n",
           size, pgrid, N, S.dt, S.dt_limit, opt.tf, o->slots, o->repeat > 1 ? "median of " : "",
           o->repeat, o->repeat > 1 ? "s" : "",
           o->flush_subnormals ? "; subnormals flushed to zero" : "");
    printf("vector rows: %s (REWIND_SIMD caps it)\n", rw_simd_isa_name());
    printf("state: %zu bytes per rank (largest rank), %.1f MiB in all; storing every state: %.3f "
           "GiB over all ranks (--max-store-bytes %.3f GiB)\n",
           state_bytes, mib(state_total), gib(store_need), gib(o->max_store_bytes));
    if (store_skipped)
      printf("store-everything SKIPPED: it would hold %zu bytes (%.3f GiB) > --max-store-bytes "
             "%zu; only the binomial gradient is reported (no bitwise comparison)\n",
             store_need, gib(store_need), o->max_store_bytes);
    printf("order: forward, binomial c = %d, store-everything (increasing memory, so the "
           "monotone peak RSS after each variant is its own peak)\n",
           o->slots);
    fflush(stdout);
  }

  /* Warm-up, untimed: two forward steps touch the stepper's and the problem's work arrays
   * (calloc'ed pages are mapped on first touch) and open the MPI connections, so the first
   * timed variant does not pay for them. */
  {
    rw_adjoint_options wo = opt;
    double Jw = 0.0;
    wo.tf = opt.t0 + 2.0 * opt.dt;
    rw_vec_copy(S.y0, y);
    RW_TRY(rw_forward_solve(S.prob, st, &wo, y, &Jw, NULL));
  }
  if (o->stage > 0) {
    RW_TRY(stage_roofline(&S, st, o, comm, rank));
    goto cleanup;
  }
  for (int i = 0; i < NVAR; i++) {
    variant *v = &vars[i];
    if (v->kind == VAR_STORE && store_skipped) continue;
    RW_TRY(run_variant(&S, st, o, &opt, y, tbuf, v));
    if (rank == 0) {
      printf("  done: %-9s %9.3f s\n", var_names[i], v->t_total);
      fflush(stdout);
    }
  }

  /* Counts, memory and bitwise checks. */
  variant *fw = &vars[VAR_FORWARD], *bi = &vars[VAR_BINOMIAL], *sv = &vars[VAR_STORE];
  int counts_ok = 1, j_ok = 1, bitwise_ok = 1, finite_ok = isfinite(fw->J);
  rw_grid sg = o->problem == PROB_GRAYSCOTT ? rw_gs_grid(S.prob) : rw_heat_grid(S.prob);
  const long windows = sg ? rw_grid_windows(sg) : 0;  /* the state grid's, all variants */
  const long waves = sg ? rw_grid_waves(sg) : 0;      /* steps run as one sweep, all variants */
  const long pairs = sg ? rw_grid_wave_pairs(sg) : 0; /* backward steps run as one sweep */
  RW_TRY(rw_binomial_advances(N, o->slots, NULL, &bi->t_lc));
  int tiered = o->host_slots > 0 || o->disk_slots > 0;
  rw_tiered_counts tc;
  memset(&tc, 0, sizeof tc);
  if (tiered && bi->ran) { /* the tiered optimum for the costs the run measured */
    rw_tier tiers[3] = {{o->slots, 0.0, 0.0},
                        {o->host_slots, bi->stats.host_write_cost, bi->stats.host_read_cost},
                        {o->disk_slots, bi->stats.write_cost, bi->stats.read_cost}};
    if (o->host_slots == 0) tiers[1] = tiers[2];
    RW_TRY(rw_tiered_cost(N, o->host_slots > 0 ? 3 : 2, tiers, &tc));
  }
  sv->t_lc = N - 1;
  for (int i = VAR_BINOMIAL; i < NVAR; i++) {
    variant *v = &vars[i];
    if (!v->ran) continue;
    if (v->kind == VAR_BINOMIAL && tiered) /* the tiers' optimum, not t(l, c) */
      v->t_lc = tc.advances;
    v->counts_ok = v->stats.steps == N && (int64_t)v->stats.advances == v->t_lc &&
                   (tiered || (int64_t)v->stats.optimal_advances == v->t_lc) &&
                   (int64_t)v->stats.recomputed_steps == v->t_lc - (N - 1);
    v->ckpt = max_bytes(comm, v->stats.checkpoint_bytes);
    v->budget = (size_t)(v->kind == VAR_BINOMIAL ? o->slots : N) * state_bytes;
    v->counts_ok = v->counts_ok && v->ckpt <= v->budget;
    counts_ok = counts_ok && v->counts_ok;
    v->J_same = memcmp(&v->J, &fw->J, sizeof v->J) == 0;
    j_ok = j_ok && v->J_same;
  }
  int both = bi->ran && sv->ran;
  if (both) bitwise_ok = same_results(comm, bi, sv, np);
  double gnorm_y = norm2(comm, bi->dJdy0);
  double gnorm_f = bi->dJdfield ? norm2(comm, bi->dJdfield) : 0.0;

  if (rank == 0) {
    printf("\nJ = %.15e   dJ/dp = (", fw->J);
    for (int k = 0; k < np; k++)
      printf("%s%s %.6e", k ? ", " : "", rw_problem_param_name(S.prob, k), bi->dJdp[k]);
    printf(")\n|dJ/dy0|_2 = %.6e", gnorm_y);
    if (bi->dJdfield) printf("   |dJ/d%s|_2 = %.6e", rw_problem_field_name(S.prob), gnorm_f);
    printf("\nbaseline before the variants (problem, stepper, vectors): peak RSS %.1f MiB, "
           "allocator %.1f MiB; memory columns are per rank (largest)\n\n",
           mib(rss_base), mib(mem_base));
    printf("%-16s %9s %8s %9s %9s %8s %8s %8s %8s %9s %9s %9s %9s %8s\n", "variant", "time [s]",
           "/forward", "fwd [s]", "bwd [s]", "advances", "t(l,c)", "recomp/l", "theory", "ckpt MiB",
           "bdgt MiB", "alloc MiB", "RSS MiB", "bitwise");
    for (int i = 0; i < NVAR; i++) {
      const variant *v = &vars[i];
      char name[32];
      if (v->kind == VAR_BINOMIAL)
        snprintf(name, sizeof name, "binomial c=%d", o->slots);
      else
        snprintf(name, sizeof name, "%s", v->kind == VAR_STORE ? "store everything" : "forward");
      if (!v->ran) {
        printf("%-16s skipped (needs %.3f GiB > --max-store-bytes %.3f GiB)\n", name,
               gib(store_need), gib(o->max_store_bytes));
        continue;
      }
      if (v->kind == VAR_FORWARD) {
        printf("%-16s %9.3f %8.3f %9.3f %9s %8s %8s %8s %8s %9s %9s %9.2f %9.1f %8s\n", name,
               v->t_total, 1.0, v->t_total, "-", "-", "-", "-", "-", "-", "-", mib(v->alloc_peak),
               mib(v->rss_after), "-");
        continue;
      }
      double rl = (double)v->stats.recomputed_steps / (double)N;
      double th = (double)(v->t_lc - (N - 1)) / (double)N;
      const char *bw = both ? (bitwise_ok ? "equal" : "DIFFER") : "n/a";
      printf("%-16s %9.3f %8.3f %9.3f %9.3f %8ld %8lld %8.4f %8.4f %9.2f %9.2f %9.2f %9.1f "
             "%8s%s%s\n",
             name, v->t_total, v->t_total / fw->t_total, v->t_fwd, v->t_bwd, v->stats.advances,
             (long long)v->t_lc, rl, th, mib(v->ckpt), mib(v->budget), mib(v->alloc_peak),
             mib(v->rss_after), bw, v->counts_ok ? "" : "  <- counts or bytes differ from theory",
             v->J_same ? "" : "  <- J differs from the forward solve's");
    }
    printf("\ntime: the call (rw_forward_solve / rw_adjoint_solve), max over ranks; /forward: "
           "over the forward solve's time; fwd, bwd: the adjoint's sweeps\n"
           "advances: stats.advances (Revolve's count), must equal t(l,c) = "
           "rw_binomial_advances(l, c) (store: l - 1)\n"
           "recomp/l: stats.recomputed_steps / l; theory: (t(l,c) - (l-1)) / l (the first "
           "sweep's l-1 advances are not recomputations)\n"
           "ckpt: stats.checkpoint_bytes; bdgt: c x state bytes (store: l x state bytes); alloc: "
           "Rewind's allocator peak during the call above what was allocated before it\n"
           "RSS: process peak RSS (getrusage, monotone) after the variant; increasing-memory "
           "order makes it the variant's own peak\n"
           "bitwise: binomial's J, dJ/dp, dJ/dy0%s equal to store-everything's bit for bit\n",
           field ? ", dJ/dkappa" : "");
    if (size > 1) { /* each step waits for the slowest neighbour: a wide range is an imbalance */
      printf("halo waits (MPI_Waitall on the grids' halo messages, the first run's share of its "
             "time, least - most waiting rank):");
      for (int i = 0; i < NVAR; i++)
        if (vars[i].ran)
          printf(" %s %.3f - %.3f%s", var_names[i], vars[i].wait_lo, vars[i].wait_hi,
                 i + 1 < NVAR && vars[i + 1].ran ? ";" : "");
      printf("\n");
    }
    if (tiered)
      printf("tiers: %d fast slots; host %d slots, %ld writes, %ld reads (%ld read ahead, %ld from "
             "the staging copy; copies %s; %.3f s, %.3f s), costs %.3g / %.3g steps (%s); "
             "disk %d slots, %ld "
             "writes, %ld reads (%.3f s, %.3f s; copies from the device %s), "
             "costs %.3g / %.3g steps (%s); schedule cost %.6g = the tiered optimum %.6g "
             "(t(l,c) with the fast slots alone: %lld); 'advances' above is checked against the "
             "tiered optimum\n",
             o->slots, o->host_slots, bi->stats.host_writes, bi->stats.host_reads,
             bi->stats.host_prefetched, bi->stats.host_from_staging,
             bi->stats.host_staging_bytes ? "asynchronous" : "synchronous",
             bi->stats.time_host_write, bi->stats.time_host_read, bi->stats.host_write_cost,
             bi->stats.host_read_cost, o->host_cost < 0.0 ? "measured" : "given", o->disk_slots,
             bi->stats.disk_writes, bi->stats.disk_reads, bi->stats.time_disk_write,
             bi->stats.time_disk_read,
             bi->stats.disk_staging_bytes ? "asynchronous" : "synchronous", bi->stats.write_cost,
             bi->stats.read_cost, o->disk_cost < 0.0 ? "measured" : "given",
             bi->stats.schedule_cost, tc.cost, (long long)bi->stats.optimal_advances);
    printf("forward: %.3f ms per step; adjoint/forward: binomial %.3f",
           1e3 * fw->t_total / (double)N, bi->t_total / fw->t_total);
    if (sv->ran)
      printf(", store-everything %.3f; binomial/store %.3f", sv->t_total / fw->t_total,
             bi->t_total / sv->t_total);
    else
      printf(", store-everything skipped");
    printf("\nadvances and recomputations %s the theory; J %s the forward solve's; gradients %s\n",
           counts_ok ? "equal" : "DIFFER FROM", j_ok ? "equals" : "DIFFERS FROM",
           both ? (bitwise_ok ? "agree bit for bit" : "DIFFER") : "not compared (store skipped)");
    printf("CPU stages run in windows of layers (rw_grid_apply_comb_fused; 0: the two-pass stage, "
           "as on blocks under four windows): %ld windows on rank 0\n",
           windows);
    printf("RK steps run as one sweep (rw_grid_erk_wave%s): %ld on rank 0, of which %ld in the %ld "
           "checkpointed backward steps that ran their recomputation and adjoint as one sweep "
           "(rw_grid_erk_wave_pair)\n",
           o->wave ? "" : ", off: --wave 0", waves, 2 * pairs, pairs);

    printf("BENCH_JSON {\"bench\":\"pde\",\"flush_subnormals\":%s,\"problem\":\"%s\","
           "\"ranks\":%d,\"proc_grid\":[%d,%d,%d],"
           "\"n\":%ld,\"unknowns\":%ld,\"steps\":%ld,\"dt\":%.17g,\"slots\":%d,\"repeat\":%d,"
           "\"stage_windows\":%ld,\"waves\":%ld,\"pairs\":%ld,"
           "\"state_bytes\":%zu,\"store_bytes\":%zu,\"max_store_bytes\":%zu,"
           "\"store_skipped\":%s,\"rss_baseline\":%zu,\"alloc_baseline\":%zu,"
           "\"order\":\"increasing_memory\",\"variants\":[",
           o->flush_subnormals ? "true" : "false",
           o->problem == PROB_GRAYSCOTT ? "grayscott" : "heat3d", size, dims[0], dims[1], dims[2],
           o->n, (long)(state_total / sizeof(double)), N, S.dt, o->slots, o->repeat, windows, waves,
           pairs, state_bytes, store_need, o->max_store_bytes, store_skipped ? "true" : "false",
           rss_base, mem_base);
    int first = 1;
    for (int i = 0; i < NVAR; i++) {
      const variant *v = &vars[i];
      if (!v->ran) continue;
      printf("%s{\"mode\":\"%s\",\"slots\":%d,\"time\":%.6e,\"ratio_to_forward\":%.6f,"
             "\"alloc_peak\":%zu,\"rss_after\":%zu,\"halo_wait\":[%.4f,%.4f]",
             first ? "" : ",", var_names[i], v->kind == VAR_BINOMIAL ? o->slots : 0, v->t_total,
             v->t_total / fw->t_total, v->alloc_peak, v->rss_after, v->wait_lo, v->wait_hi);
      if (v->kind != VAR_FORWARD)
        printf(",\"t_forward\":%.6e,\"t_backward\":%.6e,\"advances\":%ld,\"t_lc\":%lld,"
               "\"recomputed_steps\":%ld,\"recomp_per_step\":%.6f,\"recomp_per_step_theory\":%.6f,"
               "\"restores\":%ld,\"rhs_forward\":%ld,\"rhs_backward\":%ld,\"vjp_y\":%ld,"
               "\"checkpoint_bytes\":%zu,\"budget_bytes\":%zu,\"stats_peak_alloc_bytes\":%zu,"
               "\"counts_match\":%s,\"J_equals_forward\":%s",
               v->t_fwd, v->t_bwd, v->stats.advances, (long long)v->t_lc, v->stats.recomputed_steps,
               (double)v->stats.recomputed_steps / (double)N,
               (double)(v->t_lc - (N - 1)) / (double)N, v->stats.restores, v->stats.rhs_forward,
               v->stats.rhs_backward, v->stats.vjp_y, v->ckpt, v->budget, v->stats.peak_alloc_bytes,
               v->counts_ok ? "true" : "false", v->J_same ? "true" : "false");
      printf("}");
      first = 0;
    }
    printf("],\"J\":%.17g,\"dJdp\":[", fw->J);
    for (int k = 0; k < np; k++)
      printf("%s%.17g", k ? "," : "", bi->dJdp[k]);
    printf("],\"dJdy0_norm\":%.17g,\"dJdfield_norm\":", gnorm_y);
    if (bi->dJdfield)
      printf("%.17g", gnorm_f);
    else
      printf("null");
    printf(",\"counts_match\":%s,\"J_equals_forward\":%s,\"gradients_match\":%s}\n",
           counts_ok ? "true" : "false", j_ok ? "true" : "false",
           both ? (bitwise_ok ? "true" : "false") : "null");
    fflush(stdout);
  }
  *failed = !counts_ok || !j_ok || !bitwise_ok || !finite_ok;

cleanup:
  for (int i = 0; i < NVAR; i++) {
    rw_vec_destroy(&vars[i].dJdy0);
    rw_vec_destroy(&vars[i].dJdfield);
  }
  rw_free(&tbuf);
  rw_vec_destroy(&y);
  rw_vec_destroy(&S.y0);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&S.prob);
  rw_device_destroy(&dev);
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
  int failed = 0, badargs = 0;
  int ierr = bench(&o, &failed, &badargs);
  if (ierr) fprintf(stderr, "bench_pde: error %d: %s\n", ierr, rw_error_message());
  MPI_Finalize();
  return badargs ? 2 : ierr || failed ? 1 : 0;
}
