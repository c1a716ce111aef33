/* The tiered (three-level: fast RAM or device memory, host RAM, disk) schedule: its cost
 * against a plain dynamic program of the tier-by-tier H-Revolve recurrences written here
 * independently, its action streams replayed by a fake driver with three kinds of slots,
 * agreement with the two-level schedule when the middle tier is empty, and bad arguments. */
#include "rewind/rw_schedule.h"
#include "rw_test.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

TestSuite(schedule_tiered, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

/* One tier in full, O(L^2 m): out[n] = H(n, m) on the base R (n = 1 .. L), or D(n) for
 * m = -1, by the recurrences of rw_schedule.h evaluated at every split. */
static void tier_dp(int64_t L, const double *R, int m, double wd, double rd, double *out)
{
  double *P = calloc((size_t)L + 1, sizeof *P), *Hp = calloc((size_t)L + 1, sizeof *Hp);
  double *Hc = calloc((size_t)L + 1, sizeof *Hc);
  cr_assert(P && Hp && Hc);
  if (m < 0) {
    for (int64_t n = 1; n <= L; n++) {
      double best = R[n];
      for (int64_t j = 1; j <= n - 2; j++)
        best = fmin(best, wd + (double)j + out[n - j] + rd + R[j]);
      out[n] = best;
    }
  } else {
    for (int64_t n = 1; n <= L; n++)
      Hp[n] = R[n];
    for (int c = 1; c <= m; c++) {
      int same = 1;
      for (int64_t n = 1; n <= L; n++) {
        double best = R[n];
        for (int64_t j = 1; j <= n - 2; j++)
          best = fmin(best, (double)j + Hp[n - j] + rd + P[j]);
        P[n] = best;
        Hc[n] = fmin(R[n], wd + best);
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
  free(P);
  free(Hp);
  free(Hc);
}

/* The three-tier optimum for every n <= L: binomial R, then the host tier on it, then disk. */
static void three_dp(int64_t L, int c, int host, double wh, double rh, int disk, double wd,
                     double rd, double *out)
{
  double *R = calloc((size_t)L + 1, sizeof *R), *H = calloc((size_t)L + 1, sizeof *H);
  cr_assert(R && H);
  for (int64_t n = 1; n <= L; n++) {
    int64_t t = 0;
    RW_TEST_OK(rw_binomial_advances(n, c, NULL, &t));
    R[n] = (double)t;
  }
  tier_dp(L, R, host, wh, rh, H);
  tier_dp(L, H, disk, wd, rd, out);
  free(R);
  free(H);
}

static void expect_close(double got, double want, const char *what, int64_t l, int c, int host,
                         int disk)
{
  cr_assert(fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want)),
            "%s: l=%" PRId64 " c=%d host=%d disk=%d: cost %.17g, DP %.17g", what, l, c, host, disk,
            got, want);
}

static const double host_costs[][2] = {{0, 0}, {0.5, 0.5}, {1, 2}, {3, 1}};
static const double disk_costs[][2] = {{2, 2}, {10, 5}, {0.5, 7.25}};
#define NHC (sizeof host_costs / sizeof host_costs[0])
#define NDC (sizeof disk_costs / sizeof disk_costs[0])

static rw_tier tier(int slots, double wd, double rd) { return (rw_tier){slots, wd, rd}; }

Test(schedule_tiered, cost_equals_full_dynamic_program)
{
  double t0 = rw_wtime();
  enum { L = 130 };
  static double want[L + 1];
  static const int hosts[] = {0, 1, 2, 4}, disks[] = {-1, 0, 1, 3};
  int64_t cells = 0;
  for (int c = 1; c <= 3; c++)
    for (size_t hi = 0; hi < 4; hi++)
      for (size_t di = 0; di < 4; di++)
        for (size_t hk = 0; hk < NHC; hk++)
          for (size_t dk = 0; dk < NDC; dk++) {
            int host = hosts[hi], disk = disks[di];
            double wh = host_costs[hk][0], rh = host_costs[hk][1];
            double wd = disk_costs[dk][0], rd = disk_costs[dk][1];
            three_dp(L, c, host, wh, rh, disk, wd, rd, want);
            for (int64_t l = 1; l <= L; l += l < 60 ? 1 : 7) {
              rw_tier t[3] = {tier(c, 0, 0), tier(host, wh, rh), tier(disk, wd, rd)};
              rw_tiered_counts n;
              RW_TEST_OK(rw_tiered_cost(l, 3, t, &n));
              expect_close(n.cost, want[l], "three tiers", l, c, host, disk);
              /* the counts add up to the cost; the slots stay within the tiers */
              expect_close((double)n.advances + wh * (double)n.writes[1] + rh * (double)n.reads[1] +
                               wd * (double)n.writes[2] + rd * (double)n.reads[2],
                           n.cost, "counts", l, c, host, disk);
              cr_assert(n.slots_used[1] <= host && (disk < 0 || n.slots_used[2] <= disk));
              cr_assert(n.writes[0] == 0 && n.reads[0] == 0);
              /* never worse than either tier alone on the fast one */
              rw_two_level_counts a, b;
              RW_TEST_OK(rw_two_level_cost(l, c, disk, wd, rd, &a));
              RW_TEST_OK(rw_two_level_cost(l, c, host, wh, rh, &b));
              cr_assert(n.cost <= a.cost + 1e-9 * a.cost && n.cost <= b.cost + 1e-9 * b.cost);
              cells++;
            }
          }
  /* larger cells: many host slots over a few disk slots (the device / host / disk shape) */
  static const struct {
    int64_t l;
    int c, host, disk;
    double wh, rh, wd, rd;
  } big[] = {{2000, 4, 30, 6, 0.5, 0.5, 20, 10},
             {1500, 2, 10, -1, 1, 1, 8, 8},
             {2500, 8, 100, 20, 0.25, 0.25, 5, 3},
             {1200, 3, 400, 50, 2, 1, 30, 15}};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    double *w = calloc((size_t)big[i].l + 1, sizeof *w);
    cr_assert(w);
    three_dp(big[i].l, big[i].c, big[i].host, big[i].wh, big[i].rh, big[i].disk, big[i].wd,
             big[i].rd, w);
    rw_tier t[3] = {tier(big[i].c, 0, 0), tier(big[i].host, big[i].wh, big[i].rh),
                    tier(big[i].disk, big[i].wd, big[i].rd)};
    rw_tiered_counts n;
    RW_TEST_OK(rw_tiered_cost(big[i].l, 3, t, &n));
    expect_close(n.cost, w[big[i].l], "large", big[i].l, big[i].c, big[i].host, big[i].disk);
    free(w);
  }
  fprintf(stderr,
          "schedule_tiered: cost = full DP for %" PRId64
          " cells (l <= %d) and %zu large (%.2f s)\n",
          cells, L, sizeof big / sizeof big[0], rw_wtime() - t0);
}

/* --- Fake driver with three levels. y_i = i; the adjoint hash checks the reversal order. */
static uint64_t adjoint_hash(uint64_t h, int64_t y) { return h * 1000003u + (uint64_t)y + 7u; }

static int level_index(rw_storage_level v)
{
  return v == RW_LEVEL_RAM ? 0 : v == RW_LEVEL_HOST ? 1 : 2;
}

static const char *level_name(int v) { return v == 0 ? "ram" : v == 1 ? "host" : "disk"; }

/* Replays the schedule; fails on the first invalid action. Returns the stats. */
static void fake_run(rw_schedule s, int64_t l, const rw_tier *t, rw_schedule_stats *out)
{
  int cap[3] = {0, 0, 0};
  RW_TEST_OK(rw_schedule_capacity(s, &cap[0], &cap[2]));
  RW_TEST_OK(rw_schedule_level_capacity(s, RW_LEVEL_HOST, &cap[1]));
  cr_assert(cap[0] >= 1 && cap[0] <= t[0].slots);
  cr_assert(cap[1] >= 0 && cap[1] <= t[1].slots, "host capacity %d of %d", cap[1], t[1].slots);
  cr_assert(cap[2] >= 0 && (t[2].slots < 0 || cap[2] <= t[2].slots));
  int64_t *slot[3];
  for (int v = 0; v < 3; v++) {
    slot[v] = malloc((size_t)(cap[v] + 1) * sizeof *slot[v]);
    cr_assert(slot[v]);
    for (int k = 0; k <= cap[v]; k++)
      slot[v][k] = -1;
  }
  int full[3] = {0, 0, 0}, peak[3] = {0, 0, 0};
  int64_t y = 0, next_rev = l - 1, writes[3] = {0, 0, 0}, reads[3] = {0, 0, 0}, adv = 0;
  uint64_t h = 0, h_expect = 0;
  for (int64_t i = l - 1; i >= 0; i--)
    h_expect = adjoint_hash(h_expect, i);
  rw_action a, prev = {RW_ACTION_TERMINATE, 0, 0, -1, RW_LEVEL_RAM, 0};
  for (int64_t count = 0;; count++) {
    cr_assert(count < 60 * l + 1000, "no TERMINATE after %" PRId64 " actions", count);
    RW_TEST_OK(rw_schedule_next(s, &a));
    int v = level_index(a.level);
    switch (a.type) {
    case RW_ACTION_ADVANCE:
      cr_assert(y >= 0 && a.step == y && a.to > a.step && a.to <= l - 1);
      adv += a.to - a.step;
      y = a.to;
      break;
    case RW_ACTION_STORE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] < 0,
                "store into %s[%d] (capacity %d) that is not empty", level_name(v), a.slot, cap[v]);
      cr_assert(y >= 0 && a.step == y);
      /* a slower tier's checkpoint is taken with every faster slot free (nesting) */
      for (int u = 0; u < v; u++)
        cr_assert(u == 0 || full[u] == 0, "%s store with %d %s slots full", level_name(v), full[u],
                  level_name(u));
      slot[v][a.slot] = y;
      if (++full[v] > peak[v]) peak[v] = full[v];
      writes[v]++;
      break;
    case RW_ACTION_RESTORE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] == a.step,
                "restore %s[%d] claims %" PRId64, level_name(v), a.slot, a.step);
      y = a.step;
      reads[v]++;
      break;
    case RW_ACTION_FREE:
      cr_assert(a.slot >= 0 && a.slot < cap[v] && slot[v][a.slot] == a.step);
      if (v) /* a host or disk slot is freed right after its last read */
        cr_assert(prev.type == RW_ACTION_RESTORE && prev.level == a.level && prev.slot == a.slot,
                  "%s[%d] (%" PRId64 ") not freed right after a read", level_name(v), a.slot,
                  a.step);
      slot[v][a.slot] = -1;
      full[v]--;
      break;
    case RW_ACTION_FIRST_REVERSE:
    case RW_ACTION_REVERSE:
      cr_assert_eq(a.type == RW_ACTION_FIRST_REVERSE, next_rev == l - 1);
      cr_assert(a.step == next_rev && y == next_rev);
      h = adjoint_hash(h, y);
      next_rev--;
      y = -1;
      break;
    case RW_ACTION_TERMINATE:
      cr_assert_eq(next_rev, -1);
      cr_assert(full[0] == 0 && full[1] == 0 && full[2] == 0, "terminated with slots full");
      cr_assert_eq(h, h_expect);
      RW_TEST_OK(rw_schedule_get_stats(s, out));
      cr_assert_eq(out->advances, adv);
      cr_assert_eq(out->host_writes, writes[1]);
      cr_assert_eq(out->host_reads, reads[1]);
      cr_assert_eq(out->disk_writes, writes[2]);
      cr_assert_eq(out->disk_reads, reads[2]);
      cr_assert_eq(out->peak_ram_slots, peak[0]);
      cr_assert_eq(out->peak_host_slots, peak[1]);
      cr_assert_eq(out->peak_disk_slots, peak[2]);
      for (int u = 0; u < 3; u++)
        free(slot[u]);
      return;
    }
    prev = a;
  }
}

