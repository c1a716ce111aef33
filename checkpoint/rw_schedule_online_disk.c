/* Online checkpointing with a disk tier: periodic disk checkpoints during the forward sweep,
 * and a binomial RAM reversal of each period once the length is known, after P. Pringle,
 * D. Jones, S. Goldberg, P. Heimbach and J.-M. Campin (2016), who checkpoint every P steps to
 * disk and reverse each interval from its disk checkpoint with Revolve in memory.
 *
 * The period. Reversing a period of P steps costs a disk write and a read of its start and
 * t(P, c) advances (the binomial optimum with the c RAM slots, the start's slot included),
 * on top of the P first-sweep steps every period takes. Per step the extra cost is
 *   f(P) = (t(P, c) + wd + rd) / P,
 * and the schedule takes the P that minimises it exactly: t(P, c) / P is nondecreasing in P
 * (t is convex and piecewise linear with t(1, c) = 0), so once t(P, c) / P >= the best f
 * found, no larger P can do better and the scan stops.
 *
 * A finite disk. With D disk slots and the length unknown, the forward sweep may run out of
 * slots: it then frees the checkpoints at odd multiples of the period and doubles it (the
 * classic doubling rule), so the kept ones are again every P' = 2P steps, and goes on. The
 * reversal is then over periods of the doubled length; the summary reports the period used.
 *
 * Forward sweep: STORE y_0 to disk, ADVANCE one step at a time (the driver may call
 * rw_schedule_set_steps between any two actions), STORE to disk at every multiple of the
 * period. The RAM slots hold copies of the current period's first states (its start
 * first), freed when the next period starts: a run, or a last period, that fits in RAM is
 * then reversed with no recomputation and no disk read.
 * Reverse sweep, from the last period to the first: the last period keeps its RAM copies if
 * they hold all of it, else all but its start are freed; its disk copy is freed unread.
 * Each earlier period: RESTORE its start from disk, FREE the disk slot (each is read once),
 * then the binomial engine over the period with its steps shifted; the engine stores the
 * start in RAM first and frees its slots before it terminates. So the advances are at most
 * the first sweep's plus t(n_i, c) for each period of n_i steps. Not collective anywhere. */
#include "rewind/rw_context.h"
#include "rw_schedule_impl.h"

typedef struct {
  int ram_slots, disk_slots;
  int64_t period, period0; /* current and cost-optimal period */
  int64_t cur;             /* forward position (the driver's state) */
  int64_t stored;          /* last step stored on disk, -1 none */
  int64_t rbase;           /* start of the current period: the RAM stack's step 0 */
  int64_t ram_stored;      /* last step offered to RAM, -1 none */
  int64_t *dstep;          /* [disk_slots] step each disk slot holds, -1 empty */
  int nheld;
  int thinning;
  /* reversal */
  int reversing, nseg, seg, phase;
  int64_t state_at;   /* the driver's state when the length was given */
  int64_t *seg_start; /* [disk_slots] period starts, increasing */
  int *seg_slot;      /* their disk slots */
  rw_engine ram;
} online_disk;

/* The period that minimises (t(P, c) + wd + rd) / P (see above); *cost gets the minimum.
 * Not collective. */
int rw_online_disk_period(int ram_slots, double write_cost, double read_cost, int64_t *period,
                          double *cost)
{
  RW_CHECK(ram_slots >= 1 && write_cost >= 0.0 && read_cost >= 0.0 && period, RW_ERR_ARG,
           "rw_online_disk_period: need ram_slots >= 1 and costs >= 0 (got %d, %g, %g)", ram_slots,
           write_cost, read_cost);
  /* On each piece (beta(c, r-1), beta(c, r)] of t(., c), slope r, f(P) = r + (w - C)/P is
   * monotone, so its minimum over the piece is at an end: only the ends are evaluated. */
  double best = -1.0;
  int64_t bp = 1, lo = 1;
  const int64_t pmax = (int64_t)1 << 40;
  for (int64_t r = 1; lo <= pmax; r++) {
    int64_t hi = 0, ends[2], t = 0;
    RW_CALL(rw_binomial_beta(ram_slots, r, &hi));
    if (hi > pmax) hi = pmax;
    if (hi < lo) continue;
    ends[0] = lo;
    ends[1] = hi;
    RW_CALL(rw_binomial_advances(lo, ram_slots, NULL, &t));
    if (best >= 0.0 && (double)t / (double)lo >= best) break; /* t(P)/P only grows */
    for (int e = 0; e < 2; e++) {
      RW_CALL(rw_binomial_advances(ends[e], ram_slots, NULL, &t));
      double f = ((double)t + write_cost + read_cost) / (double)ends[e];
      if (best < 0.0 || f < best) {
        best = f;
        bp = ends[e];
      }
    }
    lo = hi + 1;
  }
  *period = bp;
  if (cost) *cost = best;
  return 0;
}

