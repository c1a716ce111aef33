/* The acoustic wave problem and the leapfrog stepper, under mpiexec with 1, 2 and 4 ranks:
 *  1. dot-product tests of every VJP against central differences of the rhs: state
 *     <w, (f(y+ev) - f(y-ev)) / 2e> = <(df/dy)^T w, v>, scalar parameter (amplitude) and
 *     velocity field, to 1e-7 relative (f is linear in y and A and quadratic in c, so the
 *     differences are exact but for rounding); the state JVP against the VJP likewise;
 *  2. the leapfrog adjoint step against a finite-difference step, for
 *     J1(y, A, c) = <lambda, Phi(y)> + h r(t + h, Phi(y)) (the running cost on the new state):
 *     state, amplitude and field directions, 1e-7 relative;
 *  3. Taylor remainders of the FWI objective (full forward/adjoint solves):
 *     |J(x + e d) - J(x) - e <dJ/dx, d>| decays at second order (observed order >= 1.8 over
 *     five halvings) for x = velocity field c, amplitude A and y0 = (u^0, u^{-1});
 *  4. binomial checkpointing (4 slots) and store-stages give the store-everything gradient
 *     bit for bit;
 *  5. rank 0 repeats the solve alone (MPI_COMM_SELF): dJ/dc and dJ/dy0 agree to 1e-12
 *     relative (they are bitwise equal: each node's adjoint is the same arithmetic whatever
 *     the decomposition), J and dJ/dA to 1e-12 (global sums grouped by rank);
 *  6. the FWI gradient in the background model is a descent direction toward the true model.
 * Prints one line per check on rank 0; exits 1 if any fails. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_leapfrog.h"
#include "rewind/rw_wave.h"
#include "rw_mpi_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails, world_rank;

static void report(const char *what, double value, double limit, int ok)
{
  if (world_rank == 0)
    printf("%-58s %.3e (limit %.1e) %s\n", what, value, limit, ok ? "ok" : "FAILED");
  if (!ok) fails++;
}

#define NSTEPS 60
#define DT     0.01

static const double src[] = {0.5, 0.2, 0.3, 0.25};
static const double rec[] = {0.2, 0.6, 0.4, 0.65, 0.6, 0.6, 0.8, 0.55, 0.5, 0.1};

typedef struct {
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  rw_grid gs, gf;
  rw_adjoint_options opt;
  N_Vector y0, y, dy0, c0;
} wave_fx;

static int record(void *c, long n, double t, N_Vector y)
{
  (void)t;
  return rw_wave_record_traces((rw_problem)c, n, y);
}

/* Problem on comm, traces recorded from the true model (background 1 + Gaussian anomaly),
 * then the field reset to the initial model c0 = 1 + 0.05 smooth. */
static void fx_create(wave_fx *f, MPI_Comm comm)
{
  memset(f, 0, sizeof *f);
  CHECK(rw_context_create(comm, &f->ctx));
  rw_wave_config cfg = {.n = {21, 17},
                        .lo = {0.0, 0.0},
                        .hi = {1.0, 0.8},
                        .velocity = 1.0,
                        .amplitude = 1.0,
                        .freq = 5.0,
                        .nsrc = 2,
                        .src = src,
                        .nrec = 5,
                        .rec = rec,
                        .t0 = 0.0,
                        .dt = DT,
                        .nsteps = NSTEPS};
  CHECK(rw_wave_problem_create(f->ctx, &cfg, &f->prob));
  CHECK(rw_stepper_create_leapfrog(f->prob, &f->st));
  f->gs = rw_wave_state_grid(f->prob);
  f->gf = rw_wave_field_grid(f->prob);
  CHECK(rw_problem_new_state(f->prob, &f->y0));
  CHECK(rw_problem_new_state(f->prob, &f->y));
  CHECK(rw_problem_new_state(f->prob, &f->dy0));
  CHECK(rw_grid_new_field(f->gf, &f->c0));
  rw_adjoint_options_default(&f->opt);
  f->opt.tf = NSTEPS * DT;
  f->opt.dt = DT;
  double center[2] = {0.5, 0.45};
  N_Vector c = rw_problem_field(f->prob);
  CHECK(rw_wave_velocity_model(f->prob, 1.0, 0.2, center, 0.1, c));
  CHECK(rw_wave_check_cfl(f->prob, c, DT, "true model"));
  rw_adjoint_options o = f->opt;
  o.monitor = record;
  o.monitor_ctx = f->prob;
  double J;
  rw_vec_copy(f->y0, f->y);
  CHECK(rw_forward_solve(f->prob, f->st, &o, f->y, &J, NULL));
  CHECK(rw_wave_finish_traces(f->prob));
  rw_test_fill(f->gf, f->c0, 1.0, 0.05, 7);
  rw_vec_copy(f->c0, c);
}

