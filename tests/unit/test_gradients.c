/* Gradient verification for every explicit RK stepper on both ODE problems:
 *  - Taylor remainder: |J(p + h dp) - J(p) - h dJ.dp| decays at second order in h over
 *    five halvings (first order would mean a wrong gradient), in p and in y0;
 *  - dJ/dp and dJ/dy0 against central finite differences;
 *  - store-stages and store-states adjoints agree bit for bit;
 *  - the tableaux converge at their stated order (a wrong coefficient would lower it);
 *  - the time grid lands exactly on T when dt does not divide T. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rw_test.h"

#include <string.h>

TestSuite(gradients, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

typedef struct {
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  rw_adjoint_options opt;
  N_Vector y0, y;
} fixture;

static void fx_create(fixture *f, const char *model, const char *method, double tf, double dt)
{
  memset(f, 0, sizeof *f);
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &f->ctx));
  rw_ode_config cfg = {.model = model,
                       .ensemble = 3,
                       .y0 = {strcmp(model, "vanderpol") == 0 ? 2.0 : 1.0, 0.5},
                       .spread = 0.25,
                       .target = {0.5, -0.25},
                       .terminal_weight = 1.0,
                       .running_weight = 0.3};
  RW_TEST_OK(rw_ode_problem_create(f->ctx, &cfg, &f->prob));
  RW_TEST_OK(rw_stepper_create_erk(f->prob, rw_tableau_find(method), &f->st));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y0));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y));
  RW_TEST_OK(rw_ode_initial_state(f->prob, f->y0));
  rw_adjoint_options_default(&f->opt);
  f->opt.tf = tf;
  f->opt.dt = dt;
}

static void fx_destroy(fixture *f)
{
  rw_vec_destroy(&f->y0);
  rw_vec_destroy(&f->y);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

/* J at parameters p and initial state y0 + s * dy (dy may be NULL). */
static double fx_J(fixture *f, const double *p, N_Vector dy, double s)
{
  int np = rw_problem_nparams(f->prob);
  double *pp = rw_problem_params(f->prob), save[8], J = 0.0;
  memcpy(save, pp, (size_t)np * sizeof(double));
  memcpy(pp, p, (size_t)np * sizeof(double));
  if (dy)
    N_VLinearSum(1.0, f->y0, s, dy, f->y);
  else
    N_VScale(1.0, f->y0, f->y);
  RW_TEST_OK(rw_forward_solve(f->prob, f->st, &f->opt, f->y, &J, NULL));
  memcpy(pp, save, (size_t)np * sizeof(double));
  return J;
}

static void fx_gradient(fixture *f, double *J, double *dJdp, N_Vector dJdy0)
{
  N_VScale(1.0, f->y0, f->y);
  RW_TEST_OK(rw_adjoint_solve(f->prob, f->st, &f->opt, f->y, J, dJdp, dJdy0, NULL));
}

static const char *methods[] = {"euler", "heun", "ssprk3", "rk4", "rk38", "dopri5"};
static const char *models[] = {"vanderpol", "lotkavolterra"};

/* Observed orders of the Taylor remainder over 5 halvings of h. */
static void taylor_check(fixture *f, int in_state)
{
  int np = rw_problem_nparams(f->prob);
  double J0, g[8], p0[8], dp[8] = {0}, gd = 0.0;
  N_Vector gy, dy = NULL;
  RW_TEST_OK(rw_problem_new_state(f->prob, &gy));
  fx_gradient(f, &J0, g, gy);
  memcpy(p0, rw_problem_params(f->prob), (size_t)np * sizeof(double));
  if (in_state) {
    RW_TEST_OK(rw_problem_new_state(f->prob, &dy));
    double *d = rw_vec_data(dy);
    for (sunindextype i = 0; i < rw_vec_local_length(dy); i++)
      d[i] = 0.3 + 0.1 * (double)(i % 5);
    gd = N_VDotProd(gy, dy);
  } else {
    for (int k = 0; k < np; k++) {
      dp[k] = 0.5 - 0.2 * k;
      gd += g[k] * dp[k];
    }
  }
  double prev = 0.0;
  for (int i = 0; i <= 5; i++) {
    double h = 1e-2 * pow(0.5, i), p[8];
    for (int k = 0; k < np; k++)
      p[k] = p0[k] + h * dp[k];
    double J = in_state ? fx_J(f, p0, dy, h) : fx_J(f, p, NULL, 0.0);
    double rem = fabs(J - J0 - h * gd);
    if (i > 0) {
      double order = log2(prev / rem);
      cr_assert(order > 1.8 && order < 2.2,
                "%s/%s Taylor (%s) halving %d: remainder %.3e -> %.3e, order %.3f (want 2)",
                rw_problem_name(f->prob), rw_stepper_name(f->st), in_state ? "y0" : "p", i, prev,
                rem, order);
    }
    prev = rem;
  }
  rw_vec_destroy(&gy);
  rw_vec_destroy(&dy);
}

