/* The heat problem under mpiexec with 1, 2 and 4 ranks, 2-D and 3-D, every boundary type
 * (periodic, Dirichlet with a nonzero boundary value, Neumann):
 *  1. Dot-product tests of every VJP: <w, J v> = <J^T w, v> with J v the analytic JVP (state:
 *     ops->jvp; field: rw_heat_jvp_field; source: ops->jvp with dp) to 1e-13 relative, and
 *     with J v from central finite differences of rhs to 1e-7; the analytic JVPs against the
 *     finite differences to 1e-7; VJPs accumulate (out = z + J^T w, not J^T w).
 *  2. Taylor remainder of J (RK4, a few steps, data recorded from a "true" kappa) in a kappa
 *     field direction, in y0 and in the source amplitude: |J(x + e d) - J(x) - e <dJ/dx, d>|
 *     decays at second order over 5 halvings of e.
 *  3. A binomial checkpointed gradient (3 slots) equals the store-everything one bit for bit:
 *     J, dJ/dsource, dJ/dy0 and dJ/dkappa.
 *  4. Gradients across rank counts: rank 0 solves the same problem alone on MPI_COMM_SELF;
 *     the forward run is the same node-wise arithmetic whatever the decomposition, so the
 *     recorded data and u(T) must match bit for bit. J and dJ/dsource are sums whose grouping
 *     follows the decomposition (per-rank partial sums, then MPI_Allreduce), and the adjoint
 *     fields add face contributions in an order that depends on which faces cross a block
 *     edge (those arrive last, through rw_grid_exchange_adjoint): they must agree to 1e-12
 *     relative (max norm over the field). The measured differences are printed.
 *  5. No Rewind memory leaks (the counting allocator returns to its start).
 * Prints one line per configuration and check on rank 0; exits 1 on any failure. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_heat.h"
#include "rw_mpi_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
static const char *bcname[] = {"periodic", "dirichlet", "neumann"};

static void expect(rw_context ctx, int ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Reports a check on rank 0 (ok must agree on every rank). */
static void expect(rw_context ctx, int ok, const char *fmt, ...)
{
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, rw_context_comm(ctx));
  if (!all) fails++;
  if (rw_context_rank(ctx) == 0) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", all ? "  ok  " : "  FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
  }
}

static double relerr(double a, double b)
{
  double s = fmax(fabs(a), fabs(b));
  return s == 0.0 ? 0.0 : fabs(a - b) / s;
}

/* A reproducible value in [-0.5, 0.5) from a global node and a seed (identical whatever the
 * decomposition). */
static double hashval(long i, long j, long k, int seed)
{
  double x =
      sin(12.9898 * (double)i + 78.233 * (double)j + 37.719 * (double)k + 4.1 * seed) * 43758.5453;
  return x - floor(x) - 0.5;
}

