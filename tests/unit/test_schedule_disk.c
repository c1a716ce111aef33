/* The two-level (RAM + disk) schedule: its cost against a plain dynamic program of the
 * H-Revolve / Disk-Revolve recurrences written here independently, its action streams
 * replayed by a fake driver with RAM and disk slots, c_disk = 0 against the binomial
 * schedule, and bad arguments. */
#include "rewind/rw_schedule.h"
#include "rw_test.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

TestSuite(schedule_disk, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

/* --- The independent optimum: the recurrences evaluated in full, O(l^2 m) (stopping only
 * when a whole column repeats the previous one). R(n) from the closed form (itself checked
 * against a DP in test_schedule.c). out[n] = optimum for n steps, n = 1 .. L. disk = -1:
 * unlimited (D), else H(n, disk). */
static void full_dp(int64_t L, int c, int disk, double wd, double rd, double *out)
{
  double *R = calloc((size_t)L + 1, sizeof *R), *P = calloc((size_t)L + 1, sizeof *P);
  double *Hp = calloc((size_t)L + 1, sizeof *Hp), *Hc = calloc((size_t)L + 1, sizeof *Hc);
  cr_assert(R && P && Hp && Hc);
  for (int64_t n = 1; n <= L; n++) {
    int64_t t = 0;
    RW_TEST_OK(rw_binomial_advances(n, c, NULL, &t));
    R[n] = (double)t;
  }
  if (disk < 0) {
    for (int64_t n = 1; n <= L; n++) {
      double best = R[n];
      for (int64_t j = 1; j <= n - 2; j++) {
        double v = wd + (double)j + out[n - j] + rd + R[j];
        if (v < best) best = v;
      }
      out[n] = best;
    }
  } else {
    for (int64_t n = 1; n <= L; n++)
      Hp[n] = R[n];
    for (int m = 1; m <= disk; m++) {
      int same = 1;
      for (int64_t n = 1; n <= L; n++) {
        double best = R[n];
        for (int64_t j = 1; j <= n - 2; j++) {
          double v = (double)j + Hp[n - j] + rd + P[j];
          if (v < best) best = v;
        }
        P[n] = best;
        Hc[n] = R[n] < wd + best ? R[n] : wd + best;
        if (Hc[n] != Hp[n]) same = 0;
      }
      double *t = Hp;
      Hp = Hc;
      Hc = t;
      if (same) break; /* every further column repeats this one */
    }
    for (int64_t n = 1; n <= L; n++)
      out[n] = Hp[n];
  }
  free(R);
  free(P);
  free(Hp);
  free(Hc);
}

static int is_integer(double x) { return x == floor(x); }

static void expect_cost(double got, double want, int exact, int64_t l, int c, int disk, double wd,
                        double rd)
{
  if (exact)
    cr_assert_eq(got, want, "l=%" PRId64 " c=%d disk=%d wd=%g rd=%g: cost %.17g, DP %.17g", l, c,
                 disk, wd, rd, got, want);
  else
    cr_assert(fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want)),
              "l=%" PRId64 " c=%d disk=%d wd=%g rd=%g: cost %.17g, DP %.17g", l, c, disk, wd, rd,
              got, want);
}

static const double costs[][2] = {{0, 0}, {1, 1}, {2, 3}, {0.5, 7.25}, {10, 10}, {3, 0}, {40, 25}};
#define NCOSTS (sizeof costs / sizeof costs[0])

