/* Schedules without a solver: closed forms against an independent dynamic program, action
 * streams checked by a fake stepper, counts against the formulas, online excess. */
#include "fake_schedule.h"
#include "rewind/rw_schedule.h"
#include "rw_test.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

TestSuite(schedule, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

/* --- An independent optimum: t*(l, c) = min_{1<=j<l} [j + t*(l-j, c-1) + t*(j, c)],
 * t*(1, c) = 0, t*(l, 1) = l (l - 1) / 2 (advance j, store, reverse the right part with one
 * slot less, restore, reverse the left part). Quadratic in l per c: fine up to l = 1000. */
#define DP_L 1000
#define DP_C 20
static int64_t *dp_table(void)
{
  static int64_t *t = NULL;
  if (t) return t;
  t = calloc((size_t)(DP_L + 1) * (DP_C + 1), sizeof *t);
  cr_assert(t);
#define T(l, c) t[(size_t)(l) * (DP_C + 1) + (size_t)(c)]
  for (int64_t l = 1; l <= DP_L; l++)
    T(l, 1) = l * (l - 1) / 2;
  for (int c = 2; c <= DP_C; c++) {
    T(1, c) = 0;
    for (int64_t l = 2; l <= DP_L; l++) {
      int64_t best = INT64_MAX;
      for (int64_t j = 1; j < l; j++) {
        int64_t v = j + T(l - j, c - 1) + T(j, c);
        if (v < best) best = v;
      }
      T(l, c) = best;
    }
  }
#undef T
  return t;
}
static int64_t dp(int64_t l, int c) { return dp_table()[(size_t)l * (DP_C + 1) + (size_t)c]; }

static int64_t formula(int64_t l, int c)
{
  int64_t t = -1;
  RW_TEST_OK(rw_binomial_advances(l, c, NULL, &t));
  return t;
}

static void check_binomial(int64_t l, int c)
{
  rw_schedule s = NULL;
  fake_counts n;
  RW_TEST_OK(rw_schedule_create_binomial(l, c, &s));
  fake_run(s, l, c, END_KNOWN, &n);
  int64_t t = formula(l, c);
  cr_assert_eq(n.advances, t, "l=%" PRId64 " c=%d: %" PRId64 " advances, t(l,c) = %" PRId64, l, c,
               n.advances, t);
  cr_assert_eq(n.recomputations, t - (l - 1));
  int expect_peak = l == 1 ? 0 : (c < l - 1 ? c : (int)(l - 1));
  cr_assert(n.peak <= expect_peak, "l=%" PRId64 " c=%d: peak %d", l, c, n.peak);
  RW_TEST_OK(rw_schedule_destroy(&s));
  cr_assert_null(s);
}

Test(schedule, closed_form_matches_dynamic_program)
{
  double t0 = rw_wtime();
  for (int c = 1; c <= DP_C; c++)
    for (int64_t l = 1; l <= DP_L; l++) {
      int64_t t = formula(l, c);
      cr_assert_eq(t, dp(l, c), "t(%" PRId64 ", %d): closed form %" PRId64 ", DP %" PRId64, l, c, t,
                   dp(l, c));
    }
  /* known values: c = 1 is l(l-1)/2, c >= l - 1 is l - 1 */
  cr_assert_eq(formula(1000000, 1), 1000000LL * 999999LL / 2);
  cr_assert_eq(formula(1000, 999), 999);
  cr_assert_eq(formula(1000, 5000), 999);
  cr_assert_eq(formula(1, 1), 0);
  int64_t r = 0;
  RW_TEST_OK(rw_binomial_advances(10, 3, &r, NULL)); /* C(3+2,3) = 10 >= 10 > C(4,3) = 4 */
  cr_assert_eq(r, 2);
  int64_t b = 0;
  RW_TEST_OK(rw_binomial_beta(3, 2, &b));
  cr_assert_eq(b, 10);
  RW_TEST_OK(rw_binomial_beta(200, 200, &b)); /* C(400, 200) saturates */
  cr_assert_eq(b, INT64_MAX);
  fprintf(stderr, "schedule: closed form = DP for l <= %d, c <= %d (%.2f s incl. DP)\n", DP_L, DP_C,
          rw_wtime() - t0);
}

/* The engine's split is optimal at every node: j + t(m - j, s - 1) + t(j, s) = t(m, s). */
Test(schedule, binomial_stream_all_small)
{
  double t0 = rw_wtime();
  for (int c = 1; c <= DP_C; c++)
    for (int64_t l = 1; l <= DP_L; l++)
      check_binomial(l, c);
  fprintf(stderr, "schedule: binomial valid, advances = t(l,c) for l <= %d, c <= %d (%.2f s)\n",
          DP_L, DP_C, rw_wtime() - t0);
}

Test(schedule, binomial_edge_cases)
{
  check_binomial(1, 1);
  check_binomial(1, 7);
  check_binomial(2, 1);
  check_binomial(50, 1);
  check_binomial(50, 49);
  check_binomial(50, 50);
  check_binomial(50, 1000);
  check_binomial(3000, 2);
  /* c >= l: store everything, l - 1 advances and l - 1 slots */
  rw_schedule s = NULL;
  fake_counts n;
  RW_TEST_OK(rw_schedule_create_binomial(100, 100, &s));
  fake_run(s, 100, 100, END_KNOWN, &n);
  cr_assert_eq(n.advances, 99);
  cr_assert_eq(n.peak, 99);
  cr_assert_eq(n.restores, 99); /* y_98 .. y_0 */
  rw_schedule_destroy(&s);
  /* c = 1: restore y_0 before every reversal but the first */
  RW_TEST_OK(rw_schedule_create_binomial(100, 1, &s));
  fake_run(s, 100, 1, END_KNOWN, &n);
  cr_assert_eq(n.advances, 100 * 99 / 2);
  cr_assert_eq(n.peak, 1);
  rw_schedule_destroy(&s);
}

static uint64_t lcg(uint64_t *x)
{
  *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
  return *x >> 33;
}

Test(schedule, binomial_large_random)
{
  double t0 = rw_wtime();
  static const struct {
    int64_t l;
    int c;
  } fixed[] = {{1000000, 10},  {1000000, 100},   {500000, 2},      {200000, 1},
               {300000, 5000}, {100001, 100000}, {100000, 100000}, {999983, 3}};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    check_binomial(fixed[i].l, fixed[i].c);
  uint64_t x = 12345;
  for (int i = 0; i < 24; i++) {
    int64_t l = 1000 + (int64_t)(lcg(&x) % 200000);
    int c = 1 + (int)(lcg(&x) % 64);
    if (c == 1) l = 1000 + l % 20000;
    check_binomial(l, c);
  }
  fprintf(stderr,
          "schedule: binomial valid and optimal for 32 large (l, c) up to l = 1e6 (%.2f s)\n",
          rw_wtime() - t0);
}

Test(schedule, fixed_interval_and_store_all)
{
  double t0 = rw_wtime();
  for (int64_t l = 1; l <= 300; l++)
    for (int64_t k = 1; k <= 40; k++) {
      int64_t adv = 0;
      int cap = 0;
      RW_TEST_OK(rw_fixed_interval_counts(l, k, &adv, &cap));
      int64_t kk = k > l ? l : k, nseg = (l + kk - 1) / kk;
      cr_assert_eq(adv, (l - 1) + (nseg - 1) * (kk - 1));
      rw_schedule s = NULL;
      fake_counts n;
      RW_TEST_OK(rw_schedule_create_fixed_interval(l, k, &s));
      fake_run(s, l, cap, END_KNOWN, &n);
      cr_assert_eq(n.advances, adv,
                   "l=%" PRId64 " k=%" PRId64 ": %" PRId64 " advances, formula %" PRId64, l, k,
                   n.advances, adv);
      cr_assert_eq(n.peak, l == 1 ? 0 : cap, "l=%" PRId64 " k=%" PRId64 ": peak %d, capacity %d", l,
                   k, n.peak, cap);
      cr_assert(n.advances >= formula(l, cap), "fixed interval beat the optimum");
      rw_schedule_destroy(&s);
    }
  for (int64_t l = 1; l <= 300; l++) {
    rw_schedule s = NULL;
    fake_counts n;
    RW_TEST_OK(rw_schedule_create_store_all(l, &s));
    int cap = 0;
    RW_TEST_OK(rw_schedule_capacity(s, &cap, NULL));
    cr_assert_eq(cap, l == 1 ? 1 : l - 1);
    fake_run(s, l, cap, END_KNOWN, &n);
    cr_assert_eq(n.advances, l - 1);
    cr_assert_eq(n.recomputations, 0);
    rw_schedule_destroy(&s);
  }
  fprintf(stderr, "schedule: fixed interval (l <= 300, k <= 40) and store-all valid (%.2f s)\n",
          rw_wtime() - t0);
}

static int64_t online_advances(int64_t l, int c, end_mode mode, int *peak)
{
  rw_schedule s = NULL;
  fake_counts n;
  RW_TEST_OK(rw_schedule_create_online(c, &s));
  fake_run(s, l, c, mode, &n);
  rw_schedule_destroy(&s);
  if (peak) *peak = n.peak;
  return n.advances;
}

Test(schedule, online_valid_and_never_below_optimum)
{
  double t0 = rw_wtime();
  double worst = 0;
  for (int c = 1; c <= 12; c++)
    for (int64_t l = 1; l <= 400; l++) {
      int peak = 0;
      int64_t t = formula(l, c);
      int64_t a1 = online_advances(l, c, END_AFTER_STEP, &peak);
      int64_t a2 = online_advances(l, c, END_BEFORE_STEP, NULL);
      cr_assert(peak <= c);
      /* no schedule can beat the optimum; learning the end late never helps */
      cr_assert(a2 >= t && a1 >= a2,
                "l=%" PRId64 " c=%d: online %" PRId64 "/%" PRId64 ", optimum %" PRId64, l, c, a2,
                a1, t);
      if (l >= 20 && c >= 2) {
        double ex = (double)(a2 - t) / (double)t;
        if (ex > worst) worst = ex;
      }
    }
  fprintf(stderr, "schedule: online valid for l <= 400, c <= 12 (%.2f s); worst excess %.1f%%\n",
          rw_wtime() - t0, 100 * worst);
}

Test(schedule, online_excess_report)
{
  static const int64_t ls[] = {100, 1000, 10000, 100000};
  static const int cs[] = {2, 5, 10, 20, 50};
  fprintf(stderr, "schedule: online (end known before the last step) vs offline optimum\n");
  fprintf(stderr, "%8s %4s %12s %12s %8s %4s\n", "l", "c", "online", "t(l,c)", "excess", "peak");
  for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++)
    for (size_t j = 0; j < sizeof cs / sizeof cs[0]; j++) {
      int peak = 0;
      int64_t t = formula(ls[i], cs[j]);
      int64_t a = online_advances(ls[i], cs[j], END_BEFORE_STEP, &peak);
      double ex = (double)(a - t) / (double)t;
      fprintf(stderr, "%8" PRId64 " %4d %12" PRId64 " %12" PRId64 " %7.2f%% %4d\n", ls[i], cs[j], a,
              t, 100 * ex, peak);
      cr_assert(a >= t);
    }
}

