/* Online checkpointing for a run of unknown length.
 *
 * Forward sweep: the dynamic level rule of Q. Wang, P. Moin and G. Iaccarino, "Minimal
 * repetition dynamic checkpointing algorithm for unsteady adjoint calculation", SIAM J.
 * Sci. Comput. 31(4), 2009. Every checkpoint carries a level; y_0 has level infinity and is
 * never dropped. Each new state y_i is stored: in a free slot with level 0 while there is
 * one; otherwise in place of the most recent "dispensable" checkpoint (one whose level is
 * below the level of some later checkpoint) with level 0; otherwise in place of the most
 * recent checkpoint y_{i-1}, with that checkpoint's level plus one. So at most c slots are
 * full, y_0 and the latest state are always held, and the held checkpoints thin out
 * towards the past the way an optimal offline placement does for the length reached so
 * far (the paper proves the repetition number stays minimal up to large lengths).
 *
 * Reverse sweep, once rw_schedule_set_steps gives l: the reversal engine with the binomial
 * split, its stack preloaded with the held checkpoints. Each interval between consecutive
 * checkpoints is thus reversed by the offline optimum for the slots then free, so the
 * excess over t(l, c) comes only from where the forward sweep left its checkpoints (and,
 * when the end is learnt after the last step, from taking that step twice). The tests and
 * rewind-plan measure it. Work per forward step is O(c). */
#include "rewind/rw_context.h"
#include "rw_schedule_impl.h"

#include <limits.h>

typedef struct {
  int c;        /* slots, counting the slot of y_0 */
  int n;        /* checkpoints held in the forward sweep */
  int64_t *pos; /* [c] their steps, increasing */
  int *lev;     /* [c] their levels (INT_MAX for y_0) */
  int *slot;    /* [c] their slots */
  int64_t cur;  /* step of the current state */
  int handled;  /* y_cur is stored (or deliberately not) */
  int pending;  /* a slot was freed for y_cur: store it next with level pending_lev */
  int pending_lev;
  int reversing;
  rw_engine e;
} online_content;

static void set_slot_action(rw_action *a, rw_action_type t, int64_t step, int slot)
{
  a->type = t;
  a->step = a->to = step;
  a->slot = slot;
  a->level = RW_LEVEL_RAM;
  a->first_sweep = 0;
}

/* Index of the most recent dispensable checkpoint, -1 when none. */
static int most_dispensable(const online_content *o)
{
  int later_max = -1;
  for (int i = o->n - 1; i >= 0; i--) {
    if (o->lev[i] < later_max) return i;
    if (o->lev[i] > later_max) later_max = o->lev[i];
  }
  return -1;
}

static void remove_at(online_content *o, int i)
{
  for (int k = i; k + 1 < o->n; k++) {
    o->pos[k] = o->pos[k + 1];
    o->lev[k] = o->lev[k + 1];
    o->slot[k] = o->slot[k + 1];
  }
  o->n--;
}

static int append(online_content *o, int64_t step, int lev, int slot)
{
  RW_CHECK(o->n < o->c && (o->n == 0 || o->pos[o->n - 1] < step), RW_ERR_INTERNAL,
           "online schedule: cannot append step %lld", (long long)step);
  o->pos[o->n] = step;
  o->lev[o->n] = lev;
  o->slot[o->n] = slot;
  o->n++;
  return 0;
}

static int online_next(rw_schedule s, rw_action *a)
{
  online_content *o = s->content;
  if (o->reversing) return rw_engine_next(&o->e, a);
  int64_t i = o->cur;
  if (o->pending) { /* store y_i in the slot just freed */
    int k = rw_engine_take_slot(&o->e);
    RW_CHECK(k >= 0, RW_ERR_INTERNAL, "online schedule: no slot after a free");
    RW_CALL(append(o, i, o->pending_lev, k));
    o->pending = 0;
    o->handled = 1;
    set_slot_action(a, RW_ACTION_STORE, i, k);
    return 0;
  }
  if (!o->handled && (i == 0 || o->c >= 2)) {
    if (o->n < o->c) { /* a free slot */
      int k = rw_engine_take_slot(&o->e);
      RW_CHECK(k >= 0, RW_ERR_INTERNAL, "online schedule: slot count out of step");
      RW_CALL(append(o, i, i == 0 ? INT_MAX : 0, k));
      o->handled = 1;
      set_slot_action(a, RW_ACTION_STORE, i, k);
      return 0;
    }
    int d = most_dispensable(o);
    o->pending_lev = 0;
    if (d < 0) { /* replace the most recent checkpoint, one level up */
      d = o->n - 1;
      o->pending_lev = o->lev[d] + 1;
    }
    set_slot_action(a, RW_ACTION_FREE, o->pos[d], o->slot[d]);
    rw_engine_give_slot(&o->e, o->slot[d]);
    remove_at(o, d);
    o->pending = 1;
    return 0;
  }
  /* y_i is handled: one step forward */
  a->type = RW_ACTION_ADVANCE;
  a->step = i;
  a->to = i + 1;
  a->slot = -1;
  a->level = RW_LEVEL_RAM;
  a->first_sweep = 0;
  o->cur = i + 1;
  o->handled = 0;
  return 0;
}

static int online_set_steps(rw_schedule s, int64_t steps)
{
  online_content *o = s->content;
  RW_CHECK(steps >= 1 && (steps == o->cur || steps == o->cur + 1), RW_ERR_ARG,
           "rw_schedule_set_steps: the current state is at step %lld, so the number of steps "
           "must be %lld (the last step was taken) or %lld (the next step is the last); got "
           "%lld",
           (long long)o->cur, (long long)o->cur, (long long)(o->cur + 1), (long long)steps);
  /* A slot freed for a store that will not happen goes back with the others. */
  o->pending = 0;
  for (int k = 0; k < o->n; k++)
    RW_CALL(rw_engine_push(&o->e, o->pos[k], o->slot[k]));
  o->n = 0;
  rw_engine_start(&o->e, steps, o->cur);
  o->reversing = 1;
  return 0;
}

static void online_destroy(rw_schedule s)
{
  online_content *o = s->content;
  if (o) {
    rw_engine_finalize(&o->e);
    rw_free(&o->pos);
    rw_free(&o->lev);
    rw_free(&o->slot);
  }
  rw_free(&s->content);
}

/* Creates the online schedule (see rw_schedule.h). Not collective. */
int rw_schedule_create_online(int slots, rw_schedule *out)
{
  static const rw_schedule_ops ops = {online_next, online_set_steps, online_destroy};
  int ierr = 0;
  rw_schedule s = NULL;
  online_content *o = NULL;
  RW_CHECK(out, RW_ERR_ARG, "rw_schedule_create_online: output pointer is NULL");
  *out = NULL;
  RW_CHECK(slots >= 1, RW_ERR_ARG,
           "rw_schedule_create_online: slots = %d must be >= 1 (one holds the initial state)",
           slots);
  RW_TRY(rw_schedule_alloc("online", &ops, &s));
  s->capacity_ram = slots;
  RW_TRY(rw_calloc(1, sizeof *o, "online schedule", &o));
  s->content = o;
  o->c = slots;
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->pos, "online checkpoint steps", &o->pos));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->lev, "online checkpoint levels", &o->lev));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->slot, "online checkpoint slots", &o->slot));
  RW_TRY(rw_engine_init(&o->e, slots, RW_SPLIT_BINOMIAL));
  *out = s;
  return 0;
cleanup:
  rw_schedule_destroy(&s);
  return ierr;
}