static void fx_destroy(wave_fx *f)
{
  rw_vec_destroy(&f->y0);
  rw_vec_destroy(&f->y);
  rw_vec_destroy(&f->dy0);
  rw_vec_destroy(&f->c0);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

/* J at the current field and amplitude, from y0. */
static double fx_J(wave_fx *f, N_Vector y0)
{
  double J;
  rw_vec_copy(y0, f->y);
  CHECK(rw_forward_solve(f->prob, f->st, &f->opt, f->y, &J, NULL));
  return J;
}

/* Forward + adjoint from y0 under opt: J, dJ/dA, dJ/dy0 (into f->dy0), dJ/dc (field adjoint). */
static double fx_grad(wave_fx *f, const rw_adjoint_options *opt, N_Vector y0, double *dJdA)
{
  double J;
  rw_vec_copy(y0, f->y);
  CHECK(rw_adjoint_solve(f->prob, f->st, opt, f->y, &J, dJdA, f->dy0, NULL));
  return J;
}

static double rel(double a, double b) { return rw_test_rel(a, b); }

/* 1. VJP dot-product tests at a random state. */
static void test_vjps(wave_fx *f)
{
  N_Vector y, v, w, fp, fm, g, dc, jv;
  CHECK(rw_problem_new_state(f->prob, &y));
  CHECK(rw_problem_new_state(f->prob, &v));
  CHECK(rw_problem_new_state(f->prob, &w));
  CHECK(rw_problem_new_state(f->prob, &fp));
  CHECK(rw_problem_new_state(f->prob, &fm));
  CHECK(rw_problem_new_state(f->prob, &g));
  CHECK(rw_problem_new_state(f->prob, &jv));
  CHECK(rw_grid_new_field(f->gf, &dc));
  rw_test_fill(f->gs, y, 0.0, 1.0, 1);
  rw_test_fill(f->gs, v, 0.0, 1.0, 2);
  rw_test_fill(f->gs, w, 0.0, 1.0, 3);
  rw_test_fill(f->gf, dc, 0.0, 1.0, 4);
  double t = 0.21, e = 1e-4, *p = rw_problem_params(f->prob), A = p[0];
  N_Vector c = rw_problem_field(f->prob), cb = rw_problem_field_adjoint(f->prob);
  /* state */
  N_VLinearSum(1.0, y, e, v, fp);
  N_VLinearSum(1.0, y, -e, v, fm);
  N_Vector yp, ym;
  CHECK(rw_problem_new_state(f->prob, &yp));
  CHECK(rw_problem_new_state(f->prob, &ym));
  rw_vec_copy(fp, yp);
  rw_vec_copy(fm, ym);
  CHECK(rw_problem_rhs(f->prob, t, yp, fp));
  CHECK(rw_problem_rhs(f->prob, t, ym, fm));
  double lhs = (N_VDotProd(w, fp) - N_VDotProd(w, fm)) / (2.0 * e);
  N_VConst(0.0, g);
  CHECK(rw_problem_vjp_y(f->prob, t, y, w, g));
  double r = rel(lhs, N_VDotProd(g, v));
  report("VJP state: <w, FD JVP> vs <VJP w, v>", r, 1e-7, r < 1e-7);
  CHECK(rw_problem_jvp(f->prob, t, y, v, NULL, jv));
  r = rel(N_VDotProd(w, jv), N_VDotProd(g, v));
  report("VJP state: <w, JVP v> vs <VJP w, v>", r, 1e-12, r < 1e-12);
  /* amplitude */
  p[0] = A + e;
  CHECK(rw_problem_rhs(f->prob, t, y, fp));
  p[0] = A - e;
  CHECK(rw_problem_rhs(f->prob, t, y, fm));
  p[0] = A;
  lhs = (N_VDotProd(w, fp) - N_VDotProd(w, fm)) / (2.0 * e);
  double pb = 0.0;
  N_VConst(0.0, cb);
  CHECK(rw_problem_vjp_p(f->prob, t, y, w, &pb));
  MPI_Allreduce(MPI_IN_PLACE, &pb, 1, MPI_DOUBLE, MPI_SUM, rw_context_comm(f->ctx));
  r = rel(lhs, pb);
  report("VJP amplitude: FD vs VJP", r, 1e-7, r < 1e-7 && fabs(pb) > 0.0);
  /* field */
  double fieldvjp = N_VDotProd(cb, dc);
  N_Vector csave;
  CHECK(rw_grid_new_field(f->gf, &csave));
  rw_vec_copy(c, csave);
  N_VLinearSum(1.0, csave, e, dc, c);
  CHECK(rw_problem_rhs(f->prob, t, y, fp));
  N_VLinearSum(1.0, csave, -e, dc, c);
  CHECK(rw_problem_rhs(f->prob, t, y, fm));
  rw_vec_copy(csave, c);
  lhs = (N_VDotProd(w, fp) - N_VDotProd(w, fm)) / (2.0 * e);
  r = rel(lhs, fieldvjp);
  report("VJP velocity field: FD vs VJP", r, 1e-7, r < 1e-7);
  N_VConst(0.0, cb);
  rw_vec_destroy(&csave);
  rw_vec_destroy(&yp);
  rw_vec_destroy(&ym);
  rw_vec_destroy(&y);
  rw_vec_destroy(&v);
  rw_vec_destroy(&w);
  rw_vec_destroy(&fp);
  rw_vec_destroy(&fm);
  rw_vec_destroy(&g);
  rw_vec_destroy(&jv);
  rw_vec_destroy(&dc);
}

/* J1 = <lambda, Phi(y)> + h r(t + h, Phi(y)), global. */
static double step_J(wave_fx *f, double t, double h, N_Vector y, N_Vector lam, N_Vector work)
{
  double q = 0.0;
  CHECK(rw_stepper_step(f->st, t, h, y, work, NULL, &q));
  MPI_Allreduce(MPI_IN_PLACE, &q, 1, MPI_DOUBLE, MPI_SUM, rw_context_comm(f->ctx));
  return N_VDotProd(lam, work) + q;
}

/* 2. Leapfrog adjoint step against a finite-difference step. */
static void test_step(wave_fx *f)
{
  N_Vector y, v, lam, lam0, ys, work, dc, csave;
  CHECK(rw_problem_new_state(f->prob, &y));
  CHECK(rw_problem_new_state(f->prob, &v));
  CHECK(rw_problem_new_state(f->prob, &lam));
  CHECK(rw_problem_new_state(f->prob, &lam0));
  CHECK(rw_problem_new_state(f->prob, &ys));
  CHECK(rw_problem_new_state(f->prob, &work));
  CHECK(rw_grid_new_field(f->gf, &dc));
  CHECK(rw_grid_new_field(f->gf, &csave));
  rw_test_fill(f->gs, y, 0.0, 0.5, 11);
  rw_test_fill(f->gs, v, 0.0, 1.0, 12);
  rw_test_fill(f->gs, lam0, 0.0, 1.0, 13);
  rw_test_fill(f->gf, dc, 0.0, 1.0, 14);
  double t = 20 * DT, h = DT, e = 1e-3, *p = rw_problem_params(f->prob), A = p[0], pb = 0.0;
  N_Vector c = rw_problem_field(f->prob), cb = rw_problem_field_adjoint(f->prob);
  rw_vec_copy(lam0, lam);
  N_VConst(0.0, cb);
  CHECK(rw_stepper_adjoint_step(f->st, t, h, y, NULL, lam, &pb));
  MPI_Allreduce(MPI_IN_PLACE, &pb, 1, MPI_DOUBLE, MPI_SUM, rw_context_comm(f->ctx));
  /* state */
  N_VLinearSum(1.0, y, e, v, ys);
  double Jp = step_J(f, t, h, ys, lam0, work);
  N_VLinearSum(1.0, y, -e, v, ys);
  double Jm = step_J(f, t, h, ys, lam0, work);
  double r = rel((Jp - Jm) / (2.0 * e), N_VDotProd(lam, v));
  report("leapfrog adjoint step, state: FD vs adjoint", r, 1e-7, r < 1e-7);
  /* amplitude */
  p[0] = A + e;
  Jp = step_J(f, t, h, y, lam0, work);
  p[0] = A - e;
  Jm = step_J(f, t, h, y, lam0, work);
  p[0] = A;
  r = rel((Jp - Jm) / (2.0 * e), pb);
  report("leapfrog adjoint step, amplitude: FD vs adjoint", r, 1e-7, r < 1e-7);
  /* field */
  rw_vec_copy(c, csave);
  N_VLinearSum(1.0, csave, e, dc, c);
  Jp = step_J(f, t, h, y, lam0, work);
  N_VLinearSum(1.0, csave, -e, dc, c);
  Jm = step_J(f, t, h, y, lam0, work);
  rw_vec_copy(csave, c);
  r = rel((Jp - Jm) / (2.0 * e), N_VDotProd(cb, dc));
  report("leapfrog adjoint step, velocity field: FD vs adjoint", r, 1e-7, r < 1e-7);
  /* the stored-stage path gives the same bits as recomputation */
  N_Vector lam2;
  CHECK(rw_problem_new_state(f->prob, &lam2));
  rw_vec_copy(lam0, lam2);
  double pb2 = 0.0;
  CHECK(rw_stepper_step(f->st, t, h, y, work, &ys, NULL));
  CHECK(rw_stepper_adjoint_step(f->st, t, h, y, &ys, lam2, &pb2));
  rw_vec_copy(lam0, lam);
  pb = 0.0;
  CHECK(rw_stepper_adjoint_step(f->st, t, h, y, NULL, lam, &pb));
  int same = memcmp(rw_vec_data(lam), rw_vec_data(lam2), rw_vec_bytes(lam)) == 0 && pb == pb2;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, rw_context_comm(f->ctx));
  report("leapfrog adjoint step: stored stage == recomputed (0 = bitwise)", same ? 0.0 : 1.0, 0.0,
         same);
  N_VConst(0.0, cb);
  rw_vec_destroy(&lam2);
  rw_vec_destroy(&y);
  rw_vec_destroy(&v);
  rw_vec_destroy(&lam);
  rw_vec_destroy(&lam0);
  rw_vec_destroy(&ys);
  rw_vec_destroy(&work);
  rw_vec_destroy(&dc);
  rw_vec_destroy(&csave);
}

