/* Dot-product tests of every VJP: for random w, v, dp,
 *   <w, (df/dy) v + (df/dp) dp>  ==  <(df/dy)^T w, v> + <(df/dp)^T w, dp>,
 * with the left side from the problem's JVP (agreement to rounding) and from a central
 * finite difference of f (agreement to O(eps^2)); the same for one stepper step (the
 * adjoint step against a finite-difference step), and for the objective's derivatives. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rw_test.h"

#include <stdlib.h>
#include <string.h>

TestSuite(vjp, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

static double urand(unsigned *s)
{
  *s = *s * 1103515245u + 12345u;
  return ((double)((*s >> 8) & 0xffffff) / (double)0x1000000) * 2.0 - 1.0;
}

static void fill(N_Vector v, unsigned *s, double shift)
{
  double *d = rw_vec_data(v);
  for (sunindextype i = 0; i < rw_vec_local_length(v); i++)
    d[i] = shift + urand(s);
}

static rw_problem make(rw_context ctx, const char *model)
{
  rw_problem p;
  rw_ode_config cfg = {.model = model,
                       .ensemble = 4,
                       .y0 = {1.0, 0.5},
                       .spread = 0.1,
                       .target = {0.2, 0.1},
                       .terminal_weight = 0.7,
                       .running_weight = 0.4};
  RW_TEST_OK(rw_ode_problem_create(ctx, &cfg, &p));
  return p;
}

static const char *models[] = {"vanderpol", "lotkavolterra"};

Test(vjp, problem_vjps_against_jvp_and_finite_differences)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  unsigned seed = 7;
  for (size_t m = 0; m < 2; m++) {
    rw_problem prob = make(ctx, models[m]);
    int np = rw_problem_nparams(prob);
    N_Vector y, v, w, jv, fp, fm, yp, vt;
    RW_TEST_OK(rw_problem_new_state(prob, &y));
    RW_TEST_OK(rw_vec_clone(y, &v));
    RW_TEST_OK(rw_vec_clone(y, &w));
    RW_TEST_OK(rw_vec_clone(y, &jv));
    RW_TEST_OK(rw_vec_clone(y, &fp));
    RW_TEST_OK(rw_vec_clone(y, &fm));
    RW_TEST_OK(rw_vec_clone(y, &yp));
    RW_TEST_OK(rw_vec_clone(y, &vt));
    double dp[4], pt[4] = {0}, *p = rw_problem_params(prob), p0[4];
    for (int trial = 0; trial < 5; trial++) {
      fill(y, &seed, 0.5);
      fill(v, &seed, 0.0);
      fill(w, &seed, 0.0);
      for (int k = 0; k < np; k++)
        dp[k] = urand(&seed), pt[k] = 0.0;
      N_VConst(0.0, vt);
      RW_TEST_OK(rw_problem_jvp(prob, 0.3, y, v, dp, jv));
      RW_TEST_OK(rw_problem_vjp_y(prob, 0.3, y, w, vt));
      RW_TEST_OK(rw_problem_vjp_p(prob, 0.3, y, w, pt));
      double lhs = N_VDotProd(w, jv), rhs = N_VDotProd(vt, v);
      for (int k = 0; k < np; k++)
        rhs += pt[k] * dp[k];
      cr_assert(rw_test_relerr(lhs, rhs) < 1e-13, "%s: <w,Jv> = %.17g, <J^T w,v> = %.17g",
                models[m], lhs, rhs);
      /* Finite-difference JVP: (f(y + e v; p + e dp) - f(y - e v; p - e dp)) / 2e. */
      double e = 1e-6;
      memcpy(p0, p, (size_t)np * sizeof(double));
      for (int k = 0; k < np; k++)
        p[k] = p0[k] + e * dp[k];
      N_VLinearSum(1.0, y, e, v, yp);
      RW_TEST_OK(rw_problem_rhs(prob, 0.3, yp, fp));
      for (int k = 0; k < np; k++)
        p[k] = p0[k] - e * dp[k];
      N_VLinearSum(1.0, y, -e, v, yp);
      RW_TEST_OK(rw_problem_rhs(prob, 0.3, yp, fm));
      memcpy(p, p0, (size_t)np * sizeof(double));
      N_VLinearSum(1.0 / (2 * e), fp, -1.0 / (2 * e), fm, jv);
      double fdl = N_VDotProd(w, jv);
      cr_assert(rw_test_relerr(fdl, rhs) < 1e-8, "%s: FD <w,Jv> = %.17g, <J^T w,v> = %.17g",
                models[m], fdl, rhs);
    }
    rw_vec_destroy(&y), rw_vec_destroy(&v), rw_vec_destroy(&w), rw_vec_destroy(&jv);
    rw_vec_destroy(&fp), rw_vec_destroy(&fm), rw_vec_destroy(&yp), rw_vec_destroy(&vt);
    rw_problem_destroy(&prob);
  }
  rw_context_destroy(&ctx);
}

