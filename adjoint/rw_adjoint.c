/* The adjoint driver: store-everything mode, and checkpoint mode running any schedule
 * from checkpoint/ over a RAM store. Both give the same gradient bit for bit: every forward
 * step, first or recomputed, runs through rw_stepper_step / the stepper's own stage code
 * from the same input state. */
#include "rewind/rw_adjoint.h"

#include "rewind/rw_schedule.h"
#include "rewind/rw_store.h"
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

void rw_stats_sweeps(rw_adjoint_stats *s, long N, double last, double g, double q,
                     const rw_problem_counts *c0, const rw_problem_counts *c1,
                     const rw_problem_counts *c2)
{
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
static int rw_forward_sweep(rw_stepper st, const rw_adjoint_options *opt, long N, N_Vector y,
                            N_Vector *traj, int per, double *qloc)
{
  *qloc = 0.0;
  if (opt->monitor) RW_CALL(rw_call_monitor(opt, 0, rw_grid_t(opt, N, 0), y));
  for (long n = 0; n < N; n++) {
    double t = rw_grid_t(opt, N, n);
    double h = rw_grid_t(opt, N, n + 1) - t;
    N_Vector *stages = NULL;
    if (traj && opt->store_stages)
      stages = &traj[n * per];
    else if (traj)
      rw_vec_copy(y, traj[n]);
    RW_CALL(rw_stepper_step(st, t, h, y, y, stages, qloc));
    if (opt->monitor) RW_CALL(rw_call_monitor(opt, n + 1, t + h, y));
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
  RW_CALL(rw_forward_sweep(st, opt, N, y, NULL, 0, &q));
  RW_CALL(rw_objective(prob, opt, rw_grid_end(opt, N), y, &q, &g));
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

static int rw_adjoint_solve_store(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                                  N_Vector y, double *J, double *dJdp, N_Vector dJdy0,
                                  rw_adjoint_stats *stats)
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
  s.restart_step = -1;
  RW_CALL(rw_grid_setup(opt, &N, &last));
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
  RW_TRY(rw_objective(prob, opt, rw_grid_end(opt, N), y, &q, &g));
  double tB = rw_wtime();
  rw_problem_get_counts(prob, &c1);

  /* Backward sweep: lambda = dg/dy(y_N), then the adjoint of each step in reverse. */
  if (rw_problem_field_adjoint(prob)) N_VConst(0.0, rw_problem_field_adjoint(prob));
  RW_TRY(rw_problem_terminal_grad(prob, rw_grid_end(opt, N), y, lambda, pbar));
  for (long n = N - 1; n >= 0; n--) {
    double t = rw_grid_t(opt, N, n);
    double h = rw_grid_t(opt, N, n + 1) - t;
    N_Vector *stages = opt->store_stages ? &traj[n * per] : NULL;
    RW_TRY(rw_stepper_adjoint_step(st, t, h, traj[n * per], stages, lambda, pbar));
    if (opt->progress) opt->progress(opt->progress_ctx, 1, n, t, 0);
  }
  RW_TRY(rw_sum_over_ranks(rw_problem_context(prob), pbar, np));
  double tC = rw_wtime();
  rw_problem_get_counts(prob, &c2);

  if (dJdp) memcpy(dJdp, pbar, (size_t)np * sizeof *pbar);
  if (dJdy0) rw_vec_copy(lambda, dJdy0);
  rw_stats_sweeps(&s, N, last, g, q, &c0, &c1, &c2);
  s.time_forward = tB - tA;
  s.time_backward = tC - tB;
  s.advances = N - 1;
  s.optimal_advances = N - 1;
  s.peak_slots = (int)N;
  s.peak_alloc_bytes = rw_mem_peak() - base;
  *J = s.J;
  if (stats) *stats = s;
cleanup:
  rw_vec_destroy_array(&traj, (int)(N * per));
  rw_vec_destroy(&lambda);
  rw_free(&pbar);
  return ierr;
}

static int rw_make_schedule(const rw_adjoint_options *opt, long N, int slots, int dslots, double wd,
                            double rd, rw_schedule *out)
{
  RW_CHECK(dslots == 0 || opt->schedule == RW_SCHEDULE_BINOMIAL ||
               opt->schedule == RW_SCHEDULE_ONLINE,
           RW_ERR_ARG,
           "disk checkpoints (checkpoint_disk) run under the binomial schedule (the optimal "
           "two-level RAM + disk schedule) or the online one (periodic disk checkpoints); the %s "
           "schedule keeps its checkpoints in RAM",
           opt->schedule == RW_SCHEDULE_FIXED ? "fixed-interval" : "store-all");
  switch (opt->schedule) {
  case RW_SCHEDULE_BINOMIAL:
    if (dslots > 0)
      RW_CALL(rw_schedule_create_two_level(N, slots, dslots, wd, rd, out));
    else
      RW_CALL(rw_schedule_create_binomial(N, slots, out));
    break;
  case RW_SCHEDULE_ONLINE:
    if (dslots > 0)
      RW_CALL(rw_schedule_create_online_disk(slots, dslots, wd, rd, out));
    else
      RW_CALL(rw_schedule_create_online(slots, out));
    break;
  case RW_SCHEDULE_FIXED:
    RW_CHECK(opt->interval >= 1, RW_ERR_ARG, "fixed-interval schedule: interval %ld must be >= 1",
             opt->interval);
    RW_CALL(rw_schedule_create_fixed_interval(N, opt->interval, out));
    break;
  case RW_SCHEDULE_STORE_ALL:
    RW_CALL(rw_schedule_create_store_all(N, out));
    break;
  default:
    return RW_ERROR(RW_ERR_ARG, "unknown schedule kind %d", (int)opt->schedule);
  }
  return 0;
}

/* Step-size controller for adaptive stepping (Hairer, Norsett & Wanner I, Sec. II.4):
 * h_new = h min(5, max(0.2, 0.9 err^(-1/(q+1)))), no growth right after a rejection. */
static double rw_next_h(double h, double err, int q, int after_reject)
{
  double fac = err > 0.0 ? 0.9 * pow(err, -1.0 / (q + 1)) : 5.0;
  fac = fmin(after_reject ? 1.0 : 5.0, fmax(0.2, fac));
  return h * fac;
}

/* Recorded grid of an adaptive run: times[0..n], grown geometrically (amortised O(1); the
 * record is 8 bytes per step, counted by the allocator). */
typedef struct {
  double *t;
  long n, cap;
} rw_time_record;

static int rw_time_record_push(rw_time_record *r, double t)
{
  if (r->n + 1 >= r->cap) {
    long cap = r->cap ? 2 * r->cap : 1024;
    double *nt = NULL;
    RW_CALL(rw_calloc((size_t)cap, sizeof *nt, "adaptive step record", &nt));
    if (r->t) memcpy(nt, r->t, (size_t)(r->n + 1) * sizeof *nt);
    rw_free(&r->t);
    r->t = nt;
    r->cap = cap;
  }
  r->t[++r->n] = t;
  return 0;
}

/* One accepted adaptive step from cur (time t) into cur; records the new time. */
static int rw_adaptive_advance(rw_stepper st, const rw_adjoint_options *opt, N_Vector cur,
                               N_Vector trial, N_Vector *stages, double *hprop, double *q,
                               rw_time_record *rec, rw_adjoint_stats *s)
{
  double t = rec->t[rec->n], h = *hprop, err = 0.0;
  int order = 4, rejected = 0;
  rw_stepper_is_adaptive(st, &order);
  long max_steps = opt->max_steps > 0 ? opt->max_steps : 10000000L;
  RW_CHECK(rec->n < max_steps, RW_ERR_STEP,
           "adaptive stepping reached max_steps = %ld at t = %.17g before tf = %g; raise max_steps "
           "or loosen rtol/atol",
           max_steps, t, opt->tf);
  for (;;) {
    int last = 0;
    double tnew = t + h;
    if (tnew >= opt->tf || opt->tf - tnew <= 1e-12 * fabs(opt->tf)) {
      tnew = opt->tf;
      last = 1;
    }
    /* Step with the size the replay will compute from the recorded times, exactly. */
    h = tnew - t;
    RW_CHECK(h > 1e-14 * fmax(1.0, fabs(t)), RW_ERR_STEP,
             "adaptive step size underflow (h = %g) at t = %.17g: the problem may be stiff or "
             "singular there",
             h, t);
    double dq = 0.0;
    RW_CALL(rw_stepper_try_step(st, t, h, cur, trial, stages, &dq, opt->rtol, opt->atol, &err));
    RW_CHECK(isfinite(err), RW_ERR_STEP, "non-finite error estimate at t = %.17g (h = %g)", t, h);
    if (err <= 1.0) {
      rw_vec_copy(trial, cur);
      *q += dq;
      RW_CALL(rw_time_record_push(rec, tnew));
      /* the next proposal ignores the clipping to tf */
      *hprop = rw_next_h(last ? *hprop : h, err, order, rejected);
      s->accepted++;
      return 0;
    }
    s->rejected++;
    rejected = 1;
    h = rw_next_h(h, err, order, 1);
  }
}

/* The tag of snapshot `step`: its time and the size of the step from it (0 while an adaptive
 * run has not taken that step). */
static rw_snapshot_tag rw_tag(const rw_adjoint_options *opt, long N, const double *rec_t,
                              long rec_n, int64_t step)
{
  rw_snapshot_tag tg = {.step = step};
  if (N < 0) { /* adaptive, length not known yet: the record holds times up to rec_n */
    tg.t = rec_t[step];
    tg.h = step < rec_n ? rec_t[step + 1] - rec_t[step] : 0.0;
    return tg;
  }
  tg.t = rw_grid_t(opt, N, (long)step);
  tg.h = step < N ? rw_grid_t(opt, N, (long)step + 1) - tg.t : 0.0;
  return tg;
}

/* Stores the stage snapshot of `step` that the last step computed. */
static int rw_put_pending(rw_store st, int slot, const rw_adjoint_options *opt, long N,
                          const rw_time_record *rec, int64_t step, double q, N_Vector *stages)
{
  rw_snapshot_tag tg = rw_tag(opt, N, rec->t, rec->n, step);
  tg.q = q;
  RW_CALL(rw_store_put(st, slot, &tg, stages));
  return 0;
}

/* Measures the costs of a disk write and read in units of one step: one step from y, one
 * write and one read of a snapshot through a one-slot disk store. Every rank takes the
 * largest time over ranks, so all build the same schedule. Collective. */
static int rw_measure_disk_costs(rw_stepper st, const rw_adjoint_options *opt, N_Vector y, int per,
                                 double *wd, double *rd)
{
  int ierr = 0, ns = rw_stepper_num_stage_vectors(st);
  N_Vector tmp = NULL, *vecs = NULL;
  rw_store probe = NULL;
  char id[80];
  snprintf(id, sizeof id, "%s-probe", opt->run_id ? opt->run_id : "run");
  rw_store_hdf5_options ho = {
      .dir = opt->disk_dir ? opt->disk_dir : ".", .run_id = id, .contents = "probe"};
  RW_TRY(rw_vec_clone(y, &tmp));
  RW_TRY(rw_vec_clone_array(y, ns > per ? ns : per, &vecs));
  for (int k = 0; k < per; k++)
    rw_vec_copy(y, vecs[k]);
  RW_TRY(rw_store_create_hdf5(y, per, 1, &ho, &probe));
  double t = rw_grid_t(opt, 1, 0), h = opt->dt > 0.0 ? opt->dt : 1e-3, times[3];
  double w0 = rw_wtime();
  RW_TRY(rw_stepper_step(st, t, h, y, tmp, NULL, NULL));
  double w1 = rw_wtime();
  rw_snapshot_tag tg = {.step = 0, .t = t, .h = h};
  RW_TRY(rw_store_put(probe, 0, &tg, vecs));
  RW_TRY(rw_store_sync(probe)); /* the write itself, not only its hand-off */
  double w2 = rw_wtime();
  RW_TRY(rw_store_get(probe, 0, NULL, vecs));
  double w3 = rw_wtime();
  times[0] = w1 - w0;
  times[1] = w2 - w1;
  times[2] = w3 - w2;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, times, 3, MPI_DOUBLE, MPI_MAX, NV_COMM_P(y)));
  double step = times[0] > 1e-9 ? times[0] : 1e-9;
  *wd = times[1] / step;
  *rd = times[2] / step;
cleanup:
  rw_store_destroy(&probe);
  rw_vec_destroy(&tmp);
  rw_vec_destroy_array(&vecs, ns > per ? ns : per);
  return ierr;
}