Test(schedule_disk, cost_equals_full_dynamic_program)
{
  double t0 = rw_wtime();
  enum { L = 300 };
  static double want[L + 1];
  static const int cs[] = {1, 2, 3, 5};
  int64_t cells = 0;
  for (size_t k = 0; k < NCOSTS; k++)
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
      for (int disk = -1; disk <= 3; disk++) {
        double wd = costs[k][0], rd = costs[k][1];
        full_dp(L, cs[ci], disk, wd, rd, want);
        int exact = is_integer(wd) && is_integer(rd);
        for (int64_t l = 1; l <= L; l += l < 120 ? 1 : 11) {
          rw_two_level_counts n;
          RW_TEST_OK(rw_two_level_cost(l, cs[ci], disk, wd, rd, &n));
          expect_cost(n.cost, want[l], exact, l, cs[ci], disk, wd, rd);
          /* the counts add up to the cost, and the disk is never worse than RAM alone */
          cr_assert_eq(n.cost,
                       (double)n.advances + (double)n.disk_writes * wd + (double)n.disk_reads * rd);
          int64_t t = 0;
          RW_TEST_OK(rw_binomial_advances(l, cs[ci], NULL, &t));
          cr_assert(n.cost <= (double)t);
          cr_assert(disk < 0 || n.disk_slots_used <= disk);
          cells++;
        }
      }
  /* larger cells: thousands of steps, and l = 10^4 (H with 2 disk slots, D); many disk
   * slots (up to saturation: every column of the planner's per-n saturation and sparse
   * candidates is exercised) */
  static const struct {
    int64_t l;
    int c, disk;
    double wd, rd;
  } big[] = {{2500, 4, 6, 3, 1},
             {3000, 10, 8, 2, 2},
             {4000, 3, -1, 5, 5},
             {3500, 2, 4, 0.75, 1.5},
             {10000, 5, 2, 2, 2},
             {10000, 10, -1, 20, 10.5},
             {2000, 10, 1000, 20, 10},
             {1500, 3, 500, 20, 10},
             {1200, 4, 200, 0.5, 7.25},
             /* c_ram = 3 around the saturated column's slot count (about l / 30 here):
              * below it the columns, at and above it the saturated column alone */
             {2500, 3, 81, 20, 10},
             {2500, 3, 82, 20, 10},
             {2500, 3, 2000, 20, 10}};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    double *w = calloc((size_t)big[i].l + 1, sizeof *w);
    cr_assert(w);
    full_dp(big[i].l, big[i].c, big[i].disk, big[i].wd, big[i].rd, w);
    rw_two_level_counts n;
    RW_TEST_OK(rw_two_level_cost(big[i].l, big[i].c, big[i].disk, big[i].wd, big[i].rd, &n));
    expect_cost(n.cost, w[big[i].l], is_integer(big[i].wd) && is_integer(big[i].rd), big[i].l,
                big[i].c, big[i].disk, big[i].wd, big[i].rd);
    free(w);
  }
  fprintf(stderr,
          "schedule_disk: cost = full DP for %" PRId64 " cells (l <= %d) and %zu large (%.2f s)\n",
          cells, L, sizeof big / sizeof big[0], rw_wtime() - t0);
}

/* --- Fake driver with two levels. y_i = i; the adjoint hash checks the reversal order. */
static uint64_t adjoint_hash(uint64_t h, int64_t y) { return h * 1000003u + (uint64_t)y + 7u; }