/* v = a + b * hashval at every owned node. */
static void fill(rw_problem prob, N_Vector v, double a, double b, int seed)
{
  long st[3], cnt[3];
  rw_grid_local_box(rw_heat_grid(prob), st, cnt);
  double *d = rw_vec_data(v);
  for (long k = 0; k < cnt[2]; k++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        d[(k * cnt[1] + j) * cnt[0] + i] = a + b * hashval(st[0] + i, st[1] + j, st[2] + k, seed);
}

/* The rows' length along x when set (0: 13 in 2-D, 9 in 3-D). A row of whole vectors (a
 * multiple of 8) takes other paths than one with a remainder: the adjoint sweep's conductivity
 * gradient reads the stored state's row where it lies and forms its last node's high face from
 * the row's ghost (heat_adj_vec's ghu), where a remainder has it copied between its ghosts. */
static long row_len = 0;
/* The layers along z in 3-D when set (0: 7). 6 on 2 ranks gives blocks of 3 layers: a 3-stage
 * sweep on either rank reaches the other's layer inside the domain's face, below and above. */
static long nz_len = 0;

static rw_heat_config config(int dim, rw_bc bc)
{
  static const double coords2[] = {0.1, 0.2, 0.55, 0.4, 0.9, 0.7, 0.0, 0.8};
  static const double coords3[] = {0.1, 0.2, 0.3, 0.55, 0.4, 0.5, 0.9, 0.7, 0.1, 0.0, 0.0, 0.7};
  rw_heat_config c;
  memset(&c, 0, sizeof c);
  c.dim = dim;
  c.n[0] = row_len > 0 ? row_len : dim == 2 ? 13 : 9;
  c.n[1] = dim == 2 ? 11 : 8;
  c.n[2] = nz_len > 0 ? nz_len : 7;
  c.length[0] = 1.0, c.length[1] = 0.8, c.length[2] = 0.7;
  c.bc = bc;
  c.boundary_value = bc == RW_BC_DIRICHLET ? 0.3 : 0.0;
  c.source_center[0] = 0.4, c.source_center[1] = 0.5, c.source_center[2] = 0.3;
  c.source_width = 0.2;
  /* Neumann: explicit coordinates (on the boundary too); others: a regular sub-grid. */
  c.nsensors = 5;
  if (bc == RW_BC_NEUMANN) {
    c.nsensors = 4;
    c.sensor_coords = dim == 2 ? coords2 : coords3;
  }
  return c;
}

typedef struct {
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  rw_adjoint_options opt;
  N_Vector y0, y, kappa0;
} fixture;

static int same_bits(N_Vector a, N_Vector b)
{
  return memcmp(rw_vec_data(a), rw_vec_data(b), rw_vec_bytes(a)) == 0;
}

/* A heat problem with random kappa in [0.85, 1.15], source amplitude 0.7, random y0 around
 * 0.5, data recorded from kappa_true = kappa0 + a smooth bump, RK4 with `nsteps` steps of
 * half the stability limit. */
static void fx_create(fixture *f, MPI_Comm comm, int dim, rw_bc bc, long nsteps)
{
  memset(f, 0, sizeof *f);
  CHECK(rw_context_create(comm, &f->ctx));
  rw_heat_config cfg = config(dim, bc);
  CHECK(rw_heat_problem_create(f->ctx, &cfg, &f->prob));
  CHECK(rw_stepper_create_erk(f->prob, rw_tableau_find("rk4"), &f->st));
  CHECK(rw_problem_new_state(f->prob, &f->y0));
  CHECK(rw_problem_new_state(f->prob, &f->y));
  CHECK(rw_problem_new_state(f->prob, &f->kappa0));
  rw_problem_params(f->prob)[0] = 0.7;
  fill(f->prob, f->y0, 0.5, 1.0, 1);
  N_Vector kappa = rw_problem_field(f->prob), ktrue = NULL;
  fill(f->prob, kappa, 1.0, 0.3, 2);
  rw_vec_copy(kappa, f->kappa0);
  CHECK(rw_vec_clone(kappa, &ktrue));
  double c[3] = {0.5, 0.4, 0.3};
  CHECK(rw_heat_fill_gaussian(f->prob, ktrue, 0.0, 0.4, c, 0.2));
  N_VLinearSum(1.0, ktrue, 1.0, f->kappa0, ktrue);
  double kmin, kmax;
  rw_vec_copy(ktrue, kappa);
  CHECK(rw_heat_kappa_range(f->prob, &kmin, &kmax));
  rw_adjoint_options_default(&f->opt);
  f->opt.dt = 0.5 * rw_heat_stability_limit(f->prob, kmax);
  f->opt.tf = (double)nsteps * f->opt.dt;
  /* Data from kappa_true at every grid time. */
  rw_adjoint_options ro = f->opt;
  ro.monitor = rw_heat_record_monitor;
  ro.monitor_ctx = f->prob;
  double Jr;
  CHECK(rw_heat_record_begin(f->prob, nsteps + 2));
  rw_vec_copy(f->y0, f->y);
  CHECK(rw_forward_solve(f->prob, f->st, &ro, f->y, &Jr, NULL));
  CHECK(rw_heat_record_end(f->prob));
  rw_vec_copy(f->kappa0, kappa);
  rw_vec_destroy(&ktrue);
}

static void fx_destroy(fixture *f)
{
  rw_vec_destroy(&f->y0);
  rw_vec_destroy(&f->y);
  rw_vec_destroy(&f->kappa0);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

static double dot(N_Vector a, N_Vector b) { return N_VDotProd(a, b); }

static double norm(N_Vector a) { return sqrt(N_VDotProd(a, a)); }

/* 1. Dot-product tests of vjp_y, vjp_field and vjp_p. */
static void check_vjps(MPI_Comm comm, int dim, rw_bc bc)
{
  fixture f;
  fx_create(&f, comm, dim, bc, 2);
  rw_problem prob = f.prob;
  const rw_problem_ops *ops = rw_problem_get_ops(prob);
  void *content = rw_problem_content(prob);
  double *p = rw_problem_params(prob), t = 0.1;
  N_Vector u = f.y0, kappa = rw_problem_field(prob);
  N_Vector v, w, dk, Jv, fp, fm, z, out, out0;
  CHECK(rw_vec_clone(u, &v));
  CHECK(rw_vec_clone(u, &w));
  CHECK(rw_vec_clone(u, &dk));
  CHECK(rw_vec_clone(u, &Jv));
  CHECK(rw_vec_clone(u, &fp));
  CHECK(rw_vec_clone(u, &fm));
  CHECK(rw_vec_clone(u, &z));
  CHECK(rw_vec_clone(u, &out));
  CHECK(rw_vec_clone(u, &out0));
  fill(prob, v, 0.0, 1.0, 3);
  fill(prob, w, 0.0, 1.0, 4);
  fill(prob, dk, 0.0, 0.5, 5);
  fill(prob, z, 0.0, 1.0, 6);
  const double eps = 1e-6;
  char tag[64];
  snprintf(tag, sizeof tag, "%dD %-9s np %d%s", dim, bcname[bc], rw_context_size(f.ctx),
           row_len > 0  ? " x16"
           : nz_len > 0 ? " z6"
                        : "");

  /* state */
  CHECK(rw_problem_jvp(prob, t, u, v, NULL, Jv));
  N_VLinearSum(1.0, u, eps, v, fp);
  CHECK(rw_problem_rhs(prob, t, fp, fp));
  N_VLinearSum(1.0, u, -eps, v, fm);
  CHECK(rw_problem_rhs(prob, t, fm, fm));
  N_VLinearSum(0.5 / eps, fp, -0.5 / eps, fm, fp); /* fp = FD JVP */
  N_VLinearSum(1.0, fp, -1.0, Jv, fm);
  double ejvp = norm(fm) / norm(Jv);
  N_VConst(0.0, out0);
  CHECK(rw_problem_vjp_y(prob, t, u, w, out0));
  rw_vec_copy(z, out);
  CHECK(rw_problem_vjp_y(prob, t, u, w, out));
  N_VLinearSum(1.0, out, -1.0, z, fm);
  N_VLinearSum(1.0, fm, -1.0, out0, fm);
  double eacc = norm(fm) / norm(out0);
  double lhs = dot(w, Jv), lfd = dot(w, fp), rhs = dot(out0, v);
  expect(f.ctx, ejvp < 1e-7 && relerr(lhs, rhs) < 1e-13 && relerr(lfd, rhs) < 1e-7 && eacc < 1e-14,
         "%s vjp_y:     analytic JVP vs FD %.1e; <w,Jv> = %.15e vs <J^T w,v>: %.1e (FD %.1e); "
         "accumulates %.1e",
         tag, ejvp, lhs, relerr(lhs, rhs), relerr(lfd, rhs), eacc);

  /* field */
  CHECK(rw_heat_jvp_field(prob, t, u, dk, Jv));
  N_VLinearSum(1.0, f.kappa0, eps, dk, kappa);
  CHECK(rw_problem_rhs(prob, t, u, fp));
  N_VLinearSum(1.0, f.kappa0, -eps, dk, kappa);
  CHECK(rw_problem_rhs(prob, t, u, fm));
  rw_vec_copy(f.kappa0, kappa);
  N_VLinearSum(0.5 / eps, fp, -0.5 / eps, fm, fp);
  N_VLinearSum(1.0, fp, -1.0, Jv, fm);
  ejvp = norm(fm) / norm(Jv);
  N_VConst(0.0, out0);
  CHECK(ops->vjp_field(content, t, u, p, kappa, w, out0));
  rw_vec_copy(z, out);
  CHECK(ops->vjp_field(content, t, u, p, kappa, w, out));
  N_VLinearSum(1.0, out, -1.0, z, fm);
  N_VLinearSum(1.0, fm, -1.0, out0, fm);
  eacc = norm(fm) / norm(out0);
  lhs = dot(w, Jv), lfd = dot(w, fp), rhs = dot(out0, dk);
  expect(f.ctx, ejvp < 1e-7 && relerr(lhs, rhs) < 1e-13 && relerr(lfd, rhs) < 1e-7 && eacc < 1e-14,
         "%s vjp_field: analytic JVP vs FD %.1e; <w,Jk> = %.15e vs <J^T w,k>: %.1e (FD %.1e); "
         "accumulates %.1e",
         tag, ejvp, lhs, relerr(lhs, rhs), relerr(lfd, rhs), eacc);

  /* source amplitude (and the driver's dispatcher: field adjoint + dJ/dp together) */
  double dp = 1.0, pb[1] = {0.25}, q0 = p[0];
  N_VConst(0.0, fm);
  CHECK(rw_problem_jvp(prob, t, u, fm, &dp, Jv)); /* df/dq */
  /* f is affine in q, so a central difference is exact but for rounding, which a larger step
   * makes smaller: with eps, <w, df/dq> of 8e-2 on a 16 x 8 x 7 grid (much cancellation) was
   * 2e-7 off */
  const double epsq = 1e-3;
  p[0] = q0 + epsq;
  CHECK(rw_problem_rhs(prob, t, u, fp));
  p[0] = q0 - epsq;
  CHECK(rw_problem_rhs(prob, t, u, fm));
  p[0] = q0;
  N_VLinearSum(0.5 / epsq, fp, -0.5 / epsq, fm, fp);
  N_VConst(0.0, rw_problem_field_adjoint(prob));
  CHECK(rw_problem_vjp_p(prob, t, u, w, pb));
  double rp = pb[0] - 0.25;
  N_VLinearSum(1.0, rw_problem_field_adjoint(prob), -1.0, out0, fm);
  double efield = norm(fm);
  MPI_Allreduce(MPI_IN_PLACE, &rp, 1, MPI_DOUBLE, MPI_SUM, rw_context_comm(f.ctx));
  lhs = dot(w, Jv), lfd = dot(w, fp);
  expect(f.ctx, relerr(lhs, rp) < 1e-13 && relerr(lfd, rp) < 1e-7 && efield == 0.0,
         "%s vjp_p:     <w,df/dq> = %.15e vs vjp_p: %.1e (FD %.1e); field adjoint via "
         "rw_problem_vjp_p %s",
         tag, lhs, relerr(lhs, rp), relerr(lfd, rp), efield == 0.0 ? "identical" : "DIFFERS");

  /* The fused adjoint stage (w = c0 w + c1 v formed by the problem, output overwritten; a
   * gather with zero Dirichlet ghosts where the operator is symmetric, the field's gradient
   * gathered in the same sweep) against the plain path: the combination in a vector, zero,
   * vjp_y, vjp_p, vjp_field. */
  {
    N_Vector W[2] = {w, v};
    const double cw[2] = {0.7, -0.3};
    double pc[1] = {0.0};
    N_VLinearCombination(2, (double *)cw, W, z);
    N_VConst(0.0, out0);
    CHECK(rw_problem_vjp_y(prob, t, u, z, out0));
    N_VConst(0.0, rw_problem_field_adjoint(prob));
    CHECK(rw_problem_vjp_p(prob, t, u, z, pc));      /* dJ/dq and the field adjoint */
    rw_vec_copy(rw_problem_field_adjoint(prob), Jv); /* plain field adjoint */
    N_VConst(0.0, rw_problem_field_adjoint(prob));
    double pf[1] = {0.0};
    N_VConst(-7.0, out); /* overwritten, never read */
    CHECK(rw_problem_vjp_comb(prob, t, u, 2, cw, W, fp, out, pf));
    N_VLinearSum(1.0, out, -1.0, out0, fm);
    double ey = norm(fm) / norm(out0);
    N_VLinearSum(1.0, rw_problem_field_adjoint(prob), -1.0, Jv, fm);
    double ef = norm(fm) / norm(Jv);
    /* the field adjoint: scattered by vjp_field on the plain path, gathered in the stage's sweep
     * on the fused one (vjp_comb_field: the same terms in another order) */
    expect(f.ctx, ey < 1e-13 && ef < 1e-14 && pf[0] == pc[0],
           "%s vjp_comb:  fused adjoint stage vs plain VJPs: state %.1e, field %.1e, dJ/dq %s", tag,
           ey, ef, pf[0] == pc[0] ? "identical" : "DIFFERS");
  }

  /* The fused forward stage (rhs_comb: the combination formed in the halo copy, or on CPU
   * vectors in windows of 1, 2 and 3 planes or rows formed just ahead of the stencil, or the
   * default: the two-pass stage on blocks this small) against the combination formed in a
   * vector, then rhs: the slope and the kept stage input bit for bit; the set windows must have
   * run where the block is at least 4 nodes thick. */
  for (long win = 0; win <= 3; win++) {
    N_Vector X[3] = {u, v, w};
    const double cx[3] = {1.0, 0.35, -0.2};
    rw_grid g = rw_heat_grid(prob);
    long st[3], cnt[3], thick = 1;
    rw_grid_local_box(g, st, cnt);
    for (int d = 0; d < dim; d++)
      thick = thick && cnt[d] >= 4;
    rw_grid_set_window(g, win);
    long runs = rw_grid_windows(g);
    N_VConst(-7.0, out);
    N_VConst(-7.0, fp);
    CHECK(rw_problem_rhs_comb(prob, t, 3, cx, X, fp, fm, out));
    runs = rw_grid_windows(g) - runs;
    rw_grid_set_window(g, 0);
    N_VLinearCombination(3, (double *)cx, X, z);
    CHECK(rw_problem_rhs(prob, t, z, out0));
    int same = same_bits(out, out0) && same_bits(fp, z);
    int wok = win == 0 || (thick ? runs >= (cnt[dim - 1] - 2) / win : runs == 0);
    expect(f.ctx, same && wok,
           "%s rhs_comb:  fused stage, window %ld layers (0: default), vs rhs on the formed "
           "combination: slope and kept input %s (%ld windows run)",
           tag, win, same ? "identical" : "DIFFER", runs);
  }

  /* A whole RK4 step as one sweep (rw_grid_erk_wave, inside a solve where the conductivity's
   * halo copy is in place; 1, 2 and 3 layers per window, whole layers and, in 3-D, tiles of
   * s G = 4 rows; with the running cost's quadrature in every other case) against the
   * stage-by-stage step (the wave off): y_{n+1} bit for bit, in place. It must run on one rank
   * (periodic sides too: the stages then run past the block, the kernel reading copies of the
   * conductivity and the source that reach there); outside a solve it must not. */
  {
    rw_grid g = rw_heat_grid(prob);
    int nranks = 1;
    MPI_Comm_size(comm, &nranks);
    for (long win = 1; win <= 6; win++) {
      const long layers = (win - 1) % 3 + 1, rows = win > 3; /* rows 1: tiles of s G rows */
      rw_grid_set_wave_rows(g, rows);
      rw_grid_set_wave(g, -1);
      rw_vec_copy(u, out0);
      double qa = 0.125, qb = 0.125; /* the running cost's quadrature, added to these */
      CHECK(rw_problem_solve_begin(prob));
      CHECK(rw_stepper_step(f.st, t, f.opt.dt, out0, out0, NULL, win % 2 ? &qa : NULL));
      rw_grid_set_wave(g, layers);
      long runs = rw_grid_waves(g);
      rw_vec_copy(u, out);
      CHECK(rw_stepper_step(f.st, t, f.opt.dt, out, out, NULL, win % 2 ? &qb : NULL));
      runs = rw_grid_waves(g) - runs;
      rw_problem_solve_end(prob);
      long outside = rw_grid_waves(g);
      rw_vec_copy(u, z);
      CHECK(rw_stepper_step(f.st, t, f.opt.dt, z, z, NULL, NULL));
      outside = rw_grid_waves(g) - outside;
      rw_grid_set_wave(g, 0);
      rw_grid_set_wave_rows(g, 0);
      MPI_Allreduce(MPI_IN_PLACE, &qa, 1, MPI_DOUBLE, MPI_SUM, rw_context_comm(f.ctx));
      MPI_Allreduce(MPI_IN_PLACE, &qb, 1, MPI_DOUBLE, MPI_SUM, rw_context_comm(f.ctx));
      int same = same_bits(out, out0) && same_bits(z, out0) && qa == qb;
      if (win % 2 && qa == 0.125 * nranks) same = 0; /* no misfit added: the test is void */
      int must = nranks == 1;
      expect(f.ctx, same && (must ? runs == 1 : 1) && outside == 0,
             "%s step:      RK4 step as one sweep, %ld layers per window%s%s, vs stage by "
             "stage: %s (%ld sweeps in a solve, %ld outside; running cost %.17g and %.17g)",
             tag, layers, rows && dim == 3 ? ", tiles of 4 rows" : "",
             win % 2 ? ", with the running cost" : "", same ? "identical" : "DIFFERENT", runs,
             outside, qa, qb);
    }
  }

  /* The same with the stages kept (store mode) and the adjoint step that recomputes its stage
   * inputs (no_out), inside a solve: the kept stages, lambda, dJ/dq and the field adjoint bit for
   * bit with the wave on (1 layer per window) and off; on one rank both must be sweeps. */
  {
    rw_grid g = rw_heat_grid(prob);
    int nranks = 1;
    MPI_Comm_size(comm, &nranks);
    const int ns = rw_stepper_num_stage_vectors(f.st);
    N_Vector *sa = NULL, *sb = NULL, fa = NULL;
    CHECK(rw_vec_clone_array(u, ns, &sa));
    CHECK(rw_vec_clone_array(u, ns, &sb));
    CHECK(rw_vec_clone(rw_problem_field_adjoint(prob), &fa));
    double qa[1] = {0.0}, qb[1] = {0.0};
    long runs = 0;
    CHECK(rw_problem_solve_begin(prob));
    for (int on = 0; on < 2; on++) {
      rw_grid_set_wave(g, on ? 1 : -1);
      long r0 = rw_grid_waves(g);
      CHECK(rw_stepper_step(f.st, t, f.opt.dt, u, on ? out : out0, on ? sb : sa, NULL));
      rw_vec_copy(w, on ? fm : fp);
      N_VConst(0.0, rw_problem_field_adjoint(prob));
      CHECK(rw_stepper_adjoint_step(f.st, t, f.opt.dt, u, NULL, on ? fm : fp, on ? qb : qa));
      if (!on) rw_vec_copy(rw_problem_field_adjoint(prob), fa);
      runs += on ? rw_grid_waves(g) - r0 : 0;
    }
    rw_problem_solve_end(prob);
    rw_grid_set_wave(g, 0);
    int same = same_bits(out, out0) && same_bits(fm, fp) && qa[0] == qb[0] &&
               same_bits(fa, rw_problem_field_adjoint(prob));
    for (int i = 0; i < ns; i++)
      same = same && same_bits(sa[i], sb[i]);
    expect(f.ctx, same && (nranks > 1 || runs == 2),
           "%s step:      RK4 step keeping its stages and adjoint step recomputing them, as "
           "sweeps, vs stage by stage: %s (%ld sweeps)",
           tag, same ? "identical" : "DIFFERENT", runs);
    rw_vec_destroy_array(&sa, ns);
    rw_vec_destroy_array(&sb, ns);
    rw_vec_destroy(&fa);
  }

  /* The adjoint step as one sweep (rw_grid_erk_wave with the adjoint's plan and a side kernel
   * for the parameters' gradients; where the slowest dimension is split over ranks, or periodic
   * over one, the stages run past the block, on the neighbour's stored states and sensors) against
   * stage by stage, from stored stages, inside a solve: lambda, dJ/dq and the field adjoint bit
   * for bit (the running cost's gradient included), for windows of 1 to 3 layers, whole layers
   * and in 3-D tiles of s G = 4 rows, and every choice of what is differentiated (q, the
   * conductivity, both, neither), with each kind of side (periodic: the stages run past both ends
   * of the block, on its own far layers and sensors; Neumann: on the grid with zero ghosts, each
   * ghost face's term added to the node it mirrors). On one rank it must be a sweep. */
  {
    rw_grid g = rw_heat_grid(prob), ga = rw_heat_adjoint_grid(prob);
    int nranks = 1;
    MPI_Comm_size(comm, &nranks);
    const int ns = rw_stepper_num_stage_vectors(f.st);
    const int must = nranks == 1;
    N_Vector *sa = NULL, fa = NULL, fbar = rw_problem_field_adjoint(prob);
    CHECK(rw_vec_clone_array(u, ns, &sa));
    CHECK(rw_vec_clone(fbar, &fa));
    CHECK(rw_problem_solve_begin(prob));
    CHECK(rw_stepper_step(f.st, t, f.opt.dt, u, out0, sa, NULL));
    /* lambda with rows of very different sizes (every other middle-index row 1e6 larger) and
     * nodes along a row too (every third 1e3 larger), so that the source's sum changes its bits
     * if rows are grouped or added in another order, or a row's nodes go to other lanes */
    N_Vector lam0 = NULL;
    CHECK(rw_vec_clone(w, &lam0));
    rw_vec_copy(w, lam0);
    {
      long lst[3], lcnt[3];
      rw_grid_local_box(g, lst, lcnt);
      double *ld = rw_vec_data(lam0);
      for (long k = 0; k < lcnt[2]; k++)
        for (long j = 0; j < lcnt[1]; j++)
          for (long i = 0; i < lcnt[0]; i++)
            ld[(k * lcnt[1] + j) * lcnt[0] + i] *=
                ((lst[1] + j) % 2 == 0 ? 1e6 : 1.0) * ((lst[0] + i) % 3 == 0 ? 1e3 : 1.0);
    }
    int nbad = 0;
    long runs_all = 0;
    for (int cs = 0; cs < 24; cs++) {
      const long layers = cs % 3 + 1, rows = (cs / 3) % 2;
      const int act = cs / 6; /* bit 0: q differentiated, bit 1: the conductivity */
      double pq[2][1];
      long runs = 0;
      rw_problem_set_active(prob, act & 1, (act >> 1) & 1);
      for (int on = 0; on < 2; on++) {
        rw_grid_set_wave_rows(g, rows);
        rw_grid_set_wave(g, on ? layers : -1);
        rw_vec_copy(lam0, on ? fm : fp);
        pq[on][0] = 0.125;
        N_VConst(0.25, fbar);
        long r0 = rw_grid_waves(ga);
        CHECK(rw_stepper_adjoint_step(f.st, t, f.opt.dt, u, sa, on ? fm : fp, pq[on]));
        runs += rw_grid_waves(ga) - r0;
        if (!on) rw_vec_copy(fbar, fa);
      }
      rw_grid_set_wave(g, 0);
      rw_grid_set_wave_rows(g, 0);
      int same = same_bits(fm, fp) && pq[0][0] == pq[1][0] && same_bits(fa, fbar);
      if ((act & 1) && pq[0][0] == 0.125) same = 0; /* dJ/dq untouched: the check is void */
      runs_all += runs;
      if (same && (!must || runs == 1)) continue;
      nbad++;
      if (rw_context_rank(f.ctx) == 0)
        printf("  adjoint sweep: %ld layers, tiles %ld, active %d: %s, %ld sweeps\n", layers, rows,
               act, same ? "identical" : "DIFFERENT", runs);
    }
    rw_problem_set_active(prob, 1, 1);
    rw_problem_solve_end(prob);
    expect(f.ctx, nbad == 0,
           "%s adjoint:   RK4 adjoint step from stored stages as one sweep, vs stage by stage, "
           "24 cases (windows, tiles, what is differentiated): %d differ (%ld sweeps, %s)",
           tag, nbad, runs_all, must ? "24 required" : "not required");
    rw_vec_destroy_array(&sa, ns);
    rw_vec_destroy(&fa);
    rw_vec_destroy(&lam0);
  }

  /* The checkpointed backward step (the adjoint step given no stages: its recomputation and
   * its adjoint as two waves, the stage inputs kept in vectors between them; heat does not take
   * rw_grid_erk_wave_pair, see docs/architecture.md), with the running cost and without it (the
   * data set aside), against stage by stage: lambda, dJ/dq and the field adjoint bit for bit,
   * for windows of 1 to 3 layers, whole layers and 3-D tiles of s G rows, and every choice of
   * what is differentiated, with each kind of side. On one rank the adjoint must be a wave in
   * every case. The waves run twice: with the stepper's own stage vectors, and on a second
   * stepper that is lent the caller's (rw_stepper_lend_stage_vectors, as the checkpoint mode
   * lends its stage buffers), which must give the same bits and allocate less than one state
   * where its recomputation is a sweep (the second stepper never allocates its own). */
  {
    rw_grid g = rw_heat_grid(prob), ga = rw_heat_adjoint_grid(prob);
    int nranks = 1;
    MPI_Comm_size(comm, &nranks);
    const int must = nranks == 1;
    const double *dt0 = NULL, *dv0 = NULL;
    const long nt = rw_heat_data(prob, &dt0, &dv0), nsn = rw_heat_num_sensors(prob);
    double *dts = calloc((size_t)nt + 1, sizeof(double)),
           *dvs = calloc((size_t)(nt * nsn) + 1, sizeof(double));
    memcpy(dts, dt0, (size_t)nt * sizeof(double));
    memcpy(dvs, dv0, (size_t)(nt * nsn) * sizeof(double));
    N_Vector fbar = rw_problem_field_adjoint(prob), lam[3] = {NULL, NULL, NULL}, fb[3];
    for (int m = 0; m < 3; m++) {
      CHECK(rw_vec_clone(w, &lam[m]));
      CHECK(rw_vec_clone(fbar, &fb[m]));
    }
    rw_stepper st2 = NULL; /* lent its stage vectors */
    N_Vector *lent = NULL;
    CHECK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st2));
    CHECK(rw_vec_clone_array(u, rw_stepper_num_stage_vectors(st2), &lent));
    CHECK(rw_problem_solve_begin(prob));
    int nbad = 0, nlent = 0;
    long runs_all = 0;
    for (int cs = 0; cs < 48; cs++) {
      const long layers = cs % 3 + 1, rows = (cs / 3) % 2;
      const int act = (cs / 6) % 4; /* bit 0: q differentiated, bit 1: the conductivity */
      if (cs == 24) {               /* the second half without the running cost */
        rw_problem_solve_end(prob);
        CHECK(rw_heat_set_data(prob, 0, NULL, NULL));
        CHECK(rw_problem_solve_begin(prob));
      }
      double pq[2] = {0.125, 0.125};
      long runs = 0;
      rw_problem_set_active(prob, act & 1, (act >> 1) & 1);
      double pq2 = 0.125;
      for (int m = 0; m < 3; m++) { /* stage by stage, the waves, the waves with a loan */
        rw_grid_set_wave_rows(g, rows);
        rw_grid_set_wave(g, m ? layers : -1);
        rw_vec_copy(w, lam[m]);
        N_VConst(0.25, fbar);
        const long r0 = rw_grid_waves(ga), f0 = rw_grid_waves(g);
        const size_t m0 = rw_mem_current();
        if (m < 2) {
          CHECK(rw_stepper_adjoint_step(f.st, t, f.opt.dt, u, NULL, lam[m], &pq[m]));
          runs += rw_grid_waves(ga) - r0;
        } else {
          rw_stepper_lend_stage_vectors(st2, lent);
          CHECK(rw_stepper_adjoint_step(st2, t, f.opt.dt, u, NULL, lam[m], &pq2));
          if (rw_grid_waves(g) - f0 >= 1 && rw_mem_current() - m0 >= rw_vec_bytes(u)) nlent++;
        }
        rw_vec_copy(fbar, fb[m]);
      }
      rw_grid_set_wave(g, 0);
      rw_grid_set_wave_rows(g, 0);
      if (!same_bits(lam[2], lam[1]) || pq2 != pq[1] || !same_bits(fb[2], fb[1])) nlent++;
      int same = same_bits(lam[1], lam[0]) && pq[1] == pq[0] && same_bits(fb[1], fb[0]);
      if ((act & 1) && pq[0] == 0.125) same = 0; /* dJ/dq untouched: the check is void */
      runs_all += runs;
      if (same && (!must || runs == 1)) continue;
      nbad++;
      if (rw_context_rank(f.ctx) == 0)
        printf("  backward step: %ld layers, tiles %ld, active %d, running cost %d: %s, %ld "
               "sweeps\n",
               layers, rows, act, cs < 24, same ? "identical" : "DIFFERENT", runs);
    }
    rw_problem_set_active(prob, 1, 1);
    rw_problem_solve_end(prob);
    CHECK(rw_heat_set_data(prob, nt, dts, dvs));
    expect(f.ctx, nbad == 0,
           "%s backward:  RK4 adjoint step recomputing its stages, as sweeps vs stage by stage, "
           "48 cases (windows, tiles, what is differentiated, running cost or not): %d differ "
           "(%ld adjoint sweeps, %s)",
           tag, nbad, runs_all, must ? "48 required" : "not required");
    expect(f.ctx, nlent == 0,
           "%s backward:  the same with the stage vectors lent to a second stepper, 48 cases: %d "
           "differ or allocated a state",
           tag, nlent);
    rw_vec_destroy_array(&lent, rw_stepper_num_stage_vectors(st2));
    rw_stepper_destroy(&st2);
    for (int m = 0; m < 3; m++) {
      rw_vec_destroy(&lam[m]);
      rw_vec_destroy(&fb[m]);
    }
    free(dts);
    free(dvs);
  }

  /* The same sweeps with every other tableau (the cases above are RK4's, whose adjoint stages
   * combine at most two terms): euler, heun, ssprk3, rk38 (adjoint stages of up to four terms)
   * and dopri5 (six stages as a fixed-step method), inside a solve: the step keeping its stages
   * (y_{n+1} and every stage), the adjoint step from them and the adjoint step recomputing them
   * (lambda, dJ/dq and the field adjoint), each as sweeps against stage by stage bit for bit,
   * with windows of 1 and 2 layers, whole layers and 3-D tiles, everything differentiated and
   * nothing. On one rank every step must be a sweep (dopri5's too: its stage without weight,
   * b_2 = 0, takes no running term, which the wave injects as -0, an exact identity; until
   * 2026-12-02 heat_adjoint_wave declined such a plan). Until this check, the 3-stage sweep on 2
   * ranks with Neumann sides (3-D, 4 + 3 layers) read an unfilled conductivity ghost past the
   * other rank's layers (rw_grid_wave_field). */
  {
    static const char *const names[] = {"euler", "heun", "ssprk3", "rk38", "dopri5"};
    rw_grid g = rw_heat_grid(prob), ga = rw_heat_adjoint_grid(prob);
    const int must = rw_context_size(f.ctx) == 1;
    N_Vector fbar = rw_problem_field_adjoint(prob), fa[2] = {NULL, NULL}, *la = NULL;
    CHECK(rw_vec_clone(fbar, &fa[0]));
    CHECK(rw_vec_clone(fbar, &fa[1]));
    CHECK(rw_vec_clone_array(u, 4, &la)); /* lambda: [2 on + rec] */
    for (size_t m = 0; m < sizeof names / sizeof names[0]; m++) {
      rw_stepper st = NULL;
      const rw_tableau *tab = rw_tableau_find(names[m]);
      CHECK(rw_stepper_create_erk(prob, tab, &st));
      const int ns = rw_stepper_num_stage_vectors(st);
      N_Vector *sv[2] = {NULL, NULL};
      CHECK(rw_vec_clone_array(u, ns, &sv[0]));
      CHECK(rw_vec_clone_array(u, ns, &sv[1]));
      CHECK(rw_problem_solve_begin(prob));
      int nbad = 0;
      long fwd = 0, adj = 0;
      for (int cs = 0; cs < 8; cs++) {
        const long layers = cs % 2 + 1, rows = (cs / 2) % 2;
        const int act = cs / 4 ? 3 : 0;
        double pq[2][2];
        rw_problem_set_active(prob, act & 1, (act >> 1) & 1);
        for (int on = 0; on < 2; on++) {
          rw_grid_set_wave_rows(g, rows);
          rw_grid_set_wave(g, on ? layers : -1);
          const long f0 = rw_grid_waves(g);
          CHECK(rw_stepper_step(st, t, f.opt.dt, u, on ? out : out0, sv[on], NULL));
          fwd += on ? rw_grid_waves(g) - f0 : 0;
          for (int rec = 0; rec < 2; rec++) { /* from the stored stages, then recomputing */
            N_Vector lam = la[2 * on + rec];
            rw_vec_copy(w, lam);
            pq[on][rec] = 0.125;
            N_VConst(0.25, fbar);
            const long r0 = rw_grid_waves(ga);
            CHECK(rw_stepper_adjoint_step(st, t, f.opt.dt, u, rec ? NULL : sv[on], lam,
                                          &pq[on][rec]));
            adj += on ? rw_grid_waves(ga) - r0 : 0;
            if (!on)
              rw_vec_copy(fbar, fa[rec]);
            else if (!same_bits(fbar, fa[rec]))
              nbad++;
          }
        }
        rw_grid_set_wave(g, 0);
        rw_grid_set_wave_rows(g, 0);
        nbad += !same_bits(out, out0) || !same_bits(la[2], la[0]) || !same_bits(la[3], la[1]) ||
                memcmp(pq[0], pq[1], sizeof pq[0]) != 0 || (act && pq[0][0] == 0.125);
        for (int i = 0; i < ns; i++)
          nbad += !same_bits(sv[0][i], sv[1][i]);
      }
      rw_problem_set_active(prob, 1, 1);
      rw_problem_solve_end(prob);
      expect(f.ctx, nbad == 0 && (!must || (fwd == 8 && adj == 16)),
             "%s %-6s  step keeping its stages, adjoint step from them and recomputing them, "
             "as sweeps vs stage by stage, 8 cases (windows, tiles, what is differentiated): %d "
             "differ (%ld forward and %ld adjoint sweeps, %s)",
             tag, names[m], nbad, fwd, adj, must ? "8 and 16 required" : "not required");
      rw_vec_destroy_array(&sv[0], ns);
      rw_vec_destroy_array(&sv[1], ns);
      rw_stepper_destroy(&st);
    }
    rw_vec_destroy(&fa[0]);
    rw_vec_destroy(&fa[1]);
    rw_vec_destroy_array(&la, 4);
  }

  N_Vector *vs[] = {&v, &w, &dk, &Jv, &fp, &fm, &z, &out, &out0};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    rw_vec_destroy(vs[i]);
  fx_destroy(&f);
}

