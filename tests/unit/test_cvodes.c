/* Independent check of Rewind's discrete adjoint against SUNDIALS CVODES's continuous adjoint.
 *
 * Problem: one Van der Pol oscillator x' = v, v' = mu (1 - x^2) v - x, y0 = (2, 0), on
 * [0, T], with J = wT/2 |y(T) - target|^2 + wR/2 int_0^T |y(t)|^2 dt (the objective of
 * rw_ode_problems.c). Compared: J, dJ/dmu and dJ/dy0.
 *
 * CVODES side (reference). The continuous adjoint as in the SUNDIALS CVODES user guide,
 * "Using CVODES for adjoint sensitivity analysis" (mathematical considerations: for
 * G = int r dt, lambda' = -(df/dy)^T lambda - (dr/dy)^T integrated backward, and
 * dG/dp = int (lambda^T df/dp + dr/dp) dt as a backward quadrature; a terminal cost g(y(T))
 * enters as lambda(T) = (dg/dy)^T). Here dr/dmu = dg/dmu = 0, so
 *   dJ/dmu = int_0^T lambda^T df/dmu dt,   dJ/dy0 = lambda(0).
 * Forward: CVodeF (Adams, Newton + dense, analytic Jacobian) with the running cost as a
 * CVodeQuad quadrature; backward: CVodeCreateB/CVodeInitB/CVodeQuadInitB and CVodeB, with
 * rtol = 1e-13 and atol = 1e-15 on every component. Its own error is estimated by solving
 * again at rtol = 1e-12 (the difference bounds the error of the tighter solve generously);
 * measured: 1e-12 .. 5e-11 absolute.
 *
 * Rewind side: explicit RK (rk4, dopri5) with the store-everything discrete adjoint, which
 * returns the exact gradient of the discrete J; that converges to the continuous gradient
 * at the method's order p. Tolerance: at step sizes dt_0 > dt_1 = dt_0/2 > ..., the
 * Richardson estimate of the error of the finest result g_k is |g_{k-1} - g_k| / (2^p - 1);
 * we require |g_k - g_cvodes| <= max(10 * that estimate, 1e-9 * max(1, |g_cvodes|)) (the
 * factor 10 absorbs the higher-order terms that Richardson neglects; 1e-9 relative is the
 * level at which the CVODES reference itself stops being exact). And the observed order
 * log2(|g_{k-1} - g_cvodes| / |g_k - g_cvodes|) must lie in [p - 0.5, p + 0.5] for each
 * halving (see the dopri5 cases for their window); the step sizes are chosen so the errors
 * stay at least 10 times the CVODES error estimate, which is asserted too. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rw_test.h"

#include <cvodes/cvodes.h>
#include <math.h>
#include <nvector/nvector_serial.h>
#include <stdio.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

TestSuite(cvodes, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

typedef struct {
  double mu, T, wT, wR, target[2], y0[2];
} vdp_case;

/* The compared quantities: J, dJ/dmu, dJ/dx0, dJ/dv0. */
enum { Q_J, Q_MU, Q_X0, Q_V0, NQ };
static const char *qname[NQ] = {"J", "dJ/dmu", "dJ/dx0", "dJ/dv0"};

/* ---------------------------------------------------------------------------------------
 * CVODES reference
 * ------------------------------------------------------------------------------------- */

/* Jacobian df/dy of Van der Pol, row-major. */
static void vdp_jac(double mu, double x, double v, double J[4])
{
  J[0] = 0.0;
  J[1] = 1.0;
  J[2] = -2.0 * mu * x * v - 1.0;
  J[3] = mu * (1.0 - x * x);
}

static int cv_rhs(sunrealtype t, N_Vector y, N_Vector ydot, void *ud)
{
  (void)t;
  const vdp_case *c = ud;
  double x = NV_Ith_S(y, 0), v = NV_Ith_S(y, 1);
  NV_Ith_S(ydot, 0) = v;
  NV_Ith_S(ydot, 1) = c->mu * (1.0 - x * x) * v - x;
  return 0;
}

