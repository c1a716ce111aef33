/* bench_node: one loss + gradient of a neural ODE (issue 9's P0 shape: an MLP 2-64-64-2 tanh,
 * a batch of B trajectories, Kutta's 3/8 rule, N steps over [0, 1], store mode) on the CPU
 * and on a device, linked against librewind only so it travels in the GPU bundle (issue 11:
 * the MLP's products through cuBLAS).
 *
 *   bench_node [--batch B] [--steps N] [--width W] [--repeat R] [--slots C]
 *              [--blas-threads T] [--device cuda|emulated]
 *
 * --slots C: binomial checkpointing with C slots (in device memory on a device) instead of
 * store mode; the FLOP count then includes the recomputed steps (the forward passes counted).
 *
 * The weights are Glorot-uniform from a fixed seed with small nonzero biases, y0 and the
 * targets fixed pseudo-random values, so every run computes the same problem. Each of the CPU
 * and the device (when asked for) runs R times; the table gives the median forward and
 * backward sweep (rw_adjoint_stats' timers), ms per step, and the GFLOP/s of the products
 * (FLOP counted as bench_neuralode.sh counts them: every forward pass, recomputations
 * included, 2 B sum d_l d_{l+1} each; every stage's VJP twice that). Checks (exit 1 on a
 * failure): J, dJ/dtheta and dJ/dy0 of the device agree with the CPU's to 1e-12 (relative;
 * the products' sums differ in order), and the device's R runs repeat bit for bit.
 * Output: the table and one "BENCH_JSON {...}" line on rank 0. Exit 2 on a bad flag. */
#include "bench_util.h"
#include "rewind/rw_adjoint.h"
#include "rewind/rw_blas.h"
#include "rewind/rw_device.h"
#include "rewind/rw_kernels.h"
#include "rewind/rw_neuralode.h"

#include <stdint.h>
#include <stdio.h>

typedef struct {
  long batch, steps, repeat, slots; /* slots 0: store mode; > 0: binomial checkpointing */
  int width;
  const char *device;
} opts;

typedef struct {
  double J, fwd, bwd;
  double *th, *g;
  long n, P, rhs_fwd, rhs_bwd;
} run_result;

static double h01(uint64_t seed, uint64_t i)
{
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

static int make_problem(rw_context ctx, const opts *o, rw_problem *prob, double **y0)
{
  rw_mlp_arch a;
  memset(&a, 0, sizeof a);
  a.nlayers = 3;
  a.widths[0] = 2, a.widths[1] = o->width, a.widths[2] = o->width, a.widths[3] = 2;
  a.activation = RW_ACT_TANH;
  RW_CALL(rw_neuralode_create(ctx, &a, o->batch, prob));
  long P = rw_problem_nparams(*prob), first = 0, cnt = 0;
  double *th = rw_problem_params(*prob);
  rw_mlp_init_theta(&a, 1, th);
  for (long k = 0; k < P; k++)
    th[k] += 0.01 * h01(2, (uint64_t)k);
  rw_neuralode_local_batch(*prob, &first, &cnt);
  *y0 = malloc(((size_t)cnt * 2 + 1) * sizeof(double));
  RW_CHECK(*y0, RW_ERR_MEM, "no memory for y0");
  for (long i = 0; i < 2 * cnt; i++) {
    (*y0)[i] = h01(3, (uint64_t)(2 * first + i));
    rw_neuralode_targets(*prob)[i] = 0.5 * h01(4, (uint64_t)(2 * first + i));
  }
  return 0;
}

static int run_once(rw_problem prob, const opts *o, const double *y0, run_result *r)
{
  int ierr = 0;
  rw_stepper st = NULL;
  N_Vector y = NULL, g = NULL;
  RW_TRY(rw_stepper_create_erk(prob, rw_tableau_find("rk38"), &st));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_problem_new_state(prob, &g));
  r->n = (long)rw_vec_local_length(y);
  r->P = rw_problem_nparams(prob);
  r->th = calloc((size_t)r->P, sizeof(double));
  r->g = malloc(((size_t)r->n + 1) * sizeof(double));
  RW_CHECK_GOTO(r->th && r->g, RW_ERR_MEM, "no memory for the results");
  RW_TRY(rw_vec_from_host(y, y0));
  rw_adjoint_options ao;
  rw_adjoint_options_default(&ao);
  ao.t0 = 0.0, ao.tf = 1.0, ao.dt = 1.0 / (double)o->steps;
  if (o->slots > 0)
    ao.mode = RW_ADJOINT_CHECKPOINT, ao.schedule = RW_SCHEDULE_BINOMIAL,
    ao.ram_slots = (int)o->slots;
  rw_adjoint_stats s;
  RW_TRY(rw_adjoint_solve(prob, st, &ao, y, &r->J, r->th, g, &s));
  RW_TRY(rw_vec_to_host(g, r->g));
  r->fwd = s.time_forward, r->bwd = s.time_backward;
  r->rhs_fwd = s.rhs_forward, r->rhs_bwd = s.rhs_backward;
cleanup:
  rw_vec_destroy(&y);
  rw_vec_destroy(&g);
  rw_stepper_destroy(&st);
  return ierr;
}

