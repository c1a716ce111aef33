/* Checkpointed adjoints reproduce the store-everything gradient bit for bit, for every
 * stepper, several (steps, slots) and every schedule; the work done matches the schedule's
 * count (every forward step evaluation costs one stage sweep); snapshot bytes stay within
 * the budget; a budget below one snapshot fails before any step. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rewind/rw_schedule.h"
#include "rw_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(checkpoint, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

typedef struct {
  double J, g[4];
  double dy[8];
  rw_adjoint_stats st;
} result;

static long members = 4; /* ensemble size used by solve() */

/* The tests' problem: an ensemble of `members` Lotka-Volterra systems. */
static void make_lv(rw_context ctx, rw_problem *prob)
{
  rw_ode_config cfg = {.model = "lotkavolterra",
                       .ensemble = members,
                       .y0 = {1.0, 0.7},
                       .spread = 0.1,
                       .target = {0.5, 0.5},
                       .terminal_weight = 1.0,
                       .running_weight = 0.25};
  RW_TEST_OK(rw_ode_problem_create(ctx, &cfg, prob));
}

static void solve(rw_context ctx, const char *method, double tf, double dt,
                  const rw_adjoint_options *base, result *r)
{
  rw_problem prob;
  rw_stepper st;
  N_Vector y, gy;
  make_lv(ctx, &prob);
  RW_TEST_OK(rw_stepper_create_erk(prob, rw_tableau_find(method), &st));
  RW_TEST_OK(rw_problem_new_state(prob, &y));
  RW_TEST_OK(rw_problem_new_state(prob, &gy));
  RW_TEST_OK(rw_ode_initial_state(prob, y));
  rw_adjoint_options opt = *base;
  opt.tf = tf;
  opt.dt = dt;
  memset(r, 0, sizeof *r);
  RW_TEST_OK(rw_adjoint_solve(prob, st, &opt, y, &r->J, r->g, gy, &r->st));
  memcpy(r->dy, rw_vec_data(gy), rw_vec_bytes(gy) < sizeof r->dy ? rw_vec_bytes(gy) : sizeof r->dy);
  rw_vec_destroy(&y);
  rw_vec_destroy(&gy);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
}

static const char *methods[] = {"euler", "heun", "ssprk3", "rk4", "rk38", "dopri5"};

