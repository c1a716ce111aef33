/* State source "rebuilt" (the memory-free modes reversible and backsolve): the backward sweep
 * rebuilds each y_n from y_{n+1} instead of storing or recomputing it, and sparse anchors check
 * the rebuilt states (see rw_adjoint.h for the contract, rw_stepper.h for the two ways of
 * rebuilding).
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
 * is undone (fetch rewinds the adjoint state and the driver's loop goes on from the segment's
 * last step) and reversed again from its anchor under a binomial schedule (Griewank & Walther
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

/* Checks the options against the stepper; sets the budget split. With a disk budget
 * (checkpoint_disk or checkpoint_disk_slots) the anchors live in the HDF5 store, as many as it
 * holds (or every drift_interval steps), and every RAM slot goes to the fallback; without one
 * the RAM budget holds both. *disk is 1 for anchors on disk. */
static int rw_rebuild_plan(rw_stepper st, const rw_adjoint_options *opt, long N, N_Vector y,
                           long *k, long *A, int *F, int *disk)
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
  RW_CHECK(!opt->restart_dir, RW_ERR_ARG,
           "adjoint mode %s cannot restart from disk checkpoints; restarts need adjoint mode "
           "checkpoint",
           mode);
  RW_CHECK(!opt->store_stages, RW_ERR_ARG,
           "adjoint mode %s stores no stages (store_stages applies to store and checkpoint mode)",
           mode);
  RW_CHECK(isfinite(opt->drift_tol) && opt->drift_tol > 0.0, RW_ERR_ARG,
           "drift_tol = %g must be a finite number > 0", opt->drift_tol);
  int S = opt->ram_slots;
  if (opt->ram_bytes > 0) RW_CALL(rw_store_slots_for_budget(opt->ram_bytes, rw_vec_bytes(y), &S));
  *disk = opt->disk_slots > 0 || opt->disk_bytes > 0;
  if (*disk) {
    int D = opt->disk_slots;
    if (opt->disk_bytes > 0)
      RW_CALL(
          rw_store_slots_for_budget_named("checkpoint_disk", opt->disk_bytes, rw_vec_bytes(y), &D));
    RW_CHECK(S >= 1, RW_ERR_BUDGET,
             "adjoint mode %s with anchors on disk needs at least 1 RAM slot for the fallback; "
             "the RAM budget holds none",
             mode);
    *k = opt->drift_interval > 0 ? opt->drift_interval : (N + D - 1) / D;
    if (*k > N) *k = N;
    *A = (N + *k - 1) / *k;
    RW_CHECK(*A <= D, RW_ERR_BUDGET,
             "drift_interval = %ld needs %ld anchors for %ld steps; the disk budget holds %d "
             "states (raise it, or the interval to at least %ld)",
             opt->drift_interval, *A, N, D, (N + D - 1) / D);
    *F = (int)(S < *k ? S : *k); /* a segment needs no more than one slot per step */
    return 0;
  }
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

typedef struct {
  rw_state_source base;
  long k, A;     /* anchor spacing and count */
  int F;         /* fallback slots */
  size_t snap;   /* bytes of one state on this rank */
  int disk;      /* anchors in the HDF5 store (else the RAM store) */
  rw_store anch; /* anchor j in slot j, written by the forward sweep, read once backward */
  N_Vector aval; /* the anchor read last (anchor aget) */
  long aget;
  N_Vector *slots;
  N_Vector cur, prev, diff; /* the rebuilt state and the one before; drift work space */
  N_Vector lsave, fsave;    /* lambda and the field adjoint when the segment started */
  double *psave;            /* dJ/dp when the segment started */
  long j;                   /* the segment being reversed: [j k, min((j + 1) k, N)) */
  int exact;                /* segment j is being reversed again under the fallback */
  rw_schedule fb;           /* the fallback's schedule (over segment j) */
  double dsum;              /* sum of the finite drifts */
} rw_rebuild;

static long rb_begin(const rw_rebuild *r, long j) { return j * r->k; }
static long rb_end(const rw_rebuild *r, long j)
{
  long b = (j + 1) * r->k;
  return b < r->base.N ? b : r->base.N;
}