static int take_disk(online_disk *o, int64_t step, int *slot)
{
  for (int k = 0; k < o->disk_slots; k++)
    if (o->dstep[k] < 0) {
      o->dstep[k] = step;
      o->nheld++;
      *slot = k;
      return 0;
    }
  return RW_ERROR(RW_ERR_INTERNAL, "online disk schedule: no free disk slot at step %lld",
                  (long long)step);
}

/* Pops the RAM stack's top (a FREE action). */
static void pop_ram(online_disk *o, rw_action *a)
{
  rw_engine *e = &o->ram;
  int64_t step = o->rbase + e->pos[e->top];
  rw_action_set(a, RW_ACTION_FREE, step, step, e->slot[e->top], RW_LEVEL_RAM);
  rw_engine_give_slot(e, e->slot[e->top]);
  e->top--;
}

static int reverse_next(rw_schedule s, rw_action *a)
{
  online_disk *o = s->content;
  for (;;) {
    if (o->seg < 0) {
      rw_action_set(a, RW_ACTION_TERMINATE, 0, 0, -1, RW_LEVEL_RAM);
      return 0;
    }
    int last = o->seg == o->nseg - 1;
    int64_t a0 = o->seg_start[o->seg];
    int64_t end = last ? s->steps : o->seg_start[o->seg + 1];
    switch (o->phase) {
    case 0:
      if (last) {
        /* The RAM copies of the last period are kept when they hold all of it (no
         * recomputation); else all but its start go and the binomial reversal runs. */
        if (end - a0 > o->ram_slots && o->ram.top > 0) {
          pop_ram(o, a);
          return 0;
        }
        o->phase = 1;
        break;
      }
      o->phase = 1;
      rw_action_set(a, RW_ACTION_RESTORE, a0, a0, o->seg_slot[o->seg], RW_LEVEL_DISK);
      return 0;
    case 1:
      o->phase = 2;
      rw_engine_start(&o->ram, end - a0, last ? o->state_at - a0 : 0);
      if (o->seg_slot[o->seg] < 0) break; /* told before the first store */
      o->dstep[o->seg_slot[o->seg]] = -1;
      o->nheld--;
      rw_action_set(a, RW_ACTION_FREE, a0, a0, o->seg_slot[o->seg], RW_LEVEL_DISK);
      return 0;
    default:
      RW_CALL(rw_engine_next(&o->ram, a));
      if (a->type == RW_ACTION_TERMINATE) {
        o->seg--;
        o->phase = 0;
        continue;
      }
      a->step += a0;
      a->to += a0;
      if (a->type == RW_ACTION_FIRST_REVERSE || a->type == RW_ACTION_REVERSE)
        a->type = a->step == s->steps - 1 ? RW_ACTION_FIRST_REVERSE : RW_ACTION_REVERSE;
      return 0;
    }
  }
}

static int online_disk_next(rw_schedule s, rw_action *a)
{
  online_disk *o = s->content;
  if (o->reversing) return reverse_next(s, a);
  for (;;) {
    if (o->thinning) { /* free the checkpoints at odd multiples of the period */
      for (int k = 0; k < o->disk_slots; k++)
        if (o->dstep[k] >= 0 && o->dstep[k] % (2 * o->period) != 0) {
          rw_action_set(a, RW_ACTION_FREE, o->dstep[k], o->dstep[k], k, RW_LEVEL_DISK);
          o->dstep[k] = -1;
          o->nheld--;
          return 0;
        }
      o->period *= 2;
      o->thinning = 0;
      continue;
    }
    if (o->cur % o->period == 0 && o->stored != o->cur) { /* a period starts here */
      if (o->nheld == o->disk_slots) {
        o->thinning = 1;
        continue;
      }
      if (o->ram.top >= 0) { /* the last period's RAM copies go first */
        pop_ram(o, a);
        return 0;
      }
      int k = -1;
      RW_CALL(take_disk(o, o->cur, &k));
      o->stored = o->cur;
      o->rbase = o->cur;
      rw_action_set(a, RW_ACTION_STORE, o->cur, o->cur, k, RW_LEVEL_DISK);
      return 0;
    }
    if (o->ram_stored != o->cur) { /* a RAM copy of each state of the period while slots last */
      o->ram_stored = o->cur;
      int k = rw_engine_take_slot(&o->ram);
      if (k >= 0) {
        RW_CALL(rw_engine_push(&o->ram, o->cur - o->rbase, k));
        rw_action_set(a, RW_ACTION_STORE, o->cur, o->cur, k, RW_LEVEL_RAM);
        return 0;
      }
    }
    rw_action_set(a, RW_ACTION_ADVANCE, o->cur, o->cur + 1, -1, RW_LEVEL_RAM);
    o->cur++;
    return 0;
  }
}