/* J at kappa0 + e dk, y0 + e dy, q0 + e dq (NULL directions: none). */
static double fx_J(fixture *f, N_Vector dk, N_Vector dy, double dq, double e)
{
  N_Vector kappa = rw_problem_field(f->prob);
  double J, q0 = rw_problem_params(f->prob)[0];
  if (dk)
    N_VLinearSum(1.0, f->kappa0, e, dk, kappa);
  else
    rw_vec_copy(f->kappa0, kappa);
  rw_vec_copy(f->y0, f->y);
  if (dy) N_VLinearSum(1.0, f->y0, e, dy, f->y);
  rw_problem_params(f->prob)[0] = q0 + e * dq;
  CHECK(rw_forward_solve(f->prob, f->st, &f->opt, f->y, &J, NULL));
  rw_problem_params(f->prob)[0] = q0;
  rw_vec_copy(f->kappa0, kappa);
  return J;
}

/* 2. Taylor remainders in kappa, y0 and q. */
static void check_taylor(MPI_Comm comm, int dim, rw_bc bc)
{
  fixture f;
  fx_create(&f, comm, dim, bc, 6);
  double J0, g[1];
  N_Vector gy, gk, dk, dy;
  CHECK(rw_vec_clone(f.y0, &gy));
  CHECK(rw_vec_clone(f.y0, &gk));
  CHECK(rw_vec_clone(f.y0, &dk));
  CHECK(rw_vec_clone(f.y0, &dy));
  rw_vec_copy(f.y0, f.y);
  CHECK(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &J0, g, gy, NULL));
  rw_vec_copy(rw_problem_field_adjoint(f.prob), gk);
  fill(f.prob, dk, 0.5, 1.0, 7); /* |dk| <= 1 */
  fill(f.prob, dy, 0.0, 1.0, 8);
  for (int dir = 0; dir < 3; dir++) {
    double gd = dir == 0 ? dot(gk, dk) : dir == 1 ? dot(gy, dy) : g[0];
    double e0 = dir == 0 ? 0.1 : 0.5, prev = 0.0, rem[6], ord[6], minord = 10, maxord = 0;
    for (int i = 0; i <= 5; i++) {
      double e = e0 * pow(0.5, i);
      double J = fx_J(&f, dir == 0 ? dk : NULL, dir == 1 ? dy : NULL, dir == 2 ? 1.0 : 0.0, e);
      rem[i] = fabs(J - J0 - e * gd);
      ord[i] = i ? log2(prev / rem[i]) : 0.0;
      if (i) minord = rw_test_min(minord, ord[i]), maxord = rw_test_max(maxord, ord[i]);
      prev = rem[i];
    }
    expect(f.ctx, minord > 1.8 && maxord < 2.2,
           "%dD %-9s np %d Taylor in %-6s J = %.6e: remainders %.2e .. %.2e, orders %.3f %.3f "
           "%.3f %.3f %.3f",
           dim, bcname[bc], rw_context_size(f.ctx),
           dir == 0   ? "kappa"
           : dir == 1 ? "y0"
                      : "source",
           J0, rem[0], rem[5], ord[1], ord[2], ord[3], ord[4], ord[5]);
  }
  rw_vec_destroy(&gy);
  rw_vec_destroy(&gk);
  rw_vec_destroy(&dk);
  rw_vec_destroy(&dy);
  fx_destroy(&f);
}