static int cv_jac(sunrealtype t, N_Vector y, N_Vector fy, SUNMatrix A, void *ud, N_Vector t1,
                  N_Vector t2, N_Vector t3)
{
  (void)t, (void)fy, (void)t1, (void)t2, (void)t3;
  const vdp_case *c = ud;
  double J[4];
  vdp_jac(c->mu, NV_Ith_S(y, 0), NV_Ith_S(y, 1), J);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      SM_ELEMENT_D(A, i, j) = J[2 * i + j];
  return 0;
}

/* Running cost r = wR/2 |y|^2 as a forward quadrature. */
static int cv_quad(sunrealtype t, N_Vector y, N_Vector qdot, void *ud)
{
  (void)t;
  const vdp_case *c = ud;
  double x = NV_Ith_S(y, 0), v = NV_Ith_S(y, 1);
  NV_Ith_S(qdot, 0) = 0.5 * c->wR * (x * x + v * v);
  return 0;
}

/* Adjoint ODE: lambda' = -(df/dy)^T lambda - (dr/dy)^T. */
static int cv_rhsB(sunrealtype t, N_Vector y, N_Vector yB, N_Vector yBdot, void *ud)
{
  (void)t;
  const vdp_case *c = ud;
  double x = NV_Ith_S(y, 0), v = NV_Ith_S(y, 1), J[4];
  double l0 = NV_Ith_S(yB, 0), l1 = NV_Ith_S(yB, 1);
  vdp_jac(c->mu, x, v, J);
  NV_Ith_S(yBdot, 0) = -(J[0] * l0 + J[2] * l1) - c->wR * x;
  NV_Ith_S(yBdot, 1) = -(J[1] * l0 + J[3] * l1) - c->wR * v;
  return 0;
}

/* d(lambda')/d(lambda) = -(df/dy)^T. */
static int cv_jacB(sunrealtype t, N_Vector y, N_Vector yB, N_Vector fyB, SUNMatrix AB, void *ud,
                   N_Vector t1, N_Vector t2, N_Vector t3)
{
  (void)t, (void)yB, (void)fyB, (void)t1, (void)t2, (void)t3;
  const vdp_case *c = ud;
  double J[4];
  vdp_jac(c->mu, NV_Ith_S(y, 0), NV_Ith_S(y, 1), J);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      SM_ELEMENT_D(AB, i, j) = -J[2 * j + i];
  return 0;
}

/* Backward quadrature integrated from T down to 0 starting at 0: with the integrand
 * -lambda^T df/dmu its value at t = 0 is int_0^T lambda^T df/dmu dt. */
static int cv_quadB(sunrealtype t, N_Vector y, N_Vector yB, N_Vector qBdot, void *ud)
{
  (void)t, (void)ud;
  double x = NV_Ith_S(y, 0), v = NV_Ith_S(y, 1);
  NV_Ith_S(qBdot, 0) = -NV_Ith_S(yB, 1) * (1.0 - x * x) * v;
  return 0;
}