Test(checkpoint, every_schedule_bitwise_equals_store_everything)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  /* (steps, slots): c = 1, c small, c >= l, a length dt does not divide. */
  const double dts[] = {0.1, 0.01, 0.0123, 0.5};
  const int slots[] = {1, 2, 3, 5, 8, 40};
  const rw_schedule_kind kinds[] = {RW_SCHEDULE_BINOMIAL, RW_SCHEDULE_ONLINE, RW_SCHEDULE_FIXED,
                                    RW_SCHEDULE_STORE_ALL};
  const char *kname[] = {"binomial", "online", "fixed", "store_all"};
  for (size_t m = 0; m < sizeof methods / sizeof *methods; m++)
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
      rw_adjoint_options base;
      rw_adjoint_options_default(&base);
      result ref;
      solve(ctx, methods[m], 1.0, dts[d], &base, &ref);
      for (size_t k = 0; k < 4; k++)
        for (size_t c = 0; c < sizeof slots / sizeof *slots; c++) {
          if (kinds[k] == RW_SCHEDULE_STORE_ALL && c > 0) break;
          rw_adjoint_options opt = base;
          opt.mode = RW_ADJOINT_CHECKPOINT;
          opt.schedule = kinds[k];
          opt.ram_slots = slots[c];
          opt.interval = slots[c];
          result r;
          solve(ctx, methods[m], 1.0, dts[d], &opt, &r);
          cr_assert(r.J == ref.J && memcmp(r.g, ref.g, sizeof r.g) == 0 &&
                        memcmp(r.dy, ref.dy, sizeof r.dy) == 0,
                    "%s, dt %g, %s with %d slots: gradient differs from store-everything "
                    "(J %.17g vs %.17g, dJ/dalpha %.17g vs %.17g)",
                    methods[m], dts[d], kname[k], slots[c], r.J, ref.J, r.g[0], ref.g[0]);
          long N = r.st.steps;
          int s = rw_tableau_find(methods[m])->stages - (strcmp(methods[m], "dopri5") == 0);
          /* Every advance and the first reversal evaluate s slopes; every other reversal
           * recomputes the stage inputs only, s - 1 slopes. */
          long evals = r.st.rhs_forward + r.st.rhs_backward;
          long expect = (long)s * (r.st.advances + 1) + (long)(s - 1) * (N - 1);
          cr_assert_eq(evals, expect,
                       "%s %s c=%d: %ld rhs evaluations, the schedule's %ld advances and %ld "
                       "reversals need %ld",
                       methods[m], kname[k], slots[c], evals, r.st.advances, N, expect);
          if (kinds[k] == RW_SCHEDULE_BINOMIAL)
            cr_assert_eq(r.st.advances, r.st.optimal_advances,
                         "binomial advances %ld, optimum t(%ld, %d) = %ld", r.st.advances, N,
                         slots[c], r.st.optimal_advances);
          if (kinds[k] == RW_SCHEDULE_FIXED || kinds[k] == RW_SCHEDULE_STORE_ALL) {
            /* compared with the binomial optimum for the slots they used, not the budget */
            int64_t t = 0;
            RW_TEST_OK(rw_binomial_advances(N, r.st.peak_slots, NULL, &t));
            cr_assert(r.st.peak_slots >= 1 && r.st.optimal_advances == (long)t &&
                          r.st.optimal_advances <= r.st.advances,
                      "%s c=%d: optimum %ld for %d slots used, t = %lld, advances %ld", kname[k],
                      slots[c], r.st.optimal_advances, r.st.peak_slots, (long long)t,
                      r.st.advances);
          }
          if (kinds[k] == RW_SCHEDULE_BINOMIAL || kinds[k] == RW_SCHEDULE_ONLINE)
            cr_assert(r.st.peak_slots <= slots[c], "%d slots used, %d allowed", r.st.peak_slots,
                      slots[c]);
          cr_assert_eq(r.st.recomputed_steps, r.st.advances - (N - 1));
          /* Stage snapshots: same bits, fewer evaluations (no recomputation when a step is
           * reversed right after its snapshot is restored), s x the bytes per snapshot. */
          opt.store_stages = 1;
          result rs;
          solve(ctx, methods[m], 1.0, dts[d], &opt, &rs);
          cr_assert(rs.J == ref.J && memcmp(rs.g, ref.g, sizeof rs.g) == 0 &&
                        memcmp(rs.dy, ref.dy, sizeof rs.dy) == 0,
                    "%s, dt %g, %s with %d stage slots: gradient differs from store-everything",
                    methods[m], dts[d], kname[k], slots[c]);
          long evals_s = rs.st.rhs_forward + rs.st.rhs_backward;
          cr_assert(evals_s <= evals,
                    "%s %s c=%d: stage snapshots cost %ld evaluations, states %ld", methods[m],
                    kname[k], slots[c], evals_s, evals);
          if (rs.st.restores > 0 && s > 1 && kinds[k] != RW_SCHEDULE_ONLINE)
            cr_assert(evals_s < evals, "%s %s c=%d: stage snapshots saved nothing (%ld)",
                      methods[m], kname[k], slots[c], evals);
          cr_assert_eq(rs.st.snapshot_bytes, (size_t)s * r.st.snapshot_bytes);
        }
    }
  rw_context_destroy(&ctx);
}