/* The adjoint step is the transpose of the step's linearisation, including the running-cost
 * quadrature: with Phi(y, p) = (y_{n+1}, q_{n+1}) and adjoint seeds (lambda, 1),
 *   <lambda, dy_{n+1}> + dq = <adj(lambda), v> + <pbar, dp>. */
Test(vjp, stepper_adjoint_step_is_transpose_of_step)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  unsigned seed = 11;
  for (size_t m = 0; m < 2; m++)
    for (int i = 0; rw_tableau_get(i); i++) {
      rw_problem prob = make(ctx, models[m]);
      rw_stepper st;
      RW_TEST_OK(rw_stepper_create_erk(prob, rw_tableau_get(i), &st));
      int np = rw_problem_nparams(prob);
      N_Vector y, v, lam, yp, ym;
      RW_TEST_OK(rw_problem_new_state(prob, &y));
      RW_TEST_OK(rw_vec_clone(y, &v));
      RW_TEST_OK(rw_vec_clone(y, &lam));
      RW_TEST_OK(rw_vec_clone(y, &yp));
      RW_TEST_OK(rw_vec_clone(y, &ym));
      fill(y, &seed, 0.5);
      fill(v, &seed, 0.0);
      fill(lam, &seed, 0.0);
      double dp[4], pbar[4] = {0}, *p = rw_problem_params(prob), p0[4], t = 0.2, h = 0.1;
      for (int k = 0; k < np; k++)
        dp[k] = urand(&seed);
      memcpy(p0, p, (size_t)np * sizeof(double));
      double e = 1e-6, qp = 0.0, qm = 0.0;
      for (int k = 0; k < np; k++)
        p[k] = p0[k] + e * dp[k];
      N_VLinearSum(1.0, y, e, v, yp);
      RW_TEST_OK(rw_stepper_step(st, t, h, yp, yp, NULL, &qp));
      for (int k = 0; k < np; k++)
        p[k] = p0[k] - e * dp[k];
      N_VLinearSum(1.0, y, -e, v, ym);
      RW_TEST_OK(rw_stepper_step(st, t, h, ym, ym, NULL, &qm));
      memcpy(p, p0, (size_t)np * sizeof(double));
      N_VLinearSum(1.0 / (2 * e), yp, -1.0 / (2 * e), ym, yp);
      double lhs = N_VDotProd(lam, yp) + (qp - qm) / (2 * e);
      RW_TEST_OK(rw_stepper_adjoint_step(st, t, h, y, NULL, lam, pbar));
      double rhs = N_VDotProd(lam, v);
      for (int k = 0; k < np; k++)
        rhs += pbar[k] * dp[k];
      cr_assert(rw_test_relerr(lhs, rhs) < 1e-8, "%s/%s: FD %.17g vs adjoint %.17g", models[m],
                rw_tableau_get(i)->name, lhs, rhs);
      rw_vec_destroy(&y), rw_vec_destroy(&v), rw_vec_destroy(&lam);
      rw_vec_destroy(&yp), rw_vec_destroy(&ym);
      rw_stepper_destroy(&st);
      rw_problem_destroy(&prob);
    }
  rw_context_destroy(&ctx);
}

Test(vjp, objective_gradients_against_finite_differences)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  unsigned seed = 3;
  rw_problem prob = make(ctx, "lotkavolterra");
  N_Vector y, v, g, yp;
  RW_TEST_OK(rw_problem_new_state(prob, &y));
  RW_TEST_OK(rw_vec_clone(y, &v));
  RW_TEST_OK(rw_vec_clone(y, &g));
  RW_TEST_OK(rw_vec_clone(y, &yp));
  fill(y, &seed, 0.5);
  fill(v, &seed, 0.0);
  /* Both costs are quadratic in y, so a central difference is exact up to rounding: a large
   * step keeps the rounding small. */
  double gp[4] = {0}, a, b, e = 1e-2;
  RW_TEST_OK(rw_problem_terminal_grad(prob, 1.0, y, g, gp));
  N_VLinearSum(1.0, y, e, v, yp);
  RW_TEST_OK(rw_problem_terminal(prob, 1.0, yp, &a));
  N_VLinearSum(1.0, y, -e, v, yp);
  RW_TEST_OK(rw_problem_terminal(prob, 1.0, yp, &b));
  cr_assert(rw_test_relerr((a - b) / (2 * e), N_VDotProd(g, v)) < 1e-8, "terminal gradient");
  N_VConst(0.0, g);
  RW_TEST_OK(rw_problem_running_grad(prob, 1.0, y, 1.0, g, gp));
  N_VLinearSum(1.0, y, e, v, yp);
  RW_TEST_OK(rw_problem_running_local(prob, 1.0, yp, &a));
  N_VLinearSum(1.0, y, -e, v, yp);
  RW_TEST_OK(rw_problem_running_local(prob, 1.0, yp, &b));
  cr_assert(rw_test_relerr((a - b) / (2 * e), N_VDotProd(g, v)) < 1e-8,
            "running gradient: FD %.17g vs %.17g", (a - b) / (2 * e), N_VDotProd(g, v));
  rw_vec_destroy(&y), rw_vec_destroy(&v), rw_vec_destroy(&g), rw_vec_destroy(&yp);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}
