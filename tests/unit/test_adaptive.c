/* Adaptive Dormand-Prince 5(4): error control works (the error at T falls with the
 * tolerance), the accepted step sizes are recorded and replayed, and the adaptive
 * checkpointed gradient equals the store-everything gradient on the recorded grid bit for
 * bit; the gradient on the recorded grid passes the Taylor test (the gradient of the J the
 * forward run computed, with its step sequence). */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rw_test.h"

#include <stdlib.h>
#include <string.h>

TestSuite(adaptive, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

typedef struct {
  double t[100000];
  long n;
} times_rec;

static int record(void *c, long n, double t, N_Vector y)
{
  (void)y;
  times_rec *r = c;
  cr_assert_eq(n, r->n + (n == 0 ? 0 : 1), "monitor step %ld after %ld", n, r->n);
  r->t[n] = t;
  r->n = n;
  return 0;
}

typedef struct {
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  N_Vector y, gy;
} fx;

static void fx_make(fx *f)
{
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &f->ctx));
  rw_ode_config cfg = {.model = "vanderpol",
                       .ensemble = 3,
                       .y0 = {2.0, 0.0},
                       .spread = 0.2,
                       .target = {1.0, 0.0},
                       .terminal_weight = 1.0,
                       .running_weight = 0.3};
  RW_TEST_OK(rw_ode_problem_create(f->ctx, &cfg, &f->prob));
  rw_problem_params(f->prob)[0] = 2.0;
  RW_TEST_OK(rw_stepper_create_erk(f->prob, rw_tableau_find("dopri5"), &f->st));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->gy));
}

static void fx_free(fx *f)
{
  rw_vec_destroy(&f->y);
  rw_vec_destroy(&f->gy);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

static rw_adjoint_options adaptive_opts(double rtol, int slots, times_rec *rec)
{
  rw_adjoint_options o;
  rw_adjoint_options_default(&o);
  o.tf = 6.0;
  o.dt = 1e-3;
  o.mode = RW_ADJOINT_CHECKPOINT;
  o.schedule = RW_SCHEDULE_ONLINE;
  o.ram_slots = slots;
  o.adaptive = 1;
  o.rtol = rtol;
  o.atol = rtol * 1e-2;
  o.monitor = record;
  o.monitor_ctx = rec;
  return o;
}

Test(adaptive, checkpointed_equals_store_on_recorded_grid_bitwise)
{
  fx f;
  fx_make(&f);
  static times_rec rec;
  const int slots[] = {1, 3, 10, 1000};
  for (int k = 0; k < 4; k++) {
    rec.n = 0;
    rw_adjoint_options o = adaptive_opts(1e-6, slots[k], &rec);
    double J, g[1], Jr, gr[1];
    rw_adjoint_stats st;
    RW_TEST_OK(rw_ode_initial_state(f.prob, f.y));
    RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &o, f.y, &J, g, f.gy, &st));
    cr_assert_eq(rec.n, st.steps);
    cr_assert_eq(rec.t[rec.n], 6.0, "last time %.17g", rec.t[rec.n]);
    cr_assert(st.accepted == st.steps && st.rejected >= 0);
    cr_assert(st.peak_slots <= slots[k]);
    double *dy = malloc(rw_vec_bytes(f.gy));
    memcpy(dy, rw_vec_data(f.gy), rw_vec_bytes(f.gy));
    /* Replay the recorded grid in store mode. */
    rw_adjoint_options r;
    rw_adjoint_options_default(&r);
    r.times = rec.t;
    r.nsteps = rec.n;
    RW_TEST_OK(rw_ode_initial_state(f.prob, f.y));
    RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &r, f.y, &Jr, gr, f.gy, NULL));
    cr_assert(J == Jr && g[0] == gr[0] && memcmp(dy, rw_vec_data(f.gy), rw_vec_bytes(f.gy)) == 0,
              "slots %d: adaptive J %.17g dJ/dmu %.17g, replay J %.17g dJ/dmu %.17g", slots[k], J,
              g[0], Jr, gr[0]);
    cr_log_info("slots %d: %ld steps (%ld rejected), %ld recomputed, J %.15g dJ/dmu %.15g\n",
                slots[k], st.steps, st.rejected, st.recomputed_steps, J, g[0]);
    free(dy);
  }
  fx_free(&f);
}