Test(checkpoint, budget_in_bytes_is_respected_and_too_small_fails_early)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.mode = RW_ADJOINT_CHECKPOINT;
  opt.schedule = RW_SCHEDULE_BINOMIAL;
  members = 4000; /* a large state, so the snapshots dominate the allocator's count */
  size_t snap = 2 * 4000 * sizeof(double);
  for (size_t budget = snap; budget <= 20 * snap; budget += 3 * snap) {
    opt.ram_bytes = budget + snap / 2;
    result r;
    solve(ctx, "rk4", 1.0, 0.01, &opt, &r);
    cr_assert(r.st.checkpoint_bytes <= opt.ram_bytes, "%zu bytes held, budget %zu",
              r.st.checkpoint_bytes, opt.ram_bytes);
    /* From the allocator's own count: everything the solve allocated at its peak is the
     * budgeted snapshots plus the fixed work set (the current state and the 4 stage buffers,
     * the stepper-independent bookkeeping; y_N goes to the caller's y and the adjoint state is
     * the caller's dJdy0, so neither takes a vector), and the RK4 stepper's own workspace
     * (stage inputs, slopes, stage adjoints and Kbar: 3 s + 1 = 13 vectors), which it
     * allocates on its first stage-by-stage step (this problem takes no sweeps), never more.
     * One state more (snap) than that is above the bound. */
    size_t work = (5 + 13) * (snap + 8) + 4096;
    cr_assert(r.st.peak_alloc_bytes <= opt.ram_bytes + work,
              "allocator peak %zu bytes, budget %zu + work set %zu", r.st.peak_alloc_bytes,
              opt.ram_bytes, work);
    cr_assert_eq(r.st.ram_slots, (int)(budget / snap));
  }
  /* The fixed-interval schedule picks its own slot count: under a byte budget it must fit. */
  opt.schedule = RW_SCHEDULE_FIXED;
  opt.interval = 10;
  opt.ram_bytes = 3 * snap; /* 100 steps every 10 need 10 + 9 snapshots */
  {
    rw_problem pf;
    rw_stepper sf;
    N_Vector yf;
    rw_ode_config cf = {
        .model = "vanderpol", .ensemble = members, .y0 = {1, 0}, .terminal_weight = 1};
    RW_TEST_OK(rw_ode_problem_create(ctx, &cf, &pf));
    RW_TEST_OK(rw_stepper_create_erk(pf, rw_tableau_find("rk4"), &sf));
    RW_TEST_OK(rw_problem_new_state(pf, &yf));
    double Jf, gf[1];
    int e = rw_adjoint_solve(pf, sf, &opt, yf, &Jf, gf, NULL, NULL);
    cr_assert_eq(e, RW_ERR_BUDGET, "fixed schedule over budget: got %d: %s", e, rw_error_message());
    rw_error_clear();
    opt.ram_bytes = 40 * snap;
    result rf;
    solve(ctx, "rk4", 1.0, 0.01, &opt, &rf);
    cr_assert(rf.st.checkpoint_bytes <= opt.ram_bytes);
    rw_vec_destroy(&yf);
    rw_stepper_destroy(&sf);
    rw_problem_destroy(&pf);
  }
  opt.schedule = RW_SCHEDULE_BINOMIAL;
  members = 4;
  snap = 8 * sizeof(double);
  /* Below one snapshot: RW_ERR_BUDGET, before a single right-hand side is evaluated. */
  rw_problem prob;
  rw_stepper st;
  N_Vector y;
  rw_ode_config cfg = {.model = "vanderpol", .ensemble = 4, .y0 = {1, 0}, .terminal_weight = 1};
  RW_TEST_OK(rw_ode_problem_create(ctx, &cfg, &prob));
  RW_TEST_OK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
  RW_TEST_OK(rw_problem_new_state(prob, &y));
  opt.ram_bytes = snap - 1;
  double J, g[1];
  size_t before = rw_mem_current();
  int ierr = rw_adjoint_solve(prob, st, &opt, y, &J, g, NULL, NULL);
  cr_assert_eq(ierr, RW_ERR_BUDGET, "got %d: %s", ierr, rw_error_message());
  cr_assert(strstr(rw_error_message(), "smaller than one snapshot") != NULL, "%s",
            rw_error_message());
  rw_problem_counts cnt;
  rw_problem_get_counts(prob, &cnt);
  cr_assert_eq(cnt.rhs, 0);
  cr_assert_eq(rw_mem_current(), before);
  rw_error_clear();
  rw_vec_destroy(&y);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

/* The peak a caller reads with rw_mem_peak is the caller's: a solve measures its own
 * allocations in a window of its own and leaves the caller's peak alone. */
Test(checkpoint, a_solve_keeps_the_callers_memory_peak)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_mem_reset_peak();
  size_t before = rw_mem_current();
  const size_t big = 64u << 20; /* above anything the small solve allocates */
  double *p = NULL;
  RW_TEST_OK(rw_calloc(big, 1, "test block", &p));
  rw_free(&p);
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.mode = RW_ADJOINT_CHECKPOINT;
  opt.ram_slots = 3;
  result r;
  solve(ctx, "rk4", 1.0, 0.05, &opt, &r);
  cr_assert(r.st.peak_alloc_bytes > 0 && r.st.peak_alloc_bytes < big,
            "the solve's own peak: %zu bytes", r.st.peak_alloc_bytes);
  cr_assert(rw_mem_peak() >= before + big,
            "the caller's peak %zu dropped below its %zu-byte block after a solve", rw_mem_peak(),
            big);
  rw_context_destroy(&ctx);
}