/* Read-ahead for the disk store. Schedules are pure and deterministic, so a second copy of
 * the run's schedule, iterated ahead of the driver, tells which disk snapshot the driver will
 * restore next. Its read is started as soon as the last write to that slot before it has
 * been handed to the store (the store runs its I/O in order), so the read overlaps the
 * steps and adjoint steps in between. */
typedef struct {
  rw_schedule ahead;
  long ahead_idx;   /* actions the copy has emitted */
  long *last_store; /* [disk slots] index of the last disk STORE seen per slot */
  long at;          /* index of the next disk RESTORE (0: none known, -1: none left) */
  int slot, issued;
  int64_t step;
} rw_read_ahead;

/* Online schedules: the copy can only run ahead once the length is known. When the driver
 * tells its schedule the length after `emitted` actions, a copy replays those actions
 * (recording the disk stores among them) and is told the same length. Not collective. */
static int rw_read_ahead_begin(rw_read_ahead *ra, const rw_adjoint_options *opt, int slots,
                               int dslots, double wd, double rd, long emitted, long N)
{
  if (!ra->last_store) return 0; /* no disk store */
  RW_CALL(rw_make_schedule(opt, N, slots, dslots, wd, rd, &ra->ahead));
  for (long i = 0; i < emitted; i++) {
    rw_action a;
    RW_CALL(rw_schedule_next(ra->ahead, &a));
    ra->ahead_idx++;
    if (a.level == RW_LEVEL_DISK && a.type == RW_ACTION_STORE)
      ra->last_store[a.slot] = ra->ahead_idx;
  }
  RW_CALL(rw_schedule_set_steps(ra->ahead, N));
  return 0;
}