static int rb_alloc(rw_state_source *src, N_Vector y)
{
  rw_rebuild *r = (rw_rebuild *)src;
  int np = rw_problem_nparams(src->prob);
  N_Vector field = rw_problem_field_adjoint(src->prob);
  /* Everything is allocated here, before the first step. */
  const rw_adjoint_options *opt = src->opt;
  if (r->disk) {
    rw_store_hdf5_options ho = {.dir = opt->disk_dir ? opt->disk_dir : ".",
                                .run_id = opt->run_id ? opt->run_id : "run",
                                .contents = "anchor",
                                .keep = opt->disk_keep,
                                .deck = opt->run_deck,
                                .decomposition = opt->run_decomposition};
    RW_CALL(rw_store_create_hdf5(y, 1, (int)r->A, &ho, &r->anch));
  } else {
    RW_CALL(rw_store_create_ram(y, 1, (int)r->A, &r->anch));
  }
  RW_CALL(rw_vec_clone(y, &r->aval));
  r->aget = -1;
  RW_CALL(rw_vec_clone_array_slots(y, r->F, &r->slots));
  RW_CALL(rw_vec_clone(y, &r->cur));
  RW_CALL(rw_vec_clone(y, &r->prev));
  RW_CALL(rw_vec_clone(y, &r->lsave));
  RW_CALL(rw_vec_clone(y, &r->diff));
  if (field) RW_CALL(rw_vec_clone(field, &r->fsave));
  RW_CALL(rw_calloc((size_t)np + 1, sizeof *r->psave, "saved parameter adjoint", &r->psave));
  r->snap = rw_vec_bytes(y);
  return 0;
}

static int rb_record(rw_state_source *src, long n, N_Vector y, N_Vector **stages)
{
  rw_rebuild *r = (rw_rebuild *)src;
  (void)stages;
  if (n % r->k) return 0;
  rw_snapshot_tag tag = {.step = n, .t = rw_grid_t(src->opt, src->N, n)};
  return rw_store_put(r->anch, (int)(n / r->k), &tag, &y);
}

/* Anchor j into r->aval (each is read once: anchor j serves segment j's check and then
 * segment j - 1's start from aval), and the read of anchor j - 1 started behind it. */
static int rb_anchor(rw_rebuild *r, long j)
{
  if (r->aget == j) return 0;
  rw_snapshot_tag tag;
  RW_CALL(rw_store_get(r->anch, (int)j, &tag, &r->aval));
  RW_CHECK(tag.step == j * r->k, RW_ERR_INTERNAL, "anchor %ld holds step %lld, expected %ld", j,
           (long long)tag.step, j * r->k);
  RW_CALL(rw_store_release(r->anch, (int)j));
  r->aget = j;
  if (j > 0) RW_CALL(rw_store_prefetch(r->anch, (int)(j - 1), (int64_t)((j - 1) * r->k)));
  return 0;
}

/* Forward sweep, keeping the anchors; the backward sweep starts from y_N, exact. */
static int rb_forward(rw_state_source *src, N_Vector y, double *q)
{
  rw_rebuild *r = (rw_rebuild *)src;
  RW_CALL(rw_source_forward_steps(src, src->st, src->opt, src->N, y, q));
  rw_vec_copy(y, r->cur);
  r->j = r->A;
  if (r->A > 0) RW_CALL(rw_store_prefetch(r->anch, (int)(r->A - 1), (int64_t)((r->A - 1) * r->k)));
  return 0;
}

/* Executes one action of the fallback's schedule over segment j (offset a); the adjoint
 * steps are the driver's. */
static int rb_fallback_action(rw_rebuild *r, const rw_action *act)
{
  long a = rb_begin(r, r->j);
  switch (act->type) {
  case RW_ACTION_ADVANCE:
    for (long i = (long)act->step; i < (long)act->to; i++) {
      double t, h;
      rw_source_step(&r->base, a + i, &t, &h);
      rw_stepper_set_step_index(r->base.st, a + i);
      RW_CALL(rw_stepper_step(r->base.st, t, h, r->cur, r->cur, NULL, NULL));
      r->base.recomputed++;
    }
    break;
  case RW_ACTION_STORE:
    rw_vec_copy(r->cur, r->slots[act->slot]);
    break;
  case RW_ACTION_RESTORE:
    rw_vec_copy(r->slots[act->slot], r->cur);
    break;
  case RW_ACTION_FIRST_REVERSE:
  case RW_ACTION_REVERSE:
    return RW_ERROR(RW_ERR_INTERNAL, "fallback schedule: reversal of step %lld not expected",
                    (long long)(a + act->step));
  default:
    break;
  }
  return 0;
}

