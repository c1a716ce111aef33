/* Benchmark: the cost of space-time white noise in Gray-Scott (issue 12, "Figures").
 *
 * On the Gray-Scott problem of rw_grayscott.h (2-D, N x N, default N = 512, both species
 * noisy, amplitude 0.01, a state that fills the grid: u = 0.5 + 0.25 sin, v = 0.25 + 0.2 cos,
 * so no subnormal numbers slow the rhs down) it measures, at whatever size mpiexec gives:
 *   rhs     one rw_problem_rhs of the whole grid (the halo exchange included);
 *   noise   the noise of one step of the whole grid: rw_problem_noise_increment, i.e. the
 *           problem's noise_fill (one rw_rng_normal_fill per owned row: Philox-4x32-10 and
 *           Box-Muller, N^2 x 2 normals) and the scale sigma sqrt(dt);
 *   em, sheun   one step of each SDE stepper (noise, diffusion, rhs evaluations and the
 *           combinations), for context; and rk4, one classic RK4 step of the deterministic
 *           problem.
 * Each time is the median over --repeat calls (each call with a new step index, so every
 * noise draw is new), the maximum over ranks. It prints the noise / rhs ratio and the noise
 * per normal in ns.
 *
 * Memory: a scheme that STORED the noise for the backward sweep would hold every increment of
 * the run: steps x nodes x noisy components x 8 bytes (--steps, default 1000: 1000 x 512^2 x
 * 2 x 8 B = 3.9 GiB at 512^2, 1000 states' worth). Rewind stores none (0 bytes): every
 * forward step, recomputation and adjoint step redraws its increment from (seed, step, global
 * index), with one workspace vector for it in the stepper however many steps are taken.
 *
 * Output: a table and one JSON line ("BENCH_JSON {...}"). A benchmark, not a test: nothing
 * about speed is asserted; the ctest smoke run keeps it building and running. Exit status 0;
 * 1 on an error; 2 on a bad command line. */
#include "bench_util.h"
#include "rewind/rw_grayscott.h"
#include "rewind/rw_sde.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  long n, steps, repeat;
} opts;

static void usage(FILE *f, const char *prog)
{
  fprintf(f,
          "usage: %s [--n N] [--steps L] [--repeat R]\n"
          "  --n N        Gray-Scott nodes per dimension (default 512)\n"
          "  --steps L    steps of the run whose stored noise is counted (default 1000)\n"
          "  --repeat R   calls timed per operation, the median reported (default 20)\n",
          prog);
}

static int parse(int argc, char **argv, int rank, opts *o)
{
  o->n = 512, o->steps = 1000, o->repeat = 20;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (rank == 0) usage(stdout, argv[0]);
      return 1;
    }
    long *dst = !strcmp(a, "--n")        ? &o->n
                : !strcmp(a, "--steps")  ? &o->steps
                : !strcmp(a, "--repeat") ? &o->repeat
                                         : NULL;
    if (!dst || i + 1 >= argc || parse_long(argv[i + 1], 1, dst)) {
      if (rank == 0) {
        fprintf(stderr, "%s: bad option or value at '%s'\n", argv[0], a);
        usage(stderr, argv[0]);
      }
      return 2;
    }
    i++;
  }
  return 0;
}

/* u, v filling the grid (no subnormals). */
static void fill_state(rw_problem prob, N_Vector y)
{
  rw_grid g = rw_gs_grid(prob);
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  double *d = rw_vec_data(y);
  for (long j = 0; j < cnt[1]; j++)
    for (long i = 0; i < cnt[0]; i++) {
      double x = 0.05 * (double)(st[0] + i), z = 0.07 * (double)(st[1] + j);
      d[2 * (j * cnt[0] + i)] = 0.5 + 0.25 * sin(x + z);
      d[2 * (j * cnt[0] + i) + 1] = 0.25 + 0.2 * cos(x - z);
    }
}

typedef enum { OP_RHS, OP_NOISE, OP_EM, OP_SHEUN, OP_RK4, NOP } op;
static const char *const op_name[NOP] = {"rhs", "noise", "em", "sheun", "rk4"};

/* Median over R calls of op (max over ranks per call). */
static int time_op(op k, rw_problem prob, rw_stepper st, N_Vector y, N_Vector f, double dt, long R,
                   MPI_Comm comm, double *out)
{
  double ts[256];
  long n = R < 256 ? R : 256;
  for (long r = -1; r < n; r++) { /* r = -1: untimed warm-up */
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    long idx = 1000 + r;
    if (k == OP_RHS) {
      RW_CALL(rw_problem_rhs(prob, 0.0, y, f));
    } else if (k == OP_NOISE) {
      RW_CALL(rw_problem_noise_increment(prob, idx, dt, f, NULL));
    } else {
      rw_stepper_set_step_index(st, idx);
      RW_CALL(rw_stepper_step(st, 0.0, dt, y, f, NULL, NULL));
    }
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (r >= 0) ts[r] = t;
  }
  *out = median(ts, (int)n);
  return 0;
}