/* After the driver has executed `idx` actions: finds the next disk restore and starts its
 * read when it is safe. Not collective. */
static int rw_read_ahead_step(rw_read_ahead *ra, long idx, rw_store disk, int pend_disk_slot)
{
  if (!ra->ahead || ra->at < 0) return 0;
  if (ra->at <= idx) { /* the known read was done: look for the next */
    ra->at = 0;
    while (ra->at == 0) {
      rw_action a;
      RW_CALL(rw_schedule_next(ra->ahead, &a));
      ra->ahead_idx++;
      if (a.type == RW_ACTION_TERMINATE) {
        ra->at = -1;
        return 0;
      }
      if (a.level == RW_LEVEL_DISK && a.type == RW_ACTION_STORE)
        ra->last_store[a.slot] = ra->ahead_idx;
      if (a.level == RW_LEVEL_DISK && a.type == RW_ACTION_RESTORE && ra->ahead_idx > idx) {
        ra->at = ra->ahead_idx;
        ra->slot = a.slot;
        ra->step = a.step;
        ra->issued = 0;
      }
    }
  }
  if (!ra->issued && ra->last_store[ra->slot] <= idx && pend_disk_slot != ra->slot) {
    RW_CALL(rw_store_prefetch(disk, ra->slot, ra->step));
    ra->issued = 1;
  }
  return 0;
}

/* --- Restart ------------------------------------------------------------------------------
 * A run with a disk tier records in its checkpoint files the facts its schedule was built
 * from (the step count, slot counts and disk costs: a measured cost would differ if measured
 * again, and so would the schedule). A restarted run rebuilds the same schedule from them and
 * replays its actions without executing them up to a resume point: a disk STORE of the first
 * sweep such that
 *   - every disk slot full at that point holds, on every rank, a complete snapshot of the
 *     step the schedule put there (rw_store_hdf5_check_slot: tag and chunk checksums as
 *     written), and
 *   - every RAM slot full at that point holds the same state (RAM is lost with the process;
 *     those slots are filled again from the disk snapshot).
 * The latest such point is taken; the state and the running cost come from its snapshot, so
 * every later step computes the same bits as the uninterrupted run. With none, the run
 * starts again from y0. Disk slots not needed from there on are released. */

#define RW_RESTART_FORMAT   "rewind-restart 1 steps=%ld ram_slots=%d disk_slots=%d per=%d"
#define RW_RESTART_COSTS    " write_cost=%a read_cost=%a"
#define RW_RESTART_COSTS_IN " write_cost=%la read_cost=%la"

/* Reads the killed run's schedule facts from the store's info and checks them against this
 * run's; returns its disk slots and costs. Not collective (every rank reads its own file; the
 * files of one run agree). */
static int rw_restart_info(rw_store disk, const char *dir, long N, int slots, int per, int *dslots,
                           double *wd, double *rd)
{
  const char *info = rw_store_hdf5_info(disk);
  long n = -1;
  int rs = -1, ds = -1, pp = -1;
  RW_CHECK(sscanf(info, RW_RESTART_FORMAT RW_RESTART_COSTS_IN, &n, &rs, &ds, &pp, wd, rd) == 6,
           RW_ERR_IO,
           "restart_from '%s': the checkpoint file '%s' does not say which schedule wrote it "
           "(info = '%.80s'): it was not written by this version of Rewind",
           dir, rw_store_path(disk), info);
  RW_CHECK(n == N && rs == slots && pp == per, RW_ERR_DECK,
           "restart_from '%s': the checkpoints were written by a run of %ld steps with %d RAM "
           "slots and %d vectors per snapshot; this run has %ld steps, %d slots and %d vectors",
           dir, n, rs, pp, N, slots, per);
  *dslots = ds;
  return 0;
}