static void check_stream(int64_t l, const rw_tier *t)
{
  rw_schedule s = NULL;
  rw_schedule_stats st;
  rw_tiered_counts n, own;
  RW_TEST_OK(rw_schedule_create_tiered(l, 3, t, &s));
  fake_run(s, l, t, &st);
  RW_TEST_OK(rw_tiered_cost(l, 3, t, &n));
  RW_TEST_OK(rw_schedule_tiered_counts(s, &own));
  cr_assert(st.advances == n.advances && st.host_writes == n.writes[1] &&
                st.host_reads == n.reads[1] && st.disk_writes == n.writes[2] &&
                st.disk_reads == n.reads[2],
            "l=%" PRId64 " c=%d host=%d disk=%d: stream counts differ from the plan's", l,
            t[0].slots, t[1].slots, t[2].slots);
  cr_assert(st.peak_host_slots == n.slots_used[1] && st.peak_disk_slots == n.slots_used[2]);
  cr_assert(own.cost == n.cost && own.advances == n.advances);
  RW_TEST_OK(rw_schedule_destroy(&s));
}

Test(schedule_tiered, streams_valid)
{
  double t0 = rw_wtime();
  int64_t cells = 0;
  for (int c = 1; c <= 3; c++)
    for (int host = 0; host <= 3; host++)
      for (int disk = -1; disk <= 2; disk++)
        for (size_t hk = 0; hk < NHC; hk++)
          for (int64_t l = 1; l <= 90; l += l < 30 ? 1 : 7) {
            rw_tier t[3] = {tier(c, 0, 0), tier(host, host_costs[hk][0], host_costs[hk][1]),
                            tier(disk, disk_costs[hk % NDC][0], disk_costs[hk % NDC][1])};
            check_stream(l, t);
            cells++;
          }
  static const struct {
    int64_t l;
    int c, host, disk;
    double wh, rh, wd, rd;
  } big[] = {{10000, 10, 40, 8, 0.5, 0.5, 20, 10},
             {10000, 4, 200, -1, 0.25, 0.25, 10, 10},
             {20000, 20, 60, 30, 1, 1, 30, 20}};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    rw_tier t[3] = {tier(big[i].c, 0, 0), tier(big[i].host, big[i].wh, big[i].rh),
                    tier(big[i].disk, big[i].wd, big[i].rd)};
    check_stream(big[i].l, t);
  }
  rw_schedule s = NULL;
  const char *kind = NULL;
  rw_tier t[3] = {tier(2, 0, 0), tier(1, 1, 1), tier(1, 2, 2)};
  RW_TEST_OK(rw_schedule_create_tiered(10, 3, t, &s));
  RW_TEST_OK(rw_schedule_get_info(s, NULL, &kind));
  cr_assert_str_eq(kind, "three_level");
  rw_two_level_counts two;
  cr_assert_eq(rw_schedule_two_level_counts(s, &two), RW_ERR_ARG);
  rw_error_clear();
  rw_schedule_destroy(&s);
  fprintf(stderr, "schedule_tiered: %" PRId64 " small and %zu large streams valid (%.2f s)\n",
          cells, sizeof big / sizeof big[0], rw_wtime() - t0);
}