Test(gradients, taylor_remainder_every_stepper_and_problem)
{
  for (size_t m = 0; m < sizeof models / sizeof *models; m++)
    for (size_t s = 0; s < sizeof methods / sizeof *methods; s++) {
      fixture f;
      fx_create(&f, models[m], methods[s], 1.5, 0.05);
      taylor_check(&f, 0);
      taylor_check(&f, 1);
      fx_destroy(&f);
    }
}

Test(gradients, finite_differences_every_stepper)
{
  for (size_t m = 0; m < sizeof models / sizeof *models; m++)
    for (size_t s = 0; s < sizeof methods / sizeof *methods; s++) {
      fixture f;
      /* dt = 0.07 does not divide tf = 1.0: the last step is shorter. */
      fx_create(&f, models[m], methods[s], 1.0, 0.07);
      int np = rw_problem_nparams(f.prob);
      double J, g[8], p0[8];
      N_Vector gy;
      RW_TEST_OK(rw_problem_new_state(f.prob, &gy));
      fx_gradient(&f, &J, g, gy);
      memcpy(p0, rw_problem_params(f.prob), (size_t)np * sizeof(double));
      for (int k = 0; k < np; k++) {
        double eps = 1e-5 * fmax(1.0, fabs(p0[k])), p[8];
        memcpy(p, p0, sizeof p);
        p[k] = p0[k] + eps;
        double Jp = fx_J(&f, p, NULL, 0);
        p[k] = p0[k] - eps;
        double Jm = fx_J(&f, p, NULL, 0);
        double fd = (Jp - Jm) / (2 * eps);
        cr_assert(fabs(fd - g[k]) <= 1e-7 * fmax(1.0, fabs(fd)),
                  "%s/%s dJ/d%s: adjoint %.12e, finite difference %.12e", models[m], methods[s],
                  rw_problem_param_name(f.prob, k), g[k], fd);
      }
      /* dJ/dy0 component by component. */
      N_Vector e;
      RW_TEST_OK(rw_problem_new_state(f.prob, &e));
      for (sunindextype i = 0; i < rw_vec_local_length(e); i++) {
        N_VConst(0.0, e);
        rw_vec_data(e)[i] = 1.0;
        double Jp = fx_J(&f, p0, e, 1e-6), Jm = fx_J(&f, p0, e, -1e-6);
        double fd = (Jp - Jm) / 2e-6, ad = rw_vec_data(gy)[i];
        cr_assert(fabs(fd - ad) <= 1e-7 * fmax(1.0, fabs(fd)),
                  "%s/%s dJ/dy0[%ld]: adjoint %.12e, finite difference %.12e", models[m],
                  methods[s], (long)i, ad, fd);
      }
      rw_vec_destroy(&e);
      rw_vec_destroy(&gy);
      fx_destroy(&f);
    }
}

Test(gradients, store_stages_bitwise_equal_store_states)
{
  for (size_t s = 0; s < sizeof methods / sizeof *methods; s++) {
    fixture f;
    fx_create(&f, "lotkavolterra", methods[s], 2.0, 0.03);
    double J1, J2, g1[4], g2[4];
    N_Vector a, b;
    RW_TEST_OK(rw_problem_new_state(f.prob, &a));
    RW_TEST_OK(rw_problem_new_state(f.prob, &b));
    fx_gradient(&f, &J1, g1, a);
    f.opt.store_stages = 1;
    rw_adjoint_stats st;
    N_VScale(1.0, f.y0, f.y);
    RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &J2, g2, b, &st));
    cr_assert(J1 == J2 && memcmp(g1, g2, sizeof g1) == 0, "%s: stage storage changed dJ/dp",
              methods[s]);
    cr_assert(memcmp(rw_vec_data(a), rw_vec_data(b), rw_vec_bytes(a)) == 0,
              "%s: stage storage changed dJ/dy0", methods[s]);
    cr_assert_eq(st.rhs_backward, 0, "store_stages must not recompute stages (%ld rhs calls)",
                 st.rhs_backward);
    rw_vec_destroy(&a);
    rw_vec_destroy(&b);
    fx_destroy(&f);
  }
}

