/* The leapfrog stepper on its own, with a small problem independent of the wave code:
 * M nonlinear oscillators u'' = -k u - beta u^3 (state (u^n, u^{n-1}) interleaved), running
 * cost r(t, y) = 1/2 (1 + t) sum u^2 (time-dependent, so evaluating it at the wrong time or on
 * the wrong state shows), parameters k, beta.
 *  - second-order convergence of the constant-step scheme (linear case, exact solution);
 *  - dJ/dk, dJ/dbeta and dJ/dy0 of full adjoint solves against central differences (1e-6),
 *    also when dt does not divide tf (the shortened last step: the adjoint is the exact
 *    transpose for any h, even though the scheme is then only first order at that step);
 *  - Taylor remainder in k of second order;
 *  - creation fails for a state that is not 2 components per node. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_leapfrog.h"
#include "rw_test.h"

#include <float.h>
#include <math.h>
#include <string.h>

TestSuite(leapfrog, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

#define M 3

static int osc_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)c, (void)t;
  const double *u = rw_vec_data(y);
  double *o = rw_vec_data(f);
  for (int i = 0; i < M; i++) {
    double x = u[2 * i];
    o[2 * i] = -p[0] * x - p[1] * x * x * x;
    o[2 * i + 1] = 0.0;
  }
  return 0;
}

static int osc_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)c, (void)t;
  const double *u = rw_vec_data(y), *wv = rw_vec_data(w);
  double *o = rw_vec_data(out);
  for (int i = 0; i < M; i++) {
    double x = u[2 * i];
    o[2 * i] += (-p[0] - 3.0 * p[1] * x * x) * wv[2 * i];
  }
  return 0;
}

static int osc_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)c, (void)t, (void)p;
  const double *u = rw_vec_data(y), *wv = rw_vec_data(w);
  for (int i = 0; i < M; i++) {
    double x = u[2 * i];
    out[0] += -x * wv[2 * i];
    out[1] += -x * x * x * wv[2 * i];
  }
  return 0;
}

static int osc_running(void *c, double t, N_Vector y, const double *p, double *r)
{
  (void)c, (void)p;
  const double *u = rw_vec_data(y);
  double s = 0.0;
  for (int i = 0; i < M; i++)
    s += u[2 * i] * u[2 * i];
  *r = 0.5 * (1.0 + t) * s;
  return 0;
}

static int osc_running_grad(void *c, double t, N_Vector y, const double *p, double w, N_Vector ry,
                            double *rp)
{
  (void)c, (void)p, (void)rp;
  const double *u = rw_vec_data(y);
  double *g = rw_vec_data(ry);
  for (int i = 0; i < M; i++)
    g[2 * i] += w * (1.0 + t) * u[2 * i];
  return 0;
}

typedef struct {
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  rw_adjoint_options opt;
  N_Vector y0, y, g;
} fx;

static void fx_create(fx *f, double k, double beta, double tf, double dt)
{
  memset(f, 0, sizeof *f);
  RW_TEST_OK(rw_context_create(MPI_COMM_SELF, &f->ctx));
  static const rw_problem_ops ops = {.rhs = osc_rhs,
                                     .vjp_y = osc_vjp_y,
                                     .vjp_p = osc_vjp_p,
                                     .running = osc_running,
                                     .running_grad = osc_running_grad};
  static const char *const names[] = {"k", "beta"};
  RW_TEST_OK(rw_problem_create(f->ctx, "oscillators", &ops, NULL, 2 * M, 2, names, &f->prob));
  rw_problem_params(f->prob)[0] = k;
  rw_problem_params(f->prob)[1] = beta;
  RW_TEST_OK(rw_stepper_create_leapfrog(f->prob, &f->st));
  cr_assert_str_eq(rw_stepper_name(f->st), "leapfrog");
  cr_assert_eq(rw_stepper_num_stage_vectors(f->st), 1);
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y0));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->g));
  double *u = rw_vec_data(f->y0);
  for (int i = 0; i < M; i++) {
    u[2 * i] = 0.5 + 0.2 * i;
    u[2 * i + 1] = 0.45 + 0.2 * i;
  }
  rw_adjoint_options_default(&f->opt);
  f->opt.tf = tf;
  f->opt.dt = dt;
}

static void fx_destroy(fx *f)
{
  rw_vec_destroy(&f->y0);
  rw_vec_destroy(&f->y);
  rw_vec_destroy(&f->g);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

static double fx_J(fx *f)
{
  double J;
  rw_vec_copy(f->y0, f->y);
  RW_TEST_OK(rw_forward_solve(f->prob, f->st, &f->opt, f->y, &J, NULL));
  return J;
}

Test(leapfrog, second_order_convergence)
{
  double err[4], w = 2.0, T = 1.0;
  for (int l = 0; l < 4; l++) {
    fx f;
    double h = 0.05 / (double)(1 << l);
    fx_create(&f, w * w, 0.0, T, h);
    double *u = rw_vec_data(f.y0);
    for (int i = 0; i < M; i++) {
      u[2 * i] = 1.0;            /* u(0) = 1 */
      u[2 * i + 1] = cos(w * h); /* u(-h), exact */
    }
    fx_J(&f);
    err[l] = fabs(rw_vec_data(f.y)[0] - cos(w * T));
    fx_destroy(&f);
  }
  for (int l = 0; l + 1 < 4; l++)
    cr_assert_gt(log2(err[l] / err[l + 1]), 1.9, "order %g between h/%d and h/%d",
                 log2(err[l] / err[l + 1]), 1 << l, 1 << (l + 1));
}

