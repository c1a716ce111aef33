/* Private interface of the schedules: the ops table every implementation fills in, and the
 * reversal engine that the binomial, fixed-interval and online schedules share. */
#ifndef REWIND_CHECKPOINT_RW_SCHEDULE_IMPL_H
#define REWIND_CHECKPOINT_RW_SCHEDULE_IMPL_H

#include "rewind/rw_schedule.h"

/* Operations of one schedule implementation. `next` is required; `set_steps` is NULL for
 * schedules that know their length; `destroy` frees the content (may be NULL); `clone` (may be
 * NULL) makes a fresh iterator of the same schedule that shares what s planned. */
typedef struct {
  int (*next)(rw_schedule s, rw_action *a);
  int (*set_steps)(rw_schedule s, int64_t steps);
  void (*destroy)(rw_schedule s);
  int (*clone)(rw_schedule s, rw_schedule *out);
} rw_schedule_ops;

struct rw_schedule_s {
  const char *kind;
  rw_schedule_ops ops;
  int64_t steps;     /* l, -1 while unknown */
  int capacity_ram;  /* most full RAM slots at once */
  int capacity_disk; /* most full disk slots at once (0: RAM only) */
  int capacity_host; /* most full host slots at once (three tiers only) */
  void *content;
  /* Kept by rw_schedule_next from the emitted actions. */
  rw_schedule_stats stats;
  int full_ram, full_disk, full_host;
  int64_t frontier; /* highest step the forward state has reached */
};

/* Fills an action (fields a type does not use as rw_schedule.h says; first_sweep is set by
 * rw_schedule_next). */
static inline void rw_action_set(rw_action *a, rw_action_type type, int64_t step, int64_t to,
                                 int slot, rw_storage_level level)
{
  a->type = type;
  a->step = step;
  a->to = to;
  a->slot = slot;
  a->level = level;
  a->first_sweep = 0;
}

/* Allocates a schedule with the given kind and ops (content NULL). */
int rw_schedule_alloc(const char *kind, const rw_schedule_ops *ops, rw_schedule *out);

/* --- Reversal engine ------------------------------------------------------------------
 * Holds a stack of stored checkpoints (increasing steps) and reverses the steps below
 * `fine` one by one. From the checkpoint p on top with m = fine - p steps left and s slots
 * (p's own plus the free ones), it advances j steps and stores there (the split), reverses
 * [p + j, fine) with s - 1 slots, then restores p and reverses [p, p + j) with s slots: the
 * recursion of Griewank & Walther (2000) whose optimum is t(m, s). With one slot it
 * advances to fine - 1 and reverses. The split rule is the binomial optimum, or j = 1
 * ("store every state", used by the fixed-interval schedule to reverse an interval). The
 * state is O(capacity): no per-step arrays. */
typedef enum { RW_SPLIT_BINOMIAL = 0, RW_SPLIT_UNIT = 1 } rw_split_rule;

typedef struct {
  int capacity;
  int top;       /* index of the top checkpoint, -1 when none */
  int64_t *pos;  /* [capacity] steps of the stacked checkpoints, increasing */
  int *slot;     /* [capacity] their slots */
  int *free_ids; /* [capacity] free slot ids (a stack) */
  int nfree;
  int64_t fine; /* steps >= fine are reversed */
  int64_t cur;  /* step of the driver's current state, -1 when undefined */
  int first;    /* the next reversal is the first */
  rw_split_rule rule;
} rw_engine;

/* Allocates the engine's arrays for `capacity` slots (all free). */
int rw_engine_init(rw_engine *e, int capacity, rw_split_rule rule);
void rw_engine_finalize(rw_engine *e);
/* Takes a free slot (-1 when none) / returns one to the free list. */
int rw_engine_take_slot(rw_engine *e);
void rw_engine_give_slot(rw_engine *e, int slot);
/* Pushes a full slot holding `step` (above every stacked step). */
int rw_engine_push(rw_engine *e, int64_t step, int slot);
/* Starts the reversal of `steps` steps with the driver's state at `cur` (-1: undefined). */
void rw_engine_start(rw_engine *e, int64_t steps, int64_t cur);
/* The next action of the reversal. */
int rw_engine_next(rw_engine *e, rw_action *a);

/* The binomial split for m >= 2 steps and s >= 2 slots: an offset j in [1, m - 1] with
 * j + t(m - j, s - 1) + t(j, s) = t(m, s). */
int rw_binomial_split(int64_t m, int64_t s, int64_t *j);

#endif