/* 3. Binomial checkpointing (3 slots) == store everything, bit for bit. */
static void check_checkpoint(MPI_Comm comm, int dim, rw_bc bc)
{
  fixture f;
  fx_create(&f, comm, dim, bc, 25);
  double J[2], g[2];
  N_Vector gy[2], gk[2];
  rw_adjoint_stats stats[2];
  for (int m = 0; m < 2; m++) {
    CHECK(rw_vec_clone(f.y0, &gy[m]));
    CHECK(rw_vec_clone(f.y0, &gk[m]));
    rw_adjoint_options o = f.opt;
    o.mode = m == 0 ? RW_ADJOINT_STORE : RW_ADJOINT_CHECKPOINT;
    o.schedule = RW_SCHEDULE_BINOMIAL;
    o.ram_slots = 3;
    rw_vec_copy(f.y0, f.y);
    CHECK(rw_adjoint_solve(f.prob, f.st, &o, f.y, &J[m], &g[m], gy[m], &stats[m]));
    rw_vec_copy(rw_problem_field_adjoint(f.prob), gk[m]);
  }
  int ok = memcmp(&J[0], &J[1], sizeof J[0]) == 0 && memcmp(&g[0], &g[1], sizeof g[0]) == 0 &&
           same_bits(gy[0], gy[1]) && same_bits(gk[0], gk[1]) && stats[1].recomputed_steps > 0 &&
           norm(gk[0]) > 0.0;
  expect(f.ctx, ok,
         "%dD %-9s np %d binomial 3 slots (%ld recomputed steps) == store: J, dJ/dsource, "
         "dJ/dy0, dJ/dkappa %s",
         dim, bcname[bc], rw_context_size(f.ctx), stats[1].recomputed_steps,
         ok ? "bitwise equal" : "DIFFER");
  for (int m = 0; m < 2; m++) {
    rw_vec_destroy(&gy[m]);
    rw_vec_destroy(&gk[m]);
  }
  fx_destroy(&f);
}