#define CV_OK(expr)                                                                                \
  do {                                                                                             \
    int cv_flag_ = (expr);                                                                         \
    cr_assert_geq(cv_flag_, 0, "%s returned %d", #expr, cv_flag_);                                 \
  } while (0)

/* J, dJ/dmu, dJ/dy0 from CVODES at relative tolerance rtol (atol = rtol / 100). */
static void cvodes_gradient(const vdp_case *c, double rtol, double out[NQ])
{
  double atol = 1e-2 * rtol;
  SUNContext sun = NULL;
  cr_assert_eq(SUNContext_Create(NULL, &sun), 0);
  N_Vector y = N_VNew_Serial(2, sun), q = N_VNew_Serial(1, sun);
  N_Vector yB = N_VNew_Serial(2, sun), qB = N_VNew_Serial(1, sun);
  cr_assert(y && q && yB && qB);
  SUNMatrix A = SUNDenseMatrix(2, 2, sun), AB = SUNDenseMatrix(2, 2, sun);
  SUNLinearSolver LS = SUNLinSol_Dense(y, A, sun), LSB = SUNLinSol_Dense(yB, AB, sun);
  cr_assert(A && AB && LS && LSB);

  /* Forward problem with the running-cost quadrature, recording for the adjoint. */
  NV_Ith_S(y, 0) = c->y0[0];
  NV_Ith_S(y, 1) = c->y0[1];
  NV_Ith_S(q, 0) = 0.0;
  void *mem = CVodeCreate(CV_ADAMS, sun);
  cr_assert(mem);
  CV_OK(CVodeInit(mem, cv_rhs, 0.0, y));
  CV_OK(CVodeSStolerances(mem, rtol, atol));
  CV_OK(CVodeSetUserData(mem, (void *)c));
  CV_OK(CVodeSetLinearSolver(mem, LS, A));
  CV_OK(CVodeSetJacFn(mem, cv_jac));
  CV_OK(CVodeSetMaxNumSteps(mem, 1000000));
  CV_OK(CVodeSetStopTime(mem, c->T));
  CV_OK(CVodeQuadInit(mem, cv_quad, q));
  CV_OK(CVodeQuadSStolerances(mem, rtol, atol));
  CV_OK(CVodeSetQuadErrCon(mem, SUNTRUE));
  CV_OK(CVodeAdjInit(mem, 200, CV_POLYNOMIAL));
  sunrealtype tret = 0.0;
  int ncheck = 0;
  CV_OK(CVodeF(mem, c->T, y, &tret, CV_NORMAL, &ncheck));
  CV_OK(CVodeGetQuad(mem, &tret, q));
  double d0 = NV_Ith_S(y, 0) - c->target[0], d1 = NV_Ith_S(y, 1) - c->target[1];
  out[Q_J] = 0.5 * c->wT * (d0 * d0 + d1 * d1) + NV_Ith_S(q, 0);

  /* Backward problem: lambda(T) = dg/dy = wT (y(T) - target), mu-quadrature from 0. */
  NV_Ith_S(yB, 0) = c->wT * d0;
  NV_Ith_S(yB, 1) = c->wT * d1;
  NV_Ith_S(qB, 0) = 0.0;
  int which = -1;
  CV_OK(CVodeCreateB(mem, CV_ADAMS, &which));
  CV_OK(CVodeInitB(mem, which, cv_rhsB, c->T, yB));
  CV_OK(CVodeSStolerancesB(mem, which, rtol, atol));
  CV_OK(CVodeSetUserDataB(mem, which, (void *)c));
  CV_OK(CVodeSetLinearSolverB(mem, which, LSB, AB));
  CV_OK(CVodeSetJacFnB(mem, which, cv_jacB));
  CV_OK(CVodeSetMaxNumStepsB(mem, which, 1000000));
  CV_OK(CVodeQuadInitB(mem, which, cv_quadB, qB));
  CV_OK(CVodeQuadSStolerancesB(mem, which, rtol, atol));
  CV_OK(CVodeSetQuadErrConB(mem, which, SUNTRUE));
  CV_OK(CVodeB(mem, 0.0, CV_NORMAL));
  CV_OK(CVodeGetB(mem, which, &tret, yB));
  cr_assert_eq(tret, 0.0, "CVodeB stopped at t = %g", tret);
  CV_OK(CVodeGetQuadB(mem, which, &tret, qB));
  out[Q_MU] = NV_Ith_S(qB, 0);
  out[Q_X0] = NV_Ith_S(yB, 0);
  out[Q_V0] = NV_Ith_S(yB, 1);

  CVodeFree(&mem);
  SUNLinSolFree(LS);
  SUNLinSolFree(LSB);
  SUNMatDestroy(A);
  SUNMatDestroy(AB);
  N_VDestroy(y);
  N_VDestroy(q);
  N_VDestroy(yB);
  N_VDestroy(qB);
  SUNContext_Free(&sun);
}

/* ---------------------------------------------------------------------------------------
 * Rewind
 * ------------------------------------------------------------------------------------- */

static void rewind_gradient(rw_context ctx, const vdp_case *c, const rw_tableau *tab, double dt,
                            double out[NQ])
{
  rw_ode_config cfg = {.model = "vanderpol",
                       .ensemble = 1,
                       .y0 = {c->y0[0], c->y0[1]},
                       .spread = 0.0,
                       .target = {c->target[0], c->target[1]},
                       .terminal_weight = c->wT,
                       .running_weight = c->wR};
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL, gy0 = NULL;
  RW_TEST_OK(rw_ode_problem_create(ctx, &cfg, &prob));
  rw_problem_params(prob)[0] = c->mu;
  RW_TEST_OK(rw_stepper_create_erk(prob, tab, &st));
  RW_TEST_OK(rw_problem_new_state(prob, &y));
  RW_TEST_OK(rw_problem_new_state(prob, &gy0));
  RW_TEST_OK(rw_ode_initial_state(prob, y));
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.t0 = 0.0;
  opt.tf = c->T;
  opt.dt = dt;
  rw_adjoint_stats stats;
  double J = 0.0, dJdmu = 0.0;
  RW_TEST_OK(rw_adjoint_solve(prob, st, &opt, y, &J, &dJdmu, gy0, &stats));
  /* Powers of two: dt divides T exactly, so every step has size dt. */
  cr_assert_eq(stats.last_dt, dt, "dt = %g must divide T = %g", dt, c->T);
  out[Q_J] = J;
  out[Q_MU] = dJdmu;
  out[Q_X0] = rw_vec_data(gy0)[0];
  out[Q_V0] = rw_vec_data(gy0)[1];
  rw_vec_destroy(&y);
  rw_vec_destroy(&gy0);
  RW_TEST_OK(rw_stepper_destroy(&st));
  RW_TEST_OK(rw_problem_destroy(&prob));
}

/* ---------------------------------------------------------------------------------------
 * The comparison
 * ------------------------------------------------------------------------------------- */

#define MAXDT 4

/* Which quantities get the observed-order check (all get the error bound). */
#define Q_ALL    ((1u << Q_J) | (1u << Q_MU) | (1u << Q_X0) | (1u << Q_V0))
#define Q_NOT_V0 ((1u << Q_J) | (1u << Q_MU) | (1u << Q_X0))

/* Runs `tab` at dt_k = dt0 / 2^k, k < ndt, and checks every quantity against CVODES as
 * described at the top of the file; for the quantities in `order_mask` the observed order
 * between successive dt_k must lie in [order_lo, order_hi]. */
static void compare_case(const char *label, const vdp_case *c, const char *tabname, double dt0,
                         int ndt, double order_lo, double order_hi, unsigned order_mask)
{
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 1) cr_skip_test("serial comparison (one ensemble member)");
  const rw_tableau *tab = rw_tableau_find(tabname);
  cr_assert_not_null(tab, "no tableau %s", tabname);
  cr_assert(ndt >= 2 && ndt <= MAXDT);
  const int p = tab->order;

  /* Reference at rtol 1e-13; its error is bounded by the change from rtol 1e-12. */
  double cv[NQ], cv_loose[NQ];
  cvodes_gradient(c, 1e-13, cv);
  cvodes_gradient(c, 1e-12, cv_loose);

  size_t mem0 = rw_mem_current();
  rw_context ctx = NULL;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  double g[MAXDT][NQ], dts[MAXDT];
  for (int k = 0; k < ndt; k++) {
    dts[k] = dt0 / (double)(1 << k);
    rewind_gradient(ctx, c, tab, dts[k], g[k]);
  }
  RW_TEST_OK(rw_context_destroy(&ctx));
  cr_expect_eq(rw_mem_current(), mem0, "Rewind memory not returned: %zu bytes before, %zu after",
               mem0, rw_mem_current());

  fprintf(stderr, "\n[cvodes] %s: %s (order %d), mu = %g, T = %g, wT = %g, wR = %g\n", label,
          tabname, p, c->mu, c->T, c->wT, c->wR);
  for (int i = 0; i < NQ; i++) {
    double scale = fmax(1.0, fabs(cv[i]));
    double cv_err = fabs(cv[i] - cv_loose[i]);
    fprintf(stderr, "  %-7s CVODES % .15e (error estimate %.1e)\n", qname[i], cv[i], cv_err);
    double err[MAXDT];
    for (int k = 0; k < ndt; k++) {
      err[k] = fabs(g[k][i] - cv[i]);
      fprintf(stderr, "          dt = %-9.6g Rewind % .15e  |diff| %.3e", dts[k], g[k][i], err[k]);
      if (k > 0) {
        double rich = fabs(g[k - 1][i] - g[k][i]) / (pow(2.0, p) - 1.0);
        fprintf(stderr, "  Richardson %.3e (|diff|/R %.2f)  order %.2f\n", rich, err[k] / rich,
                log2(err[k - 1] / err[k]));
      } else {
        fprintf(stderr, "\n");
      }
    }
    /* The bound on the finest result. */
    int f = ndt - 1;
    double rich = fabs(g[f - 1][i] - g[f][i]) / (pow(2.0, p) - 1.0);
    double bound = fmax(10.0 * rich, 1e-9 * scale);
    cr_expect_leq(err[f], bound,
                  "%s %s %s: |rewind - cvodes| = %.3e at dt = %g exceeds max(10 * Richardson "
                  "%.3e, 1e-9 * %.3g)",
                  label, tabname, qname[i], err[f], dts[f], rich, scale);
    if (!(order_mask & (1u << i))) continue;
    /* The observed order means something only while the reference is far more accurate than
     * what it checks: a 10% perturbation of err moves log2 by at most 0.15. */
    cr_expect_leq(10.0 * cv_err, err[f],
                  "%s %s %s: CVODES error estimate %.3e is not small against Rewind's error %.3e",
                  label, tabname, qname[i], cv_err, err[f]);
    for (int k = 1; k < ndt; k++) {
      double order = log2(err[k - 1] / err[k]);
      cr_expect(order >= order_lo && order <= order_hi,
                "%s %s %s: observed order %.3f between dt = %g and %g, expected in [%g, %g]", label,
                tabname, qname[i], order, dts[k - 1], dts[k], order_lo, order_hi);
    }
  }
}