/* dJ/dp and dJ/dy0 against central differences. */
static void check_fd(double tf, double dt)
{
  fx f;
  fx_create(&f, 4.0, 0.7, tf, dt);
  double *p = rw_problem_params(f.prob), dJdp[2], J;
  rw_vec_copy(f.y0, f.y);
  RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &J, dJdp, f.g, NULL));
  double e = 1e-6;
  for (int k = 0; k < 2; k++) {
    double s = p[k];
    p[k] = s + e;
    double Jp = fx_J(&f);
    p[k] = s - e;
    double Jm = fx_J(&f);
    p[k] = s;
    double fd = (Jp - Jm) / (2.0 * e);
    cr_assert_lt(rw_test_relerr(fd, dJdp[k]), 1e-6, "dJ/d%s: FD %.12e adjoint %.12e",
                 rw_problem_param_name(f.prob, k), fd, dJdp[k]);
  }
  for (int i = 0; i < 2 * M; i++) {
    double *u = rw_vec_data(f.y0), s = u[i];
    u[i] = s + e;
    double Jp = fx_J(&f);
    u[i] = s - e;
    double Jm = fx_J(&f);
    u[i] = s;
    double fd = (Jp - Jm) / (2.0 * e);
    cr_assert_lt(rw_test_relerr(fd, rw_vec_data(f.g)[i]), 1e-6,
                 "dJ/dy0[%d]: FD %.12e adjoint %.12e", i, fd, rw_vec_data(f.g)[i]);
  }
  fx_destroy(&f);
}

Test(leapfrog, gradient_matches_finite_differences) { check_fd(2.0, 0.05); }

Test(leapfrog, gradient_exact_with_shortened_last_step) { check_fd(2.0, 0.03); }

Test(leapfrog, taylor_second_order_in_k)
{
  fx f;
  fx_create(&f, 4.0, 0.7, 2.0, 0.05);
  double *p = rw_problem_params(f.prob), dJdp[2], J0, res[5];
  rw_vec_copy(f.y0, f.y);
  RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &J0, dJdp, NULL, NULL));
  double k0 = p[0];
  for (int l = 0; l < 5; l++) {
    double e = 0.1 / (double)(1 << l);
    p[0] = k0 + e;
    res[l] = fabs(fx_J(&f) - J0 - e * dJdp[0]);
  }
  p[0] = k0;
  for (int l = 0; l + 1 < 5; l++)
    cr_assert_gt(log2(res[l] / res[l + 1]), 1.8, "Taylor order %g at halving %d",
                 log2(res[l] / res[l + 1]), l);
  fx_destroy(&f);
}