/* A distributed grid vector gathered on rank 0 of its communicator in global node order. */
static double *gather(rw_problem prob, N_Vector v, long *len)
{
  rw_grid g = rw_heat_grid(prob);
  const rw_grid_config *cf = rw_grid_get_config(g);
  long st[3], cnt[3], n0 = cf->n[0], n1 = cf->n[1], n2 = cf->dim == 3 ? cf->n[2] : 1;
  rw_grid_local_box(g, st, cnt);
  *len = n0 * n1 * n2;
  double *a = calloc((size_t)*len, sizeof(double)), *d = rw_vec_data(v);
  for (long k = 0; k < cnt[2]; k++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        a[((st[2] + k) * n1 + st[1] + j) * n0 + st[0] + i] = d[(k * cnt[1] + j) * cnt[0] + i];
  MPI_Comm comm = rw_context_comm(rw_grid_context(g));
  int rank;
  MPI_Comm_rank(comm, &rank);
  /* one owner per node, zeros elsewhere: the sum is exact */
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : a, a, (int)*len, MPI_DOUBLE, MPI_SUM, 0, comm);
  return a;
}

typedef struct {
  double J, g;
  double *gk, *gy, *uT, *data;
  long len, ndata;
} result;

static void solve(MPI_Comm comm, int dim, rw_bc bc, result *r)
{
  fixture f;
  fx_create(&f, comm, dim, bc, 20);
  N_Vector gy;
  CHECK(rw_vec_clone(f.y0, &gy));
  rw_vec_copy(f.y0, f.y);
  CHECK(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &r->J, &r->g, gy, NULL));
  r->gk = gather(f.prob, rw_problem_field_adjoint(f.prob), &r->len);
  r->gy = gather(f.prob, gy, &r->len);
  r->uT = gather(f.prob, f.y, &r->len);
  const double *dv;
  r->ndata = rw_heat_data(f.prob, NULL, &dv) * rw_heat_num_sensors(f.prob);
  r->data = calloc((size_t)r->ndata, sizeof(double));
  memcpy(r->data, dv, (size_t)r->ndata * sizeof(double));
  rw_vec_destroy(&gy);
  fx_destroy(&f);
}