Test(adaptive, error_falls_with_tolerance)
{
  fx f;
  fx_make(&f);
  static times_rec rec;
  /* Reference: fixed-step rk4 with a tiny step. */
  rw_stepper rk4;
  RW_TEST_OK(rw_stepper_create_erk(f.prob, rw_tableau_find("rk4"), &rk4));
  rw_adjoint_options o;
  rw_adjoint_options_default(&o);
  o.tf = 6.0;
  o.dt = 1e-4;
  double Jref, J, err[3];
  RW_TEST_OK(rw_ode_initial_state(f.prob, f.y));
  RW_TEST_OK(rw_forward_solve(f.prob, rk4, &o, f.y, &Jref, NULL));
  const double tols[] = {1e-4, 1e-6, 1e-8};
  long steps[3];
  for (int k = 0; k < 3; k++) {
    rec.n = 0;
    rw_adjoint_options a = adaptive_opts(tols[k], 20, &rec);
    rw_adjoint_stats st;
    double g[1];
    RW_TEST_OK(rw_ode_initial_state(f.prob, f.y));
    RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &a, f.y, &J, g, NULL, &st));
    err[k] = fabs(J - Jref) / fabs(Jref);
    steps[k] = st.steps;
    cr_log_info("rtol %g: %ld steps, %ld rejected, relative error in J %.3e\n", tols[k], st.steps,
                st.rejected, err[k]);
  }
  for (int k = 0; k < 3; k++)
    cr_assert(err[k] < 100 * tols[k], "rtol %g: error %.3e", tols[k], err[k]);
  cr_assert(err[2] < err[1] && err[1] < err[0] && steps[2] > steps[1] && steps[1] > steps[0]);
  rw_stepper_destroy(&rk4);
  fx_free(&f);
}

Test(adaptive, taylor_on_recorded_grid)
{
  fx f;
  fx_make(&f);
  static times_rec rec;
  rec.n = 0;
  rw_adjoint_options a = adaptive_opts(1e-5, 4, &rec);
  double J0, g[1];
  RW_TEST_OK(rw_ode_initial_state(f.prob, f.y));
  RW_TEST_OK(rw_adjoint_solve(f.prob, f.st, &a, f.y, &J0, g, NULL, NULL));
  rw_adjoint_options r;
  rw_adjoint_options_default(&r);
  r.times = rec.t;
  r.nsteps = rec.n;
  double mu0 = rw_problem_params(f.prob)[0], prev = 0;
  for (int i = 0; i <= 4; i++) {
    /* J(mu) has a small second and a large third derivative here (fitted: 0.011 h^2 +
     * 3.8 h^3), so h starts where the quadratic term dominates. */
    double h = 4e-4 * pow(0.5, i), J;
    rw_problem_params(f.prob)[0] = mu0 + h;
    RW_TEST_OK(rw_ode_initial_state(f.prob, f.y));
    RW_TEST_OK(rw_forward_solve(f.prob, f.st, &r, f.y, &J, NULL));
    double rem = fabs(J - J0 - h * g[0]);
    cr_log_info("h %.3e remainder %.3e\n", h, rem);
    if (i) cr_assert(fabs(log2(prev / rem) - 2.0) < 0.2, "order %.3f", log2(prev / rem));
    prev = rem;
  }
  rw_problem_params(f.prob)[0] = mu0;
  fx_free(&f);
}

Test(adaptive, bad_configurations_are_clear_errors)
{
  fx f;
  fx_make(&f);
  static times_rec rec;
  rw_adjoint_options a = adaptive_opts(1e-6, 4, &rec);
  double J, g[1];
  rw_stepper rk4;
  RW_TEST_OK(rw_stepper_create_erk(f.prob, rw_tableau_find("rk4"), &rk4));
  cr_assert_eq(rw_adjoint_solve(f.prob, rk4, &a, f.y, &J, g, NULL, NULL), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "embedded") != NULL, "%s", rw_error_message());
  a.schedule = RW_SCHEDULE_BINOMIAL;
  cr_assert_eq(rw_adjoint_solve(f.prob, f.st, &a, f.y, &J, g, NULL, NULL), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "online") != NULL, "%s", rw_error_message());
  a.schedule = RW_SCHEDULE_ONLINE;
  a.max_steps = 10;
  RW_TEST_OK(rw_ode_initial_state(f.prob, f.y));
  cr_assert_eq(rw_adjoint_solve(f.prob, f.st, &a, f.y, &J, g, NULL, NULL), RW_ERR_STEP);
  cr_assert(strstr(rw_error_message(), "max_steps") != NULL, "%s", rw_error_message());
  rw_error_clear();
  rw_stepper_destroy(&rk4);
  fx_free(&f);
}
