/* The reversible Heun stepper (rw_revheun.h) on a Lotka-Volterra ensemble with a running cost
 * (so every term of the adjoint step is exercised):
 *  - the inverse step undoes a step to rounding, and 400 steps one by one to 1e-11;
 *  - second-order convergence of y;
 *  - dJ/dp and dJ/dy0 against central differences (1e-7 relative);
 *  - Taylor remainder of second order along a direction in (p, y0);
 *  - store, binomial checkpointing and adjoint_mode reversible: checkpointed equals store bit
 *    for bit, reversible within 1e-10 with drift at rounding level;
 *  - creation refuses a problem that is not partnered. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rewind/rw_revheun.h"
#include "rw_test.h"

#include <float.h>
#include <math.h>
#include <string.h>

TestSuite(revheun, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

typedef struct {
  rw_context ctx;
  rw_problem prob, pair;
  rw_stepper st;
  rw_adjoint_options opt;
  N_Vector y0, Y, L, g;
} fx;

static void fx_create(fx *f, double tf, double dt)
{
  memset(f, 0, sizeof *f);
  RW_TEST_OK(rw_context_create(MPI_COMM_SELF, &f->ctx));
  rw_ode_config cfg = {.model = "lotkavolterra",
                       .ensemble = 3,
                       .y0 = {1.0, 1.0},
                       .spread = 0.1,
                       .target = {1.2, 0.8},
                       .terminal_weight = 1.0,
                       .running_weight = 0.3};
  RW_TEST_OK(rw_ode_problem_create(f->ctx, &cfg, &f->prob));
  RW_TEST_OK(rw_problem_create_partnered(f->prob, &f->pair));
  RW_TEST_OK(rw_stepper_create_revheun(f->pair, &f->st));
  cr_assert_str_eq(rw_stepper_name(f->st), "revheun");
  cr_assert_eq(rw_stepper_reverse_kind(f->st), RW_REVERSE_INVERSE);
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y0));
  RW_TEST_OK(rw_problem_new_state(f->pair, &f->Y));
  RW_TEST_OK(rw_problem_new_state(f->pair, &f->L));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->g));
  RW_TEST_OK(rw_ode_initial_state(f->prob, f->y0));
  rw_adjoint_options_default(&f->opt);
  f->opt.tf = tf;
  f->opt.dt = dt;
}

static void fx_destroy(fx *f)
{
  rw_vec_destroy(&f->y0);
  rw_vec_destroy(&f->Y);
  rw_vec_destroy(&f->L);
  rw_vec_destroy(&f->g);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->pair);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

static double fx_J(fx *f)
{
  double J;
  rw_revheun_initial_state(f->y0, f->Y);
  RW_TEST_OK(rw_forward_solve(f->pair, f->st, &f->opt, f->Y, &J, NULL));
  return J;
}

/* J, dJ/dp (4) and dJ/dy0 (into f->g). */
static double fx_grad(fx *f, double *dJdp, rw_adjoint_stats *st)
{
  double J;
  rw_revheun_initial_state(f->y0, f->Y);
  RW_TEST_OK(rw_adjoint_solve(f->pair, f->st, &f->opt, f->Y, &J, dJdp, f->L, st));
  rw_revheun_initial_adjoint(f->L, f->g);
  return J;
}

