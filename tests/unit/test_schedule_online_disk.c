/* The online schedule with a disk tier: action streams checked level by level by a fake
 * stepper for many (l, c, D) and both end announcements (valid slots, every reversal once,
 * in order, from the right state; disk slots read once and freed; at most D disk slots; no
 * slot left full), the period against a brute-force minimiser, the cost bound of a run with
 * enough disk (first sweep + one binomial reversal per period; no recomputation when the
 * run fits in RAM), the doubling rule when the disk fills, and bad arguments. */
#include "rewind/rw_schedule.h"
#include "rw_test.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

TestSuite(schedule_online_disk, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

static uint64_t adjoint_hash(uint64_t h, int64_t y) { return h * 1000003u + (uint64_t)y + 7u; }

typedef struct {
  int64_t advances, reversals, disk_writes, disk_reads, ram_stores;
  int peak_disk, peak_ram;
} counts;

/* Runs s to TERMINATE for l steps; the end is announced after the step that reaches l
 * (before = 0) or when the state is at l - 1 (before = 1). */
static counts fake_run(rw_schedule s, int64_t l, int c, int D, int before)
{
  int cr = 0, cd = 0;
  RW_TEST_OK(rw_schedule_capacity(s, &cr, &cd));
  cr_assert(cr == c && cd == D, "capacity %d, %d; expected %d, %d", cr, cd, c, D);
  int64_t *slot[2];
  int cap[2] = {cr, cd}, full[2] = {0, 0};
  for (int v = 0; v < 2; v++) {
    slot[v] = malloc((size_t)cap[v] * sizeof *slot[v]);
    cr_assert(slot[v]);
    for (int k = 0; k < cap[v]; k++)
      slot[v][k] = -1;
  }
  int64_t *reads = calloc((size_t)l + 1, sizeof *reads);
  cr_assert(reads);
  counts n = {0};
  int known = 0;
  int64_t y = 0, next_rev = l - 1;
  uint64_t h = 0, want = 0;
  for (int64_t i = l - 1; i >= 0; i--)
    want = adjoint_hash(want, i);
  rw_action a;
  for (int64_t count = 0;; count++) {
    cr_assert(count < 60 * l + 1000, "l=%" PRId64 ": no TERMINATE", l);
    if (!known && before && y == l - 1) {
      RW_TEST_OK(rw_schedule_set_steps(s, l));
      known = 1;
    }
    RW_TEST_OK(rw_schedule_next(s, &a));
    int v = a.level == RW_LEVEL_DISK;
    switch (a.type) {
    case RW_ACTION_ADVANCE:
      cr_assert(y >= 0 && a.step == y && a.to > y && a.to <= (known ? l - 1 : l),
                "l=%" PRId64 " c=%d D=%d: advance %" PRId64 "->%" PRId64 " from %" PRId64, l, c, D,
                a.step, a.to, y);
      n.advances += a.to - a.step;
      y = a.to;
      if (!known && !before && y == l) {
        RW_TEST_OK(rw_schedule_set_steps(s, l));
        known = 1;
      }
      break;
    case RW_ACTION_STORE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] < 0 && a.step == y && y >= 0,
                "bad store of step %" PRId64 " (state %" PRId64 ") in level %d slot %d", a.step, y,
                v, a.slot);
      slot[v][a.slot] = y;
      if (++full[v] > (v ? n.peak_disk : n.peak_ram)) *(v ? &n.peak_disk : &n.peak_ram) = full[v];
      if (v)
        n.disk_writes++;
      else
        n.ram_stores++;
      break;
    case RW_ACTION_RESTORE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] == a.step,
                "restore of step %" PRId64 " from level %d slot %d holding %" PRId64, a.step, v,
                a.slot, a.slot >= 0 && a.slot < cap[v] ? slot[v][a.slot] : -2);
      y = a.step;
      if (v) {
        n.disk_reads++;
        cr_assert(++reads[a.step] == 1, "disk checkpoint %" PRId64 " read twice", a.step);
      }
      break;
    case RW_ACTION_FREE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] == a.step, "bad free");
      slot[v][a.slot] = -1;
      full[v]--;
      break;
    case RW_ACTION_FIRST_REVERSE:
    case RW_ACTION_REVERSE:
      cr_assert(known && a.step == next_rev && y == next_rev,
                "l=%" PRId64 " c=%d D=%d: reversal of %" PRId64 " with state %" PRId64
                ", expected %" PRId64,
                l, c, D, a.step, y, next_rev);
      cr_assert_eq(a.type == RW_ACTION_FIRST_REVERSE, next_rev == l - 1);
      h = adjoint_hash(h, y);
      n.reversals++;
      next_rev--;
      y = -1;
      break;
    case RW_ACTION_TERMINATE:
      cr_assert_eq(next_rev, -1);
      cr_assert(full[0] == 0 && full[1] == 0, "terminated with slots full");
      cr_assert_eq(h, want, "adjoint hash differs");
      for (int w = 0; w < 2; w++)
        free(slot[w]);
      free(reads);
      rw_schedule_stats st;
      RW_TEST_OK(rw_schedule_get_stats(s, &st));
      cr_assert_eq(st.advances, n.advances);
      cr_assert_eq(st.disk_writes, n.disk_writes);
      cr_assert_eq(st.disk_reads, n.disk_reads);
      cr_assert_eq(st.reversals, l);
      return n;
    }
  }
}

static int64_t t_of(int64_t l, int c)
{
  int64_t t = 0;
  RW_TEST_OK(rw_binomial_advances(l, c, NULL, &t));
  return t;
}