/* An empty middle tier gives the two-level schedule action for action; an empty disk tier
 * the two-level schedule of the host tier with its actions at RW_LEVEL_HOST. */
Test(schedule_tiered, empty_tier_is_two_level)
{
  for (int c = 1; c <= 4; c++)
    for (int64_t l = 1; l <= 200; l += l < 40 ? 1 : 11)
      for (int variant = 0; variant < 2; variant++) {
        rw_schedule a = NULL, b = NULL;
        rw_tier t[3] = {tier(c, 0, 0), tier(variant ? 3 : 0, 1, 1), tier(variant ? 0 : 3, 2, 2)};
        RW_TEST_OK(rw_schedule_create_tiered(l, 3, t, &a));
        RW_TEST_OK(rw_schedule_create_two_level(l, c, 3, variant ? 1 : 2, variant ? 1 : 2, &b));
        rw_action x, y;
        do {
          RW_TEST_OK(rw_schedule_next(a, &x));
          RW_TEST_OK(rw_schedule_next(b, &y));
          rw_storage_level want = y.level == RW_LEVEL_DISK && variant ? RW_LEVEL_HOST : y.level;
          cr_assert(x.type == y.type && x.step == y.step && x.to == y.to && x.slot == y.slot &&
                        x.level == want && x.first_sweep == y.first_sweep,
                    "l=%" PRId64 " c=%d variant %d: the streams differ", l, c, variant);
        } while (x.type != RW_ACTION_TERMINATE);
        rw_schedule_destroy(&a);
        rw_schedule_destroy(&b);
      }
}