Test(revheun, inverse_step_undoes_steps)
{
  fx f;
  fx_create(&f, 1.0, 0.01);
  N_Vector Z = NULL, Y0 = NULL;
  RW_TEST_OK(rw_problem_new_state(f.pair, &Z));
  RW_TEST_OK(rw_problem_new_state(f.pair, &Y0));
  rw_revheun_initial_state(f.y0, Y0);
  /* a partner that differs from y, as it does after some steps */
  rw_vec_data(Y0)[7] += 1e-3;
  rw_vec_copy(Y0, f.Y);
  RW_TEST_OK(rw_stepper_step(f.st, 0.2, 0.01, f.Y, f.Y, NULL, NULL));
  RW_TEST_OK(rw_stepper_reverse_step(f.st, 0.2, 0.01, f.Y, Z));
  sunindextype n = rw_vec_local_length(Z);
  for (sunindextype i = 0; i < n; i++)
    cr_assert_leq(fabs(rw_vec_data(Z)[i] - rw_vec_data(Y0)[i]),
                  8 * DBL_EPSILON * fabs(rw_vec_data(Y0)[i]), "entry %ld", (long)i);
  rw_vec_copy(Y0, f.Y);
  for (int k = 0; k < 400; k++)
    RW_TEST_OK(rw_stepper_step(f.st, 0.01 * k, 0.01, f.Y, f.Y, NULL, NULL));
  for (int k = 399; k >= 0; k--) {
    RW_TEST_OK(rw_stepper_reverse_step(f.st, 0.01 * k, 0.01, f.Y, Z));
    rw_vec_copy(Z, f.Y);
  }
  double num = 0, den = 0;
  for (sunindextype i = 0; i < n; i++) {
    double d = rw_vec_data(Z)[i] - rw_vec_data(Y0)[i];
    num += d * d;
    den += rw_vec_data(Y0)[i] * rw_vec_data(Y0)[i];
  }
  cr_assert_leq(sqrt(num / den), 1e-11, "drift after 400 steps back: %g", sqrt(num / den));
  rw_vec_destroy(&Z);
  rw_vec_destroy(&Y0);
  fx_destroy(&f);
}

Test(revheun, second_order_convergence)
{
  /* against a run with h / 64 as the reference */
  double ref[6], err[3];
  fx f;
  fx_create(&f, 1.0, 0.02 / 64);
  fx_J(&f);
  memcpy(ref, rw_vec_data(f.Y), sizeof ref);
  fx_destroy(&f);
  for (int l = 0; l < 3; l++) {
    fx_create(&f, 1.0, 0.02 / (double)(1 << l));
    fx_J(&f);
    err[l] = 0;
    for (int i = 0; i < 6; i++)
      err[l] = fmax(err[l], fabs(rw_vec_data(f.Y)[i] - ref[i]));
    fx_destroy(&f);
  }
  for (int l = 0; l + 1 < 3; l++)
    cr_assert_gt(log2(err[l] / err[l + 1]), 1.8, "order %g", log2(err[l] / err[l + 1]));
}

Test(revheun, gradient_matches_finite_differences)
{
  fx f;
  fx_create(&f, 2.0, 0.02);
  double dJdp[4];
  fx_grad(&f, dJdp, NULL);
  double *p = rw_problem_params(f.prob);
  for (int k = 0; k < 4; k++) {
    double p0 = p[k], e = 1e-6 * fmax(1.0, fabs(p0));
    p[k] = p0 + e;
    double Jp = fx_J(&f);
    p[k] = p0 - e;
    double Jm = fx_J(&f);
    p[k] = p0;
    double fd = (Jp - Jm) / (2 * e);
    cr_assert_leq(fabs(fd - dJdp[k]), 1e-7 * fmax(1.0, fabs(fd)),
                  "dJ/dp[%d]: adjoint %.12g, FD %.12g", k, dJdp[k], fd);
  }
  for (int i = 0; i < 6; i++) {
    double *y = rw_vec_data(f.y0), y0 = y[i], e = 1e-6;
    y[i] = y0 + e;
    double Jp = fx_J(&f);
    y[i] = y0 - e;
    double Jm = fx_J(&f);
    y[i] = y0;
    double fd = (Jp - Jm) / (2 * e);
    cr_assert_leq(fabs(fd - rw_vec_data(f.g)[i]), 1e-7 * fmax(1.0, fabs(fd)),
                  "dJ/dy0[%d]: adjoint %.12g, FD %.12g", i, rw_vec_data(f.g)[i], fd);
  }
  fx_destroy(&f);
}