/* A run id may have 64 characters, also when the disk costs are measured (the probe store's
 * id is made from at most 58 of them); the disk tier's gradient is the store-everything one. */
Test(checkpoint, longest_run_id_with_measured_disk_costs)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_SELF, &ctx));
  char dir[] = "/tmp/rw_ckpt_runid_XXXXXX";
  cr_assert(mkdtemp(dir), "mkdtemp failed");
  rw_adjoint_options base;
  rw_adjoint_options_default(&base);
  result ref, r;
  solve(ctx, "rk4", 1.0, 0.02, &base, &ref);
  rw_adjoint_options opt = base;
  opt.mode = RW_ADJOINT_CHECKPOINT;
  opt.ram_slots = 2;
  opt.disk_slots = 3;
  opt.disk_dir = dir;
  opt.write_cost = opt.read_cost = -1.0; /* measured */
  char id[65];
  memset(id, 'r', 64);
  id[64] = '\0';
  opt.run_id = id;
  solve(ctx, "rk4", 1.0, 0.02, &opt, &r);
  cr_assert(r.J == ref.J && memcmp(r.g, ref.g, sizeof r.g) == 0, "disk tier gradient differs");
  cr_assert(rmdir(dir) == 0, "checkpoint files left in %s", dir);
  rw_context_destroy(&ctx);
}

/* dJdy0, when it shares no data with y, is the backward sweep's adjoint state itself: the
 * solve holds one state less (its allocator peak) and gives the same bits as the path that
 * sweeps in a vector of its own and copies out at the end (taken when dJdy0 is a view of y's
 * data, which then receives dJ/dy0 in place of y(tf)). */
Test(checkpoint, dJdy0_is_the_sweeps_adjoint_state)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_problem prob;
  rw_stepper st;
  N_Vector y, gy, view;
  members = 4000; /* a large state, so that one state shows in the allocator's peak */
  make_lv(ctx, &prob);
  RW_TEST_OK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
  RW_TEST_OK(rw_problem_new_state(prob, &y));
  RW_TEST_OK(rw_problem_new_state(prob, &gy));
  RW_TEST_OK(rw_vec_view_create(y, &view));
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.mode = RW_ADJOINT_CHECKPOINT;
  opt.ram_slots = 4;
  opt.tf = 1.0;
  opt.dt = 0.01;
  double J[3], g[3][4];
  rw_adjoint_stats s[3];
  N_Vector out[3] = {gy, NULL, view}; /* given, none, a view of y */
  for (int k = -1; k < 3; k++) {      /* k = -1: the stepper's workspace made before the counts */
    RW_TEST_OK(rw_ode_initial_state(prob, y));
    RW_TEST_OK(rw_adjoint_solve(prob, st, &opt, y, &J[k < 0 ? 1 : k], g[k < 0 ? 1 : k],
                                k < 0 ? NULL : out[k], &s[k < 0 ? 1 : k]));
  }
  const size_t vb = rw_vec_bytes(y);
  cr_assert(s[1].peak_alloc_bytes >= s[0].peak_alloc_bytes + vb,
            "the solve's peak with dJdy0 given, %zu bytes, is not a state (%zu) below its peak "
            "without, %zu",
            s[0].peak_alloc_bytes, vb, s[1].peak_alloc_bytes);
  cr_assert(s[2].peak_alloc_bytes == s[1].peak_alloc_bytes,
            "a view of y as dJdy0 must sweep in a vector of its own: peak %zu against %zu",
            s[2].peak_alloc_bytes, s[1].peak_alloc_bytes);
  cr_assert(J[0] == J[1] && J[0] == J[2] && memcmp(g[0], g[1], sizeof g[0]) == 0 &&
                memcmp(g[0], g[2], sizeof g[0]) == 0,
            "J and dJ/dp differ between the three solves");
  cr_assert(memcmp(rw_vec_data(gy), rw_vec_data(y), vb) == 0,
            "dJ/dy0 swept in dJdy0 differs from dJ/dy0 swept apart and copied out");
  rw_vec_view_destroy(&view);
  rw_vec_destroy(&y);
  rw_vec_destroy(&gy);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}
