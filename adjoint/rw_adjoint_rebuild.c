/* The memory-free adjoint modes: the backward sweep rebuilds each y_n from y_{n+1} instead of
 * storing or recomputing it, and sparse anchors check the rebuilt states (see rw_adjoint.h
 * for the contract, rw_stepper.h for the two ways of rebuilding).
 *
 * Why the checks are needed: a rebuilt state carries the rounding (inverse step) or the
 * truncation error (backward step) of every step between it and the last exact state, carried
 * by the backward flow. For a diffusive problem the backward flow amplifies the high
 * frequencies by up to exp(+|lambda_max| h) per step, so backward reconstruction of a heat
 * equation is wrong within a few steps; for a damped neural ODE torchdiffeq's odeint_adjoint
 * silently returns gradients several times off (the issue behind this unit). Here no
 * gradient leaves the driver unless every segment's drift is within drift_tol, or the segment
 * was reversed again exactly, or the user asked for warn.
 *
 * Layout of the run (N steps, anchor spacing k, A = ceil(N / k) anchors):
 *   forward:  y_0 -> .. -> y_N, keeping anchor j = y_{j k} (j = 0 .. A-1);
 *   backward: segment j = [a, b) = [j k, min((j + 1) k, N)), from the last to the first. The
 *             rebuild starts from an exact state (y_N, or the anchor b), goes down to y_a, and
 *             each rebuilt y_n (a < n < b) feeds the adjoint of step n; at n = a the drift is
 *             ||y_a rebuilt - anchor j|| / ||anchor j|| and the adjoint of step a uses the
 *             anchor itself.
 * Fallback: lambda, the local dJ/dp and the field adjoint are saved when a segment starts
 * (one state vector, one field vector and P numbers), so a segment whose drift is too large
 * is undone and reversed again from its anchor under a binomial schedule (Griewank & Walther
 * 2000) with the fallback slots. The adjoint steps then see exactly the states a store-mode
 * run sees, in the same order, so that segment's contribution is bitwise the store mode's.
 *
 * Memory: A anchors + F fallback slots (together at most the checkpoint budget), plus four
 * work vectors (the current and previous rebuilt states, the saved lambda, the drift
 * difference) and the saved field adjoint. */
#include "rewind/rw_schedule.h"
#include "rewind/rw_store.h"
#include "rw_adjoint_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *rw_mode_name(rw_adjoint_mode m)
{
  return m == RW_ADJOINT_REVERSIBLE ? "reversible" : "backsolve";
}