static void result_free(run_result *r)
{
  free(r->th), free(r->g);
  r->th = r->g = NULL;
}

static double rel2(const double *a, const double *b, long n, MPI_Comm comm, int local)
{
  double s[2] = {0.0, 0.0};
  for (long i = 0; i < n; i++)
    s[0] += (a[i] - b[i]) * (a[i] - b[i]), s[1] += a[i] * a[i];
  if (local) MPI_Allreduce(MPI_IN_PLACE, s, 2, MPI_DOUBLE, MPI_SUM, comm);
  return s[1] > 0 ? sqrt(s[0] / s[1]) : sqrt(s[0]);
}

/* R runs on ctx; medians of the sweeps into *fwd, *bwd; the first run's results kept in *keep;
 * *repeats: every run equals the first bit for bit. */
static int measure(rw_context ctx, const opts *o, run_result *keep, double *fwd, double *bwd,
                   int *repeats)
{
  int ierr = 0;
  rw_problem prob = NULL;
  double *y0 = NULL, tf[64], tb[64];
  RW_TRY(make_problem(ctx, o, &prob, &y0));
  *repeats = 1;
  for (long k = 0; k < o->repeat; k++) {
    run_result r = {0};
    RW_TRY(run_once(prob, o, y0, &r));
    tf[k] = r.fwd, tb[k] = r.bwd;
    if (k == 0) {
      *keep = r;
    } else {
      *repeats &= r.J == keep->J && !memcmp(r.th, keep->th, (size_t)r.P * sizeof(double)) &&
                  !memcmp(r.g, keep->g, (size_t)r.n * sizeof(double));
      result_free(&r);
    }
  }
  int all = *repeats;
  MPI_Allreduce(&all, repeats, 1, MPI_INT, MPI_MIN, rw_context_comm(ctx));
  *fwd = median(tf, (int)o->repeat), *bwd = median(tb, (int)o->repeat);
cleanup:
  free(y0);
  rw_problem_destroy(&prob);
  return ierr;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, failed = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  opts o = {256, 1000, 3, 0, 64, NULL};
  long threads = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int bad = i + 1 >= argc;
    if (!bad && !strcmp(a, "--batch"))
      bad = parse_long(argv[++i], 1, &o.batch);
    else if (!bad && !strcmp(a, "--steps"))
      bad = parse_long(argv[++i], 1, &o.steps);
    else if (!bad && !strcmp(a, "--slots"))
      bad = parse_long(argv[++i], 1, &o.slots) || o.slots > 1000000;
    else if (!bad && !strcmp(a, "--blas-threads"))
      bad = parse_long(argv[++i], 1, &threads);
    else if (!bad && !strcmp(a, "--repeat"))
      bad = parse_long(argv[++i], 1, &o.repeat) || o.repeat > 64;
    else if (!bad && !strcmp(a, "--width")) {
      long w = 0;
      bad = parse_long(argv[++i], 1, &w) || w > 4096;
      o.width = (int)w;
    } else if (!bad && !strcmp(a, "--device")) {
      o.device = argv[++i];
      bad = strcmp(o.device, "cuda") && strcmp(o.device, "emulated");
    } else
      bad = 1;
    if (bad) {
      if (rank == 0)
        fprintf(stderr,
                "bench_node: bad argument '%s'\nusage: bench_node [--batch B] [--steps N] "
                "[--width W] [--repeat R (<= 64)] [--slots C] [--blas-threads T (1)] "
                "[--device cuda|emulated]\n",
                a);
      MPI_Finalize();
      return 2;
    }
  }
  rw_context cpu = NULL, dctx = NULL;
  rw_device dev = NULL;
  run_result rc = {0}, rd = {0};
  double cf = 0, cb = 0, df = 0, db = 0;
  int crep = 1, drep = 1, ierr = 0;
  RW_TRY(rw_blas_set_threads((int)threads)); /* the CPU's products: one thread by default */
  RW_TRY(rw_context_create(MPI_COMM_WORLD, &cpu));
  RW_TRY(measure(cpu, &o, &rc, &cf, &cb, &crep));
  if (o.device) {
    RW_TRY(rw_context_create(MPI_COMM_WORLD, &dctx));
    RW_TRY(rw_device_create(dctx, strcmp(o.device, "cuda") ? RW_DEVICE_EMULATED : RW_DEVICE_CUDA,
                            &dev));
    rw_context_set_device(dctx, dev);
    RW_TRY(measure(dctx, &o, &rd, &df, &db, &drep));
  }
  /* FLOP of the products, counted as bench_neuralode.sh counts them: the forward passes
   * (recomputations included), each stage's VJP (2 F), and the hidden layers of the last
   * stage's forward pass, which its VJP recomputes (Fh) */
  double Fh = 2.0 * (double)o.batch * (2.0 * o.width + (double)o.width * o.width);
  double F = Fh + 2.0 * (double)o.batch * (o.width * 2.0);
  double flops = (double)(rc.rhs_fwd + rc.rhs_bwd) * F + (double)o.steps * (4.0 * 2.0 * F + Fh);
  double eJ = 0, et = 0, eg = 0;
  if (dev) {
    eJ = fabs(rc.J - rd.J) / fmax(fabs(rc.J), 1e-300);
    et = rel2(rc.th, rd.th, rc.P, MPI_COMM_WORLD, 0);
    eg = rel2(rc.g, rd.g, rc.n, MPI_COMM_WORLD, 1);
    failed = !(eJ <= 1e-12 && et <= 1e-12 && eg <= 1e-12 && drep);
  }
  failed |= !crep;
  if (rank == 0) {
    char mode[64] = "store mode";
    if (o.slots > 0) snprintf(mode, sizeof mode, "binomial checkpointing, %ld slots", o.slots);
    printf("neural ODE 2-%d-%d-2 tanh, batch %ld on %d rank%s, rk38, %ld steps, %s; "
           "%.2f GFLOP of products per gradient; medians of %ld runs\n",
           o.width, o.width, o.batch, size, size == 1 ? "" : "s", o.steps, mode, flops * 1e-9,
           o.repeat);
    printf("vector kernels: %s (REWIND_SIMD caps it)\n", rw_simd_isa_name());
    printf("%-34s %10s %10s %12s %10s\n", "where", "forward s", "backward s", "ms per step",
           "GFLOP/s");
    printf("%-34s %10.4f %10.4f %12.4f %10.2f\n", "cpu", cf, cb, 1e3 * (cf + cb) / o.steps,
           flops * 1e-9 / (cf + cb));
    if (dev) {
      printf("%-34.34s %10.4f %10.4f %12.4f %10.2f\n", rw_device_name(dev), df, db,
             1e3 * (df + db) / o.steps, flops * 1e-9 / (df + db));
      printf("device / cpu time: %.3f; device against the CPU: J rel %.1e, dJ/dtheta %.1e, "
             "dJ/dy0 %.1e (at most 1e-12); the device's %ld runs %s; device memory peak "
             "%.1f MiB (rank 0)\n",
             (df + db) / (cf + cb), eJ, et, eg, o.repeat, drep ? "repeat bit for bit" : "DIFFER",
             mib(rw_device_peak_bytes(dev)));
    }
    printf("BENCH_JSON {\"bench\":\"node\",\"batch\":%ld,\"width\":%d,\"steps\":%ld,"
           "\"slots\":%ld,\"ranks\":%d,"
           "\"gflop\":%.4f,\"cpu_s\":%.6f,\"device\":\"%s\",\"device_s\":%.6f,"
           "\"device_matches\":%s}\n",
           o.batch, o.width, o.steps, o.slots, size, flops * 1e-9, cf + cb,
           dev ? rw_device_name(dev) : "", dev ? df + db : 0.0,
           dev ? (failed ? "false" : "true") : "null");
  }
cleanup:
  if (ierr) {
    if (rank == 0) fprintf(stderr, "bench_node: %s\n", rw_error_message());
    failed = 1;
  }
  result_free(&rc), result_free(&rd);
  rw_context_destroy(&dctx);
  rw_device_destroy(&dev);
  rw_context_destroy(&cpu);
  MPI_Finalize();
  return failed ? 1 : 0;
}
