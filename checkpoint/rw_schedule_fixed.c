/* Fixed-interval checkpointing (the scheme of CVODES's adjoint module and of PETSc's
 * TSTrajectory stride) and store-everything, its k = 1 case.
 *
 * Forward sweep: y_0, y_k, y_2k, .. are stored, and so is every state of the last interval
 * [p, l) (p = k floor((l - 1) / k)) except y_{l-1}, which FIRST_REVERSE takes from the
 * current state. Reverse sweep: the reversal engine with the unit split; for each earlier
 * interval [b, b + k) it restores y_b, advances one step at a time storing y_{b+1} ..
 * y_{b+k-2}, reverses step b + k - 1 from the current state, then restores and reverses
 * the stored states one by one. Each earlier interval is recomputed once, so with
 * n = ceil(l / k) intervals the advances are (l - 1) + (n - 1)(k - 1). */
#include "rewind/rw_context.h"
#include "rw_schedule_impl.h"

#include <limits.h>

typedef struct {
  int64_t k, last; /* interval, start of the last interval */
  int64_t cur;     /* forward position */
  int64_t stored;  /* last stored step in the forward sweep, -1 none */
  int reversing;
  rw_engine e;
} fixed_content;

/* Slot capacity of the fixed-interval schedule (see the file comment). */
static int64_t fixed_capacity(int64_t l, int64_t k)
{
  int64_t last = ((l - 1) / k) * k, n = last / k + 1, len_last = l - last;
  /* forward: multiples of k in [0, l - 2] plus the states last + 1 .. l - 2 */
  int64_t fwd = (len_last >= 2 ? n : n - 1) + (len_last > 2 ? len_last - 2 : 0);
  /* reversing the last earlier interval: n - 1 checkpoints and k - 2 states of it */
  int64_t rev = n >= 2 ? n - 1 + (k > 2 ? k - 2 : 0) : 0;
  int64_t cap = fwd > rev ? fwd : rev;
  return cap < 1 ? 1 : cap;
}

/* Advances and slot capacity of the fixed-interval schedule. Returns RW_ERR_ARG for
 * steps < 1, interval < 1, or a capacity past INT_MAX. Not collective. */
int rw_fixed_interval_counts(int64_t steps, int64_t interval, int64_t *advances, int *slots)
{
  RW_CHECK(steps >= 1, RW_ERR_ARG, "rw_fixed_interval_counts: steps = %lld must be >= 1",
           (long long)steps);
  RW_CHECK(interval >= 1, RW_ERR_ARG, "rw_fixed_interval_counts: interval = %lld must be >= 1",
           (long long)interval);
  if (interval > steps) interval = steps;
  int64_t n = (steps + interval - 1) / interval;
  int64_t cap = fixed_capacity(steps, interval);
  RW_CHECK(cap <= INT_MAX, RW_ERR_ARG,
           "rw_fixed_interval_counts: %lld steps with interval %lld need %lld slots (more than "
           "%d); use a larger interval or the binomial schedule",
           (long long)steps, (long long)interval, (long long)cap, INT_MAX);
  if (advances) *advances = (steps - 1) + (n - 1) * (interval - 1);
  if (slots) *slots = (int)cap;
  return 0;
}

static int fixed_next(rw_schedule s, rw_action *a)
{
  fixed_content *f = s->content;
  int64_t l = s->steps;
  if (!f->reversing && f->cur == l - 1) {
    f->reversing = 1;
    rw_engine_start(&f->e, l, l - 1);
  }
  if (f->reversing) return rw_engine_next(&f->e, a);
  int64_t c = f->cur;
  if (f->stored != c && (c % f->k == 0 || c > f->last)) {
    int k = rw_engine_take_slot(&f->e);
    RW_CHECK(k >= 0, RW_ERR_INTERNAL, "fixed interval: no free slot at step %lld", (long long)c);
    RW_CALL(rw_engine_push(&f->e, c, k));
    f->stored = c;
    a->type = RW_ACTION_STORE;
    a->step = a->to = c;
    a->slot = k;
    a->level = RW_LEVEL_RAM;
    a->first_sweep = 0;
    return 0;
  }
  int64_t next = c >= f->last ? c + 1 : (c / f->k + 1) * f->k;
  if (next > l - 1) next = l - 1;
  a->type = RW_ACTION_ADVANCE;
  a->step = c;
  a->to = next;
  a->slot = -1;
  a->level = RW_LEVEL_RAM;
  a->first_sweep = 0;
  f->cur = next;
  return 0;
}

static void fixed_destroy(rw_schedule s)
{
  fixed_content *f = s->content;
  if (f) rw_engine_finalize(&f->e);
  rw_free(&s->content);
}

static int create_fixed(const char *kind, int64_t steps, int64_t interval, rw_schedule *out)
{
  static const rw_schedule_ops ops = {fixed_next, NULL, fixed_destroy, NULL};
  int ierr = 0, cap = 0;
  rw_schedule s = NULL;
  fixed_content *f = NULL;
  RW_CHECK(out, RW_ERR_ARG, "rw_schedule_create_%s: output pointer is NULL", kind);
  *out = NULL;
  RW_CALL(rw_fixed_interval_counts(steps, interval, NULL, &cap));
  if (interval > steps) interval = steps;
  RW_TRY(rw_schedule_alloc(kind, &ops, &s));
  s->steps = steps;
  s->capacity_ram = cap;
  RW_TRY(rw_calloc(1, sizeof *f, "fixed-interval schedule", &f));
  s->content = f;
  f->k = interval;
  f->last = ((steps - 1) / interval) * interval;
  f->stored = -1;
  RW_TRY(rw_engine_init(&f->e, cap, RW_SPLIT_UNIT));
  *out = s;
  return 0;
cleanup:
  rw_schedule_destroy(&s);
  return ierr;
}

/* Creates the fixed-interval schedule (see rw_schedule.h). Not collective. */
int rw_schedule_create_fixed_interval(int64_t steps, int64_t interval, rw_schedule *out)
{
  RW_CALL(create_fixed("fixed_interval", steps, interval, out));
  return 0;
}

/* Creates the store-everything schedule (see rw_schedule.h). Not collective. */
int rw_schedule_create_store_all(int64_t steps, rw_schedule *out)
{
  RW_CALL(create_fixed("store_all", steps, 1, out));
  return 0;
}