Test(schedule_tiered, bad_arguments_and_cleanup)
{
  rw_schedule s = NULL;
  rw_tiered_counts n;
  rw_tier ok[3] = {tier(3, 0, 0), tier(2, 1, 1), tier(2, 5, 5)};
  rw_tier bad_fast[3] = {tier(3, 1, 0), tier(2, 1, 1), tier(2, 5, 5)};
  rw_tier bad_mid[3] = {tier(3, 0, 0), tier(-1, 1, 1), tier(2, 5, 5)};
  rw_tier bad_cost[3] = {tier(3, 0, 0), tier(2, NAN, 1), tier(2, 5, 5)};
  cr_assert_eq(rw_schedule_create_tiered(10, 4, ok, &s), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "4 tiers"));
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_tiered(10, 3, bad_fast, &s), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "costs must be 0"));
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_tiered(10, 3, bad_mid, &s), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "middle tier"));
  rw_error_clear();
  cr_assert_eq(rw_tiered_cost(10, 3, bad_cost, &n), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_tiered_cost(0, 3, ok, &n), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_tiered(10, 3, NULL, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_null(s);
  RW_TEST_OK(rw_schedule_create_binomial(10, 3, &s));
  cr_assert_eq(rw_schedule_tiered_counts(s, &n), RW_ERR_ARG);
  rw_error_clear();
  rw_schedule_destroy(&s);
  size_t base = rw_mem_current();
  for (long k = 1; k <= 40; k++) {
    rw_mem_fail_after(k);
    int ierr = rw_schedule_create_tiered(300, 3, ok, &s);
    int ierr2 = rw_tiered_cost(300, 3, ok, &n);
    rw_mem_fail_after(0);
    cr_assert(ierr == 0 || ierr == RW_ERR_MEM);
    cr_assert(ierr2 == 0 || ierr2 == RW_ERR_MEM);
    if (ierr) cr_assert_null(s);
    rw_error_clear();
    rw_schedule_destroy(&s);
    cr_assert_eq(rw_mem_current(), base, "leak after failing allocation %ld", k);
  }
}

/* Planning time of the GPU figure's shape (10^4 steps; device, host and disk slots). */
Test(schedule_tiered, planning_time)
{
  double t0 = rw_wtime();
  rw_tier t[3] = {tier(60, 0, 0), tier(400, 0.3, 0.3), tier(2000, 3, 2)};
  rw_tiered_counts n;
  RW_TEST_OK(rw_tiered_cost(10000, 3, t, &n));
  int64_t r = 0;
  RW_TEST_OK(rw_binomial_advances(10000, 60, NULL, &r));
  cr_assert(n.cost <= (double)r);
  fprintf(stderr,
          "schedule_tiered: l = 1e4, 60 fast + 400 host (0.3) + 2000 disk (3, 2) slots: cost %.1f "
          "(fast only %" PRId64 "), %" PRId64 " advances, host %" PRId64 "/%" PRId64
          " w/r %d used, disk %" PRId64 "/%" PRId64 " w/r %d used (%.2f s)\n",
          n.cost, r, n.advances, n.writes[1], n.reads[1], n.slots_used[1], n.writes[2], n.reads[2],
          n.slots_used[2], rw_wtime() - t0);
}

/* rw_schedule_clone: a fresh iterator sharing the plan. Its stream equals a new schedule's,
 * whether taken before or after the original ran, and it outlives the original; other kinds
 * say they are created again. */
Test(schedule_tiered, clone_shares_the_plan)
{
  rw_tier t[3] = {tier(3, 0, 0), tier(4, 0.5, 0.5), tier(6, 2, 2)};
  for (int variant = 0; variant < 2; variant++) {
    rw_schedule a = NULL, b = NULL, c = NULL;
    RW_TEST_OK(rw_schedule_create_tiered(500, variant ? 2 : 3, t, &a));
    rw_action x, y;
    for (int k = 0; k < 37; k++) /* part of the original's stream first */
      RW_TEST_OK(rw_schedule_next(a, &x));
    RW_TEST_OK(rw_schedule_clone(a, &b));
    RW_TEST_OK(rw_schedule_destroy(&a)); /* the clone keeps the plan alive */
    RW_TEST_OK(rw_schedule_create_tiered(500, variant ? 2 : 3, t, &c));
    int cap[2], capc[2], h = -1, hc = -1;
    RW_TEST_OK(rw_schedule_capacity(b, &cap[0], &cap[1]));
    RW_TEST_OK(rw_schedule_capacity(c, &capc[0], &capc[1]));
    RW_TEST_OK(rw_schedule_level_capacity(b, RW_LEVEL_HOST, &h));
    RW_TEST_OK(rw_schedule_level_capacity(c, RW_LEVEL_HOST, &hc));
    cr_assert(cap[0] == capc[0] && cap[1] == capc[1] && h == hc);
    long n = 0;
    do {
      RW_TEST_OK(rw_schedule_next(b, &x));
      RW_TEST_OK(rw_schedule_next(c, &y));
      cr_assert(x.type == y.type && x.step == y.step && x.to == y.to && x.slot == y.slot &&
                    x.level == y.level && x.first_sweep == y.first_sweep,
                "variant %d: the clone's action %ld differs from a new schedule's", variant, n);
      n++;
    } while (x.type != RW_ACTION_TERMINATE);
    rw_tiered_counts cb, cc;
    RW_TEST_OK(rw_schedule_tiered_counts(b, &cb));
    RW_TEST_OK(rw_schedule_tiered_counts(c, &cc));
    cr_assert(cb.cost == cc.cost && cb.advances == cc.advances);
    rw_schedule_destroy(&b);
    rw_schedule_destroy(&c);
  }
  rw_schedule s = NULL, d = NULL;
  RW_TEST_OK(rw_schedule_create_binomial(50, 4, &s));
  cr_assert_eq(rw_schedule_clone(s, &d), RW_ERR_NOT_IMPLEMENTED);
  cr_assert_null(d);
  rw_error_clear();
  rw_schedule_destroy(&s);
}