/* Replays the schedule's first sweep without executing it. With k >= 0: stops after action k
 * and leaves the slot contents there in ram/disk (step held, -1 empty) and action k in *kact.
 * With k < 0: counts in *ncand the disk STOREs of the first sweep and, when cand != NULL,
 * records their action indices in cand and in ok whether this rank could resume there (see
 * above). Not collective. */
static int rw_restart_scan(const rw_adjoint_options *opt, long N, int slots, int dslots, double wd,
                           double rd, long k, int64_t *ram, int nram, int64_t *disk, int ndisk,
                           rw_action *kact, rw_store ds, long *cand, int *ok, long *ncand)
{
  int ierr = 0;
  rw_schedule sc = NULL;
  for (int i = 0; i < nram; i++)
    ram[i] = -1;
  for (int i = 0; i < ndisk; i++)
    disk[i] = -1;
  *ncand = 0;
  RW_TRY(rw_make_schedule(opt, N, slots, dslots, wd, rd, &sc));
  for (long i = 0;; i++) {
    rw_action a;
    RW_TRY(rw_schedule_next(sc, &a));
    if (a.type == RW_ACTION_FIRST_REVERSE || a.type == RW_ACTION_TERMINATE) break;
    if (k >= 0 && i > k) break;
    if (a.type == RW_ACTION_STORE || a.type == RW_ACTION_FREE) {
      int64_t *lv = a.level == RW_LEVEL_DISK ? disk : ram;
      int nl = a.level == RW_LEVEL_DISK ? ndisk : nram;
      RW_CHECK_GOTO(a.slot >= 0 && a.slot < nl, RW_ERR_INTERNAL,
                    "restart: schedule slot %d outside the store's %d", a.slot, nl);
      lv[a.slot] = a.type == RW_ACTION_STORE ? a.step : -1;
    }
    if (i == k) *kact = a;
    if (k < 0 && a.type == RW_ACTION_STORE && a.level == RW_LEVEL_DISK) {
      if (cand) {
        int good = 1;
        for (int r = 0; good && r < nram; r++)
          good = ram[r] < 0 || ram[r] == a.step;
        for (int d = 0; good && d < ndisk; d++)
          if (disk[d] >= 0) RW_TRY(rw_store_hdf5_check_slot(ds, d, disk[d], 0, &good));
        cand[*ncand] = i;
        ok[*ncand] = good;
      }
      (*ncand)++;
    }
  }
cleanup:
  rw_schedule_destroy(&sc);
  return ierr;
}

/* Finds the resume point (see above), brings the stores, the state, the running cost and the
 * schedule `sch` to it, and sets *idx (actions done) and *at (the current step). Collective. */
static int rw_restart_resume(const rw_adjoint_options *opt, long N, int slots, int dslots,
                             double wd, double rd, rw_store *stores, rw_schedule sch, int per,
                             N_Vector cur, N_Vector *stages, long *idx, int64_t *at, double *q,
                             rw_adjoint_stats *s)
{
  int ierr = 0, nram = rw_store_num_slots(stores[RW_LEVEL_RAM]);
  int ndisk = rw_store_num_slots(stores[RW_LEVEL_DISK]);
  rw_store ds = stores[RW_LEVEL_DISK];
  int64_t *ram = NULL, *disk = NULL;
  long *cand = NULL, ncand = 0, K = -1;
  int *ok = NULL;
  int64_t *seen = NULL; /* per disk slot: the step whose data were verified */
  rw_action ka;
  memset(&ka, 0, sizeof ka);
  RW_TRY(rw_calloc((size_t)nram + 1, sizeof *ram, "restart", &ram));
  RW_TRY(rw_calloc((size_t)ndisk + 1, sizeof *disk, "restart", &disk));
  long none = 0;
  RW_TRY(rw_restart_scan(opt, N, slots, dslots, wd, rd, -1, ram, nram, disk, ndisk, &ka, ds, NULL,
                         NULL, &ncand));
  RW_TRY(rw_calloc((size_t)ncand + 1, sizeof *cand, "restart", &cand));
  RW_TRY(rw_calloc((size_t)ncand + 1, sizeof *ok, "restart", &ok));
  RW_TRY(rw_restart_scan(opt, N, slots, dslots, wd, rd, -1, ram, nram, disk, ndisk, &ka, ds, cand,
                         ok, &ncand));
  /* The latest candidate that passes everywhere: the cheap check (stamps) first, then the
   * data of every disk slot it needs, each (slot, step) read once; agreed over ranks. */
  RW_TRY(rw_calloc((size_t)ndisk + 1, sizeof *seen, "restart", &seen));
  for (int d = 0; d < ndisk; d++)
    seen[d] = -1;
  for (long c = ncand - 1; c >= 0 && K < 0; c--) {
    int good = ok[c];
    if (good) {
      RW_TRY(rw_restart_scan(opt, N, slots, dslots, wd, rd, cand[c], ram, nram, disk, ndisk, &ka,
                             ds, NULL, NULL, &none));
      for (int d = 0; good && d < ndisk; d++) {
        if (disk[d] < 0 || seen[d] == disk[d]) continue;
        RW_TRY(rw_store_hdf5_check_slot(ds, d, disk[d], 1, &good));
        if (good) seen[d] = disk[d];
      }
    }
    RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, &good, 1, MPI_INT, MPI_MIN, NV_COMM_P(cur)));
    if (good) K = cand[c];
  }
  /* The slot contents at the resume point (none when starting again). */
  if (K >= 0)
    RW_TRY(rw_restart_scan(opt, N, slots, dslots, wd, rd, K, ram, nram, disk, ndisk, &ka, ds, NULL,
                           NULL, &none));
  else { /* no resume point: start again from y0 */
    for (int d = 0; d < ndisk; d++)
      disk[d] = -1;
  }
  /* Release the disk slots not needed from here on. The files of the ranks may differ (the
   * killed run's ranks got to different points), and release is collective (it agrees on
   * errors): a rank whose slot is empty where another's is full takes part through sync. */
  for (int d = 0; d < ndisk; d++)
    seen[d] = disk[d] < 0 && rw_store_slot_step(ds, d) >= 0;
  RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, seen, ndisk, MPI_INT64_T, MPI_MAX, NV_COMM_P(cur)));
  for (int d = 0; d < ndisk; d++) {
    if (!seen[d]) continue;
    if (disk[d] < 0 && rw_store_slot_step(ds, d) >= 0)
      RW_TRY(rw_store_release(ds, d));
    else
      RW_TRY(rw_store_sync(ds));
  }
  s->restart_step = 0;
  if (K >= 0) {
    rw_snapshot_tag tag = {.step = -1};
    RW_TRY(rw_store_get(ds, ka.slot, &tag, per == 1 ? &cur : stages));
    if (per > 1) rw_vec_copy(stages[0], cur);
    RW_CHECK_GOTO(tag.step == ka.step, RW_ERR_INTERNAL,
                  "restart: slot %d holds step %lld, not %lld", ka.slot, (long long)tag.step,
                  (long long)ka.step);
    for (int r = 0; r < nram; r++)
      if (ram[r] >= 0)
        RW_TRY(rw_store_put(stores[RW_LEVEL_RAM], r, &tag, per == 1 ? &cur : stages));
    for (long i = 0; i <= K; i++) {
      rw_action a;
      RW_TRY(rw_schedule_next(sch, &a));
    }
    *idx = K + 1;
    *at = ka.step;
    *q = tag.q;
    s->restart_step = (long)ka.step;
  }
