/* A fake stepper that drives a checkpoint schedule (rw_schedule.h) without a solver, shared by
 * tests/unit/test_schedule.c and tests/unit/test_schedule_online.c (criterion assertions: include
 * it from a test file, after rw_test.h). */
#ifndef REWIND_TESTS_FAKE_SCHEDULE_H
#define REWIND_TESTS_FAKE_SCHEDULE_H

#include "rewind/rw_schedule.h"
#include "rw_test.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

/* The fake stepper. The "state" is an integer that one forward step increments, so
 * y_i = i; slots hold copies of it. The fake adjoint folds the state it reverses into a
 * hash, so the order of the reversals and the state each one saw are both checked. */
typedef enum { END_KNOWN = 0, END_AFTER_STEP = 1, END_BEFORE_STEP = 2 } end_mode;

typedef struct {
  int64_t advances, forward_steps, stores, restores, frees, reversals, recomputations;
  int peak;
} fake_counts;

static uint64_t adjoint_hash(uint64_t h, int64_t y) { return h * 1000003u + (uint64_t)y + 7u; }

/* Runs s to TERMINATE with l steps and at most c full slots. mode says how an online
 * schedule learns l. Fails the test on the first invalid action. */
static void fake_run(rw_schedule s, int64_t l, int c, end_mode mode, fake_counts *out)
{
  int cap = 0;
  RW_TEST_OK(rw_schedule_capacity(s, &cap, NULL));
  cr_assert(cap >= 1 && cap <= c, "capacity %d not in [1, %d]", cap, c);
  int64_t *slot = malloc((size_t)cap * sizeof *slot);
  cr_assert(slot);
  for (int k = 0; k < cap; k++)
    slot[k] = -1;
  fake_counts n = {0};
  int full = 0, known = mode == END_KNOWN;
  int64_t y = 0, next_rev = l - 1, frontier = 0;
  uint64_t h = 0, h_expect = 0;
  for (int64_t i = l - 1; i >= 0; i--)
    h_expect = adjoint_hash(h_expect, i);
  int64_t max_actions = 40 * l + 1000;
  rw_action a;
  for (int64_t count = 0;; count++) {
    cr_assert(count < max_actions, "l=%" PRId64 " c=%d: no TERMINATE after %" PRId64 " actions", l,
              c, count);
    if (!known && mode == END_BEFORE_STEP && y == l - 1) {
      RW_TEST_OK(rw_schedule_set_steps(s, l));
      known = 1;
    }
    RW_TEST_OK(rw_schedule_next(s, &a));
    switch (a.type) {
    case RW_ACTION_ADVANCE:
      cr_assert(y >= 0 && a.step == y && a.to > a.step,
                "l=%" PRId64 " c=%d: advance %" PRId64 "->%" PRId64 " from state %" PRId64, l, c,
                a.step, a.to, y);
      cr_assert(a.to <= (known ? l - 1 : l), "advance past the end: to %" PRId64, a.to);
      cr_assert_eq(a.first_sweep, a.step >= frontier);
      n.advances += a.to - a.step;
      if (!a.first_sweep) n.recomputations += a.to - a.step;
      y = a.to;
      if (y > frontier) frontier = y;
      if (!known && mode == END_AFTER_STEP && y == l) {
        RW_TEST_OK(rw_schedule_set_steps(s, l));
        known = 1;
      }
      break;
    case RW_ACTION_STORE:
      cr_assert(a.slot >= 0 && a.slot < cap && slot[a.slot] < 0,
                "store into slot %d (capacity %d) that is not empty", a.slot, cap);
      cr_assert(y >= 0 && a.step == y, "store claims step %" PRId64 ", state is %" PRId64, a.step,
                y);
      slot[a.slot] = y;
      full++;
      n.stores++;
      cr_assert(full <= c && full <= cap, "%d slots full, c = %d", full, c);
      if (full > n.peak) n.peak = full;
      break;
    case RW_ACTION_RESTORE:
      cr_assert(a.slot >= 0 && a.slot < cap && slot[a.slot] >= 0, "restore from empty slot %d",
                a.slot);
      cr_assert_eq(slot[a.slot], a.step, "restore claims step %" PRId64 ", slot holds %" PRId64,
                   a.step, slot[a.slot]);
      y = slot[a.slot];
      n.restores++;
      break;
    case RW_ACTION_FREE:
      cr_assert(a.slot >= 0 && a.slot < cap && slot[a.slot] == a.step, "bad free of slot %d",
                a.slot);
      slot[a.slot] = -1;
      full--;
      n.frees++;
      break;
    case RW_ACTION_FIRST_REVERSE:
    case RW_ACTION_REVERSE:
      cr_assert(known, "reversal before the end is known");
      cr_assert_eq(a.type == RW_ACTION_FIRST_REVERSE, next_rev == l - 1,
                   "FIRST_REVERSE must be the first reversal and only it");
      cr_assert(a.step == next_rev && y == next_rev,
                "l=%" PRId64 " c=%d: reversal of %" PRId64 " with state %" PRId64
                ", expected %" PRId64,
                l, c, a.step, y, next_rev);
      h = adjoint_hash(h, y); /* the fake adjoint of step y -> y + 1 */
      n.reversals++;
      n.forward_steps++;
      next_rev--;
      y = -1; /* undefined after a reversal */
      break;
    case RW_ACTION_TERMINATE:
      cr_assert_eq(next_rev, -1, "terminated with step %" PRId64 " not reversed", next_rev);
      cr_assert_eq(full, 0, "terminated with %d slots full", full);
      cr_assert_eq(h, h_expect, "adjoint hash differs");
      n.forward_steps += n.advances;
      free(slot);
      /* the schedule's own statistics agree with what the stepper saw */
      rw_schedule_stats st;
      RW_TEST_OK(rw_schedule_get_stats(s, &st));
      cr_assert_eq(st.steps, l);
      cr_assert_eq(st.advances, n.advances);
      cr_assert_eq(st.forward_steps, n.forward_steps);
      cr_assert_eq(st.recomputations, n.recomputations);
      cr_assert_eq(st.reversals, l);
      cr_assert_eq(st.stores, n.stores);
      cr_assert_eq(st.restores, n.restores);
      cr_assert_eq(st.frees, n.frees);
      cr_assert_eq(st.peak_slots, n.peak);
      cr_assert_eq(st.disk_writes + st.disk_reads, 0);
      RW_TEST_OK(rw_schedule_next(s, &a)); /* stays terminated */
      cr_assert_eq(a.type, RW_ACTION_TERMINATE);
      if (out) *out = n;
      return;
    }
  }
}

#endif