/* Convergence order of the solution at T: a mistyped coefficient lowers it. */
Test(gradients, tableaux_converge_at_their_order)
{
  for (int i = 0; rw_tableau_get(i); i++) {
    const rw_tableau *tab = rw_tableau_get(i);
    double err[3], ref;
    fixture f;
    fx_create(&f, "lotkavolterra", tab->name, 1.0, 1.0 / 4096);
    f.prob = f.prob; /* reference with rk4 at a tiny step */
    rw_stepper ref_st;
    RW_TEST_OK(rw_stepper_create_erk(f.prob, rw_tableau_find("rk4"), &ref_st));
    rw_stepper save = f.st;
    f.st = ref_st;
    ref = fx_J(&f, rw_problem_params(f.prob), NULL, 0);
    f.st = save;
    rw_stepper_destroy(&ref_st);
    for (int k = 0; k < 3; k++) {
      f.opt.dt = 0.05 * pow(0.5, k);
      err[k] = fabs(fx_J(&f, rw_problem_params(f.prob), NULL, 0) - ref);
    }
    double order = log2(err[1] / err[2]);
    cr_assert(fabs(order - tab->order) < 0.35,
              "%s: observed order %.3f (errors %.3e %.3e %.3e), stated %d", tab->name, order,
              err[0], err[1], err[2], tab->order);
    fx_destroy(&f);
  }
}

Test(gradients, time_grid_lands_on_T)
{
  long n;
  double last;
  RW_TEST_OK(rw_time_grid(0.0, 1.0, 0.3, &n, &last));
  cr_assert_eq(n, 4);
  cr_assert(fabs(last - 0.1) < 1e-15, "last step %.17g", last);
  cr_assert_eq(rw_time_grid_point(0.0, 1.0, 0.3, n, n), 1.0);
  RW_TEST_OK(rw_time_grid(0.0, 1.0, 0.1, &n, &last)); /* 0.1 divides 1 up to rounding */
  cr_assert_eq(n, 10);
  RW_TEST_OK(rw_time_grid(0.0, 1.0, 2.0, &n, &last));
  cr_assert(n == 1 && last == 1.0);
  cr_assert_eq(rw_time_grid(0.0, 1.0, -0.1, &n, &last), RW_ERR_ARG);
  cr_assert_eq(rw_time_grid(1.0, 1.0, 0.1, &n, &last), RW_ERR_ARG);
  cr_assert_eq(rw_time_grid(0.0, 1.0, NAN, &n, &last), RW_ERR_ARG);
  rw_error_clear();
}

Test(gradients, no_leaks_and_allocation_failures_are_clean)
{
  size_t before = rw_mem_current();
  /* Make each allocation fail in turn: every failure must return RW_ERR_MEM with a message
   * and free everything allocated so far. */
  for (long k = 1; k < 200; k++) {
    fixture f;
    memset(&f, 0, sizeof f);
    RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &f.ctx));
    rw_ode_config cfg = {.model = "vanderpol", .ensemble = 2, .y0 = {1, 0}, .terminal_weight = 1};
    size_t base = rw_mem_current();
    rw_mem_fail_after(k);
    int ierr = rw_ode_problem_create(f.ctx, &cfg, &f.prob);
    if (!ierr) ierr = rw_stepper_create_erk(f.prob, rw_tableau_find("rk4"), &f.st);
    if (!ierr) ierr = rw_problem_new_state(f.prob, &f.y);
    double J, g[1];
    if (!ierr) {
      rw_adjoint_options_default(&f.opt);
      ierr = rw_adjoint_solve(f.prob, f.st, &f.opt, f.y, &J, g, NULL, NULL);
    }
    rw_mem_fail_after(0);
    rw_vec_destroy(&f.y);
    rw_stepper_destroy(&f.st);
    rw_problem_destroy(&f.prob);
    cr_assert_eq(rw_mem_current(), base, "leak after failing allocation %ld", k);
    rw_context_destroy(&f.ctx);
    if (!ierr) break; /* no allocation left to fail */
    cr_assert_eq(ierr, RW_ERR_MEM, "allocation %ld: got %d: %s", k, ierr, rw_error_message());
    cr_assert(strstr(rw_error_message(), "injected") != NULL);
    rw_error_clear();
  }
  cr_assert_eq(rw_mem_current(), before);
}