/* Replays the schedule; fails on the first invalid action. Returns the stats. */
static void fake_run(rw_schedule s, int64_t l, int c, int disk, rw_schedule_stats *out)
{
  int cap[2] = {0, 0};
  RW_TEST_OK(rw_schedule_capacity(s, &cap[0], &cap[1]));
  cr_assert(cap[0] >= 1 && cap[0] <= c, "RAM capacity %d, c = %d", cap[0], c);
  cr_assert(cap[1] >= 0 && (disk < 0 || cap[1] <= disk), "disk capacity %d, c_disk = %d", cap[1],
            disk);
  int64_t *slot[2];
  for (int v = 0; v < 2; v++) {
    slot[v] = malloc((size_t)(cap[v] + 1) * sizeof *slot[v]);
    cr_assert(slot[v]);
    for (int k = 0; k <= cap[v]; k++)
      slot[v][k] = -1;
  }
  int full[2] = {0, 0}, peak[2] = {0, 0};
  int64_t y = 0, next_rev = l - 1, writes = 0, reads = 0, adv = 0;
  uint64_t h = 0, h_expect = 0;
  for (int64_t i = l - 1; i >= 0; i--)
    h_expect = adjoint_hash(h_expect, i);
  rw_action a, prev = {RW_ACTION_TERMINATE, 0, 0, -1, RW_LEVEL_RAM, 0};
  for (int64_t count = 0;; count++) {
    cr_assert(count < 60 * l + 1000, "no TERMINATE after %" PRId64 " actions", count);
    RW_TEST_OK(rw_schedule_next(s, &a));
    int v = a.level == RW_LEVEL_DISK;
    switch (a.type) {
    case RW_ACTION_ADVANCE:
      cr_assert(y >= 0 && a.step == y && a.to > a.step && a.to <= l - 1,
                "advance %" PRId64 "->%" PRId64 " from %" PRId64, a.step, a.to, y);
      adv += a.to - a.step;
      y = a.to;
      break;
    case RW_ACTION_STORE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] < 0,
                "store into %s[%d] (capacity %d) that is not empty", v ? "disk" : "ram", a.slot,
                cap[v]);
      cr_assert(y >= 0 && a.step == y, "store claims %" PRId64 ", state %" PRId64, a.step, y);
      slot[v][a.slot] = y;
      if (++full[v] > peak[v]) peak[v] = full[v];
      writes += v;
      break;
    case RW_ACTION_RESTORE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] == a.step,
                "restore %s[%d] claims %" PRId64, v ? "disk" : "ram", a.slot, a.step);
      y = a.step;
      reads += v;
      break;
    case RW_ACTION_FREE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] == a.step, "bad free");
      /* a disk slot is freed right after its last read */
      if (v)
        cr_assert(prev.type == RW_ACTION_RESTORE && prev.level == RW_LEVEL_DISK &&
                      prev.slot == a.slot,
                  "disk[%d] (%" PRId64 ") not freed right after a read", a.slot, a.step);
      slot[v][a.slot] = -1;
      full[v]--;
      break;
    case RW_ACTION_FIRST_REVERSE:
    case RW_ACTION_REVERSE:
      cr_assert_eq(a.type == RW_ACTION_FIRST_REVERSE, next_rev == l - 1);
      cr_assert(a.step == next_rev && y == next_rev,
                "l=%" PRId64 ": reversal of %" PRId64 " with state %" PRId64 ", expected %" PRId64,
                l, a.step, y, next_rev);
      h = adjoint_hash(h, y);
      next_rev--;
      y = -1;
      break;
    case RW_ACTION_TERMINATE:
      cr_assert_eq(next_rev, -1);
      cr_assert(full[0] == 0 && full[1] == 0, "terminated with slots full");
      cr_assert_eq(h, h_expect);
      RW_TEST_OK(rw_schedule_get_stats(s, out));
      cr_assert_eq(out->advances, adv);
      cr_assert_eq(out->disk_writes, writes);
      cr_assert_eq(out->disk_reads, reads);
      cr_assert_eq(out->peak_ram_slots, peak[0]);
      cr_assert_eq(out->peak_disk_slots, peak[1]);
      cr_assert_eq(out->reversals, l);
      free(slot[0]);
      free(slot[1]);
      RW_TEST_OK(rw_schedule_next(s, &a));
      cr_assert_eq(a.type, RW_ACTION_TERMINATE);
      return;
    }
    prev = a;
  }
}

/* Creates, replays and checks one cell against rw_two_level_cost. */
static void check_stream(int64_t l, int c, int disk, double wd, double rd)
{
  rw_schedule s = NULL;
  rw_schedule_stats st;
  rw_two_level_counts n;
  RW_TEST_OK(rw_schedule_create_two_level(l, c, disk, wd, rd, &s));
  fake_run(s, l, c, disk, &st);
  RW_TEST_OK(rw_two_level_cost(l, c, disk, wd, rd, &n));
  cr_assert_eq(st.advances, n.advances, "l=%" PRId64 " c=%d disk=%d", l, c, disk);
  cr_assert_eq(st.disk_writes, n.disk_writes);
  cr_assert_eq(st.disk_reads, n.disk_reads);
  int dcap = -1;
  RW_TEST_OK(rw_schedule_capacity(s, NULL, &dcap));
  cr_assert_eq(dcap, n.disk_slots_used);
  cr_assert_eq(st.peak_disk_slots, dcap);
  double cost = (double)st.advances + (double)st.disk_writes * wd + (double)st.disk_reads * rd;
  cr_assert(fabs(cost - n.cost) <= 1e-9 * fmax(1, n.cost));
  rw_two_level_counts own; /* the schedule's own plan gives the same counts (rewind-plan) */
  RW_TEST_OK(rw_schedule_two_level_counts(s, &own));
  cr_assert(own.cost == n.cost && own.advances == n.advances && own.disk_writes == n.disk_writes &&
                own.disk_reads == n.disk_reads && own.disk_slots_used == n.disk_slots_used,
            "l=%" PRId64 " c=%d disk=%d: the schedule's plan %.17g vs rw_two_level_cost %.17g", l,
            c, disk, own.cost, n.cost);
  RW_TEST_OK(rw_schedule_destroy(&s));
  cr_assert_null(s);
}