cleanup:
  rw_free(&ram);
  rw_free(&disk);
  rw_free(&cand);
  rw_free(&ok);
  rw_free(&seen);
  return ierr;
}

/* Checkpoint mode: the schedule decides what is stored, restored and recomputed; the store
 * holds the snapshots (states) in preallocated slots. With adaptive stepping the length is
 * unknown until tf is reached: the online schedule is told the number of steps after the
 * step that lands on tf. */
static int rw_adjoint_solve_checkpoint(rw_problem prob, rw_stepper st,
                                       const rw_adjoint_options *opt_in, N_Vector y, double *J,
                                       double *dJdp, N_Vector dJdy0, rw_adjoint_stats *stats)
{
  int ierr = 0, np = rw_problem_nparams(prob), ns = rw_stepper_num_stage_vectors(st);
  long N = -1;
  double last = 0.0, q = 0.0, g = 0.0, hprop = opt_in->dt;
  rw_adjoint_options o = *opt_in, *opt = &o;
  rw_schedule sch = NULL;
  rw_store stores[2] = {NULL, NULL}; /* indexed by rw_storage_level */
  rw_read_ahead ra;
  memset(&ra, 0, sizeof ra);
  long idx = 0;
  N_Vector cur = NULL, ynext = NULL, lambda = NULL, *stages = NULL;
  double *pbar = NULL;
  rw_time_record rec = {0};
  rw_adjoint_stats s;
  memset(&s, 0, sizeof s);
  s.restart_step = -1;
  if (opt->adaptive) {
    RW_CHECK(rw_stepper_is_adaptive(st, NULL), RW_ERR_ARG,
             "adaptive stepping needs a stepper with an embedded error estimate; '%s' has none "
             "(use dopri5)",
             rw_stepper_name(st));
    RW_CHECK(opt->schedule == RW_SCHEDULE_ONLINE, RW_ERR_ARG,
             "adaptive stepping does not know the number of steps in advance: it runs under the "
             "online schedule (checkpoint schedule 'online')");
    RW_CHECK(opt->rtol > 0.0 && opt->atol >= 0.0 && isfinite(opt->rtol) && isfinite(opt->atol),
             RW_ERR_ARG, "adaptive stepping needs rtol > 0 and atol >= 0 (got %g, %g)", opt->rtol,
             opt->atol);
    RW_CHECK(isfinite(opt->tf) && opt->tf > opt->t0 && opt->dt > 0.0, RW_ERR_ARG,
             "adaptive stepping needs tf > t0 and a first step dt > 0 (got [%g, %g], dt = %g)",
             opt->t0, opt->tf, opt->dt);
    opt->times = NULL;
  } else {
    RW_CALL(rw_grid_setup(opt, &N, &last));
  }
  /* A snapshot holds the state, or with store_stages the stage inputs Y_1..Y_s of the step
   * that starts there (Y_1 is the state): reversing that step after a restore then needs no
   * recomputation. */
  int per = opt->store_stages ? ns : 1;
  size_t snap = (size_t)per * rw_vec_bytes(y);
  int slots = opt->ram_slots;
  if (opt->ram_bytes > 0) {
    /* Every rank needs the same slot count: use the largest snapshot over ranks. */
    unsigned long long big = snap;
    RW_CALL_MPI(
        MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, NV_COMM_P(y)));
    RW_CALL(rw_store_slots_for_budget(opt->ram_bytes, big ? (size_t)big : 1, &slots));
  }
  if (opt->schedule == RW_SCHEDULE_BINOMIAL || opt->schedule == RW_SCHEDULE_ONLINE)
    RW_CHECK(slots >= 1, RW_ERR_BUDGET,
             "checkpointing needs at least one RAM slot (ram_slots = %d)", slots);
  /* The disk tier: slots from the disk budget (same snapshot size on every rank), costs from
   * the deck or measured now, before anything is counted. */
  int dslots = opt->disk_slots;
  double wd = opt->write_cost, rd = opt->read_cost;
  if (opt->disk_bytes > 0) {
    unsigned long long big = snap;
    RW_CALL_MPI(
        MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, NV_COMM_P(y)));
    RW_CALL(rw_store_slots_for_budget_named("checkpoint_disk", opt->disk_bytes,
                                            big ? (size_t)big : 1, &dslots));
  }
  RW_CHECK(dslots >= 0, RW_ERR_ARG, "disk_slots = %d must be >= 0", dslots);
  RW_CHECK(!opt->restart_dir || (opt->schedule == RW_SCHEDULE_BINOMIAL && !opt->adaptive),
           RW_ERR_ARG,
           "restart_from '%s': a restart continues a binomial run with disk checkpoints at a fixed "
           "step",
           opt->restart_dir);
  if (dslots > 0 && (wd < 0.0 || rd < 0.0) && !opt->restart_dir) {
    double mwd = 0.0, mrd = 0.0;
    RW_CALL(rw_measure_disk_costs(st, opt, y, per, &mwd, &mrd));
    if (wd < 0.0) wd = mwd;
    if (rd < 0.0) rd = mrd;
    s.costs_measured = 1;
  }
  size_t base = rw_mem_current();
  rw_mem_reset_peak();
  rw_problem_counts c0, c1, c2;
  rw_problem_get_counts(prob, &c0);
  memset(&c1, 0, sizeof c1);
  const char *contents = per == 1 ? "state" : "stages";
  if (opt->restart_dir) {
    /* The killed run's files, and the schedule it built (its slot counts and costs). */
    rw_store_hdf5_options ho = {.dir = opt->restart_dir,
                                .run_id = opt->run_id ? opt->run_id : "run",
                                .contents = contents,
                                .keep = opt->disk_keep,
                                .deck = opt->run_deck,
                                .decomposition = opt->run_decomposition,
                                .restart = 1};
    RW_TRY(rw_store_create_hdf5(y, per, 0, &ho, &stores[RW_LEVEL_DISK]));
    RW_TRY(rw_error_agree(NV_COMM_P(y), rw_restart_info(stores[RW_LEVEL_DISK], opt->restart_dir, N,
                                                        slots, per, &dslots, &wd, &rd)));
    opt->disk_dir = opt->restart_dir;
  }

  RW_TRY(rw_make_schedule(opt, N, slots, dslots, wd, rd, &sch));
  int cap = 0, dcap = 0;
  RW_TRY(rw_schedule_capacity(sch, &cap, &dcap));
  if (opt->schedule == RW_SCHEDULE_BINOMIAL || opt->schedule == RW_SCHEDULE_ONLINE)
    RW_CHECK_GOTO(cap <= slots, RW_ERR_INTERNAL, "schedule wants %d slots, budget gives %d", cap,
                  slots);
  /* The fixed-interval and store-all schedules choose their own slot count: with a byte
   * budget it must fit, or the run stops here, before any step. */
  RW_CHECK_GOTO(opt->ram_bytes == 0 || cap <= slots, RW_ERR_BUDGET,
                "the %s schedule needs %d snapshots of %zu bytes (%.0f bytes) but the checkpoint "
                "budget is %zu bytes; use the binomial schedule, a longer interval or a larger "
                "budget",
                opt->schedule == RW_SCHEDULE_FIXED ? "fixed-interval" : "store-all", cap, snap,
                (double)cap * (double)snap, opt->ram_bytes);
  /* Everything the loop touches is allocated here, never inside it (the adaptive step record
   * excepted: 8 bytes per step, grown geometrically). */
  RW_TRY(rw_store_create_ram(y, per, cap > 0 ? cap : 1, &stores[RW_LEVEL_RAM]));
  if (opt->restart_dir)
    RW_CHECK_GOTO(dcap == rw_store_num_slots(stores[RW_LEVEL_DISK]), RW_ERR_INTERNAL,
                  "restart: the schedule wants %d disk slots, the files have %d", dcap,
                  rw_store_num_slots(stores[RW_LEVEL_DISK]));
  if (dcap > 0) {
    char info[256];
    snprintf(info, sizeof info, RW_RESTART_FORMAT RW_RESTART_COSTS, N, slots, dslots, per, wd, rd);
    rw_store_hdf5_options ho = {.dir = opt->disk_dir ? opt->disk_dir : ".",
                                .run_id = opt->run_id ? opt->run_id : "run",
                                .contents = contents,
                                .keep = opt->disk_keep,
                                .deck = opt->run_deck,
                                .decomposition = opt->run_decomposition,
                                .info = info};
    if (!opt->restart_dir) RW_TRY(rw_store_create_hdf5(y, per, dcap, &ho, &stores[RW_LEVEL_DISK]));
    /* Fault injection for the tests (REWIND_FAULT_INJECT=kind@after, see rw_store.h). */
    const char *fault = getenv("REWIND_FAULT_INJECT");
    if (fault && *fault) {
      char kind[16] = "";
      long after = 0;
      RW_CHECK_GOTO(sscanf(fault, "%15[a-z]@%ld", kind, &after) == 2, RW_ERR_ARG,
                    "REWIND_FAULT_INJECT = '%s': expected kind@after, e.g. flip@2", fault);
      RW_TRY(rw_store_inject_fault(stores[RW_LEVEL_DISK], kind, after));
    }
    /* an online schedule's copy starts when the length is known (rw_read_ahead_begin) */
    if (opt->schedule != RW_SCHEDULE_ONLINE)
      RW_TRY(rw_make_schedule(opt, N, slots, dslots, wd, rd, &ra.ahead));
    RW_TRY(rw_calloc((size_t)dcap, sizeof *ra.last_store, "read-ahead", &ra.last_store));
  }
  RW_TRY(rw_vec_clone(y, &cur));
  RW_TRY(rw_vec_clone(y, &ynext));
  RW_TRY(rw_vec_clone(y, &lambda));
  RW_TRY(rw_vec_clone_array(y, ns, &stages));
  RW_TRY(rw_calloc((size_t)np + 1, sizeof *pbar, "parameter adjoint", &pbar));
  if (rw_problem_field_adjoint(prob)) N_VConst(0.0, rw_problem_field_adjoint(prob));
  if (opt->adaptive) {
    RW_TRY(rw_calloc(1024, sizeof *rec.t, "adaptive step record", &rec.t));
    rec.cap = 1024;
    rec.t[0] = opt->t0;
  }
  s.ram_slots = rw_store_num_slots(stores[RW_LEVEL_RAM]);
  s.disk_slots = rw_store_num_slots(stores[RW_LEVEL_DISK]);
  s.snapshot_bytes = snap;
  s.checkpoint_bytes = rw_store_bytes(stores[RW_LEVEL_RAM]);
  s.disk_bytes = rw_store_bytes(stores[RW_LEVEL_DISK]);
  s.write_cost = dslots > 0 ? wd : 0.0;
  s.read_cost = dslots > 0 ? rd : 0.0;

  double tA = rw_wtime(), tB = tA;
  rw_vec_copy(y, cur);
  if (opt->monitor)
    RW_TRY(rw_call_monitor(opt, 0, opt->adaptive ? opt->t0 : rw_grid_t(opt, N, 0), cur));
  /* The online schedule learns the length when the forward sweep reaches the last step:
   * with a fixed grid just before it (l = n + 1), adaptively just after it (l = n). */
  int told = opt->schedule != RW_SCHEDULE_ONLINE;
  int64_t at = 0, pend_step = -1, staged = -1; /* staged: step whose stages `stages` holds */
  int pend_slot = -1;
  double pend_q = 0.0;
  rw_storage_level pend_level = RW_LEVEL_RAM;
  long recomputed = 0;
  s.restart_step = -1;
  if (opt->restart_dir) {
    RW_TRY(rw_restart_resume(opt, N, slots, dslots, wd, rd, stores, sch, per, cur, stages, &idx,
                             &at, &q, &s));
    s.restart_skipped = s.restart_step;
    if (opt->monitor && s.restart_step > 0)
      RW_TRY(rw_call_monitor(opt, s.restart_step, rw_grid_t(opt, N, s.restart_step), cur));
  }
  for (;;) {
    rw_action a;
    if (!told && !opt->adaptive && at == N - 1) {
      RW_TRY(rw_schedule_set_steps(sch, N));
      RW_TRY(rw_read_ahead_begin(&ra, opt, slots, dslots, wd, rd, idx, N));
      told = 1;
    }
    RW_TRY(rw_schedule_next(sch, &a));
    if (a.type == RW_ACTION_TERMINATE) break;
    if (a.type == RW_ACTION_ADVANCE) at = a.to;
    if (a.type == RW_ACTION_RESTORE) at = a.step;
    /* A stage snapshot waits for the next step from its state, which computes the stages;
     * any other action first computes them here (one extra step evaluation). */
    if (pend_slot >= 0 && !((a.type == RW_ACTION_ADVANCE || a.type == RW_ACTION_FIRST_REVERSE) &&
                            a.step == pend_step)) {
      double t = rw_grid_t(opt, N, pend_step);
      double h = rw_grid_t(opt, N, pend_step + 1) - t;
      RW_TRY(rw_stepper_step(st, t, h, cur, ynext, stages, NULL));
      RW_TRY(
          rw_put_pending(stores[pend_level], pend_slot, opt, N, &rec, pend_step, pend_q, stages));
      pend_slot = -1;
      staged = -1;
    }
    int64_t have = staged; /* stages valid for this step, if the state was just restored */
    if (a.type != RW_ACTION_STORE && a.type != RW_ACTION_FREE) staged = -1;
    switch (a.type) {
    case RW_ACTION_ADVANCE:
      for (int64_t i = a.step; i < a.to; i++) {
        N_Vector *capture = (pend_slot >= 0 && i == pend_step) ? stages : NULL;
        if (opt->adaptive && a.first_sweep) {
          RW_TRY(rw_adaptive_advance(st, opt, cur, ynext, capture, &hprop, &q, &rec, &s));
          if (capture) {
            RW_TRY(rw_put_pending(stores[pend_level], pend_slot, opt, N, &rec, pend_step, pend_q,
                                  stages));
            pend_slot = -1;
          }
          if (rec.t[rec.n] == opt->tf) { /* landed on tf: now the length is known */
            N = rec.n;
            opt->times = rec.t;
            opt->nsteps = N;
            RW_TRY(rw_schedule_set_steps(sch, N));
            RW_TRY(rw_read_ahead_begin(&ra, opt, slots, dslots, wd, rd, idx + 1, N));
            told = 1;
          }
          if (opt->monitor) RW_TRY(rw_call_monitor(opt, (long)(i + 1), rec.t[rec.n], cur));
          if (opt->progress)
            opt->progress(opt->progress_ctx, 0, (long)(i + 1), rec.t[rec.n], recomputed);
          continue;
        }
        if (opt->adaptive) opt->times = rec.t; /* replay: the record may have moved */
        double t = rw_grid_t(opt, N, i);
        double h = rw_grid_t(opt, N, i + 1) - t;
        RW_TRY(rw_stepper_step(st, t, h, cur, cur, capture, a.first_sweep ? &q : NULL));
        if (capture) {
          RW_TRY(rw_put_pending(stores[pend_level], pend_slot, opt, N, &rec, pend_step, pend_q,
                                stages));
          pend_slot = -1;
        }
        if (a.first_sweep && opt->monitor) RW_TRY(rw_call_monitor(opt, (long)(i + 1), t + h, cur));
        if (!a.first_sweep) recomputed++;
        if (a.first_sweep && opt->progress)
          opt->progress(opt->progress_ctx, 0, (long)(i + 1), t + h, recomputed);
      }
      break;
    case RW_ACTION_STORE:
      if (per == 1) {
        rw_snapshot_tag tg = rw_tag(opt, N, rec.t, rec.n, a.step);
        tg.q = q; /* the running cost so far (meaningful in the first sweep: restarts) */
        RW_TRY(rw_store_put(stores[a.level], a.slot, &tg, &cur));
      } else {
        pend_q = q;
        pend_slot = a.slot;
        pend_level = a.level;
        pend_step = a.step;
      }
      break;
    case RW_ACTION_RESTORE: {
      rw_snapshot_tag tag = {.step = -1};
      if (per == 1) {
        RW_TRY(rw_store_get(stores[a.level], a.slot, &tag, &cur));
      } else {
        RW_TRY(rw_store_get(stores[a.level], a.slot, &tag, stages));
        rw_vec_copy(stages[0], cur);
        staged = a.step;
      }
      RW_CHECK_GOTO(tag.step == a.step, RW_ERR_INTERNAL, "slot %d holds step %lld, expected %lld",
                    a.slot, (long long)tag.step, (long long)a.step);
      s.restores++;
      break;
    }
    case RW_ACTION_FREE:
      RW_TRY(rw_store_release(stores[a.level], a.slot));
      break;
    case RW_ACTION_FIRST_REVERSE: {
      double t = rw_grid_t(opt, N, a.step), tend = rw_grid_end(opt, N);
      double h = tend - t;
      RW_TRY(rw_stepper_step(st, t, h, cur, ynext, stages, a.first_sweep ? &q : NULL));
      if (pend_slot >= 0) {
        RW_TRY(
            rw_put_pending(stores[pend_level], pend_slot, opt, N, &rec, pend_step, pend_q, stages));
        pend_slot = -1;
      }
      if (a.first_sweep && opt->monitor) RW_TRY(rw_call_monitor(opt, N, tend, ynext));
      RW_TRY(rw_objective(prob, opt, tend, ynext, &q, &g));
      tB = rw_wtime();
      rw_problem_get_counts(prob, &c1);
      RW_TRY(rw_problem_terminal_grad(prob, tend, ynext, lambda, pbar));
      RW_TRY(rw_stepper_adjoint_step(st, t, h, cur, stages, lambda, pbar));
      break;
    }
    case RW_ACTION_REVERSE: {
      double t = rw_grid_t(opt, N, a.step);
      double h = rw_grid_t(opt, N, a.step + 1) - t;
      RW_TRY(rw_stepper_adjoint_step(st, t, h, cur, have == a.step ? stages : NULL, lambda, pbar));
      if (opt->progress) opt->progress(opt->progress_ctx, 1, (long)a.step, t, recomputed);
      break;
    }
    default:
      RW_CHECK_GOTO(0, RW_ERR_INTERNAL, "unexpected schedule action %d", (int)a.type);
    }
    idx++;
    if (stores[RW_LEVEL_DISK])
      RW_TRY(rw_read_ahead_step(&ra, idx, stores[RW_LEVEL_DISK],
                                pend_slot >= 0 && pend_level == RW_LEVEL_DISK ? pend_slot : -1));
  }
  /* Write-behind: every disk write must be done, and its errors known, before any result. */
  RW_TRY(rw_store_sync(stores[RW_LEVEL_DISK]));
  RW_TRY(rw_sum_over_ranks(rw_problem_context(prob), pbar, np));
  double tC = rw_wtime();
  rw_problem_get_counts(prob, &c2);
  rw_schedule_stats ss;
  RW_TRY(rw_schedule_get_stats(sch, &ss));
  int64_t topt = 0;
  if (slots >= 1) RW_TRY(rw_binomial_advances(N, slots, NULL, &topt));

  rw_vec_copy(ynext, y);
  if (dJdp) memcpy(dJdp, pbar, (size_t)np * sizeof *pbar);
  if (dJdy0) rw_vec_copy(lambda, dJdy0);
  rw_stats_sweeps(&s, N, N >= 1 ? rw_grid_end(opt, N) - rw_grid_t(opt, N, N - 1) : 0.0, g, q, &c0,
                  &c1, &c2);
  s.snapshots = (long)ss.stores;
  s.advances = (long)ss.advances;
  s.optimal_advances = (long)topt;
  s.recomputed_steps = (long)ss.recomputations;
  s.peak_slots =
      rw_store_peak_used(stores[RW_LEVEL_RAM]) + rw_store_peak_used(stores[RW_LEVEL_DISK]);
  s.disk_writes = rw_store_writes(stores[RW_LEVEL_DISK]);
  s.disk_reads = rw_store_reads(stores[RW_LEVEL_DISK]);
  s.time_disk_write = rw_store_write_time(stores[RW_LEVEL_DISK]);
  s.time_disk_read = rw_store_read_time(stores[RW_LEVEL_DISK]);
  if (dcap > 0 && opt->schedule == RW_SCHEDULE_ONLINE) {
    int64_t pn = 0, p0 = 0;
    RW_TRY(rw_schedule_online_disk_period(sch, &pn, &p0));
    s.disk_period = (long)pn;
    s.disk_period_chosen = (long)p0;
  }
  s.schedule_cost = (double)ss.advances + s.write_cost * (double)ss.disk_writes +
                    s.read_cost * (double)ss.disk_reads;
  s.time_forward = tB - tA;
  s.time_backward = tC - tB;
  s.peak_alloc_bytes = rw_mem_peak() - base;
  *J = s.J;
  if (stats) *stats = s;