/* Fallback: y_n exact, from the fallback's schedule (its actions up to the reversal of n). */
static int rb_fetch_exact(rw_rebuild *r, long n, rw_fetch *out)
{
  long a = rb_begin(r, r->j);
  for (;;) {
    rw_action act;
    RW_CALL(rw_schedule_next(r->fb, &act));
    RW_CHECK(act.type != RW_ACTION_TERMINATE, RW_ERR_INTERNAL,
             "fallback schedule ended before step %ld", n);
    if (act.type == RW_ACTION_REVERSE || act.type == RW_ACTION_FIRST_REVERSE) {
      RW_CHECK(a + act.step == n, RW_ERR_INTERNAL, "fallback reverses step %lld, expected %ld",
               (long long)(a + act.step), n);
      break;
    }
    RW_CALL(rb_fallback_action(r, &act));
  }
  out->y = r->cur;
  if (n == a) r->exact = 0; /* the schedule's last actions run at the next fetch (or end) */
  return 0;
}

/* After the fallback's last reversal: its remaining actions, then its schedule goes. */
static int rb_fallback_finish(rw_rebuild *r)
{
  if (!r->fb) return 0;
  for (;;) {
    rw_action act;
    RW_CALL(rw_schedule_next(r->fb, &act));
    if (act.type == RW_ACTION_TERMINATE) break;
    RW_CALL(rb_fallback_action(r, &act));
  }
  rw_schedule_destroy(&r->fb);
  return 0;
}

/* The adjoint state when segment j started: saved there, restored by a fallback. The problem's
 * held dJ/dp terms are added to pbar first (rw_problem_params_flush), so the copy is whole, and
 * so that a restore drops them with the segment's other contributions. */
static int rb_save(rw_rebuild *r, const rw_adjoint_state *adj)
{
  RW_CALL(rw_problem_params_flush(r->base.prob));
  rw_vec_copy(adj->lambda, r->lsave);
  memcpy(r->psave, adj->pbar, (size_t)adj->np * sizeof *adj->pbar);
  if (adj->field) rw_vec_copy(adj->field, r->fsave);
  return 0;
}

static int rb_restore(const rw_rebuild *r, rw_adjoint_state *adj)
{
  RW_CALL(rw_problem_params_flush(r->base.prob));
  rw_vec_copy(r->lsave, adj->lambda);
  memcpy(adj->pbar, r->psave, (size_t)adj->np * sizeof *adj->pbar);
  if (adj->field) rw_vec_copy(r->fsave, adj->field);
  return 0;
}

/* Segment j starts (its last step, b - 1): the adjoint state is saved, and the rebuild starts
 * from y_b exact (y_N, or anchor j + 1). */
static int rb_segment_start(rw_rebuild *r, long j, rw_adjoint_state *adj)
{
  RW_CALL(rb_fallback_finish(r));
  if (j + 1 < r->A) {
    RW_CALL(rb_anchor(r, j + 1));
    rw_vec_copy(r->aval, r->cur);
  }
  r->j = j;
  RW_CALL(rb_save(r, adj));
  return 0;
}

/* The first step a of segment j: the drift of the rebuilt y_a against the anchor decides. */
static int rb_segment_check(rw_rebuild *r, rw_adjoint_state *adj, rw_fetch *out)
{
  const rw_adjoint_options *opt = r->base.opt;
  rw_adjoint_stats *s = r->base.s;
  long j = r->j, a = rb_begin(r, j), b = rb_end(r, j);
  double t, h;
  rw_source_step(&r->base, a, &t, &h);
  rw_stepper_set_step_index(r->base.st, a);
  RW_CALL(rw_stepper_reverse_step(r->base.st, t, h, r->cur, r->prev));
  s->rebuilt_steps++;
  RW_CALL(rb_anchor(r, j));
  double d = rw_drift(r->prev, r->aval, r->diff);
  int ok = d <= opt->drift_tol; /* false for NaN */
  s->drift_segments++;
  r->dsum += isfinite(d) ? d : 0.0;
  if (!(d <= s->drift_max)) s->drift_max = d;
  RW_CHECK(ok || opt->drift_action != RW_DRIFT_ABORT, RW_ERR_DRIFT,
           "adjoint mode %s: the states rebuilt over steps [%ld, %ld) (segment %ld of %ld, t = %g "
           ".. %g) drifted by %.3e from the anchor at step %ld, above drift_tol = %.3e; no "
           "gradient is reported (drift_action fallback reverses such segments from checkpoints "
           "instead; a smaller drift_interval or dt shortens the drift)",
           rw_mode_name(opt->mode), a, b, j + 1, r->A, t, rw_grid_t(opt, r->base.N, b), d, a,
           opt->drift_tol);
  if (ok || opt->drift_action == RW_DRIFT_WARN) {
    if (d > s->drift_accepted_max || !isfinite(d)) s->drift_accepted_max = d;
    out->y = r->aval; /* the adjoint step of step a at the anchor itself */
    return 0;
  }
  /* Fallback: drop the segment's contributions and reverse it exactly. */
  RW_CALL(rb_restore(r, adj));
  RW_CALL(rw_schedule_create_binomial(b - a, r->F, &r->fb));
  rw_vec_copy(r->aval, r->cur);
  r->exact = 1;
  s->drift_fallbacks++;
  out->resume = b - 1;
  return 0;
}

