/* Store-everything adjoint driver. */
#include <math.h>
#include <string.h>

#include "rewind/rw_adjoint.h"

void rw_adjoint_options_default(rw_adjoint_options *opt)
{
  memset(opt, 0, sizeof *opt);
  opt->t0 = 0.0;
  opt->tf = 1.0;
  opt->dt = 0.01;
  opt->mode = RW_ADJOINT_STORE;
}

int rw_time_grid(double t0, double tf, double dt, long *nsteps, double *last_dt)
{
  RW_CHECK(isfinite(t0) && isfinite(tf) && tf > t0, RW_ERR_ARG,
           "time interval [%g, %g]: the final time must be finite and greater than the initial "
           "time",
           t0, tf);
  RW_CHECK(isfinite(dt) && dt > 0.0, RW_ERR_ARG, "step size dt = %g must be finite and > 0", dt);
  double r = (tf - t0) / dt;
  RW_CHECK(r < 1e12, RW_ERR_ARG, "dt = %g gives %.3g steps over [%g, %g]; at most 1e12 allowed",
           dt, r, t0, tf);
  double rr = nearbyint(r);
  long n;
  /* Treat dt as dividing the interval when the quotient is an integer to rounding. */
  if (rr >= 1.0 && fabs(r - rr) <= 1e-9 * rr)
    n = (long)rr;
  else
    n = (long)ceil(r);
  if (n < 1) n = 1;
  *nsteps = n;
  *last_dt = tf - (t0 + (double)(n - 1) * dt);
  return 0;
}

double rw_time_grid_point(double t0, double tf, double dt, long nsteps, long n)
{
  return n >= nsteps ? tf : t0 + (double)n * dt;
}

static int rw_sum_over_ranks(rw_context ctx, double *v, int n)
{
  if (n <= 0) return 0;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, rw_context_comm(ctx)));
  return 0;
}

/* One forward sweep from y (overwritten with y(tf)); when `traj` is not NULL, snapshot n
 * (the state, or the stages) is kept in traj[n * per + k]. Returns the local running-cost
 * sum in *qloc. */
static int rw_forward_sweep(rw_stepper st, const rw_adjoint_options *opt,
                            long N, N_Vector y, N_Vector *traj, int per, double *qloc)
{
  *qloc = 0.0;
  if (opt->monitor) RW_CALL(opt->monitor(opt->monitor_ctx, 0, opt->t0, y));
  for (long n = 0; n < N; n++) {
    double t = rw_time_grid_point(opt->t0, opt->tf, opt->dt, N, n);
    double h = rw_time_grid_point(opt->t0, opt->tf, opt->dt, N, n + 1) - t;
    N_Vector *stages = NULL;
    if (traj && opt->store_stages)
      stages = &traj[n * per];
    else if (traj)
      rw_vec_copy(y, traj[n]);
    RW_CALL(rw_stepper_step(st, t, h, y, y, stages, qloc));
    if (opt->monitor) RW_CALL(opt->monitor(opt->monitor_ctx, n + 1, t + h, y));
  }
  return 0;
}

int rw_forward_solve(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector y,
                     double *J, rw_adjoint_stats *stats)
{
  long N;
  double last;
  rw_adjoint_stats s;
  memset(&s, 0, sizeof s);
  RW_CALL(rw_time_grid(opt->t0, opt->tf, opt->dt, &N, &last));
  rw_problem_counts c0, c1;
  rw_problem_get_counts(prob, &c0);
  double t0 = rw_wtime(), q = 0.0, g = 0.0;
  RW_CALL(rw_forward_sweep(st, opt, N, y, NULL, 0, &q));
  RW_CALL(rw_sum_over_ranks(rw_problem_context(prob), &q, 1));
  RW_CALL(rw_problem_terminal(prob, opt->tf, y, &g));
  RW_CHECK(isfinite(g + q), RW_ERR_STEP,
           "the objective is not finite (J = %g): the solution blew up; reduce dt (%g) or check "
           "the parameters",
           g + q, opt->dt);
  rw_problem_get_counts(prob, &c1);
  s.steps = N;
  s.last_dt = last;
  s.J_terminal = g;
  s.J_running = q;
  s.J = g + q;
  s.rhs_forward = c1.rhs - c0.rhs;
  s.time_forward = rw_wtime() - t0;
  *J = s.J;
  if (stats) *stats = s;
  return 0;
}