static double maxrel(const double *a, const double *b, long n)
{
  double num = 0.0, den = 0.0;
  for (long i = 0; i < n; i++) {
    num = rw_test_max(num, fabs(a[i] - b[i]));
    den = rw_test_max(den, rw_test_max(fabs(a[i]), fabs(b[i])));
  }
  return den == 0.0 ? 0.0 : num / den;
}

/* 4. Gradients across rank counts (this run's ranks against rank 0 alone). */
static void check_ranks(rw_context world, int dim, rw_bc bc)
{
  result a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  solve(rw_context_comm(world), dim, bc, &a);
  int ok = 1;
  double eJ = 0, eg = 0, egk = 0, egy = 0;
  int bitsu = 1, bitsd = 1;
  if (rw_context_rank(world) == 0) {
    solve(MPI_COMM_SELF, dim, bc, &b);
    eJ = relerr(a.J, b.J), eg = relerr(a.g, b.g);
    egk = maxrel(a.gk, b.gk, a.len), egy = maxrel(a.gy, b.gy, a.len);
    bitsu = memcmp(a.uT, b.uT, (size_t)a.len * sizeof(double)) == 0;
    bitsd = a.ndata == b.ndata && memcmp(a.data, b.data, (size_t)a.ndata * sizeof(double)) == 0;
    ok = eJ < 1e-12 && eg < 1e-12 && egk < 1e-12 && egy < 1e-12 && bitsu && bitsd;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, rw_context_comm(world));
  expect(world, ok,
         "%dD %-9s np %d vs 1 rank: u(T) %s, data %s; rel. diff J %.1e, dJ/dsource %.1e, "
         "dJ/dkappa %.1e, dJ/dy0 %.1e",
         dim, bcname[bc], rw_context_size(world), bitsu ? "bitwise" : "DIFFERS",
         bitsd ? "bitwise" : "DIFFER", eJ, eg, egk, egy);
  free(a.gk), free(a.gy), free(a.uT), free(a.data);
  free(b.gk), free(b.gy), free(b.uT), free(b.data);
}