/* Checks the options against the stepper; sets the budget split. */
static int rw_rebuild_plan(rw_stepper st, const rw_adjoint_options *opt, long N, N_Vector y,
                           long *k, long *A, int *F)
{
  const char *mode = rw_mode_name(opt->mode);
  rw_reverse_kind want =
      opt->mode == RW_ADJOINT_REVERSIBLE ? RW_REVERSE_INVERSE : RW_REVERSE_BACKWARD;
  rw_reverse_kind have = rw_stepper_reverse_kind(st);
  RW_CHECK(have == want, RW_ERR_ARG,
           "adjoint mode %s needs a stepper with %s; stepper '%s' has %s (%s)", mode,
           want == RW_REVERSE_INVERSE ? "an exact inverse step" : "a backward (negative) step",
           rw_stepper_name(st), rw_reverse_kind_name(have),
           want == RW_REVERSE_INVERSE ? "use adjoint mode backsolve, or the leapfrog stepper"
                                      : "use adjoint mode reversible with this stepper");
  RW_CHECK(!opt->adaptive, RW_ERR_ARG,
           "adjoint mode %s runs a fixed or replayed grid; adaptive stepping runs in checkpoint "
           "mode under the online schedule",
           mode);
  RW_CHECK(!opt->restart_dir && opt->disk_slots == 0 && opt->disk_bytes == 0, RW_ERR_ARG,
           "adjoint mode %s keeps its anchors in RAM: disk checkpoints and restarts need "
           "adjoint mode checkpoint",
           mode);
  RW_CHECK(!opt->store_stages, RW_ERR_ARG,
           "adjoint mode %s stores no stages (store_stages applies to store and checkpoint mode)",
           mode);
  RW_CHECK(isfinite(opt->drift_tol) && opt->drift_tol > 0.0, RW_ERR_ARG,
           "drift_tol = %g must be a finite number > 0", opt->drift_tol);
  int S = opt->ram_slots;
  if (opt->ram_bytes > 0) RW_CALL(rw_store_slots_for_budget(opt->ram_bytes, rw_vec_bytes(y), &S));
  RW_CHECK(S >= 2, RW_ERR_BUDGET,
           "adjoint mode %s needs at least 2 state slots (one anchor and one for the fallback); "
           "the budget holds %d",
           mode, S);
  if (opt->drift_interval > 0) {
    *k = opt->drift_interval < N ? opt->drift_interval : N;
    *A = (N + *k - 1) / *k;
    RW_CHECK(*A < S, RW_ERR_BUDGET,
             "drift_interval = %ld needs %ld anchors for %ld steps, and the fallback at least one "
             "slot more; the checkpoint budget holds %d states (raise it, or the interval to at "
             "least %ld)",
             opt->drift_interval, *A, N, S, (N + S - 2) / (S - 1));
  } else {
    long half = S / 2;
    *k = (N + half - 1) / half;
    *A = (N + *k - 1) / *k;
  }
  long f = S - *A;
  if (f > *k) f = *k; /* a segment needs no more than one slot per step */
  *F = (int)f;
  return 0;
}