Test(schedule_online_disk, period_is_the_brute_force_minimiser)
{
  const double costs[][2] = {{0, 0}, {0.5, 0.5}, {2, 3}, {10, 10}, {40, 25}, {300, 200}};
  for (int c = 1; c <= 12; c++)
    for (size_t k = 0; k < sizeof costs / sizeof *costs; k++) {
      double w = costs[k][0] + costs[k][1], best = INFINITY, fbest = 0.0;
      int64_t bp = 0, P = 0;
      for (int64_t q = 1; q <= 20000; q++) {
        double f = ((double)t_of(q, c) + w) / (double)q;
        if (f < best) best = f, bp = q;
      }
      RW_TEST_OK(rw_online_disk_period(c, costs[k][0], costs[k][1], &P, &fbest));
      double fp = ((double)t_of(P, c) + w) / (double)P;
      cr_assert(fabs(fp - best) <= 1e-12 * best && fabs(fbest - best) <= 1e-12 * best,
                "c=%d w=%g: period %" PRId64 " costs %.15g, brute force %" PRId64 " costs %.15g", c,
                w, P, fp, bp, best);
    }
}

Test(schedule_online_disk, streams_valid_and_cost_exact_with_enough_disk)
{
  const int cs[] = {1, 2, 3, 5};
  const double costs[][2] = {{0.5, 0.5}, {4, 3}, {20, 20}};
  for (size_t ic = 0; ic < sizeof cs / sizeof *cs; ic++)
    for (size_t k = 0; k < sizeof costs / sizeof *costs; k++) {
      int c = cs[ic];
      int64_t P = 0;
      RW_TEST_OK(rw_online_disk_period(c, costs[k][0], costs[k][1], &P, NULL));
      for (int64_t l = 1; l <= 400; l += (l < 60 ? 1 : 37))
        for (int before = 0; before < 2; before++) {
          int D = (int)(l / P) + 2; /* enough: no doubling */
          rw_schedule s = NULL;
          RW_TEST_OK(rw_schedule_create_online_disk(c, D, costs[k][0], costs[k][1], &s));
          counts n = fake_run(s, l, c, D, before);
          /* at most the first sweep (to l - 1 or l) + the binomial reversal of each period,
           * nothing recomputed when the run fits in RAM, one disk write per period start */
          int64_t bound = before ? l - 1 : l, periods = 0;
          for (int64_t a0 = 0; a0 < l; a0 += P, periods++)
            bound += t_of(l - a0 < P ? l - a0 : P, c);
          cr_assert(n.advances <= bound,
                    "l=%" PRId64 " c=%d P=%" PRId64 ": advances %" PRId64 " above %" PRId64, l, c,
                    P, n.advances, bound);
          if (l <= c && l <= P) cr_assert_eq(n.advances, before ? l - 1 : l);
          cr_assert(n.disk_writes == periods ||
                        (before && (l - 1) % P == 0 && n.disk_writes == periods - 1),
                    "l=%" PRId64 " P=%" PRId64 ": %" PRId64 " disk writes for %" PRId64 " periods",
                    l, P, n.disk_writes, periods);
          /* each earlier period's start is read once; the last one is not */
          cr_assert_eq(n.disk_reads, n.disk_writes - (n.disk_writes > 0 && l > 0 ? 1 : 0));
          int64_t got = 0, chosen = 0;
          RW_TEST_OK(rw_schedule_online_disk_period(s, &got, &chosen));
          cr_assert(got == P && chosen == P);
          rw_schedule_destroy(&s);
        }
    }
}

Test(schedule_online_disk, doubling_when_the_disk_fills)
{
  for (int D = 1; D <= 4; D++)
    for (int64_t l = 1; l <= 700; l += 13)
      for (int before = 0; before < 2; before++) {
        rw_schedule s = NULL;
        RW_TEST_OK(rw_schedule_create_online_disk(2, D, 1.0, 1.0, &s));
        counts n = fake_run(s, l, 2, D, before);
        cr_assert(n.peak_disk <= D);
        int64_t P = 0, P0 = 0;
        RW_TEST_OK(rw_schedule_online_disk_period(s, &P, &P0));
        /* the period doubled just often enough: the disk held every P-th state */
        cr_assert(P >= P0 && (P / P0) * P0 == P, "period %" PRId64 " from %" PRId64, P, P0);
        cr_assert((l - 1) / P + 1 <= D, "l=%" PRId64 " D=%d: period %" PRId64, l, D, P);
        cr_assert(P == P0 || (int64_t)D * (P / 2) <= l - 1,
                  "l=%" PRId64 " D=%d: period %" PRId64 " doubled more than needed", l, D, P);
        rw_schedule_destroy(&s);
      }
}

Test(schedule_online_disk, bad_arguments)
{
  rw_schedule s = NULL;
  cr_assert_eq(rw_schedule_create_online_disk(0, 3, 1, 1, &s), RW_ERR_ARG);
  cr_assert_eq(rw_schedule_create_online_disk(2, 0, 1, 1, &s), RW_ERR_ARG);
  cr_assert_eq(rw_schedule_create_online_disk(2, 3, -1, 1, &s), RW_ERR_ARG);
  cr_assert_null(s);
  RW_TEST_OK(rw_schedule_create_online_disk(2, 3, 1, 1, &s));
  rw_action a;
  RW_TEST_OK(rw_schedule_next(s, &a));
  cr_assert_eq(rw_schedule_set_steps(s, 5), RW_ERR_ARG); /* the state is at 0 */
  int64_t p = 0;
  rw_schedule b = NULL;
  RW_TEST_OK(rw_schedule_create_binomial(10, 3, &b));
  cr_assert_eq(rw_schedule_online_disk_period(b, &p, NULL), RW_ERR_ARG);
  rw_schedule_destroy(&b);
  rw_schedule_destroy(&s);
  rw_error_clear();
}