Test(leapfrog, rejects_odd_state_length)
{
  rw_context ctx;
  rw_problem prob;
  rw_stepper st = NULL;
  RW_TEST_OK(rw_context_create(MPI_COMM_SELF, &ctx));
  static const rw_problem_ops ops = {.rhs = osc_rhs};
  RW_TEST_OK(rw_problem_create(ctx, "odd", &ops, NULL, 3, 0, NULL, &prob));
  cr_assert_eq(rw_stepper_create_leapfrog(prob, &st), RW_ERR_ARG);
  cr_assert_null(st);
  cr_assert(strstr(rw_error_message(), "two interleaved components") != NULL, "%s",
            rw_error_message());
  rw_error_clear();
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

/* The inverse step: one step undone to within a few units in the last place, and 2000 steps
 * undone one by one to within 1e-12 relative (rounding only, not amplified). */
Test(leapfrog, inverse_step_undoes_steps)
{
  fx f;
  fx_create(&f, 4.0, 0.7, 2.0, 0.01);
  N_Vector z = NULL;
  RW_TEST_OK(rw_problem_new_state(f.prob, &z));
  cr_assert_eq(rw_stepper_reverse_kind(f.st), RW_REVERSE_INVERSE);
  rw_vec_copy(f.y0, f.y);
  RW_TEST_OK(rw_stepper_step(f.st, 0.3, 0.01, f.y, f.y, NULL, NULL));
  RW_TEST_OK(rw_stepper_reverse_step(f.st, 0.3, 0.01, f.y, z));
  const double *a = rw_vec_data(z), *b = rw_vec_data(f.y0);
  for (int i = 0; i < 2 * M; i++)
    cr_assert_leq(fabs(a[i] - b[i]), 4 * DBL_EPSILON * fabs(b[i]), "entry %d: %.17g vs %.17g", i,
                  a[i], b[i]);
  rw_vec_copy(f.y0, f.y);
  for (int n = 0; n < 2000; n++)
    RW_TEST_OK(rw_stepper_step(f.st, 0.01 * n, 0.01, f.y, f.y, NULL, NULL));
  for (int n = 1999; n >= 0; n--) {
    RW_TEST_OK(rw_stepper_reverse_step(f.st, 0.01 * n, 0.01, f.y, z));
    rw_vec_copy(z, f.y);
  }
  double num = 0, den = 0;
  for (int i = 0; i < 2 * M; i++) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  cr_assert_leq(sqrt(num / den), 1e-12, "drift after 2000 steps back: %g", sqrt(num / den));
  cr_assert_eq(rw_stepper_reverse_step(f.st, 0.0, 0.01, f.y, f.y), RW_ERR_ARG);
  rw_error_clear();
  rw_vec_destroy(&z);
  fx_destroy(&f);
}

/* adjoint_mode reversible: the gradient of store mode to 1e-10 with drift at rounding level
 * and no fallback; with a tolerance no rebuilt state meets, every segment falls back and the
 * gradient is store mode's bit for bit; abort returns RW_ERR_DRIFT with no gradient. */
Test(leapfrog, reversible_mode_against_store)
{
  fx f;
  fx_create(&f, 4.0, 0.7, 4.0, 0.01);
  double Js, Jr, gs[2], gr[2], ga[2] = {-1, -1};
  N_Vector ls = NULL, lr = NULL;
  RW_TEST_OK(rw_problem_new_state(f.prob, &ls));
  RW_TEST_OK(rw_problem_new_state(f.prob, &lr));
  rw_adjoint_stats st;
  rw_vec_copy(f.y0, f.y);
  RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &Js, gs, ls, NULL));
  f.opt.mode = RW_ADJOINT_REVERSIBLE;
  f.opt.ram_slots = 8;
  rw_vec_copy(f.y0, f.y);
  RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &Jr, gr, lr, &st));
  cr_assert_eq(Jr, Js);
  cr_assert_eq(st.anchors, 4);
  cr_assert_eq(st.anchor_interval, 100);
  cr_assert_eq(st.fallback_slots, 4);
  cr_assert_eq(st.drift_segments, 4);
  cr_assert_eq(st.drift_fallbacks, 0);
  cr_assert_eq(st.rebuilt_steps, 400);
  cr_assert_leq(st.drift_max, 1e-13, "drift %g", st.drift_max);
  for (int k = 0; k < 2; k++)
    cr_assert_leq(fabs(gr[k] - gs[k]), 1e-10 * fabs(gs[k]), "dJ/dp[%d] %.17g vs %.17g", k, gr[k],
                  gs[k]);
  f.opt.drift_tol = 1e-300;
  rw_vec_copy(f.y0, f.y);
  RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &Jr, gr, lr, &st));
  cr_assert_eq(st.drift_fallbacks, 4);
  cr_assert_gt(st.fallback_steps, 0);
  cr_assert(memcmp(gr, gs, sizeof gs) == 0, "fallback dJ/dp differs from store mode");
  cr_assert(memcmp(rw_vec_data(lr), rw_vec_data(ls), 2 * M * sizeof(double)) == 0,
            "fallback dJ/dy0 differs from store mode");
  f.opt.drift_action = RW_DRIFT_ABORT;
  rw_vec_copy(f.y0, f.y);
  cr_assert_eq(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &Jr, ga, NULL, NULL), RW_ERR_DRIFT);
  cr_assert(strstr(rw_error_message(), "drifted by") != NULL, "%s", rw_error_message());
  cr_assert(ga[0] == -1 && ga[1] == -1, "abort wrote a gradient");
  rw_error_clear();
  /* a budget of one slot, and the wrong kind of stepper, are refused before any step */
  f.opt.ram_slots = 1;
  cr_assert_eq(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &Jr, ga, NULL, NULL), RW_ERR_BUDGET);
  rw_error_clear();
  f.opt.ram_slots = 8;
  f.opt.mode = RW_ADJOINT_BACKSOLVE;
  cr_assert_eq(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &Jr, ga, NULL, NULL), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "backward") != NULL, "%s", rw_error_message());
  rw_error_clear();
  rw_vec_destroy(&ls);
  rw_vec_destroy(&lr);
  fx_destroy(&f);
}

