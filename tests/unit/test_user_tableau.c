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
