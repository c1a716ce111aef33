/* The adjoint driver: the time grid, the forward solve, and for every adjoint mode the one
 * sequence forward sweep -> objective -> backward loop of adjoint steps -> dJ/dp summed over
 * ranks -> finiteness check. How the backward loop gets y_n is the mode's state source
 * (rw_adjoint_impl.h): stored (rw_source_store.c), recomputed under a schedule
 * (rw_source_checkpoint.c), or rebuilt from y_{n+1} (rw_source_rebuild.c). */
#include "rewind/rw_adjoint.h"

#include "rewind/rw_device.h"
#include "rewind/rw_sde.h"
#include "rw_adjoint_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rw_adjoint_options_default(rw_adjoint_options *opt)
{
  memset(opt, 0, sizeof *opt);
  opt->t0 = 0.0;
  opt->tf = 1.0;
  opt->dt = 0.01;
  opt->mode = RW_ADJOINT_STORE;
  opt->drift_tol = 1e-6;
  opt->drift_action = RW_DRIFT_FALLBACK;
}

int rw_time_grid(double t0, double tf, double dt, long *nsteps, double *last_dt)
{
  RW_CHECK(isfinite(t0) && isfinite(tf) && tf > t0, RW_ERR_ARG,
           "time interval [%g, %g]: the final time must be finite and greater than the initial "
           "time",
           t0, tf);
  RW_CHECK(isfinite(dt) && dt > 0.0, RW_ERR_ARG, "step size dt = %g must be finite and > 0", dt);
  double r = (tf - t0) / dt;
  RW_CHECK(r < 1e12, RW_ERR_ARG, "dt = %g gives %.3g steps over [%g, %g]; at most 1e12 allowed", dt,
           r, t0, tf);
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

/* The run's grid: the replay grid opt->times when given, else the fixed grid. */
int rw_grid_setup(const rw_adjoint_options *opt, long *N, double *last)
{
  if (!opt->times) {
    RW_CALL(rw_time_grid(opt->t0, opt->tf, opt->dt, N, last));
    return 0;
  }
  RW_CHECK(opt->nsteps >= 1, RW_ERR_ARG, "replay grid: nsteps = %ld must be >= 1", opt->nsteps);
  for (long n = 0; n < opt->nsteps; n++)
    RW_CHECK(opt->times[n + 1] > opt->times[n], RW_ERR_ARG,
             "replay grid: times[%ld] = %.17g is not after times[%ld] = %.17g", n + 1,
             opt->times[n + 1], n, opt->times[n]);
  *N = opt->nsteps;
  *last = opt->times[*N] - opt->times[*N - 1];
  return 0;
}

double rw_grid_t(const rw_adjoint_options *opt, long N, long n)
{
  return opt->times ? opt->times[n] : rw_time_grid_point(opt->t0, opt->tf, opt->dt, N, n);
}

double rw_grid_end(const rw_adjoint_options *opt, long N)
{
  return opt->times ? opt->times[N] : opt->tf;
}

/* Calls the monitor under the HDF5 lock: it may write output while the checkpoint store's
 * I/O thread is using HDF5. */
int rw_call_monitor(const rw_adjoint_options *opt, long n, double t, N_Vector y)
{
  rw_hdf5_lock();
  int ierr = opt->monitor(opt->monitor_ctx, n, t, y);
  rw_hdf5_unlock();
  return ierr;
}

int rw_objective(rw_problem prob, const rw_adjoint_options *opt, double t_end, N_Vector y,
                 double *q, double *g)
{
  RW_CALL(rw_sum_over_ranks(rw_problem_context(prob), q, 1));
  RW_CALL(rw_problem_terminal(prob, t_end, y, g));
  RW_CHECK(isfinite(*g + *q), RW_ERR_STEP,
           "the objective is not finite (J = %g): the solution blew up; reduce dt (%g) or check "
           "the parameters",
           *g + *q, opt->dt);
  return 0;
}

/* The statistics every mode fills alike: N, the last step, J and its parts, and the evaluations
 * of each sweep from the problem's counters before the forward sweep (c[0]), after it (c[1])
 * and after the backward sweep (c[2]). */
static void rw_stats_sweeps(rw_adjoint_stats *s, long N, double last, double g, double q,
                            const rw_problem_counts c[3])
{
  const rw_problem_counts *c0 = &c[0], *c1 = &c[1], *c2 = &c[2];
  s->steps = N;
  s->last_dt = last;
  s->J_terminal = g;
  s->J_running = q;
  s->J = g + q;
  s->rhs_forward = c1->rhs - c0->rhs;
  s->rhs_backward = c2->rhs - c1->rhs;
  s->vjp_y = c2->vjp_y - c1->vjp_y;
  s->vjp_p = c2->vjp_p - c1->vjp_p;
}

int rw_sum_over_ranks(rw_context ctx, double *v, int n)
{
  if (n <= 0) return 0;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, rw_context_comm(ctx)));
  return 0;
}