/* Observed orders of the Taylor remainders r_k = |J(x + e_k d) - J(x) - e_k g.d|, e_k =
 * e0 / 2^k; returns the smallest order over the five halvings. */
static double taylor_min_order(const double *res, int n)
{
  double m = INFINITY;
  for (int k = 0; k + 1 < n; k++)
    m = rw_test_min(m, log2(res[k] / res[k + 1]));
  return m;
}

static void print_res(const char *what, const double *res, int n)
{
  if (world_rank != 0) return;
  printf("  Taylor %-10s remainders:", what);
  for (int k = 0; k < n; k++)
    printf(" %.3e", res[k]);
  printf("\n");
}

/* 3. Taylor remainders in c, A and y0. */
static void test_taylor(wave_fx *f)
{
  enum { NT = 6 };
  double dJdA = 0.0, res[NT];
  N_Vector c = rw_problem_field(f->prob), cb = rw_problem_field_adjoint(f->prob), dc, gc, dy, y0p;
  CHECK(rw_grid_new_field(f->gf, &dc));
  CHECK(rw_grid_new_field(f->gf, &gc));
  CHECK(rw_problem_new_state(f->prob, &dy));
  CHECK(rw_problem_new_state(f->prob, &y0p));
  double J0 = fx_grad(f, &f->opt, f->y0, &dJdA);
  rw_vec_copy(cb, gc);
  if (world_rank == 0) printf("  J(c0) = %.15e, dJ/dA = %.15e\n", J0, dJdA);
  /* velocity field: d = 0.1 smooth */
  rw_test_fill(f->gf, dc, 0.0, 0.1, 21);
  double gd = N_VDotProd(gc, dc);
  for (int k = 0; k < NT; k++) {
    double e = 1.0 / (double)(1 << k);
    N_VLinearSum(1.0, f->c0, e, dc, c);
    res[k] = fabs(fx_J(f, f->y0) - J0 - e * gd);
  }
  rw_vec_copy(f->c0, c);
  print_res("c", res, NT);
  double o = taylor_min_order(res, NT);
  report("Taylor remainder in c: min observed order", o, 1.8, o >= 1.8);
  /* amplitude */
  double *p = rw_problem_params(f->prob), A = p[0];
  for (int k = 0; k < NT; k++) {
    double e = 0.5 / (double)(1 << k);
    p[0] = A + e;
    res[k] = fabs(fx_J(f, f->y0) - J0 - e * dJdA);
  }
  p[0] = A;
  print_res("amplitude", res, NT);
  o = taylor_min_order(res, NT);
  report("Taylor remainder in amplitude: min observed order", o, 1.8, o >= 1.8);
  /* y0 = (u^0, u^{-1}) */
  rw_test_fill(f->gs, dy, 0.0, 0.2, 22);
  gd = N_VDotProd(f->dy0, dy);
  for (int k = 0; k < NT; k++) {
    double e = 1.0 / (double)(1 << k);
    N_VLinearSum(1.0, f->y0, e, dy, y0p);
    res[k] = fabs(fx_J(f, y0p) - J0 - e * gd);
  }
  print_res("y0", res, NT);
  o = taylor_min_order(res, NT);
  report("Taylor remainder in y0: min observed order", o, 1.8, o >= 1.8);
  rw_vec_destroy(&dc);
  rw_vec_destroy(&gc);
  rw_vec_destroy(&dy);
  rw_vec_destroy(&y0p);
}