Test(revheun, taylor_second_order)
{
  fx f;
  fx_create(&f, 2.0, 0.02);
  double dJdp[4], dp[4] = {0.3, -0.2, 0.1, 0.25}, dy[6] = {0.1, -0.3, 0.2, 0.05, -0.1, 0.4};
  double J0 = fx_grad(&f, dJdp, NULL), slope = 0, res[5];
  for (int k = 0; k < 4; k++)
    slope += dJdp[k] * dp[k];
  for (int i = 0; i < 6; i++)
    slope += rw_vec_data(f.g)[i] * dy[i];
  double p0[4], y0[6], *p = rw_problem_params(f.prob), *y = rw_vec_data(f.y0);
  memcpy(p0, p, sizeof p0);
  memcpy(y0, y, sizeof y0);
  for (int l = 0; l < 5; l++) {
    double e = 0.005 / (double)(1 << l);
    for (int k = 0; k < 4; k++)
      p[k] = p0[k] + e * dp[k];
    for (int i = 0; i < 6; i++)
      y[i] = y0[i] + e * dy[i];
    res[l] = fabs(fx_J(&f) - J0 - e * slope);
  }
  memcpy(p, p0, sizeof p0);
  memcpy(y, y0, sizeof y0);
  for (int l = 0; l + 1 < 5; l++)
    cr_assert_gt(log2(res[l] / res[l + 1]), 1.8, "Taylor order %g at halving %d",
                 log2(res[l] / res[l + 1]), l);
  fx_destroy(&f);
}

Test(revheun, modes_agree)
{
  fx f;
  fx_create(&f, 5.0, 0.01);
  double gs[4], gc[4], gr[4], ys[6], yc[6];
  rw_adjoint_stats st;
  double Js = fx_grad(&f, gs, NULL);
  memcpy(ys, rw_vec_data(f.g), sizeof ys);
  f.opt.mode = RW_ADJOINT_CHECKPOINT;
  f.opt.ram_slots = 6;
  double Jc = fx_grad(&f, gc, &st);
  memcpy(yc, rw_vec_data(f.g), sizeof yc);
  cr_assert_eq(Jc, Js);
  cr_assert_gt(st.recomputed_steps, 0);
  cr_assert(memcmp(gc, gs, sizeof gs) == 0 && memcmp(yc, ys, sizeof ys) == 0,
            "checkpointed gradient differs from store mode");
  f.opt.mode = RW_ADJOINT_REVERSIBLE;
  double Jr = fx_grad(&f, gr, &st);
  cr_assert_eq(Jr, Js);
  cr_assert_eq(st.drift_fallbacks, 0);
  cr_assert_leq(st.drift_max, 1e-12, "drift %g", st.drift_max);
  for (int k = 0; k < 4; k++)
    cr_assert_leq(fabs(gr[k] - gs[k]), 1e-10 * fabs(gs[k]), "dJ/dp[%d]", k);
  for (int i = 0; i < 6; i++)
    cr_assert_leq(fabs(rw_vec_data(f.g)[i] - ys[i]), 1e-10 * fmax(1.0, fabs(ys[i])), "dJ/dy0[%d]",
                  i);
  fx_destroy(&f);
}

Test(revheun, refuses_unpartnered_problem)
{
  fx f;
  fx_create(&f, 1.0, 0.1);
  rw_stepper st = NULL;
  cr_assert_eq(rw_stepper_create_revheun(f.prob, &st), RW_ERR_ARG);
  cr_assert_null(st);
  cr_assert(strstr(rw_error_message(), "not a partnered problem") != NULL, "%s",
            rw_error_message());
  rw_error_clear();
  rw_problem *bad = &f.pair;
  rw_problem again = NULL;
  cr_assert_eq(rw_problem_create_partnered(*bad, &again), RW_ERR_ARG);
  rw_error_clear();
  fx_destroy(&f);
}
