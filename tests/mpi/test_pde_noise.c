/* Space-time white noise in the grid problems (issue 12), run under mpiexec with 1, 2 and 4
 * ranks: Gray-Scott (2-D, 16 x 16, both species noisy) and heat (2-D, 13 x 11, Dirichlet;
 * kappa is a parameter field) with the SDE steppers em and sheun and a fixed seed.
 *
 *  0. The noise mapping: g dW at every owned node equals sigma sqrt(dt) V^(-1/2) z, with z the
 *     normal rw_rng_normal draws for the node's GLOBAL index (Gray-Scott: node * 2 + species,
 *     and node * 1 + 0 with one noisy species, the other species getting none; heat with
 *     Neumann sides: V halved per boundary dimension) to 1e-15 relative, on every rank.
 *  a. Taylor remainders of the full discrete gradient at the fixed seed: |J(x + s d) - J(x) -
 *     s dJ.d| decays at second order (observed orders in [1.8, 2.2] over 5 halvings of s) in
 *     each scalar parameter, in the conductivity field (heat) and in y0.
 *  b. Binomial checkpointing (2 slots) equals store mode bit for bit: J, dJ/dp, dJ/dy0 and
 *     dJ/dkappa.
 *  c. Rank counts: the solve on the full communicator against rank 0 alone on MPI_COMM_SELF:
 *     y(T) bit for bit (the noise is keyed by global indices and each node's arithmetic does
 *     not depend on the decomposition); J and dJ/dp to 1e-13 relative (sums over ranks);
 *     dJ/dy0 and dJ/dkappa to 1e-13 of their largest entry (the count of entries that are not
 *     bitwise equal is printed). The noisy J differs from the noise-free one (the noise is on).
 * Prints one line per check on rank 0; exits 1 if any failed. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_grayscott.h"
#include "rewind/rw_heat.h"
#include "rewind/rw_rng.h"
#include "rewind/rw_sde.h"
#include "rw_mpi_test.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int fails, rank, size;

static void report(int ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void report(int ok, const char *fmt, ...)
{
  int all = ok;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) fails++;
  if (rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  printf("%s ", all ? "ok  " : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

typedef enum { GS = 0, HEAT = 1 } kind;
static const char *const kind_name[] = {"grayscott", "heat"};

#define SEED  20261124u
#define NSTEP 12

static rw_grid grid_of(kind k, rw_problem prob)
{
  return k == GS ? rw_gs_grid(prob) : rw_heat_grid(prob);
}

/* f = base[c] + amp[c] hash(seed, global node * ncomp + c): the same field for every
 * decomposition. */
