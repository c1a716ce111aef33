/* A tableau of the user's own (rw_stepper.h: rw_stepper_create_erk copies any explicit
 * tableau): one that is complete gives a stepper named after it; one with a field missing is
 * refused with RW_ERR_ARG and a message naming the field, never read through a NULL pointer;
 * one without a name gets one. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rw_test.h"

#include <string.h>

TestSuite(user_tableau, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

/* Ralston's third-order method, with an embedded second-order pair (Bogacki-Shampine's b as
 * bhat would need four stages; here any bhat serves the checks). */
static const double rc[3] = {0.0, 0.5, 0.75};
static const double ra[9] = {0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.75, 0.0};
static const double rb[3] = {2.0 / 9.0, 1.0 / 3.0, 4.0 / 9.0};
static const double rbhat[3] = {0.0, 1.0, 0.0};

static rw_problem vdp(rw_context ctx)
{
  rw_problem p;
  rw_ode_config cfg = {.model = "vanderpol", .ensemble = 2, .y0 = {2, 0}, .terminal_weight = 1};
  RW_TEST_OK(rw_ode_problem_create(ctx, &cfg, &p));
  return p;
}

static rw_tableau ralston(void)
{
  return (rw_tableau){.name = "ralston3", .stages = 3, .order = 3, .c = rc, .a = ra, .b = rb};
}

Test(user_tableau, complete_tableau_runs_and_keeps_its_name)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_problem prob = vdp(ctx);
  rw_stepper st = NULL;
  rw_tableau t = ralston();
  RW_TEST_OK(rw_stepper_create_erk(prob, &t, &st));
  cr_assert_str_eq(rw_stepper_name(st), "ralston3");
  cr_assert_eq(rw_stepper_is_adaptive(st, NULL), 0);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

Test(user_tableau, missing_fields_are_refused_with_their_name)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_problem prob = vdp(ctx);
  rw_stepper st = NULL;
  const char *field[3] = {"c", "a", "b"};
  for (int f = 0; f < 3; f++) {
    rw_tableau t = ralston();
    if (f == 0) t.c = NULL;
    if (f == 1) t.a = NULL;
    if (f == 2) t.b = NULL;
    rw_error_clear();
    int ierr = rw_stepper_create_erk(prob, &t, &st);
    cr_assert_eq(ierr, RW_ERR_ARG, "tableau without %s: got %d", field[f], ierr);
    cr_assert_null(st);
    char want[32];
    snprintf(want, sizeof want, "no %s", field[f]);
    cr_assert(strstr(rw_error_message(), want), "message '%s' does not say '%s'",
              rw_error_message(), want);
  }
  /* an embedded pair needs its order: without it the stepper would silently not adapt */
  rw_tableau t = ralston();
  t.bhat = rbhat;
  rw_error_clear();
  cr_assert_eq(rw_stepper_create_erk(prob, &t, &st), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "embedded_order"), "%s", rw_error_message());
  t.embedded_order = 2;
  RW_TEST_OK(rw_stepper_create_erk(prob, &t, &st));
  int order = 0;
  cr_assert_eq(rw_stepper_is_adaptive(st, &order), 1);
  cr_assert_eq(order, 2);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

Test(user_tableau, unnamed_tableau_gets_a_name)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_problem prob = vdp(ctx);
  rw_stepper st = NULL;
  rw_tableau t = ralston();
  t.name = NULL;
  RW_TEST_OK(rw_stepper_create_erk(prob, &t, &st));
  cr_assert_str_eq(rw_stepper_name(st), "custom");
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

/* J of the solve from y0 + s dy (dy NULL: y0) with the parameters p. */
static double user_J(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector y0,
                     N_Vector y, const double *p, N_Vector dy, double s)
{
  const int np = rw_problem_nparams(prob);
  double *pp = rw_problem_params(prob), save[8], J = 0.0;
  memcpy(save, pp, (size_t)np * sizeof(double));
  memcpy(pp, p, (size_t)np * sizeof(double));
  if (dy)
    N_VLinearSum(1.0, y0, s, dy, y);
  else
    N_VScale(1.0, y0, y);
  RW_TEST_OK(rw_forward_solve(prob, st, opt, y, &J, NULL));
  memcpy(pp, save, (size_t)np * sizeof(double));
  return J;
}

/* The discrete adjoint of a user's tableau: dJ/dp and dJ/dy0 of a Van der Pol ensemble with a
 * running and a terminal cost against central finite differences, with the tableau's arrays
 * overwritten after the stepper was made (the stepper keeps its own copy: a stepper that read
 * the caller's arrays would step with garbage and miss by far), and the checkpointed gradient
 * (binomial, 3 slots) equal to the store-everything one bit for bit. */