/* Time per right-hand side (with its kappa exchange) against the analytic field JVP without
 * source: reported, not asserted. */
static void time_rhs(MPI_Comm comm, int dim)
{
  rw_context ctx;
  rw_problem prob;
  CHECK(rw_context_create(comm, &ctx));
  rw_heat_config cfg = config(dim, RW_BC_PERIODIC);
  cfg.n[0] = cfg.n[1] = dim == 2 ? 512 : 96;
  cfg.n[2] = 96;
  CHECK(rw_heat_problem_create(ctx, &cfg, &prob));
  N_Vector u, fo;
  CHECK(rw_problem_new_state(prob, &u));
  CHECK(rw_problem_new_state(prob, &fo));
  fill(prob, u, 0.0, 1.0, 1);
  int reps = 50;
  double t0 = MPI_Wtime();
  for (int r = 0; r < reps; r++)
    CHECK(rw_problem_rhs(prob, 0.0, u, fo));
  double trhs = (MPI_Wtime() - t0) / reps;
  if (rw_context_rank(ctx) == 0)
    printf("  info %dD %ld^%d periodic np %d: rhs %.3f ms per call (kappa exchanged each call)\n",
           dim, cfg.n[0], dim, rw_context_size(ctx), 1e3 * trhs);
  rw_vec_destroy(&u);
  rw_vec_destroy(&fo);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  size_t mem0 = rw_mem_current();
  rw_context world;
  CHECK(rw_context_create(MPI_COMM_WORLD, &world));
  for (int dim = 2; dim <= 3; dim++)
    for (int b = 0; b < 3; b++) {
      check_vjps(MPI_COMM_WORLD, dim, (rw_bc)b);
      check_taylor(MPI_COMM_WORLD, dim, (rw_bc)b);
      check_checkpoint(MPI_COMM_WORLD, dim, (rw_bc)b);
      check_ranks(world, dim, (rw_bc)b);
    }
  row_len = 16; /* rows of whole vectors: the VJPs and sweeps again */
  for (int dim = 2; dim <= 3; dim++)
    for (int b = 0; b < 3; b++)
      check_vjps(MPI_COMM_WORLD, dim, (rw_bc)b);
  row_len = 0;
  nz_len = 6; /* 3-D Neumann on blocks as thin as a 3-stage sweep's reach (the tableau sweeps) */
  check_vjps(MPI_COMM_WORLD, 3, RW_BC_NEUMANN);
  nz_len = 0;
  if (argc > 1 && strcmp(argv[1], "-time") == 0) {
    time_rhs(MPI_COMM_WORLD, 2);
    time_rhs(MPI_COMM_WORLD, 3);
  }
  rw_context_destroy(&world);
  long leak = (long)(rw_mem_current() - mem0), maxleak = 0;
  MPI_Allreduce(&leak, &maxleak, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (maxleak != 0) fails++;
  if (rank == 0)
    printf("%s Rewind bytes still allocated at exit: %ld\n", maxleak ? "  FAIL" : "  ok  ",
           maxleak);
  MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("test_heat: %s\n", fails ? "FAILED" : "all checks passed");
  MPI_Finalize();
  return fails ? 1 : 0;
}