/* One forward sweep from y (overwritten with y(tf)); when `traj` is not NULL, snapshot n
 * (the state, or the stages) is kept in traj[n * per + k]. Returns the local running-cost
 * sum in *qloc. */

void rw_source_step(const rw_state_source *src, long n, double *t, double *h)
{
  *t = rw_grid_t(src->opt, src->N, n);
  *h = rw_grid_t(src->opt, src->N, n + 1) - *t;
}

int rw_source_forward_steps(rw_state_source *src, rw_stepper st, const rw_adjoint_options *opt,
                            long N, N_Vector y, double *q)
{
  /* y_n in `cur`: y, stepped in place; or, where the source keeps every y_n in a vector of its
   * own (home), that vector, stepped into the next one (a step out of place is the same
   * arithmetic as in place), which saves a copy of the state per step */
  N_Vector home0 = src && src->ops->home && N > 0 ? src->ops->home(src, 0) : NULL;
  const int homed = home0 != NULL;
  N_Vector cur = homed ? home0 : y;
  if (homed) rw_vec_copy(y, cur);
  if (opt->monitor) RW_CALL(rw_call_monitor(opt, 0, rw_grid_t(opt, N, 0), cur));
  for (long n = 0; n < N; n++) {
    double t = rw_grid_t(opt, N, n);
    double h = rw_grid_t(opt, N, n + 1) - t;
    N_Vector *stages = NULL, next = y;
    if (homed && n + 1 < N) next = src->ops->home(src, n + 1);
    if (src && !homed) RW_CALL(src->ops->record(src, n, y, &stages));
    rw_stepper_set_step_index(st, n);
    RW_CALL(rw_stepper_step(st, t, h, cur, next, stages, q));
    cur = next;
    if (opt->monitor) RW_CALL(rw_call_monitor(opt, n + 1, t + h, cur));
    if (opt->progress) opt->progress(opt->progress_ctx, 0, n + 1, t + h, 0);
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
  s.restart_step = -1;
  RW_CHECK(!opt->adaptive, RW_ERR_NOT_IMPLEMENTED,
           "rw_forward_solve runs fixed or replayed grids; adaptive runs go through "
           "rw_adjoint_solve (checkpoint mode, online schedule)");
  RW_CALL(rw_grid_setup(opt, &N, &last));
  rw_problem_counts c0, c1;
  rw_problem_get_counts(prob, &c0);
  double t0 = rw_wtime(), q = 0.0, g = 0.0;
  RW_CALL(rw_problem_solve_begin(prob));
  int ierr = rw_source_forward_steps(NULL, st, opt, N, y, &q);
  if (!ierr) ierr = rw_objective(prob, opt, rw_grid_end(opt, N), y, &q, &g);
  rw_problem_solve_end(prob);
  RW_CALL(ierr);
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

/* The adjoint of each step in reverse at the y_n (and stages) the source fetches; a source
 * that rewinds the adjoint state sends the loop back to a later step. */
static int rw_backward_steps(rw_state_source *src, rw_adjoint_state *adj)
{
  const rw_adjoint_options *opt = src->opt;
  for (long n = src->N - 1; n >= 0; n--) {
    rw_fetch f = {.y = NULL, .stages = NULL, .scratch = NULL, .resume = -1};
    RW_CALL(src->ops->fetch(src, n, adj, &f));
    if (f.resume >= 0) {
      n = f.resume + 1;
      continue;
    }
    double t, h;
    rw_source_step(src, n, &t, &h);
    rw_stepper_set_step_index(src->st, n);
    rw_stepper_lend_stage_vectors(src->st, f.stages ? NULL : f.scratch);
    RW_CALL(rw_stepper_adjoint_step(src->st, t, h, f.y, f.stages, adj->lambda, adj->pbar));
    if (opt->progress) opt->progress(opt->progress_ctx, 1, n, t, src->recomputed);
  }
  return 0;
}

/* The backward loop, the same for every mode: lambda = dg/dy(y_N), then the adjoint of each
 * step in reverse; the problem may hold its dJ/dp terms until the sweep's end (a device's
 * products: rw_problem_params_defer), and pbar is complete when this returns. */
static int rw_backward_sweep(rw_state_source *src, N_Vector yN, rw_adjoint_state *adj)
{
  const rw_adjoint_options *opt = src->opt;
  if (adj->field) N_VConst(0.0, adj->field);
  RW_CALL(
      rw_problem_terminal_grad(src->prob, rw_grid_end(opt, src->N), yN, adj->lambda, adj->pbar));
  RW_CALL(rw_problem_params_defer(src->prob, adj->pbar));
  int ierr = rw_backward_steps(src, adj);
  if (!ierr) ierr = rw_problem_params_flush(src->prob);
  int e = rw_problem_params_defer(src->prob, NULL);
  RW_CALL(ierr);
  RW_CALL(e);
  return 0;
}

typedef int (*rw_source_create_fn)(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                                   N_Vector y, rw_adjoint_stats *s, rw_state_source **out);

/* Forward sweep, objective, backward sweep and statistics of one adjoint solve, with the state
 * source `create` makes. Collective. */
static int rw_adjoint_run(rw_source_create_fn create, rw_problem prob, rw_stepper st,
                          const rw_adjoint_options *opt, N_Vector y, double *J, double *dJdp,
                          N_Vector dJdy0, rw_adjoint_stats *stats)
{
  int ierr = 0;
  rw_state_source *src = NULL;
  rw_adjoint_state adj = {.np = rw_problem_nparams(prob), .field = rw_problem_field_adjoint(prob)};
  rw_adjoint_stats s;
  memset(&s, 0, sizeof s);
  s.restart_step = -1;
  size_t base = 0, outer = 0, peak = 0; /* the solve's allocations, in their own window */
  int window = 0, own = 1;
  RW_TRY(create(prob, st, opt, y, &s, &src));
  base = rw_mem_current();
  outer = rw_mem_window_begin();
  window = 1;
  rw_problem_counts c[3];
  rw_problem_get_counts(prob, &c[0]);
  RW_TRY(src->ops->alloc(src, y));
  /* The sweep's adjoint state is dJdy0 itself where the caller gives one that shares nothing
   * with y (the same kind and length, other data): one state less held through the sweep, and
   * no copy at the end. Else a vector of our own, copied out at the end. */
  own =
      !(dJdy0 && rw_vec_data(dJdy0) != rw_vec_data(y) && rw_vec_device(dJdy0) == rw_vec_device(y) &&
        rw_vec_local_length(dJdy0) == rw_vec_local_length(y));
  if (own)
    RW_TRY(rw_vec_clone(y, &adj.lambda));
  else
    adj.lambda = dJdy0;
  RW_TRY(rw_calloc((size_t)adj.np + 1, sizeof *adj.pbar, "parameter adjoint", &adj.pbar));

  double tA = rw_wtime(), q = 0.0, g = 0.0;
  RW_TRY(src->ops->forward(src, y, &q));
  opt = src->opt; /* an adaptive run's grid is known now */
  long N = src->N;
  RW_TRY(rw_objective(prob, opt, rw_grid_end(opt, N), y, &q, &g));
  double tB = rw_wtime();
  rw_problem_get_counts(prob, &c[1]);
  RW_TRY(rw_backward_sweep(src, y, &adj));
  if (src->ops->end) RW_TRY(src->ops->end(src));
  RW_TRY(rw_sum_over_ranks(rw_problem_context(prob), adj.pbar, adj.np));
  double tC = rw_wtime();
  rw_problem_get_counts(prob, &c[2]);
  RW_TRY(src->ops->stats(src, &s));

  if (dJdp) memcpy(dJdp, adj.pbar, (size_t)adj.np * sizeof *adj.pbar);
  if (dJdy0 && own) rw_vec_copy(adj.lambda, dJdy0);
  rw_stats_sweeps(&s, N, N >= 1 ? rw_grid_end(opt, N) - rw_grid_t(opt, N, N - 1) : 0.0, g, q, c);
  s.time_forward = tB - tA;
  s.time_backward = tC - tB;
  peak = rw_mem_window_end(outer);
  window = 0;
  s.peak_alloc_bytes = peak - base;
  *J = s.J;
  if (stats) *stats = s;
cleanup:
  if (window) rw_mem_window_end(outer);
  if (src) src->ops->destroy(src);
  if (own) rw_vec_destroy(&adj.lambda);
  rw_free(&adj.pbar);
  return ierr;
}

/* A gradient with a NaN or an infinity is an error, never a result (a finite J can still
 * have one: an overflow in a VJP, inf * 0). dJdp is the same on every rank; the norm of dJdy0
 * is a global reduction, so every rank reaches the same verdict. Collective. */
static int rw_check_gradient(rw_problem prob, const double *dJdp, N_Vector dJdy0)
{
  int np = rw_problem_nparams(prob);
  for (int k = 0; dJdp && k < np; k++) {
    if (isfinite(dJdp[k])) continue;
    char what[80];
    if (rw_problem_params_named(prob))
      snprintf(what, sizeof what, "dJ/d%s", rw_problem_param_name(prob, k));
    else
      snprintf(what, sizeof what, "dJ/dtheta[%d]", k);
    return RW_ERROR(RW_ERR_STEP,
                    "the gradient is not finite (%s = %g) although J is: an overflow in the "
                    "adjoint sweep; check the parameters and the initial state",
                    what, dJdp[k]);
  }
  if (dJdy0) {
    double n2 = N_VDotProd(dJdy0, dJdy0);
    RW_CHECK(isfinite(n2), RW_ERR_STEP,
             "the gradient is not finite (|dJ/dy0|^2 = %g) although J is: an overflow in the "
             "adjoint sweep; check the parameters and the initial state",
             n2);
  }
  return 0;
}

int rw_adjoint_solve(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector y,
                     double *J, double *dJdp, N_Vector dJdy0, rw_adjoint_stats *stats)
{
  RW_CHECK(prob && st && opt && y && J, RW_ERR_ARG, "rw_adjoint_solve: NULL argument");
  RW_CALL(rw_problem_check_adjoint(prob)); /* a missing VJP now, not after the forward sweep */
  rw_source_create_fn create = NULL;
  switch (opt->mode) {
  case RW_ADJOINT_STORE:
    create = rw_source_store_create;
    break;
  case RW_ADJOINT_CHECKPOINT:
    create = rw_source_checkpoint_create;
    break;
  case RW_ADJOINT_REVERSIBLE:
  case RW_ADJOINT_BACKSOLVE:
    create = rw_source_rebuild_create;
    break;
  }
  RW_CHECK(create, RW_ERR_ARG, "unknown adjoint mode %d", (int)opt->mode);
  /* frozen parameters: dJdp is left as the caller set it (the sweep still gathers the costs'
   * explicit terms in p, which are not the derivative and are not reported) */
  double *dp = rw_problem_params_active(prob) ? dJdp : NULL;
  RW_CALL(rw_problem_solve_begin(prob));
  int ierr = rw_adjoint_run(create, prob, st, opt, y, J, dp, dJdy0, stats);
  rw_problem_solve_end(prob);
  RW_CALL(ierr);
  RW_CALL(rw_check_gradient(prob, dp, dJdy0));
  return 0;
}

/* The mean over an ensemble of noise paths (issue 12): path m is the noise of seed + m, every
 * path starts from the same y0, and the objective and every gradient are summed path after
 * path in that order, then scaled by 1/M, so the result is deterministic and independent of
 * anything but (seed, M) and the deck. The paths run one after another: each is a complete
 * adjoint solve under `opt` (any mode and budget), so the memory is that of one path; the
 * monitor (trajectory output) is called on the last path only. */
int rw_adjoint_solve_ensemble(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, long M,
                              N_Vector y, double *J, double *dJdp, N_Vector dJdy0,
                              rw_adjoint_stats *stats)
{
  RW_CHECK(prob && st && opt && y && J, RW_ERR_ARG, "rw_adjoint_solve_ensemble: NULL argument");
  RW_CHECK(M >= 1, RW_ERR_ARG, "an ensemble needs at least one path (got %ld)", M);
  if (M == 1) return rw_adjoint_solve(prob, st, opt, y, J, dJdp, dJdy0, stats);
  int ierr = 0, np = rw_problem_nparams(prob);
  uint64_t seed = 0;
  double amp = 0.0;
  long refine = 1;
  rw_problem_get_noise(prob, &seed, &amp, &refine);
  RW_CHECK(rw_problem_has_noise(prob) && rw_sde_method_known(rw_stepper_name(st)) && amp != 0.0,
           RW_ERR_ARG,
           "an ensemble of %ld paths needs noise: a problem with a diffusion term, a nonzero "
           "amplitude and an SDE stepper (%s); here problem '%s', amplitude %g, stepper '%s' "
           "(every path would be the same)",
           M, rw_sde_method_names(), rw_problem_name(prob), amp, rw_stepper_name(st));
  N_Vector y0 = NULL, gy0 = NULL, field_sum = NULL, field = rw_problem_field_adjoint(prob);
  double *gp = NULL, *gp_sum = NULL, Jsum = 0.0;
  rw_adjoint_stats one, sum;
  memset(&sum, 0, sizeof sum);
  RW_TRY(rw_vec_clone(y, &y0));
  rw_vec_copy(y, y0);
  if (dJdy0) {
    RW_TRY(rw_vec_clone(dJdy0, &gy0));
    N_VConst(0.0, dJdy0);
  }
  if (field) {
    RW_TRY(rw_vec_clone(field, &field_sum));
    N_VConst(0.0, field_sum);
  }
  if (dJdp && rw_problem_params_active(prob)) { /* frozen: dJdp left as the caller set it */
    RW_TRY(rw_calloc((size_t)np, sizeof(double), "ensemble gradient", &gp));
    RW_TRY(rw_calloc((size_t)np, sizeof(double), "ensemble gradient sum", &gp_sum));
  }
  for (long m = 0; m < M; m++) {
    double Jm = 0.0;
    rw_vec_copy(y0, y);
    RW_TRY(rw_problem_set_noise(prob, seed + (uint64_t)m, amp, refine));
    /* the monitor (trajectory output) sees the last path only */
    rw_adjoint_options o = *opt;
    if (m < M - 1) o.monitor = NULL;
    RW_TRY(rw_adjoint_solve(prob, st, &o, y, &Jm, gp, gy0, &one));
    Jsum += Jm;
    for (int k = 0; gp && k < np; k++)
      gp_sum[k] += gp[k];
    if (gy0) N_VLinearSum(1.0, dJdy0, 1.0, gy0, dJdy0);
    if (field) N_VLinearSum(1.0, field_sum, 1.0, field, field_sum);
    /* counts and times add up over the paths; sizes and settings are those of one path */
    if (m == 0)
      sum = one;
    else {
      sum.advances += one.advances, sum.optimal_advances += one.optimal_advances;
      sum.recomputed_steps += one.recomputed_steps, sum.restores += one.restores;
      sum.accepted += one.accepted, sum.rejected += one.rejected;
      sum.disk_writes += one.disk_writes, sum.disk_reads += one.disk_reads;
      sum.schedule_cost += one.schedule_cost;
      sum.time_disk_write += one.time_disk_write, sum.time_disk_read += one.time_disk_read;
      sum.time_forward += one.time_forward, sum.time_backward += one.time_backward;
      sum.rebuilt_steps += one.rebuilt_steps, sum.fallback_steps += one.fallback_steps;
      sum.drift_segments += one.drift_segments, sum.drift_fallbacks += one.drift_fallbacks;
      if (one.drift_max > sum.drift_max) sum.drift_max = one.drift_max;
      if (one.peak_alloc_bytes > sum.peak_alloc_bytes) sum.peak_alloc_bytes = one.peak_alloc_bytes;
    }
  }
  const double inv = 1.0 / (double)M;
  *J = Jsum * inv;
  for (int k = 0; gp && k < np; k++)
    dJdp[k] = gp_sum[k] * inv;
  if (dJdy0) N_VScale(inv, dJdy0, dJdy0);
  if (field) N_VScale(inv, field_sum, field);
  if (stats) *stats = sum;
cleanup : {
  int e = rw_problem_set_noise(prob, seed, amp, refine);
  if (!ierr) ierr = e;
}
  rw_vec_destroy(&y0);
  rw_vec_destroy(&gy0);
  rw_vec_destroy(&field_sum);
  rw_free(&gp);
  rw_free(&gp_sum);
  return ierr;
}