Test(schedule, set_steps_rules)
{
  rw_schedule s = NULL;
  rw_action a;
  RW_TEST_OK(rw_schedule_create_binomial(10, 3, &s));
  cr_assert_eq(rw_schedule_set_steps(s, 10), RW_ERR_ARG);
  rw_error_clear();
  rw_schedule_destroy(&s);
  RW_TEST_OK(rw_schedule_create_online(4, &s));
  int64_t steps = 0;
  const char *kind = NULL;
  RW_TEST_OK(rw_schedule_get_info(s, &steps, &kind));
  cr_assert_eq(steps, -1);
  cr_assert_str_eq(kind, "online");
  do
    RW_TEST_OK(rw_schedule_next(s, &a));
  while (!(a.type == RW_ACTION_ADVANCE && a.to == 5));
  cr_assert_eq(rw_schedule_set_steps(s, 7), RW_ERR_ARG); /* state is at 5: only 5 or 6 */
  cr_assert(strstr(rw_error_message(), "must be 5"));
  rw_error_clear();
  cr_assert_eq(rw_schedule_set_steps(s, 4), RW_ERR_ARG);
  rw_error_clear();
  RW_TEST_OK(rw_schedule_set_steps(s, 6));
  cr_assert_eq(rw_schedule_set_steps(s, 6), RW_ERR_ARG); /* only once */
  rw_error_clear();
  RW_TEST_OK(rw_schedule_next(s, &a));
  cr_assert_eq(a.type, RW_ACTION_FIRST_REVERSE);
  cr_assert_eq(a.step, 5);
  rw_schedule_destroy(&s);
  /* a one-step run announced before the first action */
  RW_TEST_OK(rw_schedule_create_online(2, &s));
  RW_TEST_OK(rw_schedule_set_steps(s, 1));
  RW_TEST_OK(rw_schedule_next(s, &a));
  cr_assert_eq(a.type, RW_ACTION_FIRST_REVERSE);
  RW_TEST_OK(rw_schedule_next(s, &a));
  cr_assert_eq(a.type, RW_ACTION_TERMINATE);
  rw_schedule_destroy(&s);
}