static void fill(kind k, rw_problem prob, N_Vector f, uint64_t seed, const double *base,
                 const double *amp)
{
  rw_grid g = grid_of(k, prob);
  const rw_grid_config *cf = rw_grid_get_config(g);
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  double *d = rw_vec_data(f);
  int nc = cf->ncomp;
  for (long kk = 0; kk < cnt[2]; kk++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        for (int c = 0; c < nc; c++) {
          uint64_t node = (uint64_t)(((st[2] + kk) * cf->n[1] + st[1] + j) * cf->n[0] + st[0] + i);
          d[((kk * cnt[1] + j) * cnt[0] + i) * nc + c] =
              base[c] + amp[c] * rw_test_hash01(seed, node * (uint64_t)nc + (uint64_t)c);
        }
}

static rw_heat_config heat_config(rw_bc bc)
{
  rw_heat_config c;
  memset(&c, 0, sizeof c);
  c.dim = 2;
  c.n[0] = 13, c.n[1] = 11, c.n[2] = 1;
  c.length[0] = 1.0, c.length[1] = 0.8, c.length[2] = 1.0;
  c.bc = bc;
  c.boundary_value = bc == RW_BC_DIRICHLET ? 0.3 : 0.0;
  c.source_center[0] = 0.4, c.source_center[1] = 0.5;
  c.source_width = 0.2;
  c.nsensors = 5;
  return c;
}

/* The problem with its noise on (seed SEED, amplitude `amp`), random kappa (heat) and the
 * options of NSTEP steps. */
static rw_problem make(rw_context ctx, kind k, rw_bc bc, rw_gs_noise species, double amp,
                       rw_adjoint_options *opt)
{
  rw_problem prob;
  rw_adjoint_options_default(opt);
  opt->t0 = 0.0;
  if (k == GS) {
    rw_gs_config cfg;
    rw_gs_config_default(&cfg);
    cfg.n = 16;
    cfg.objective = RW_GS_U2;
    cfg.noise = species;
    CHECK(rw_gs_problem_create(ctx, &cfg, &prob));
    /* D / h^2 = 0.1 and 0.05: diffusion as visible as the reaction, Euler stable at dt 0.5. */
    double h = 2.5 / 16.0, *p = rw_problem_params(prob);
    p[0] = 0.1 * h * h, p[1] = 0.05 * h * h;
    opt->dt = 0.5;
  } else {
    rw_heat_config cfg = heat_config(bc);
    CHECK(rw_heat_problem_create(ctx, &cfg, &prob));
    rw_problem_params(prob)[0] = 0.7;
    const double kb[1] = {1.0}, ka[1] = {0.15};
    fill(HEAT, prob, rw_problem_field(prob), 5, kb, ka);
    double zero[RW_HEAT_MAX_SENSORS] = {0}, t0 = 0.0;
    CHECK(rw_heat_set_data(prob, 1, &t0, zero));
    opt->dt = 0.5 * rw_heat_stability_limit(prob, 1.15);
  }
  opt->tf = NSTEP * opt->dt;
  CHECK(rw_problem_set_noise(prob, SEED, amp, 1));
  return prob;
}

static double amp_of(kind k) { return k == GS ? 0.005 : 0.1; }

static void init(kind k, rw_problem prob, N_Vector y0)
{
  const double gb[2] = {0.6, 0.25}, ga[2] = {0.2, 0.1}, hb[1] = {0.5}, ha[1] = {0.2};
  fill(k, prob, y0, 11, k == GS ? gb : hb, k == GS ? ga : ha);
}

/* 0. The noise mapping and its scaling. */
static void mapping_test(rw_context ctx, kind k, rw_bc bc, rw_gs_noise species)
{
  rw_adjoint_options opt;
  double amp = amp_of(k);
  rw_problem prob = make(ctx, k, bc, species, amp, &opt);
  N_Vector g, dW, y;
  CHECK(rw_problem_new_state(prob, &g));
  CHECK(rw_problem_new_state(prob, &dW));
  CHECK(rw_problem_new_state(prob, &y));
  const long n = 3;
  CHECK(rw_problem_diffusion(prob, 0.0, y, g));
  CHECK(rw_problem_noise_increment(prob, n, opt.dt, dW, NULL));
  rw_grid gr = grid_of(k, prob);
  const rw_grid_config *cf = rw_grid_get_config(gr);
  long st[3], cnt[3];
  double h[3];
  rw_grid_local_box(gr, st, cnt);
  rw_grid_spacing(gr, h);
  int nc = cf->ncomp, nnoisy = (k == GS && species == RW_GS_NOISE_UV) ? 2 : 1;
  const double *gd = rw_vec_data(g), *wd = rw_vec_data(dW);
  double worst = 0.0;
  int ok = 1;
  for (long j = 0; j < cnt[1]; j++)
    for (long i = 0; i < cnt[0]; i++) {
      long gi = st[0] + i, gj = st[1] + j;
      uint64_t node = (uint64_t)(gj * cf->n[0] + gi);
      double V = h[0] * h[1];
      if (bc == RW_BC_NEUMANN) {
        if (gi == 0 || gi == cf->n[0] - 1) V *= 0.5;
        if (gj == 0 || gj == cf->n[1] - 1) V *= 0.5;
      }
      for (int c = 0; c < nc; c++) {
        size_t o = (size_t)((j * cnt[0] + i) * nc + c);
        int noisy =
            k == HEAT || species == RW_GS_NOISE_UV || (species == RW_GS_NOISE_U) == (c == 0);
        double want = 0.0, z;
        if (noisy) {
          int cc = nnoisy == 2 ? c : 0;
          CHECK(rw_rng_normal(SEED, (uint64_t)n, 0, node * (uint64_t)nnoisy + (uint64_t)cc,
                              RW_RNG_STREAM_FORCING, &z));
          want = amp * sqrt(opt.dt) * z / sqrt(V);
        }
        double got = gd[o] * wd[o];
        if (!noisy) {
          ok = ok && got == 0.0;
        } else {
          double e = fabs(got - want) / fabs(want);
          worst = fmax(worst, e);
        }
      }
    }
  double wall = worst;
  MPI_Allreduce(&worst, &wall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  report(ok && wall <= 1e-15,
         "mapping %s%s on %d ranks: g dW = sigma sqrt(dt / V) z(global index) at every node, "
         "worst relative error %.2e%s",
         kind_name[k],
         k == GS ? (species == RW_GS_NOISE_UV  ? " (u and v)"
                    : species == RW_GS_NOISE_U ? " (u only)"
                                               : " (v only)")
                 : (bc == RW_BC_NEUMANN ? " (Neumann)" : " (Dirichlet)"),
         size, wall, ok ? "" : "; a species without noise got some");
  rw_vec_destroy(&g);
  rw_vec_destroy(&dW);
  rw_vec_destroy(&y);
  rw_problem_destroy(&prob);
}

/* a. Taylor remainder test of the full gradient. */
static void taylor_test(rw_context ctx, kind k, const char *method)
{
  rw_adjoint_options opt;
  rw_problem prob = make(ctx, k, RW_BC_DIRICHLET, RW_GS_NOISE_UV, amp_of(k), &opt);
  rw_stepper st;
  N_Vector y0, y, gy, dy, dk = NULL, k0 = NULL, gk = NULL;
  CHECK(rw_stepper_create_sde(prob, method, &st));
  CHECK(rw_problem_new_state(prob, &y0));
  CHECK(rw_vec_clone(y0, &y));
  CHECK(rw_vec_clone(y0, &gy));
  CHECK(rw_vec_clone(y0, &dy));
  init(k, prob, y0);
  const double zb[2] = {0, 0}, one[2] = {1, 1};
  fill(k, prob, dy, 12, zb, one);
  N_Vector kappa = rw_problem_field(prob);
  if (kappa) {
    CHECK(rw_vec_clone(kappa, &dk));
    CHECK(rw_vec_clone(kappa, &k0));
    CHECK(rw_vec_clone(kappa, &gk));
    fill(k, prob, dk, 13, zb, one);
    N_VScale(1.0, kappa, k0);
  }
  int np = rw_problem_nparams(prob);
  double J0, g[4], *p = rw_problem_params(prob), p0[4];
  memcpy(p0, p, sizeof(double) * (size_t)np);
  N_VScale(1.0, y0, y);
  CHECK(rw_adjoint_solve(prob, st, &opt, y, &J0, g, gy, NULL));
  if (kappa) N_VScale(1.0, rw_problem_field_adjoint(prob), gk);
  int ndir = np + (kappa ? 1 : 0) + 1;
  for (int dir = 0; dir < ndir; dir++) {
    int isp = dir < np, isk = kappa && dir == np;
    double gd = isp ? g[dir] * p0[dir] : isk ? N_VDotProd(gk, dk) : N_VDotProd(gy, dy);
    double s0 = isp ? 0.0625 : isk ? 0.05 : 0.02, prev = 0.0, omin = 1e9, omax = -1e9, rem = 0.0;
    char orders[128] = "";
    for (int i = 0; i <= 5; i++) {
      double s = s0 * pow(0.5, i), J;
      if (isp) p[dir] = p0[dir] * (1.0 + s);
      if (isk) N_VLinearSum(1.0, k0, s, dk, kappa);
      if (isp || isk)
        N_VScale(1.0, y0, y);
      else
        N_VLinearSum(1.0, y0, s, dy, y);
      CHECK(rw_forward_solve(prob, st, &opt, y, &J, NULL));
      if (isp) p[dir] = p0[dir];
      if (isk) N_VScale(1.0, k0, kappa);
      rem = fabs(J - J0 - s * gd);
      if (i > 0) {
        double o = log2(prev / rem);
        omin = rw_test_min(omin, o), omax = rw_test_max(omax, o);
        size_t l = strlen(orders);
        snprintf(orders + l, sizeof orders - l, "%s%.3f", i > 1 ? " " : "", o);
      }
      prev = rem;
    }
    report(omin > 1.8 && omax < 2.2,
           "taylor %s %s with noise on %d ranks, direction %s: orders %s (last remainder %.2e)",
           kind_name[k], method, size,
           isp   ? rw_problem_param_name(prob, dir)
           : isk ? "kappa"
                 : "y0",
           orders, rem);
  }
  rw_vec_destroy(&y0);
  rw_vec_destroy(&y);
  rw_vec_destroy(&gy);
  rw_vec_destroy(&dy);
  rw_vec_destroy(&dk);
  rw_vec_destroy(&k0);
  rw_vec_destroy(&gk);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
}

typedef struct {
  double J, g[4];
  double *y, *gy, *gk; /* global fields on rank 0 of the communicator (NULL elsewhere) */
  long n, nk;
} result;

/* The distributed field gathered in global order on rank 0 of comm. */
static double *gather(kind k, rw_problem prob, N_Vector f, MPI_Comm comm, long *ntot)
{
  rw_grid g = grid_of(k, prob);
  const rw_grid_config *cf = rw_grid_get_config(g);
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  int nc = cf->ncomp;
  *ntot = cf->n[0] * cf->n[1] * nc;
  double *all = calloc((size_t)*ntot, sizeof(double)), *d = rw_vec_data(f);
  for (long j = 0; j < cnt[1]; j++)
    for (long i = 0; i < cnt[0]; i++)
      for (int c = 0; c < nc; c++)
        all[((st[1] + j) * cf->n[0] + st[0] + i) * nc + c] = d[(j * cnt[0] + i) * nc + c];
  int r;
  MPI_Comm_rank(comm, &r);
  MPI_Reduce(r == 0 ? MPI_IN_PLACE : all, all, (int)*ntot, MPI_DOUBLE, MPI_SUM, 0, comm);
  if (r != 0) {
    free(all);
    return NULL;
  }
  return all;
}

static void solve(MPI_Comm comm, kind k, const char *method, double amp, rw_adjoint_mode mode,
                  result *res, long *recomputed)
{
  rw_context ctx;
  CHECK(rw_context_create(comm, &ctx));
  rw_adjoint_options opt;
  rw_problem prob = make(ctx, k, RW_BC_DIRICHLET, RW_GS_NOISE_UV, amp, &opt);
  rw_stepper st;
  N_Vector y, gy;
  rw_adjoint_stats stats;
  CHECK(rw_stepper_create_sde(prob, method, &st));
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_vec_clone(y, &gy));
  init(k, prob, y);
  opt.mode = mode;
  opt.schedule = RW_SCHEDULE_BINOMIAL;
  opt.ram_slots = 2;
  memset(res, 0, sizeof *res);
  CHECK(rw_adjoint_solve(prob, st, &opt, y, &res->J, res->g, gy, &stats));
  if (recomputed) *recomputed = stats.recomputed_steps;
  res->y = gather(k, prob, y, comm, &res->n);
  res->gy = gather(k, prob, gy, comm, &res->n);
  if (rw_problem_field(prob))
    res->gk = gather(k, prob, rw_problem_field_adjoint(prob), comm, &res->nk);
  rw_vec_destroy(&y);
  rw_vec_destroy(&gy);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

static void result_free(result *r)
{
  free(r->y);
  free(r->gy);
  free(r->gk);
}

/* max |a - b| / max |b| over n entries, and the count of entries not bitwise equal. */
static double field_diff(const double *a, const double *b, long n, long *ndiff)
{
  double dmax = 0.0, bmax = 0.0;
  *ndiff = 0;
  for (long i = 0; i < n; i++) {
    *ndiff += a[i] != b[i];
    dmax = rw_test_max(dmax, fabs(a[i] - b[i]));
    bmax = rw_test_max(bmax, fabs(b[i]));
  }
  return bmax > 0.0 ? dmax / bmax : dmax;
}

/* b. Checkpointed == store, bit for bit; c. rank counts. */
static void path_tests(kind k, const char *method)
{
  result s, c, one, quiet;
  long recomputed = 0;
  int np = k == GS ? 4 : 1;
  solve(MPI_COMM_WORLD, k, method, amp_of(k), RW_ADJOINT_STORE, &s, NULL);
  solve(MPI_COMM_WORLD, k, method, amp_of(k), RW_ADJOINT_CHECKPOINT, &c, &recomputed);
  solve(MPI_COMM_WORLD, k, method, 0.0, RW_ADJOINT_STORE, &quiet, NULL);
  int same = 1, rok = 1;
  double worst = 0.0, dy0 = 0.0, dk = 0.0;
  long ny = 0, ng = 0, nk = 0;
  if (rank == 0) {
    same = s.J == c.J && memcmp(s.g, c.g, sizeof s.g) == 0 &&
           memcmp(s.gy, c.gy, sizeof(double) * (size_t)s.n) == 0 &&
           (!s.gk || memcmp(s.gk, c.gk, sizeof(double) * (size_t)s.nk) == 0);
    solve(MPI_COMM_SELF, k, method, amp_of(k), RW_ADJOINT_STORE, &one, NULL);
    worst = rw_test_rel(s.J, one.J);
    for (int q = 0; q < np; q++)
      worst = fmax(worst, rw_test_rel(s.g[q], one.g[q]));
    (void)field_diff(s.y, one.y, s.n, &ny);
    dy0 = field_diff(s.gy, one.gy, s.n, &ng);
    if (s.gk) dk = field_diff(s.gk, one.gk, s.nk, &nk);
    rok = worst <= 1e-13 && ny == 0 && dy0 <= 1e-13 && dk <= 1e-13 && s.J != quiet.J;
    result_free(&one);
  }
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(&rok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  report(same,
         "checkpoint %s %s with noise on %d ranks: binomial 2 slots (%ld recomputed steps) vs "
         "store: J, dJ/dp, dJ/dy0%s %s",
         kind_name[k], method, size, recomputed, k == HEAT ? ", dJ/dkappa" : "",
         same ? "bitwise equal" : "DIFFERENT");
  char extra[96] = "";
  if (k == HEAT) snprintf(extra, sizeof extra, "; dJ/dkappa %ld differ (max %.2e of max)", nk, dk);
  report(rok,
         "ranks %s %s with noise: %d ranks vs 1: J %.17g (noise-free %.17g), worst rel in J and "
         "dJ/dp %.2e; y(T) %ld entries differ; dJ/dy0 %ld differ (max %.2e of max)%s",
         kind_name[k], method, size, s.J, quiet.J, worst, ny, ng, dy0, extra);
  result_free(&s);
  result_free(&c);
  result_free(&quiet);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t mem0 = rw_mem_current();
  rw_context ctx;
  CHECK(rw_context_create(MPI_COMM_WORLD, &ctx));
  mapping_test(ctx, GS, RW_BC_PERIODIC, RW_GS_NOISE_UV);
  mapping_test(ctx, GS, RW_BC_PERIODIC, RW_GS_NOISE_U);
  mapping_test(ctx, GS, RW_BC_PERIODIC, RW_GS_NOISE_V);
  mapping_test(ctx, HEAT, RW_BC_DIRICHLET, RW_GS_NOISE_UV);
  mapping_test(ctx, HEAT, RW_BC_NEUMANN, RW_GS_NOISE_UV);
  const char *methods[] = {"em", "sheun"};
  for (int k = 0; k < 2; k++)
    for (int m = 0; m < 2; m++)
      taylor_test(ctx, (kind)k, methods[m]);
  rw_context_destroy(&ctx);
  for (int k = 0; k < 2; k++)
    for (int m = 0; m < 2; m++)
      path_tests((kind)k, methods[m]);
  size_t mem1 = rw_mem_current();
  report(mem1 == mem0, "allocator: %zu bytes held after every object is destroyed (%zu before)",
         mem1, mem0);
  if (rank == 0) printf("%s\n", fails ? "FAILED" : "test_pde_noise: all checks passed");
  MPI_Finalize();
  return fails ? 1 : 0;
}
