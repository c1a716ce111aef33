/* A user's own problem that lacks an op the adjoint needs for what is active is refused by
 * rw_adjoint_solve before its forward sweep (no right-hand side evaluated), with a message
 * naming the op and what to freeze instead; freezing what the missing op would differentiate
 * makes the same problem run, and leaves dJ/dp as the caller set it. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_stepper.h"
#include "rw_test.h"

#include <string.h>

TestSuite(user_problem, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

/* y' = -p0 y, J = 1/2 |y(T)|^2 */
static int decay_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)c, (void)t;
  N_VScale(-p[0], y, f);
  return 0;
}
static int decay_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)c, (void)t, (void)y;
  N_VLinearSum(1.0, out, -p[0], w, out);
  return 0;
}
static int half_sq(void *c, double t, N_Vector y, const double *p, double *g)
{
  (void)c, (void)t, (void)p;
  *g = 0.5 * N_VDotProd(y, y);
  return 0;
}
static int half_sq_grad(void *c, double t, N_Vector y, const double *p, N_Vector gy, double *gp)
{
  (void)c, (void)t, (void)p, (void)gp;
  N_VScale(1.0, y, gy);
  return 0;
}

static int run(rw_problem prob, rw_problem_counts *cnt, double *dJdp)
{
  rw_stepper st = NULL;
  N_Vector y = NULL, g = NULL;
  RW_TEST_OK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
  RW_TEST_OK(rw_problem_new_state(prob, &y));
  RW_TEST_OK(rw_problem_new_state(prob, &g));
  N_VConst(1.0, y);
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.tf = 1.0, opt.dt = 0.1;
  double J = 0.0;
  rw_problem_reset_counts(prob);
  int rc = rw_adjoint_solve(prob, st, &opt, y, &J, dJdp, g, NULL);
  rw_problem_get_counts(prob, cnt);
  rw_vec_destroy(&y), rw_vec_destroy(&g);
  rw_stepper_destroy(&st);
  return rc;
}

Test(user_problem, missing_vjp_p_refused_before_the_forward_sweep)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  static const rw_problem_ops ops = {
      .rhs = decay_rhs, .vjp_y = decay_vjp_y, .terminal = half_sq, .terminal_grad = half_sq_grad};
  static const char *const names[] = {"rate"};
  rw_problem prob = NULL;
  RW_TEST_OK(rw_problem_create(ctx, "decay", &ops, NULL, 4, 1, names, &prob));
  rw_problem_params(prob)[0] = 0.5;
  rw_problem_counts c;
  double dJdp[1] = {42.0};
  int rc = run(prob, &c, dJdp);
  cr_assert_eq(rc, RW_ERR_NOT_IMPLEMENTED, "rw_adjoint_solve returned %d", rc);
  cr_assert_eq(c.rhs, 0, "%ld right-hand sides evaluated before the refusal", c.rhs);
  const char *msg = rw_error_message();
  cr_assert(strstr(msg, "'decay'") && strstr(msg, "vjp_p") && strstr(msg, "rw_problem_set_active"),
            "message: %s", msg);
  rw_error_clear();
  rw_problem_set_active(prob, 0, 0); /* the rate frozen: nothing needs vjp_p */
  RW_TEST_OK(run(prob, &c, dJdp));
  cr_assert_gt(c.rhs, 0);
  cr_assert_eq(dJdp[0], 42.0, "dJ/dp of a frozen parameter was overwritten (%g)", dJdp[0]);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

Test(user_problem, terminal_cost_without_its_gradient_refused)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  static const rw_problem_ops ops = {.rhs = decay_rhs, .vjp_y = decay_vjp_y, .terminal = half_sq};
  rw_problem prob = NULL;
  RW_TEST_OK(rw_problem_create(ctx, "nograd", &ops, NULL, 4, 1, NULL, &prob));
  rw_problem_params(prob)[0] = 0.5;
  rw_problem_set_active(prob, 0, 0);
  rw_problem_counts c;
  double dJdp[1] = {0.0};
  int rc = run(prob, &c, dJdp);
  cr_assert_eq(rc, RW_ERR_NOT_IMPLEMENTED, "rw_adjoint_solve returned %d", rc);
  cr_assert_eq(c.rhs, 0);
  cr_assert(strstr(rw_error_message(), "terminal_grad"), "message: %s", rw_error_message());
  rw_error_clear();
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}