Test(schedule, bad_arguments_and_cleanup)
{
  rw_schedule s = NULL;
  cr_assert_eq(rw_schedule_create_binomial(0, 3, &s), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "steps = 0"));
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_binomial(10, 0, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_fixed_interval(10, 0, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_create_online(0, &s), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_eq(rw_schedule_next(NULL, NULL), RW_ERR_ARG);
  rw_error_clear();
  cr_assert_null(s);
  RW_TEST_OK(rw_schedule_destroy(NULL));
  RW_TEST_OK(rw_schedule_destroy(&s));
  /* every allocation of each constructor may fail: clean error, nothing leaked */
  size_t base = rw_mem_current();
  for (int kind = 0; kind < 3; kind++)
    for (long n = 1; n <= 8; n++) {
      rw_mem_fail_after(n);
      int ierr = kind == 0   ? rw_schedule_create_binomial(100, 5, &s)
                 : kind == 1 ? rw_schedule_create_fixed_interval(100, 7, &s)
                             : rw_schedule_create_online(5, &s);
      rw_mem_fail_after(0);
      if (ierr) {
        cr_assert_eq(ierr, RW_ERR_MEM);
        cr_assert_null(s);
        rw_error_clear();
      } else {
        rw_schedule_destroy(&s);
      }
      cr_assert_eq(rw_mem_current(), base, "leak after failing allocation %ld", n);
    }
}

Test(schedule, action_format)
{
  char buf[64];
  rw_action a = {RW_ACTION_ADVANCE, 3, 12, -1, RW_LEVEL_RAM, 1};
  RW_TEST_OK(rw_action_format(&a, buf, sizeof buf));
  cr_assert_str_eq(buf, "advance 3 -> 12");
  a = (rw_action){RW_ACTION_STORE, 12, 12, 2, RW_LEVEL_RAM, 0};
  RW_TEST_OK(rw_action_format(&a, buf, sizeof buf));
  cr_assert_str_eq(buf, "store 12 -> ram[2]");
  a.type = RW_ACTION_RESTORE;
  RW_TEST_OK(rw_action_format(&a, buf, sizeof buf));
  cr_assert_str_eq(buf, "restore ram[2] -> 12");
  a.type = RW_ACTION_FREE;
  RW_TEST_OK(rw_action_format(&a, buf, sizeof buf));
  cr_assert_str_eq(buf, "free ram[2] (12)");
  a.type = RW_ACTION_FIRST_REVERSE;
  RW_TEST_OK(rw_action_format(&a, buf, sizeof buf));
  cr_assert_str_eq(buf, "first_reverse 12");
  cr_assert_eq(rw_action_format(&a, buf, 4), RW_ERR_ARG);
  rw_error_clear();
}