int rw_adjoint_solve(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector y,
                     double *J, double *dJdp, N_Vector dJdy0, rw_adjoint_stats *stats)
{
  int ierr = 0;
  long N = 0;
  double last;
  int np = rw_problem_nparams(prob);
  int per = opt->store_stages ? rw_stepper_num_stage_vectors(st) : 1;
  N_Vector *traj = NULL, lambda = NULL;
  double *pbar = NULL;
  rw_adjoint_stats s;
  memset(&s, 0, sizeof s);
  RW_CHECK(opt->mode == RW_ADJOINT_STORE, RW_ERR_ARG, "adjoint mode %d is not available",
           (int)opt->mode);
  RW_CALL(rw_time_grid(opt->t0, opt->tf, opt->dt, &N, &last));
  RW_CHECK(N <= (1L << 40) / per, RW_ERR_BUDGET, "store mode cannot hold %ld steps", N);
  size_t base = rw_mem_current();
  rw_mem_reset_peak();
  rw_problem_counts c0, c1, c2;
  rw_problem_get_counts(prob, &c0);

  /* Allocate every snapshot before the time loop: a budget problem shows at start-up. */
  RW_TRY(rw_vec_clone_array(y, (int)(N * per), &traj));
  RW_TRY(rw_vec_clone(y, &lambda));
  RW_TRY(rw_calloc((size_t)np + 1, sizeof *pbar, "parameter adjoint", &pbar));
  s.snapshots = N;
  s.snapshot_bytes = (size_t)per * rw_vec_bytes(y);
  s.checkpoint_bytes = (size_t)N * s.snapshot_bytes;

  double tA = rw_wtime(), q = 0.0, g = 0.0;
  RW_TRY(rw_forward_sweep(st, opt, N, y, traj, per, &q));
  RW_TRY(rw_sum_over_ranks(rw_problem_context(prob), &q, 1));
  RW_TRY(rw_problem_terminal(prob, opt->tf, y, &g));
  RW_CHECK_GOTO(isfinite(g + q), RW_ERR_STEP,
                "the objective is not finite (J = %g): the solution blew up; reduce dt (%g) or "
                "check the parameters",
                g + q, opt->dt);
  double tB = rw_wtime();
  rw_problem_get_counts(prob, &c1);

  /* Backward sweep: lambda = dg/dy(y_N), then the adjoint of each step in reverse. */
  RW_TRY(rw_problem_terminal_grad(prob, opt->tf, y, lambda, pbar));
  for (long n = N - 1; n >= 0; n--) {
    double t = rw_time_grid_point(opt->t0, opt->tf, opt->dt, N, n);
    double h = rw_time_grid_point(opt->t0, opt->tf, opt->dt, N, n + 1) - t;
    N_Vector *stages = opt->store_stages ? &traj[n * per] : NULL;
    RW_TRY(rw_stepper_adjoint_step(st, t, h, traj[n * per], stages, lambda, pbar));
  }
  RW_TRY(rw_sum_over_ranks(rw_problem_context(prob), pbar, np));
  double tC = rw_wtime();
  rw_problem_get_counts(prob, &c2);

  if (dJdp) memcpy(dJdp, pbar, (size_t)np * sizeof *pbar);
  if (dJdy0) rw_vec_copy(lambda, dJdy0);
  s.steps = N;
  s.last_dt = last;
  s.J_terminal = g;
  s.J_running = q;
  s.J = g + q;
  s.rhs_forward = c1.rhs - c0.rhs;
  s.rhs_backward = c2.rhs - c1.rhs;
  s.vjp_y = c2.vjp_y - c1.vjp_y;
  s.vjp_p = c2.vjp_p - c1.vjp_p;
  s.time_forward = tB - tA;
  s.time_backward = tC - tB;
  s.peak_alloc_bytes = rw_mem_peak() - base;
  *J = s.J;
  if (stats) *stats = s;
cleanup:
  rw_vec_destroy_array(&traj, (int)(N * per));
  rw_vec_destroy(&lambda);
  rw_free(&pbar);
  return ierr;
}