/* Relative drift ||x - ref||_2 / ||ref||_2 (global); d is work space. NaN stays NaN. */
static double rw_drift(N_Vector x, N_Vector ref, N_Vector d)
{
  N_VLinearSum(1.0, x, -1.0, ref, d);
  double num = N_VDotProd(d, d), den = N_VDotProd(ref, ref);
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Reverses segment [a, b) again from its anchor under a binomial schedule with F slots: every
 * adjoint step sees the exact y_n. Adds the forward steps taken to *steps. */
static int rw_fallback_segment(rw_stepper st, const rw_adjoint_options *opt, long N, long a, long b,
                               N_Vector anchor, N_Vector *slots, int F, N_Vector cur,
                               N_Vector lambda, double *pbar, long *steps)
{
  int ierr = 0;
  rw_schedule sch = NULL;
  RW_CALL(rw_schedule_create_binomial(b - a, F, &sch));
  rw_vec_copy(anchor, cur);
  for (;;) {
    rw_action act;
    RW_TRY(rw_schedule_next(sch, &act));
    if (act.type == RW_ACTION_TERMINATE) break;
    switch (act.type) {
    case RW_ACTION_ADVANCE:
      for (long i = (long)act.step; i < (long)act.to; i++) {
        double t = rw_grid_t(opt, N, a + i), h = rw_grid_t(opt, N, a + i + 1) - t;
        RW_TRY(rw_stepper_step(st, t, h, cur, cur, NULL, NULL));
        (*steps)++;
      }
      break;
    case RW_ACTION_STORE:
      rw_vec_copy(cur, slots[act.slot]);
      break;
    case RW_ACTION_RESTORE:
      rw_vec_copy(slots[act.slot], cur);
      break;
    case RW_ACTION_FIRST_REVERSE:
    case RW_ACTION_REVERSE: {
      long n = a + (long)act.step;
      double t = rw_grid_t(opt, N, n), h = rw_grid_t(opt, N, n + 1) - t;
      RW_TRY(rw_stepper_adjoint_step(st, t, h, cur, NULL, lambda, pbar));
      break;
    }
    default:
      break;
    }
  }
cleanup:
  rw_schedule_destroy(&sch);
  return ierr;
}

int rw_adjoint_solve_rebuild(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                             N_Vector y, double *J, double *dJdp, N_Vector dJdy0,
                             rw_adjoint_stats *stats)
{
  int ierr = 0, F = 0;
  long N = 0, k = 0, A = 0;
  double last;
  int np = rw_problem_nparams(prob);
  N_Vector *anchors = NULL, *slots = NULL, cur = NULL, prev = NULL, lsave = NULL, diff = NULL;
  N_Vector lambda = NULL;
  N_Vector fsave = NULL, field = rw_problem_field_adjoint(prob);
  double *pbar = NULL, *psave = NULL;
  rw_adjoint_stats s;
  memset(&s, 0, sizeof s);
  s.restart_step = -1;
  RW_CALL(rw_grid_setup(opt, &N, &last));
  RW_CALL(rw_rebuild_plan(st, opt, N, y, &k, &A, &F));
  size_t base = rw_mem_current();
  rw_mem_reset_peak();
  rw_problem_counts c0, c1, c2;
  rw_problem_get_counts(prob, &c0);

  /* Everything is allocated here, before the first step. */
  RW_TRY(rw_vec_clone_array(y, (int)A, &anchors));
  RW_TRY(rw_vec_clone_array(y, F, &slots));
  RW_TRY(rw_vec_clone(y, &cur));
  RW_TRY(rw_vec_clone(y, &lambda));
  RW_TRY(rw_vec_clone(y, &prev));
  RW_TRY(rw_vec_clone(y, &lsave));
  RW_TRY(rw_vec_clone(y, &diff));
  if (field) RW_TRY(rw_vec_clone(field, &fsave));
  RW_TRY(rw_calloc((size_t)np + 1, sizeof *pbar, "parameter adjoint", &pbar));
  RW_TRY(rw_calloc((size_t)np + 1, sizeof *psave, "saved parameter adjoint", &psave));
  s.anchors = A;
  s.anchor_interval = k;
  s.fallback_slots = F;
  s.ram_slots = (int)A + F;
  s.snapshot_bytes = rw_vec_bytes(y);
  s.checkpoint_bytes = (size_t)(A + F) * s.snapshot_bytes;

  /* Forward sweep, keeping the anchors. */
  double tA = rw_wtime(), q = 0.0, g = 0.0;
  if (opt->monitor) RW_TRY(rw_call_monitor(opt, 0, rw_grid_t(opt, N, 0), y));
  for (long n = 0; n < N; n++) {
    double t = rw_grid_t(opt, N, n), h = rw_grid_t(opt, N, n + 1) - t;
    if (n % k == 0) rw_vec_copy(y, anchors[n / k]);
    RW_TRY(rw_stepper_step(st, t, h, y, y, NULL, &q));
    if (opt->monitor) RW_TRY(rw_call_monitor(opt, n + 1, t + h, y));
    if (opt->progress) opt->progress(opt->progress_ctx, 0, n + 1, t + h, 0);
  }
  s.snapshots = A;
  RW_TRY(rw_objective(prob, opt, rw_grid_end(opt, N), y, &q, &g));
  double tB = rw_wtime();
  rw_problem_get_counts(prob, &c1);

  /* Backward sweep, segment by segment from the end. */
  if (field) N_VConst(0.0, field);
  RW_TRY(rw_problem_terminal_grad(prob, rw_grid_end(opt, N), y, lambda, pbar));
  rw_vec_copy(y, cur);
  double dsum = 0.0;
  for (long j = A - 1; j >= 0; j--) {
    long a = j * k, b = a + k < N ? a + k : N;
    rw_vec_copy(lambda, lsave);
    memcpy(psave, pbar, (size_t)np * sizeof *pbar);
    if (field) rw_vec_copy(field, fsave);
    /* cur = y_b, exact (y_N or anchor j + 1). */
    for (long n = b - 1; n > a; n--) {
      double t = rw_grid_t(opt, N, n), h = rw_grid_t(opt, N, n + 1) - t;
      RW_TRY(rw_stepper_reverse_step(st, t, h, cur, prev));
      N_Vector sw = cur;
      cur = prev;
      prev = sw;
      s.rebuilt_steps++;
      RW_TRY(rw_stepper_adjoint_step(st, t, h, cur, NULL, lambda, pbar));
      if (opt->progress) opt->progress(opt->progress_ctx, 1, n, t, s.fallback_steps);
    }
    double t = rw_grid_t(opt, N, a), h = rw_grid_t(opt, N, a + 1) - t;
    RW_TRY(rw_stepper_reverse_step(st, t, h, cur, prev));
    s.rebuilt_steps++;
    double d = rw_drift(prev, anchors[j], diff);
    int ok = d <= opt->drift_tol; /* false for NaN */
    s.drift_segments++;
    dsum += isfinite(d) ? d : 0.0;
    if (!(d <= s.drift_max)) s.drift_max = d;
    if (!ok && opt->drift_action == RW_DRIFT_ABORT)
      RW_CHECK_GOTO(0, RW_ERR_DRIFT,
                    "adjoint mode %s: the states rebuilt over steps [%ld, %ld) (segment %ld of "
                    "%ld, t = %g .. %g) drifted by %.3e from the anchor at step %ld, above "
                    "drift_tol = %.3e; no gradient is reported (drift_action fallback reverses "
                    "such segments from checkpoints instead; a smaller drift_interval or dt "
                    "shortens the drift)",
                    rw_mode_name(opt->mode), a, b, j + 1, A, t, rw_grid_t(opt, N, b), d, a,
                    opt->drift_tol);
    if (ok || opt->drift_action == RW_DRIFT_WARN) {
      if (d > s.drift_accepted_max || !isfinite(d)) s.drift_accepted_max = d;
      RW_TRY(rw_stepper_adjoint_step(st, t, h, anchors[j], NULL, lambda, pbar));
    } else {
      /* Fallback: drop the segment's contributions and reverse it exactly. */
      rw_vec_copy(lsave, lambda);
      memcpy(pbar, psave, (size_t)np * sizeof *pbar);
      if (field) rw_vec_copy(fsave, field);
      RW_TRY(rw_fallback_segment(st, opt, N, a, b, anchors[j], slots, F, cur, lambda, pbar,
                                 &s.fallback_steps));
      s.drift_fallbacks++;
    }
    if (opt->progress) opt->progress(opt->progress_ctx, 1, a, t, s.fallback_steps);
    rw_vec_copy(anchors[j], cur);
  }
  s.drift_mean = s.drift_segments ? dsum / (double)s.drift_segments : 0.0;
  RW_TRY(rw_sum_over_ranks(rw_problem_context(prob), pbar, np));
  double tC = rw_wtime();
  rw_problem_get_counts(prob, &c2);

  if (dJdp) memcpy(dJdp, pbar, (size_t)np * sizeof *pbar);
  if (dJdy0) rw_vec_copy(lambda, dJdy0);
  rw_stats_sweeps(&s, N, last, g, q, &c0, &c1, &c2);
  s.time_forward = tB - tA;
  s.time_backward = tC - tB;
  s.advances = N - 1;
  s.recomputed_steps = s.fallback_steps;
  int64_t rep = 0, adv = 0;
  RW_TRY(rw_binomial_advances(N, (int)(A + F), &rep, &adv));
  s.optimal_advances = (long)adv;
  s.peak_slots = (int)(A + F);
  s.peak_alloc_bytes = rw_mem_peak() - base;
  *J = s.J;
  if (stats) *stats = s;
cleanup:
  rw_vec_destroy_array(&anchors, (int)A);
  rw_vec_destroy_array(&slots, F);
  rw_vec_destroy(&cur);
  rw_vec_destroy(&lambda);
  rw_vec_destroy(&prev);
  rw_vec_destroy(&lsave);
  rw_vec_destroy(&diff);
  rw_vec_destroy(&fsave);
  rw_free(&pbar);
  rw_free(&psave);
  return ierr;
}