static int online_disk_set_steps(rw_schedule s, int64_t steps)
{
  online_disk *o = s->content;
  RW_CHECK(steps == o->cur || steps == o->cur + 1, RW_ERR_ARG,
           "rw_schedule_set_steps: the state is at step %lld, so the number of steps must be "
           "%lld or %lld (got %lld)",
           (long long)o->cur, (long long)o->cur, (long long)o->cur + 1, (long long)steps);
  RW_CHECK(steps >= 1, RW_ERR_ARG, "rw_schedule_set_steps: steps = %lld must be >= 1",
           (long long)steps);
  RW_CHECK(!o->thinning, RW_ERR_INTERNAL, "online disk schedule: length given while thinning");
  /* The held disk checkpoints, by step; one at step >= l (none, as the driver announces the
   * end before any store there) would be freed first. */
  int n = 0;
  for (int k = 0; k < o->disk_slots; k++)
    if (o->dstep[k] >= 0) o->seg_slot[n++] = k;
  for (int i = 1; i < n; i++) /* by step (insertion sort: at most disk_slots entries) */
    for (int j = i; j > 0 && o->dstep[o->seg_slot[j - 1]] > o->dstep[o->seg_slot[j]]; j--) {
      int t = o->seg_slot[j];
      o->seg_slot[j] = o->seg_slot[j - 1];
      o->seg_slot[j - 1] = t;
    }
  for (int i = 0; i < n; i++)
    o->seg_start[i] = o->dstep[o->seg_slot[i]];
  if (n == 0) { /* told at y_0 before its store: one period from the current state */
    o->seg_start[0] = 0;
    o->seg_slot[0] = -1;
    n = 1;
  }
  RW_CHECK(o->seg_start[0] == 0 && o->seg_start[n - 1] == o->rbase && o->rbase < steps,
           RW_ERR_INTERNAL, "online disk schedule: checkpoints do not cover [0, %lld)",
           (long long)steps);
  o->nseg = n;
  o->seg = n - 1;
  o->phase = 0;
  o->state_at = o->cur;
  o->reversing = 1;
  return 0;
}

static void online_disk_destroy(rw_schedule s)
{
  online_disk *o = s->content;
  if (!o) return;
  if (o->ram.pos) rw_engine_finalize(&o->ram);
  rw_free(&o->dstep);
  rw_free(&o->seg_start);
  rw_free(&o->seg_slot);
  rw_free(&s->content);
}

/* Creates the online schedule with a disk tier (see rw_schedule.h and the comment above).
 * Not collective. */
int rw_schedule_create_online_disk(int ram_slots, int disk_slots, double write_cost,
                                   double read_cost, rw_schedule *out)
{
  static const rw_schedule_ops ops = {online_disk_next, online_disk_set_steps, online_disk_destroy,
                                      NULL};
  int ierr = 0;
  rw_schedule s = NULL;
  online_disk *o = NULL;
  RW_CHECK(out, RW_ERR_ARG, "rw_schedule_create_online_disk: output pointer is NULL");
  *out = NULL;
  RW_CHECK(ram_slots >= 1 && disk_slots >= 1, RW_ERR_ARG,
           "rw_schedule_create_online_disk: need ram_slots >= 1 and disk_slots >= 1 (got %d, %d)",
           ram_slots, disk_slots);
  RW_CHECK(write_cost >= 0.0 && read_cost >= 0.0 && write_cost < 1e300 && read_cost < 1e300,
           RW_ERR_ARG,
           "rw_schedule_create_online_disk: disk costs must be finite and >= 0 (got %g, %g)",
           write_cost, read_cost);
  RW_TRY(rw_schedule_alloc("online_disk", &ops, &s));
  RW_TRY(rw_calloc(1, sizeof *o, "online disk schedule", &o));
  s->content = o;
  o->ram_slots = ram_slots;
  o->disk_slots = disk_slots;
  o->stored = -1;
  o->ram_stored = -1;
  RW_TRY(rw_online_disk_period(ram_slots, write_cost, read_cost, &o->period0, NULL));
  o->period = o->period0;
  RW_TRY(rw_calloc((size_t)disk_slots, sizeof *o->dstep, "online disk slots", &o->dstep));
  RW_TRY(
      rw_calloc((size_t)disk_slots + 1, sizeof *o->seg_start, "online disk slots", &o->seg_start));
  RW_TRY(rw_calloc((size_t)disk_slots + 1, sizeof *o->seg_slot, "online disk slots", &o->seg_slot));
  for (int k = 0; k < disk_slots; k++)
    o->dstep[k] = -1;
  RW_TRY(rw_engine_init(&o->ram, ram_slots, RW_SPLIT_BINOMIAL));
  s->capacity_ram = ram_slots;
  s->capacity_disk = disk_slots;
  *out = s;
  return 0;
cleanup:
  rw_schedule_destroy(&s);
  return ierr;
}

/* The period an online disk schedule uses now (it doubles when the disk fills) and the one
 * it chose from the costs. Not collective. */
int rw_schedule_online_disk_period(rw_schedule s, int64_t *period, int64_t *chosen)
{
  RW_CHECK(s && s->ops.next == online_disk_next, RW_ERR_ARG,
           "rw_schedule_online_disk_period: not an online disk schedule");
  online_disk *o = s->content;
  if (period) *period = o->period;
  if (chosen) *chosen = o->period0;
  return 0;
}