/* The explicit RK backward step (backsolve's rebuild): undoing one RK4 step leaves an error of
 * order h^5 (the local errors of the two steps do not cancel). */
Test(leapfrog, erk_backward_step_order)
{
  fx f;
  fx_create(&f, 4.0, 0.7, 2.0, 0.01);
  rw_stepper rk = NULL;
  RW_TEST_OK(rw_stepper_create_erk(f.prob, rw_tableau_find("rk4"), &rk));
  cr_assert_eq(rw_stepper_reverse_kind(rk), RW_REVERSE_BACKWARD);
  N_Vector z = NULL;
  RW_TEST_OK(rw_problem_new_state(f.prob, &z));
  double err[4];
  for (int l = 0; l < 4; l++) {
    double h = 0.2 / (double)(1 << l);
    rw_vec_copy(f.y0, f.y);
    RW_TEST_OK(rw_stepper_step(rk, 0.1, h, f.y, f.y, NULL, NULL));
    RW_TEST_OK(rw_stepper_reverse_step(rk, 0.1, h, f.y, z));
    err[l] = 0;
    for (int i = 0; i < 2 * M; i++)
      err[l] = fmax(err[l], fabs(rw_vec_data(z)[i] - rw_vec_data(f.y0)[i]));
  }
  for (int l = 0; l + 1 < 4; l++)
    cr_assert_gt(log2(err[l] / err[l + 1]), 4.5, "order %g at halving %d (errors %g, %g)",
                 log2(err[l] / err[l + 1]), l, err[l], err[l + 1]);
  rw_vec_destroy(&z);
  rw_stepper_destroy(&rk);
  fx_destroy(&f);
}