Test(user_tableau, adjoint_gradient_against_finite_differences)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_ode_config cfg = {.model = "vanderpol",
                       .ensemble = 2,
                       .y0 = {2.0, 0.5},
                       .spread = 0.25,
                       .target = {0.5, -0.25},
                       .terminal_weight = 1.0,
                       .running_weight = 0.3};
  rw_problem prob;
  RW_TEST_OK(rw_ode_problem_create(ctx, &cfg, &prob));
  double c[3], a[9], b[3];
  memcpy(c, rc, sizeof c), memcpy(a, ra, sizeof a), memcpy(b, rb, sizeof b);
  rw_tableau t = {.name = "ralston3", .stages = 3, .order = 3, .c = c, .a = a, .b = b};
  rw_stepper st = NULL;
  RW_TEST_OK(rw_stepper_create_erk(prob, &t, &st));
  for (int i = 0; i < 9; i++) /* the caller's arrays reused for something else */
    a[i] = 1e3 + i, c[i % 3] = -7.0, b[i % 3] = 5.0;
  N_Vector y0, y, gy, e;
  RW_TEST_OK(rw_problem_new_state(prob, &y0));
  RW_TEST_OK(rw_problem_new_state(prob, &y));
  RW_TEST_OK(rw_problem_new_state(prob, &gy));
  RW_TEST_OK(rw_problem_new_state(prob, &e));
  RW_TEST_OK(rw_ode_initial_state(prob, y0));
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.tf = 1.0, opt.dt = 0.07; /* the last step shorter */
  opt.mode = RW_ADJOINT_STORE;
  const int np = rw_problem_nparams(prob);
  double J, g[8], p0[8];
  N_VScale(1.0, y0, y);
  RW_TEST_OK(rw_adjoint_solve(prob, st, &opt, y, &J, g, gy, NULL));
  cr_assert(isfinite(J) && J > 0.0, "J = %g", J);
  memcpy(p0, rw_problem_params(prob), (size_t)np * sizeof(double));
  for (int k = 0; k < np; k++) {
    double eps = 1e-5 * fmax(1.0, fabs(p0[k])), p[8];
    memcpy(p, p0, sizeof p);
    p[k] = p0[k] + eps;
    const double Jp = user_J(prob, st, &opt, y0, y, p, NULL, 0.0);
    p[k] = p0[k] - eps;
    const double Jm = user_J(prob, st, &opt, y0, y, p, NULL, 0.0);
    const double fd = (Jp - Jm) / (2 * eps);
    cr_assert(fabs(fd - g[k]) <= 1e-7 * fmax(1.0, fabs(fd)),
              "ralston3 dJ/d%s: adjoint %.12e, finite difference %.12e",
              rw_problem_param_name(prob, k), g[k], fd);
  }
  for (sunindextype i = 0; i < rw_vec_local_length(e); i++) {
    N_VConst(0.0, e);
    rw_vec_data(e)[i] = 1.0;
    const double Jp = user_J(prob, st, &opt, y0, y, p0, e, 1e-6),
                 Jm = user_J(prob, st, &opt, y0, y, p0, e, -1e-6);
    const double fd = (Jp - Jm) / 2e-6, ad = rw_vec_data(gy)[i];
    cr_assert(fabs(fd - ad) <= 1e-7 * fmax(1.0, fabs(fd)),
              "ralston3 dJ/dy0[%ld]: adjoint %.12e, finite difference %.12e", (long)i, ad, fd);
  }
  double J2, g2[8];
  N_Vector gy2;
  RW_TEST_OK(rw_problem_new_state(prob, &gy2));
  opt.mode = RW_ADJOINT_CHECKPOINT;
  opt.schedule = RW_SCHEDULE_BINOMIAL;
  opt.ram_slots = 3;
  N_VScale(1.0, y0, y);
  RW_TEST_OK(rw_adjoint_solve(prob, st, &opt, y, &J2, g2, gy2, NULL));
  cr_assert(J2 == J && memcmp(g, g2, (size_t)np * sizeof(double)) == 0 &&
                memcmp(rw_vec_data(gy), rw_vec_data(gy2), rw_vec_bytes(gy)) == 0,
            "ralston3: binomial checkpointing (3 slots) changed J or the gradient");
  N_Vector *vs[] = {&y0, &y, &gy, &e, &gy2};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    rw_vec_destroy(vs[i]);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}