/* 4. Checkpointed (binomial) and store-stages gradients == store-everything, bit for bit. */
static void test_checkpoint(wave_fx *f)
{
  double A1 = 0.0, A2 = 0.0, A3 = 0.0;
  N_Vector cb = rw_problem_field_adjoint(f->prob), g1, d1;
  CHECK(rw_grid_new_field(f->gf, &g1));
  CHECK(rw_problem_new_state(f->prob, &d1));
  double J1 = fx_grad(f, &f->opt, f->y0, &A1);
  rw_vec_copy(cb, g1);
  rw_vec_copy(f->dy0, d1);
  rw_adjoint_options o = f->opt;
  o.mode = RW_ADJOINT_CHECKPOINT;
  o.schedule = RW_SCHEDULE_BINOMIAL;
  o.ram_slots = 4;
  double J2 = fx_grad(f, &o, f->y0, &A2);
  int same = J1 == J2 && A1 == A2 &&
             memcmp(rw_vec_data(cb), rw_vec_data(g1), rw_vec_bytes(g1)) == 0 &&
             memcmp(rw_vec_data(f->dy0), rw_vec_data(d1), rw_vec_bytes(d1)) == 0;
  o = f->opt;
  o.store_stages = 1;
  double J3 = fx_grad(f, &o, f->y0, &A3);
  int same3 = J1 == J3 && A1 == A3 &&
              memcmp(rw_vec_data(cb), rw_vec_data(g1), rw_vec_bytes(g1)) == 0 &&
              memcmp(rw_vec_data(f->dy0), rw_vec_data(d1), rw_vec_bytes(d1)) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, rw_context_comm(f->ctx));
  MPI_Allreduce(MPI_IN_PLACE, &same3, 1, MPI_INT, MPI_MIN, rw_context_comm(f->ctx));
  report("binomial (4 slots) == store: J, dJ/dA, dJ/dc, dJ/dy0 (0 = bitwise)", same ? 0.0 : 1.0,
         0.0, same);
  report("store stages == store states (0 = bitwise)", same3 ? 0.0 : 1.0, 0.0, same3);
  rw_vec_destroy(&g1);
  rw_vec_destroy(&d1);
}