Test(schedule_disk, streams_valid)
{
  double t0 = rw_wtime();
  int64_t cells = 0;
  for (size_t k = 0; k < NCOSTS; k++)
    for (int c = 1; c <= 4; c++)
      for (int disk = -1; disk <= 3; disk++)
        for (int64_t l = 1; l <= 150; l += l < 40 ? 1 : 9) {
          check_stream(l, c, disk, costs[k][0], costs[k][1]);
          cells++;
        }
  static const struct {
    int64_t l;
    int c, disk;
    double wd, rd;
  } big[] = {{20000, 10, 1, 2, 2},   {20000, 10, 5, 2, 2},  {20000, 10, -1, 2, 2},
             {5000, 3, 12, 0.5, 1},  {8000, 2, -1, 20, 10}, {3000, 1, 4, 1, 1},
             {12345, 6, 3, 7.5, 2.5}};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
    check_stream(big[i].l, big[i].c, big[i].disk, big[i].wd, big[i].rd);
  rw_schedule s = NULL;
  const char *kind = NULL;
  RW_TEST_OK(rw_schedule_create_two_level(10, 2, 1, 1, 1, &s));
  RW_TEST_OK(rw_schedule_get_info(s, NULL, &kind));
  cr_assert_str_eq(kind, "two_level");
  rw_schedule_destroy(&s);
  fprintf(stderr, "schedule_disk: %" PRId64 " small and %zu large streams valid (%.2f s)\n", cells,
          sizeof big / sizeof big[0], rw_wtime() - t0);
}

/* With no disk slot (or a disk too expensive to pay off) the stream is the binomial one,
 * action for action. */
Test(schedule_disk, no_disk_is_binomial)
{
  for (int c = 1; c <= 8; c++)
    for (int64_t l = 1; l <= 400; l += l < 50 ? 1 : 13)
      for (int variant = 0; variant < 2; variant++) {
        rw_schedule a = NULL, b = NULL;
        RW_TEST_OK(
            rw_schedule_create_two_level(l, c, variant ? 3 : 0, variant ? 1e12 : 1.0, 1.0, &a));
        RW_TEST_OK(rw_schedule_create_binomial(l, c, &b));
        int da = -1;
        RW_TEST_OK(rw_schedule_capacity(a, NULL, &da));
        cr_assert_eq(da, 0);
        rw_action x, y;
        do {
          RW_TEST_OK(rw_schedule_next(a, &x));
          RW_TEST_OK(rw_schedule_next(b, &y));
          cr_assert(x.type == y.type && x.step == y.step && x.to == y.to && x.slot == y.slot &&
                        x.level == y.level && x.first_sweep == y.first_sweep,
                    "l=%" PRId64 " c=%d: two-level and binomial streams differ", l, c);
        } while (x.type != RW_ACTION_TERMINATE);
        rw_schedule_destroy(&a);
        rw_schedule_destroy(&b);
      }
}