/* mu = 1, both cost terms. */
static const vdp_case case_mu1 = {
    .mu = 1.0, .T = 2.0, .wT = 1.0, .wR = 0.5, .target = {0.5, -0.5}, .y0 = {2.0, 0.0}};
/* mu = 2 (stiffer, larger gradient), both cost terms with a heavier running cost. */
static const vdp_case case_mu2 = {
    .mu = 2.0, .T = 2.0, .wT = 1.0, .wR = 1.0, .target = {-1.0, 0.5}, .y0 = {2.0, 0.0}};

/* RK4: three halvings from dt = 1/16, in the asymptotic range (order 4 +- 0.5). At mu = 1
 * the error of dJ/dv0 has a leading coefficient about 300 times smaller than the others
 * (6e-8 at dt = 1/16 against 4e-6 .. 2e-5), so its first halving is pre-asymptotic (observed
 * 2.65) and its finest error (5e-11) is within a few times the CVODES error: it gets the
 * error bound only, not the order check (so in the dopri5 case). */
Test(cvodes, vanderpol_mu1_rk4)
{
  compare_case("mu=1", &case_mu1, "rk4", 0.0625, 4, 3.5, 4.5, Q_NOT_V0);
}
Test(cvodes, vanderpol_mu2_rk4)
{
  compare_case("mu=2", &case_mu2, "rk4", 0.0625, 4, 3.5, 4.5, Q_ALL);
}
/* Dormand-Prince 5(4): the fifth-order solution has small leading error constants (the
 * method was built to minimise them), so at step sizes where its error stays far above the
 * CVODES error the sixth-order term still dominates and the observed order is about 6.5,
 * drifting down towards 5. Hence two halvings from dt = 1/8 and the window [4.5, 7.5]: it
 * still catches an adjoint that is first or second order. */
Test(cvodes, vanderpol_mu1_dopri5)
{
  compare_case("mu=1", &case_mu1, "dopri5", 0.125, 3, 4.5, 7.5, Q_NOT_V0);
}
Test(cvodes, vanderpol_mu2_dopri5)
{
  compare_case("mu=2", &case_mu2, "dopri5", 0.125, 3, 4.5, 7.5, Q_ALL);
}