cleanup:
  rw_schedule_destroy(&sch);
  rw_schedule_destroy(&ra.ahead);
  rw_free(&ra.last_store);
  rw_store_destroy(&stores[RW_LEVEL_RAM]);
  rw_store_destroy(&stores[RW_LEVEL_DISK]);
  rw_vec_destroy(&cur);
  rw_vec_destroy(&ynext);
  rw_vec_destroy(&lambda);
  rw_vec_destroy_array(&stages, ns);
  rw_free(&pbar);
  rw_free(&rec.t);
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
  switch (opt->mode) {
  case RW_ADJOINT_STORE:
    RW_CHECK(!opt->restart_dir, RW_ERR_ARG,
             "restart_from '%s': store mode keeps no disk checkpoints to restart from",
             opt->restart_dir);
    RW_CHECK(!opt->adaptive, RW_ERR_ARG,
             "adaptive stepping runs in checkpoint mode under the online schedule (the number "
             "of steps is unknown until tf); store mode needs a fixed or replayed grid");
    RW_CALL(rw_adjoint_solve_store(prob, st, opt, y, J, dJdp, dJdy0, stats));
    RW_CALL(rw_check_gradient(prob, dJdp, dJdy0));
    return 0;
  case RW_ADJOINT_CHECKPOINT:
    RW_CALL(rw_adjoint_solve_checkpoint(prob, st, opt, y, J, dJdp, dJdy0, stats));
    RW_CALL(rw_check_gradient(prob, dJdp, dJdy0));
    return 0;
  case RW_ADJOINT_REVERSIBLE:
  case RW_ADJOINT_BACKSOLVE:
    RW_CALL(rw_adjoint_solve_rebuild(prob, st, opt, y, J, dJdp, dJdy0, stats));
    RW_CALL(rw_check_gradient(prob, dJdp, dJdy0));
    return 0;
  }
  return RW_ERROR(RW_ERR_ARG, "unknown adjoint mode %d", (int)opt->mode);
}
