/* Every error path of the PDE problems, their steppers and a short checkpointed adjoint
 * solve: the k-th allocation through Rewind's allocator is made to fail, for k = 1, 2, ...
 * until the whole sequence succeeds. Each failure must come back as RW_ERR_MEM with a
 * message, and leave no Rewind memory allocated once the objects are destroyed (the
 * allocator's count returns to where it started). Under ASan this also runs every cleanup
 * path for use-after-free and double free. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_burgers.h"
#include "rewind/rw_grayscott.h"
#include "rewind/rw_heat.h"
#include "rewind/rw_leapfrog.h"
#include "rewind/rw_wave.h"
#include "rw_test.h"

#include <string.h>

TestSuite(alloc_failures, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

typedef int (*build_fn)(rw_context ctx, rw_problem *prob, rw_stepper *st, N_Vector *y);

static int build_gs(rw_context ctx, rw_problem *prob, rw_stepper *st, N_Vector *y)
{
  rw_gs_config cfg;
  rw_gs_config_default(&cfg);
  cfg.n = 8;
  RW_CALL(rw_gs_problem_create(ctx, &cfg, prob));
  RW_CALL(rw_stepper_create_erk(*prob, rw_tableau_find("rk4"), st));
  RW_CALL(rw_problem_new_state(*prob, y));
  RW_CALL(rw_gs_initial_state(*prob, *y));
  return 0;
}

static int build_heat(rw_context ctx, rw_problem *prob, rw_stepper *st, N_Vector *y)
{
  rw_heat_config cfg = {.dim = 2,
                        .n = {8, 8, 1},
                        .length = {1, 1, 1},
                        .bc = RW_BC_DIRICHLET,
                        .source_center = {0.5, 0.5, 0.5},
                        .source_width = 0.2,
                        .nsensors = 4};
  RW_CALL(rw_heat_problem_create(ctx, &cfg, prob));
  RW_CALL(rw_stepper_create_erk(*prob, rw_tableau_find("rk4"), st));
  RW_CALL(rw_problem_new_state(*prob, y));
  return 0;
}

static int build_burgers(rw_context ctx, rw_problem *prob, rw_stepper *st, N_Vector *y)
{
  rw_burgers_config cfg = {.n = {8, 8},
                           .lo = {0, 0},
                           .hi = {1, 1},
                           .nu = 0.05,
                           .offset = 1,
                           .amplitude = 0.5,
                           .center = {0.5, 0.5},
                           .width = 0.2,
                           .shift = {0.1, 0}};
  RW_CALL(rw_burgers_problem_create(ctx, &cfg, prob));
  RW_CALL(rw_stepper_create_erk(*prob, rw_tableau_find("ssprk3"), st));
  RW_CALL(rw_problem_new_state(*prob, y));
  RW_CALL(rw_burgers_initial_state(*prob, *y));
  return 0;
}

static int build_wave(rw_context ctx, rw_problem *prob, rw_stepper *st, N_Vector *y)
{
  static const double src[] = {0.5, 0.5}, rec[] = {0.2, 0.2, 0.8, 0.8};
  rw_wave_config cfg = {.n = {9, 9},
                        .lo = {0, 0},
                        .hi = {1, 1},
                        .velocity = 1,
                        .amplitude = 1,
                        .freq = 5,
                        .nsrc = 1,
                        .src = src,
                        .nrec = 2,
                        .rec = rec,
                        .t0 = 0,
                        .dt = 0.01,
                        .nsteps = 10};
  RW_CALL(rw_wave_problem_create(ctx, &cfg, prob));
  RW_CALL(rw_stepper_create_leapfrog(*prob, st));
  RW_CALL(rw_problem_new_state(*prob, y));
  return 0;
}

static void run_all_failures(const char *name, build_fn build)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  size_t base = rw_mem_current();
  long k;
  for (k = 1; k < 100000; k++) {
    rw_problem prob = NULL;
    rw_stepper st = NULL;
    N_Vector y = NULL;
    double J = 0.0, g[8];
    rw_mem_fail_after(k);
    int ierr = build(ctx, &prob, &st, &y);
    if (!ierr) {
      rw_adjoint_options opt;
      rw_adjoint_options_default(&opt);
      opt.tf = 0.1;
      opt.dt = 0.01;
      opt.mode = RW_ADJOINT_CHECKPOINT;
      opt.ram_slots = 3;
      ierr = rw_adjoint_solve(prob, st, &opt, y, &J, g, NULL, NULL);
    }
    rw_mem_fail_after(0);
    rw_vec_destroy(&y);
    rw_stepper_destroy(&st);
    rw_problem_destroy(&prob);
    cr_assert_eq(rw_mem_current(), base, "%s: %zu bytes leaked after failing allocation %ld (%s)",
                 name, rw_mem_current() - base, k, ierr ? rw_error_message() : "no error");
    if (!ierr) break;
    cr_assert_eq(ierr, RW_ERR_MEM, "%s: allocation %ld failed, but the error was %d: %s", name, k,
                 ierr, rw_error_message());
    rw_error_clear();
  }
  cr_log_info("%s: %ld allocations, each failure clean\n", name, k - 1);
  cr_assert(k > 5, "%s: only %ld allocations were exercised", name, k - 1);
  rw_context_destroy(&ctx);
}

Test(alloc_failures, grayscott) { run_all_failures("grayscott", build_gs); }
Test(alloc_failures, heat) { run_all_failures("heat", build_heat); }
Test(alloc_failures, burgers) { run_all_failures("burgers", build_burgers); }
Test(alloc_failures, wave) { run_all_failures("wave", build_wave); }