static int bench(const opts *o)
{
  int ierr = 0, rank, size;
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  rw_context ctx = NULL;
  rw_problem prob = NULL;
  rw_stepper st[3] = {NULL, NULL, NULL};
  N_Vector y = NULL, f = NULL;
  RW_CALL(rw_context_create(comm, &ctx));
  rw_gs_config cfg;
  rw_gs_config_default(&cfg);
  cfg.n = o->n;
  RW_TRY(rw_gs_problem_create(ctx, &cfg, &prob));
  const double amp = 0.01, h = cfg.length / (double)cfg.n;
  /* The RK4 step of bench_pde: 0.5 (128 / N)^2 above N = 128 (stable for the em step too). */
  double dt = cfg.n > 128 ? 0.5 * (128.0 / (double)cfg.n) * (128.0 / (double)cfg.n) : 0.5;
  dt = fmin(dt, 0.2 * h * h / 8e-5);
  RW_TRY(rw_problem_set_noise(prob, 1, amp, 1));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_problem_new_state(prob, &f));
  fill_state(prob, y);
  RW_TRY(rw_stepper_create_sde(prob, "em", &st[0]));
  RW_TRY(rw_stepper_create_sde(prob, "sheun", &st[1]));
  RW_TRY(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st[2]));
  double t[NOP];
  for (int k = 0; k < NOP; k++) {
    rw_stepper s = k == OP_EM ? st[0] : k == OP_SHEUN ? st[1] : k == OP_RK4 ? st[2] : NULL;
    RW_TRY(time_op((op)k, prob, s, y, f, dt, o->repeat, comm, &t[k]));
  }
  double nodes = (double)cfg.n * (double)cfg.n, normals = 2.0 * nodes;
  double stored = (double)o->steps * normals * 8.0, state = normals * 8.0;
  if (rank == 0) {
    printf("bench_noise: Gray-Scott %ld x %ld on %d ranks, both species noisy, sigma = %g, "
           "dt = %g, median of %ld calls\n",
           cfg.n, cfg.n, size, amp, dt, o->repeat);
    for (int k = 0; k < NOP; k++)
      printf("  %-6s %10.3f ms  (%6.2f x rhs)\n", op_name[k], 1e3 * t[k], t[k] / t[OP_RHS]);
    printf("  noise of one step: %.0f normals, %.2f ns per normal, %.2f rhs evaluations' "
           "worth\n",
           normals, 1e9 * t[OP_NOISE] / normals * size, t[OP_NOISE] / t[OP_RHS]);
    printf("  stored noise for %ld steps: %.0f bytes = %.3f GiB (%ld states' worth); Rewind "
           "stores 0 bytes of noise (redrawn from (seed, step, global index); one %.2f MiB "
           "workspace vector per stepper)\n",
           o->steps, stored, stored / 1073741824.0, o->steps, state / 1048576.0);
    printf("BENCH_JSON {\"bench\":\"noise\",\"problem\":\"grayscott\",\"n\":%ld,\"ranks\":%d,"
           "\"dt\":%.17g,\"repeat\":%ld,\"t_rhs_s\":%.6e,\"t_noise_s\":%.6e,\"t_em_step_s\":%.6e,"
           "\"t_sheun_step_s\":%.6e,\"t_rk4_step_s\":%.6e,\"noise_over_rhs\":%.4f,"
           "\"ns_per_normal_per_rank\":%.3f,\"steps\":%ld,\"stored_noise_bytes\":%.0f,"
           "\"rewind_noise_bytes\":0}\n",
           cfg.n, size, dt, o->repeat, t[OP_RHS], t[OP_NOISE], t[OP_EM], t[OP_SHEUN], t[OP_RK4],
           t[OP_NOISE] / t[OP_RHS], 1e9 * t[OP_NOISE] / normals * size, o->steps, stored);
    fflush(stdout);
  }
cleanup:
  for (int k = 0; k < 3; k++)
    rw_stepper_destroy(&st[k]);
  rw_vec_destroy(&y);
  rw_vec_destroy(&f);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
  return ierr;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  opts o;
  int pa = parse(argc, argv, rank, &o);
  int rc = pa == 1 ? 0 : pa;
  if (pa == 0 && bench(&o) != 0) {
    if (rank == 0) fprintf(stderr, "bench_noise: %s\n", rw_error_message());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
