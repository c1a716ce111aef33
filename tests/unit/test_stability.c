/* Explicit stability limits: the real stability interval computed from each built-in tableau
 * against the values in the literature (Hairer & Wanner, Solving ODEs II, IV.2) and against
 * the stability polynomial itself; the Gray-Scott and Burgers eigenvalue bounds against
 * their formulas; the dt check in each mode; the blow-up test on finite, huge and NaN
 * states. */
#include "rewind/rw_burgers.h"
#include "rewind/rw_grayscott.h"
#include "rewind/rw_stability.h"
#include "rw_test.h"

#include <math.h>
#include <string.h>

TestSuite(stability, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

/* R(z) by running the method on y' = y with step z: stage by stage, no polynomial. */
static double run_one_step(const rw_tableau *t, double z)
{
  double k[16];
  int s = t->stages;
  double y = 1.0;
  for (int i = 0; i < s; i++) {
    double yi = 1.0;
    for (int j = 0; j < i; j++)
      yi += z * t->a[i * s + j] * k[j];
    k[i] = yi;
  }
  for (int i = 0; i < s; i++)
    y += z * t->b[i] * k[i];
  return y;
}

Test(stability, real_intervals_of_the_builtin_tableaux)
{
  static const struct {
    const char *name;
    double beta;
  } want[] = {{"euler", 2.0},  {"heun", 2.0},    {"ssprk3", 2.5127},
              {"rk4", 2.7853}, {"rk38", 2.7853}, {"dopri5", 3.3066}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const rw_tableau *t = rw_tableau_find(want[i].name);
    cr_assert_not_null(t, "%s", want[i].name);
    double beta = 0.0;
    RW_TEST_OK(rw_tableau_real_stability(t, &beta));
    cr_expect(fabs(beta - want[i].beta) < 1e-3, "%s: beta = %.6f, literature %.4f", want[i].name,
              beta, want[i].beta);
    /* Independently of the polynomial: one step on y' = y stays bounded up to beta, not
     * beyond. */
    for (double z = -0.01; z >= -beta; z -= 0.01)
      cr_expect(fabs(run_one_step(t, z)) <= 1.0 + 1e-9, "%s: |R(%g)| > 1", want[i].name, z);
    cr_expect(fabs(run_one_step(t, -beta - 1e-6)) > 1.0, "%s: |R| <= 1 past beta", want[i].name);
  }
  double beta = 0.0;
  cr_expect_eq(rw_tableau_real_stability(NULL, &beta), RW_ERR_ARG);
  rw_error_clear();
  /* a user's tableau without a or b is refused, not read through NULL; one without a name is
   * called "custom" in the messages */
  static const double b2[2] = {0.5, 0.5}, a2[4] = {0, 0, 1, 0};
  rw_tableau t = {.stages = 2, .order = 2, .b = b2};
  cr_expect_eq(rw_tableau_real_stability(&t, &beta), RW_ERR_ARG);
  cr_expect(strstr(rw_error_message(), "'custom' has no a"), "%s", rw_error_message());
  rw_error_clear();
  t.a = a2;
  t.b = NULL;
  cr_expect_eq(rw_tableau_real_stability(&t, &beta), RW_ERR_ARG);
  cr_expect(strstr(rw_error_message(), "has no b"), "%s", rw_error_message());
  rw_error_clear();
  t.b = b2;
  RW_TEST_OK(rw_tableau_real_stability(&t, &beta));
  cr_expect(fabs(beta - 2.0) < 1e-9, "Heun's interval %g", beta);
}

Test(stability, check_dt_modes)
{
  rw_context ctx = NULL;
  double limit = 0.0;
  const rw_tableau *rk4 = rw_tableau_find("rk4");
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  /* Within the limit: fine in every mode. */
  RW_TEST_OK(
      rw_stability_check_dt(ctx, rk4, 0.1, 0.0, "test", 10.0, "rho", RW_STABILITY_ERROR, &limit));
  cr_expect(fabs(limit - 0.27853) < 1e-4, "limit %g", limit);
  /* Above: an error naming dt, the limit and the stepper; warn and off let it run. */
  int ierr = rw_stability_check_dt(ctx, rk4, 0.5, 1.0, "command line", 10.0, "the bound",
                                   RW_STABILITY_ERROR, &limit);
  cr_expect_eq(ierr, RW_ERR_DECK);
  const char *msg = rw_error_message();
  cr_expect(strstr(msg, "dt = 0.5 (from command line) exceeds the explicit stability limit "
                        "0.2785 of stepper rk4, by a factor 1.8") &&
                strstr(msg, "stability_check: warn"),
            "%s", msg);
  rw_error_clear();
  RW_TEST_OK(rw_stability_check_dt(ctx, rk4, 0.5, 1.0, "x", 10.0, "r", RW_STABILITY_WARN, &limit));
  RW_TEST_OK(rw_stability_check_dt(ctx, rk4, 0.5, 1.0, "x", 10.0, "r", RW_STABILITY_OFF, &limit));
  /* A dt beyond tf - t0 is one step of tf - t0: that step is what must be stable. */
  RW_TEST_OK(
      rw_stability_check_dt(ctx, rk4, 1e300, 0.2, "x", 10.0, "r", RW_STABILITY_ERROR, &limit));
  cr_expect_eq(
      rw_stability_check_dt(ctx, rk4, 1e300, 0.5, "deck", 10.0, "r", RW_STABILITY_ERROR, &limit),
      RW_ERR_DECK);
  cr_expect(strstr(rw_error_message(), "dt = 1e+300 (from deck; one step of tf - t0 = 0.5) "
                                       "exceeds the explicit stability limit 0.2785"),
            "%s", rw_error_message());
  rw_error_clear();
  /* No eigenvalue bound: no limit. */
  RW_TEST_OK(
      rw_stability_check_dt(ctx, rk4, 1e300, 0.0, "x", 0.0, "r", RW_STABILITY_ERROR, &limit));
  cr_expect(isinf(limit));
  rw_context_destroy(&ctx);
}

Test(stability, grayscott_and_burgers_bounds)
{
  rw_context ctx = NULL;
  rw_problem gs = NULL, bg = NULL;
  N_Vector u = NULL;
  double rho = 0.0;
  size_t mem0 = rw_mem_current();
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_gs_config gc;
  rw_gs_config_default(&gc);
  gc.n = 16;
  gc.dim = 3;
  gc.length = 2.0;
  RW_TEST_OK(rw_gs_problem_create(ctx, &gc, &gs));
  double *p = rw_problem_params(gs);
  p[0] = 1e-3, p[1] = 3e-3, p[2] = 0.05, p[3] = -0.2;
  RW_TEST_OK(rw_gs_eigen_bound(gs, &rho));
  double h = 2.0 / 16.0;
  cr_expect(rw_test_relerr(rho, 4.0 * 3 * 3e-3 / (h * h) + 0.15) < 1e-14, "gs rho %g", rho);

  rw_burgers_config bc;
  memset(&bc, 0, sizeof bc);
  bc.n[0] = 20, bc.n[1] = 10;
  bc.hi[0] = 1.0, bc.hi[1] = 2.0;
  bc.nu = 0.01, bc.offset = -0.5, bc.amplitude = -1.5, bc.width = 0.1;
  bc.center[0] = bc.center[1] = 0.5;
  RW_TEST_OK(rw_burgers_problem_create(ctx, &bc, &bg));
  RW_TEST_OK(rw_problem_new_state(bg, &u));
  RW_TEST_OK(rw_burgers_initial_state(bg, u));
  double umax = 0.0;
  RW_TEST_OK(rw_state_max_abs(u, &umax));
  cr_expect(umax > 0.5 && umax <= 2.0, "max |u0| = %g", umax);
  RW_TEST_OK(rw_burgers_eigen_bound(bg, u, &rho));
  double hx = 0.05, hy = 0.2;
  double want = 4.0 * 0.01 * (1 / (hx * hx) + 1 / (hy * hy)) + umax * (1 / hx + 1 / hy);
  cr_expect(rw_test_relerr(rho, want) < 1e-14, "burgers rho %g, want %g", rho, want);
  cr_expect_eq(rw_gs_eigen_bound(bg, &rho), RW_ERR_ARG); /* not a Gray-Scott problem */
  rw_error_clear();
  rw_vec_destroy(&u);
  rw_problem_destroy(&bg);
  rw_problem_destroy(&gs);
  rw_context_destroy(&ctx);
  cr_expect_eq(rw_mem_current(), mem0);
}

Test(stability, blowup_test)
{
  rw_context ctx = NULL;
  N_Vector y = NULL;
  double amax = 0.0;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  RW_TEST_OK(rw_vec_create(ctx, 5, &y));
  double *d = rw_vec_data(y);
  d[0] = 1.0, d[3] = -7.0;
  RW_TEST_OK(rw_state_max_abs(y, &amax));
  cr_expect_eq(amax, 7.0);
  RW_TEST_OK(rw_state_check_blowup(y, 7.0, 10, 1.0, 0.1));
  cr_expect_eq(rw_state_check_blowup(y, 6.5, 10, 1.0, 0.1), RW_ERR_STEP);
  cr_expect(strstr(rw_error_message(), "blew up at step 10 (t = 1)"), "%s", rw_error_message());
  rw_error_clear();
  d[4] = NAN; /* NaN fails every comparison: it must still be caught */
  RW_TEST_OK(rw_state_max_abs(y, &amax));
  cr_expect(isinf(amax));
  cr_expect_eq(rw_state_check_blowup(y, 1e300, 20, 2.0, 0.1), RW_ERR_STEP);
  cr_expect(strstr(rw_error_message(), "not finite"), "%s", rw_error_message());
  rw_error_clear();
  rw_vec_destroy(&y);
  rw_context_destroy(&ctx);
}