/* y_n rebuilt from y_{n+1}; at a segment's first step the drift check (and the fallback). */
static int rb_fetch(rw_state_source *src, long n, rw_adjoint_state *adj, rw_fetch *out)
{
  rw_rebuild *r = (rw_rebuild *)src;
  if (r->exact) return rb_fetch_exact(r, n, out);
  long j = n / r->k;
  if (n == rb_end(r, j) - 1) RW_CALL(rb_segment_start(r, j, adj));
  if (n == rb_begin(r, j)) return rb_segment_check(r, adj, out);
  double t, h;
  rw_source_step(src, n, &t, &h);
  rw_stepper_set_step_index(src->st, n);
  RW_CALL(rw_stepper_reverse_step(src->st, t, h, r->cur, r->prev));
  N_Vector sw = r->cur;
  r->cur = r->prev;
  r->prev = sw;
  src->s->rebuilt_steps++;
  out->y = r->cur;
  return 0;
}

static int rb_end_sweep(rw_state_source *src)
{
  rw_rebuild *r = (rw_rebuild *)src;
  RW_CALL(rb_fallback_finish(r));
  src->s->drift_mean = src->s->drift_segments ? r->dsum / (double)src->s->drift_segments : 0.0;
  return 0;
}

static int rb_stats(rw_state_source *src, rw_adjoint_stats *s)
{
  rw_rebuild *r = (rw_rebuild *)src;
  long N = src->N, slots = r->A + r->F, ram = r->disk ? r->F : slots;
  s->anchors = r->A;
  s->anchor_interval = r->k;
  s->fallback_slots = r->F;
  s->ram_slots = (int)ram;
  s->snapshot_bytes = r->snap;
  s->checkpoint_bytes = (size_t)ram * r->snap;
  if (r->disk) {
    s->disk_slots = (int)r->A;
    s->disk_bytes = rw_store_bytes(r->anch);
    s->disk_writes = rw_store_writes(r->anch);
    s->disk_reads = rw_store_reads(r->anch);
  }
  s->snapshots = r->A;
  s->advances = N - 1;
  s->fallback_steps = src->recomputed;
  s->recomputed_steps = src->recomputed;
  int64_t rep = 0, adv = 0;
  RW_CALL(rw_binomial_advances(N, (int)slots, &rep, &adv));
  s->optimal_advances = (long)adv;
  s->peak_slots = (int)slots;
  return 0;
}

static void rb_destroy(rw_state_source *src)
{
  rw_rebuild *r = (rw_rebuild *)src;
  if (!r) return;
  rw_schedule_destroy(&r->fb);
  rw_store_destroy(&r->anch);
  rw_vec_destroy(&r->aval);
  rw_vec_destroy_array(&r->slots, r->F);
  rw_vec_destroy(&r->cur);
  rw_vec_destroy(&r->prev);
  rw_vec_destroy(&r->lsave);
  rw_vec_destroy(&r->diff);
  rw_vec_destroy(&r->fsave);
  rw_free(&r->psave);
  rw_free(&r);
}

static const rw_state_source_ops rw_rebuild_ops = {.alloc = rb_alloc,
                                                   .forward = rb_forward,
                                                   .record = rb_record,
                                                   .fetch = rb_fetch,
                                                   .end = rb_end_sweep,
                                                   .stats = rb_stats,
                                                   .destroy = rb_destroy};

int rw_source_rebuild_create(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                             N_Vector y, rw_adjoint_stats *s, rw_state_source **out)
{
  long N = 0, k = 0, A = 0;
  int F = 0, disk = 0;
  double last;
  RW_CALL(rw_grid_setup(opt, &N, &last));
  RW_CALL(rw_rebuild_plan(st, opt, N, y, &k, &A, &F, &disk));
  rw_rebuild *r = NULL;
  RW_CALL(rw_calloc(1, sizeof *r, "memory-free mode", &r));
  r->base =
      (rw_state_source){.ops = &rw_rebuild_ops, .prob = prob, .st = st, .opt = opt, .N = N, .s = s};
  r->k = k;
  r->A = A;
  r->F = F;
  r->disk = disk;
  *out = &r->base;
  return 0;
}