Test(schedule_disk, bad_arguments_and_cleanup)
{
  rw_schedule s = NULL;
  rw_two_level_counts n;
  cr_assert_eq(rw_schedule_create_two_level(0, 3, 1, 1, 1, &s), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "steps = 0"));
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_two_level(10, 0, 1, 1, 1, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_two_level(10, 3, -2, 1, 1, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_two_level(10, 3, 1, -1, 1, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_two_level(10, 3, 1, 1, NAN, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_two_level(10, 3, 1, INFINITY, 1, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_two_level(10, 3, 1, 1, 1, NULL), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_two_level_cost(10, 3, 1, 1, 1, NULL), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_two_level_cost(-5, 3, 1, 1, 1, &n), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_null(s);
  /* the counts of a schedule's own plan: refused for another kind of schedule */
  RW_TEST_OK(rw_schedule_create_binomial(10, 3, &s));
  cr_assert_eq(rw_schedule_two_level_counts(s, &n), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "not a two-level schedule"));
  rw_error_clear();
  cr_assert_eq(rw_schedule_two_level_counts(NULL, &n), RW_ERR_ARG);
  rw_error_clear();
  rw_schedule_destroy(&s);
  /* every allocation may fail: clean error, nothing leaked */
  size_t base = rw_mem_current();
  for (int disk = -1; disk <= 2; disk += 3)
    for (long k = 1; k <= 20; k++) {
      rw_mem_fail_after(k);
      int ierr = rw_schedule_create_two_level(200, 3, disk, 1, 1, &s);
      int ierr2 = rw_two_level_cost(200, 3, disk, 1, 1, &n);
      rw_mem_fail_after(0);
      cr_assert(ierr == 0 || ierr == RW_ERR_MEM);
      cr_assert(ierr2 == 0 || ierr2 == RW_ERR_MEM);
      if (ierr) cr_assert_null(s);
      rw_error_clear();
      rw_schedule_destroy(&s);
      cr_assert_eq(rw_mem_current(), base, "leak after failing allocation %ld", k);
    }
}

/* Planning time at l = 10^5 (the whole run, tables and walk), reported. */
Test(schedule_disk, large_planning_time)
{
  static const int disks[] = {1, 5, -1};
  for (size_t i = 0; i < sizeof disks / sizeof disks[0]; i++) {
    double t0 = rw_wtime();
    rw_two_level_counts n;
    RW_TEST_OK(rw_two_level_cost(100000, 10, disks[i], 2, 2, &n));
    int64_t t = 0;
    RW_TEST_OK(rw_binomial_advances(100000, 10, NULL, &t));
    cr_assert(n.cost <= (double)t);
    fprintf(stderr,
            "schedule_disk: l = 1e5, c_ram = 10, c_disk = %d, wd = rd = 2: cost %.0f (RAM only "
            "%" PRId64 "), %" PRId64 " writes, %" PRId64 " reads, %d disk slots (%.2f s)\n",
            disks[i], n.cost, t, n.disk_writes, n.disk_reads, n.disk_slots_used, rw_wtime() - t0);
  }
}

/* Many disk slots, up to saturation (the full-DP comparison above covers l <= 2000). Checks
 * that need no second planner: the optimum never increases with more slots, never exceeds
 * Disk-Revolve's D(l) (computed by its own recurrence and code path: H's options contain
 * D's, so H <= D by induction; H can be lower, as the left part may use the disk again),
 * saturates below the slots given, and the schedule replays to the planned counts. */
Test(schedule_disk, many_disk_slots)
{
  static const struct {
    int64_t l;
    int c;
    double wd, rd;
  } cases[] = {{6000, 10, 20, 10}, {3000, 3, 20, 10}, {5000, 30, 20, 10}, {3000, 5, 2.5, 0.75}};
  static const int disks[] = {10, 50, 200, 1000, 5000};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double t0 = rw_wtime();
    int64_t l = cases[i].l;
    int c = cases[i].c;
    double wd = cases[i].wd, rd = cases[i].rd, prev = INFINITY;
    rw_two_level_counts d, h;
    RW_TEST_OK(rw_two_level_cost(l, c, -1, wd, rd, &d));
    for (size_t k = 0; k < sizeof disks / sizeof disks[0]; k++) {
      RW_TEST_OK(rw_two_level_cost(l, c, disks[k], wd, rd, &h));
      cr_assert(h.cost <= prev, "l=%" PRId64 " c=%d: cost %.17g with %d disk slots > %.17g", l, c,
                h.cost, disks[k], prev);
      cr_assert(disks[k] < 5000 || h.cost <= d.cost + 1e-9 * d.cost,
                "l=%" PRId64 " c=%d disk=%d: %.17g > D %.17g", l, c, disks[k], h.cost, d.cost);
      cr_assert(h.disk_slots_used <= disks[k]);
      prev = h.cost;
    }
    cr_assert(h.disk_slots_used < 5000); /* saturated */
    fprintf(stderr,
            "schedule_disk: l = %" PRId64 ", c_ram = %d, wd = %g, rd = %g: H = %.17g with %d disk "
            "slots, D = %.17g (%.2f s)\n",
            l, c, wd, rd, h.cost, h.disk_slots_used, d.cost, rw_wtime() - t0);
  }
  check_stream(6000, 10, 100, 20, 10);
  check_stream(3000, 3, 5000, 20, 10);
}