/* 5. Gradients across rank counts. */
static void test_ranks(wave_fx *f)
{
  double A = 0.0, J = fx_grad(f, &f->opt, f->y0, &A);
  long nc, ny;
  double *gc = rw_test_gather(f->gf, rw_problem_field_adjoint(f->prob), &nc);
  double *gy = rw_test_gather(f->gs, f->dy0, &ny);
  double r[4] = {0, 0, 0, 0};
  if (world_rank == 0) {
    wave_fx s;
    fx_create(&s, MPI_COMM_SELF);
    double As = 0.0, Js = fx_grad(&s, &s.opt, s.y0, &As);
    long n2;
    double *sc = rw_test_gather(s.gf, rw_problem_field_adjoint(s.prob), &n2);
    double *sy = rw_test_gather(s.gs, s.dy0, &n2);
    double mc = 0.0, dc = 0.0, my = 0.0, dy = 0.0;
    for (long i = 0; i < nc; i++) {
      mc = rw_test_max(mc, fabs(sc[i]));
      dc = rw_test_max(dc, fabs(sc[i] - gc[i]));
    }
    for (long i = 0; i < ny; i++) {
      my = rw_test_max(my, fabs(sy[i]));
      dy = rw_test_max(dy, fabs(sy[i] - gy[i]));
    }
    r[0] = rel(J, Js);
    r[1] = rel(A, As);
    r[2] = dc / mc;
    r[3] = dy / my;
    printf("  |dJ/dc|_inf = %.6e, |dJ/dy0|_inf = %.6e\n", mc, my);
    free(sc);
    free(sy);
    fx_destroy(&s);
  }
  MPI_Bcast(r, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  report("ranks vs 1 rank: J relative difference", r[0], 1e-12, r[0] <= 1e-12);
  report("ranks vs 1 rank: dJ/dA relative difference", r[1], 1e-12, r[1] <= 1e-12);
  report("ranks vs 1 rank: dJ/dc max relative difference", r[2], 1e-12, r[2] <= 1e-12);
  report("ranks vs 1 rank: dJ/dy0 max relative difference", r[3], 1e-12, r[3] <= 1e-12);
  free(gc);
  free(gy);
}

/* 6. The FWI gradient points toward the true model: in the background model c = 1,
 * <dJ/dc, c_true - 1> < 0 (a descent direction), reported as the cosine. */
static void test_descent(wave_fx *f)
{
  N_Vector c = rw_problem_field(f->prob), d;
  CHECK(rw_grid_new_field(f->gf, &d));
  double center[2] = {0.5, 0.45}, A = 0.0;
  CHECK(rw_wave_velocity_model(f->prob, 0.0, 0.2, center, 0.1, d));
  N_VConst(1.0, c);
  fx_grad(f, &f->opt, f->y0, &A);
  N_Vector g = rw_problem_field_adjoint(f->prob);
  double cosv = N_VDotProd(g, d) / sqrt(N_VDotProd(g, g) * N_VDotProd(d, d));
  report("cos(dJ/dc, c_true - c) in the background model (< 0)", cosv, 0.0, cosv < 0.0);
  rw_vec_copy(f->c0, c);
  rw_vec_destroy(&d);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t mem0 = rw_mem_current();
  {
    wave_fx f;
    fx_create(&f, MPI_COMM_WORLD);
    if (world_rank == 0)
      printf("wave + leapfrog on %d ranks, 21 x 17 nodes, %d steps\n", size, NSTEPS);
    test_vjps(&f);
    test_step(&f);
    test_taylor(&f);
    test_checkpoint(&f);
    test_ranks(&f);
    test_descent(&f);
    fx_destroy(&f);
  }
  size_t mem1 = rw_mem_current();
  report("Rewind allocations released (bytes still held)", (double)(mem1 - mem0), 0.0,
         mem1 == mem0);
  MPI_Finalize();
  return fails ? 1 : 0;
}
