/* rewind-plan's output: its numbers are the schedule's, its JSON has the keys issue 3
 * names, and bad command lines exit with status 2 and a message naming the flag. */
#include "rewind/rw_schedule.h"
#include "rewind/rw_store.h"
#include "rw_test.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

TestSuite(plan, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

/* Runs rewind-plan with `args` (stderr merged into stdout); returns its exit status and
 * its output in out (NUL-terminated, truncated to len). */
static int run_plan(const char *args, char *out, size_t len)
{
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", REWIND_PLAN_EXE, args);
  FILE *p = popen(cmd, "r");
  cr_assert(p, "popen(%s) failed", cmd);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  cr_assert(WIFEXITED(st), "%s did not exit normally", cmd);
  return WEXITSTATUS(st);
}

/* The integer value of "key": in a JSON text. */
static int64_t json_int(const char *text, const char *key)
{
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *at = strstr(text, pat);
  cr_assert(at, "key %s missing in:\n%s", key, text);
  return strtoll(at + strlen(pat), NULL, 10);
}

static char buf[1 << 20];

Test(plan, json_numbers_come_from_the_schedule)
{
  cr_assert_eq(run_plan("--steps 5000 --ram-slots 10 --json", buf, sizeof buf), 0, "%s", buf);
  int64_t t = 0;
  RW_TEST_OK(rw_binomial_advances(5000, 10, NULL, &t));
  cr_assert_eq(json_int(buf, "steps"), 5000);
  cr_assert_eq(json_int(buf, "ram_slots"), 10);
  cr_assert_eq(json_int(buf, "disk_slots"), 0);
  cr_assert_eq(json_int(buf, "advances"), t);
  cr_assert_eq(json_int(buf, "forward_steps"), t + 5000);
  cr_assert_eq(json_int(buf, "disk_writes"), 0);
  cr_assert_eq(json_int(buf, "disk_reads"), 0);
  cr_assert_eq(json_int(buf, "cost"), t); /* step cost 1 */
  cr_assert_eq(json_int(buf, "recomputations"), t - 4999);
  cr_assert(strstr(buf, "\"overhead\": "));
  /* costs scale */
  cr_assert_eq(run_plan("--steps 5000 --ram-slots 10 --json --step-cost 2.5", buf, sizeof buf), 0);
  cr_assert(strstr(buf, "\"cost\": 64080,"), "%s", buf); /* 2.5 x 25632 */
}

Test(plan, byte_budget_gives_slots)
{
  cr_assert_eq(run_plan("--steps 1000 --ram 512MiB --snapshot-bytes 64MiB --json", buf, sizeof buf),
               0, "%s", buf);
  cr_assert_eq(json_int(buf, "ram_slots"), 8);
  cr_assert_eq(json_int(buf, "checkpoint_bytes"), 8 * 64 * 1048576LL);
  cr_assert_eq(run_plan("--steps 1000 --ram=1.5GB --snapshot-bytes=100MB --json", buf, sizeof buf),
               0, "%s", buf);
  cr_assert_eq(json_int(buf, "ram_slots"), 15);
}

/* A byte budget gives the slots the driver takes from it (rw_store_slots_for_budget): at most
 * 10^6, so a budget of 2*10^6 snapshots plans 10^6 slots, as rewind-ode -checkpoint_ram 32MB
 * with 16-byte snapshots runs 3*10^6 steps with 10^6 slots and 4999998 advances (the plan
 * said 2*10^6 slots and 3999998 advances). */
Test(plan, byte_budget_slots_capped_as_the_driver_caps_them)
{
  int drv = 0;
  RW_TEST_OK(rw_store_slots_for_budget(32000000, 16, &drv));
  cr_assert_eq(drv, 1000000);
  cr_assert_eq(run_plan("--steps 3000000 --ram 32MB --snapshot-bytes 16 --json", buf, sizeof buf),
               0, "%s", buf);
  int64_t t = 0;
  RW_TEST_OK(rw_binomial_advances(3000000, drv, NULL, &t));
  cr_assert_eq(json_int(buf, "ram_slots"), drv, "%s", buf);
  cr_assert_eq(json_int(buf, "advances"), t, "%s", buf);
  cr_assert_eq(t, 4999998);
  cr_assert_eq(run_plan("--steps 3000000 --ram 32MB --snapshot-bytes 16", buf, sizeof buf), 0);
  cr_assert(strstr(buf, "2000000 snapshots") && strstr(buf, "1000000"), "%s", buf);
  /* the disk and host budgets too */
  cr_assert_eq(run_plan("--steps 1000 --ram-slots 3 --disk 1TB --snapshot-bytes 1 --write-cost 2 "
                        "--read-cost 1 --json",
                        buf, sizeof buf),
               0, "%s", buf);
  cr_assert_eq(json_int(buf, "disk_slots"), 1000000, "%s", buf);
  cr_assert_eq(
      run_plan("--steps 100 --ram-slots 3 --host 1TB --snapshot-bytes 1 --json", buf, sizeof buf),
      0, "%s", buf);
  cr_assert_eq(json_int(buf, "host_slots"), 1000000, "%s", buf);
}

/* A disk or host budget below one snapshot is refused as the driver refuses it (the plan used
 * to plan 0 slots there, i.e. no disk: rewind-grayscott -checkpoint_disk 100kB with 128 KiB
 * snapshots stops with "the checkpoint_disk budget ... is smaller than one snapshot"); 0 means
 * none, as in the apps. */
Test(plan, budget_below_one_snapshot_refused)
{
  cr_assert_eq(
      run_plan("--steps 500 --ram 2MiB --disk 100kB --snapshot-bytes 128KiB", buf, sizeof buf), 2,
      "%s", buf);
  cr_assert(strstr(buf, "--disk 100000 bytes is smaller than one snapshot (131072 bytes)"), "%s",
            buf);
  cr_assert_eq(
      run_plan("--steps 500 --ram 2MiB --host 100kB --snapshot-bytes 128KiB", buf, sizeof buf), 2,
      "%s", buf);
  cr_assert(strstr(buf, "--host 100000 bytes is smaller than one snapshot (131072 bytes)"), "%s",
            buf);
  cr_assert_eq(
      run_plan("--steps 500 --ram 2MiB --disk 0 --snapshot-bytes 128KiB --json", buf, sizeof buf),
      0, "%s", buf);
  cr_assert(strstr(buf, "\"schedule\": \"binomial\""), "%s", buf);
}

Test(plan, actions_list_adds_up)
{
  cr_assert_eq(run_plan("--steps 10 --ram-slots 3 --actions", buf, sizeof buf), 0);
  int64_t adv = 0, rev = 0;
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
    long long a = 0, b = 0;
    if (sscanf(line, "advance %lld -> %lld", &a, &b) == 2) adv += b - a;
    if (!strncmp(line, "reverse ", 8) || !strncmp(line, "first_reverse ", 14)) rev++;
  }
  cr_assert_eq(adv, 15); /* t(10, 3) */
  cr_assert_eq(rev, 10);
}

/* The two-level split: the numbers are the optimum rw_two_level_cost computes. */
Test(plan, disk_split_is_the_two_level_optimum)
{
  cr_assert_eq(run_plan("--steps 5000 --ram-slots 10 --disk-slots 5 --write-cost 2 --read-cost 3 "
                        "--json",
                        buf, sizeof buf),
               0, "%s", buf);
  rw_two_level_counts n;
  RW_TEST_OK(rw_two_level_cost(5000, 10, 5, 2, 3, &n));
  int64_t t = 0;
  RW_TEST_OK(rw_binomial_advances(5000, 10, NULL, &t));
  cr_assert(strstr(buf, "\"schedule\": \"two_level\""), "%s", buf);
  cr_assert_eq(json_int(buf, "ram_slots"), 10);
  cr_assert_eq(json_int(buf, "disk_slots"), 5);
  cr_assert_eq(json_int(buf, "disk_slots_used"), n.disk_slots_used);
  cr_assert_eq(json_int(buf, "advances"), n.advances);
  cr_assert_eq(json_int(buf, "disk_writes"), n.disk_writes);
  cr_assert_eq(json_int(buf, "disk_reads"), n.disk_reads);
  cr_assert_eq(json_int(buf, "cost"), (int64_t)n.cost); /* integer costs: exact */
  cr_assert_eq(json_int(buf, "optimal_cost"), (int64_t)n.cost);
  cr_assert_eq(json_int(buf, "ram_only_cost"), t);
  cr_assert(n.disk_writes > 0 && n.cost < (double)t);
  /* costs in step units: doubling every cost doubles the cost, same split */
  cr_assert_eq(run_plan("--steps 5000 --ram-slots 10 --disk-slots 5 --write-cost 4 --read-cost 6 "
                        "--step-cost 2 --json",
                        buf, sizeof buf),
               0, "%s", buf);
  cr_assert_eq(json_int(buf, "cost"), 2 * (int64_t)n.cost);
  cr_assert_eq(json_int(buf, "disk_writes"), n.disk_writes);
  /* a disk budget gives the slots; unlimited disk */
  cr_assert_eq(run_plan("--steps 3000 --ram 40MiB --snapshot-bytes 10MiB --disk 1GiB "
                        "--write-cost 1 --read-cost 1 --json",
                        buf, sizeof buf),
               0, "%s", buf);
  cr_assert_eq(json_int(buf, "ram_slots"), 4);
  cr_assert_eq(json_int(buf, "disk_slots"), 102);
  cr_assert(json_int(buf, "disk_slots_used") <= 102);
  cr_assert_eq(json_int(buf, "disk_checkpoint_bytes"),
               json_int(buf, "disk_slots_used") * 10 * 1048576LL);
  cr_assert_eq(run_plan("--steps 3000 --ram-slots 4 --disk-slots unlimited --write-cost 1 "
                        "--read-cost 1 --json",
                        buf, sizeof buf),
               0, "%s", buf);
  RW_TEST_OK(rw_two_level_cost(3000, 4, -1, 1, 1, &n));
  cr_assert_eq(json_int(buf, "disk_slots"), -1);
  cr_assert_eq(json_int(buf, "disk_slots_used"), n.disk_slots_used);
  cr_assert_eq(json_int(buf, "cost"), (int64_t)n.cost);
  /* --actions shows the levels */
  cr_assert_eq(run_plan("--steps 12 --ram-slots 2 --disk-slots 2 --write-cost 1 --read-cost 1 "
                        "--actions",
                        buf, sizeof buf),
               0, "%s", buf);
  cr_assert(strstr(buf, "store 0 -> disk[0]"), "%s", buf);
  cr_assert(strstr(buf, "restore disk[0] -> 0"), "%s", buf);
  cr_assert(strstr(buf, "-> ram[0]"), "%s", buf);
}

/* Three tiers (a GPU run's device memory, page-locked host RAM and disk): the numbers are the
 * optimum rw_tiered_cost computes, the budgets give the slots, --actions shows the host level,
 * and an online schedule with host slots is refused. */
Test(plan, three_tiers_are_the_tiered_optimum)
{
  cr_assert_eq(run_plan("--steps 4000 --ram-slots 6 --host-slots 12 --host-write-cost 1 "
                        "--host-read-cost 1 --disk-slots 30 --write-cost 4 --read-cost 3 --json",
                        buf, sizeof buf),
               0, "%s", buf);
  rw_tier t[3] = {{6, 0, 0}, {12, 1, 1}, {30, 4, 3}};
  rw_tiered_counts n;
  RW_TEST_OK(rw_tiered_cost(4000, 3, t, &n));
  cr_assert(strstr(buf, "\"schedule\": \"three_level\""), "%s", buf);
  cr_assert_eq(json_int(buf, "host_slots"), 12);
  cr_assert_eq(json_int(buf, "host_slots_used"), n.slots_used[1]);
  cr_assert_eq(json_int(buf, "disk_slots_used"), n.slots_used[2]);
  cr_assert_eq(json_int(buf, "advances"), n.advances);
  cr_assert_eq(json_int(buf, "host_writes"), n.writes[1]);
  cr_assert_eq(json_int(buf, "host_reads"), n.reads[1]);
  cr_assert_eq(json_int(buf, "disk_writes"), n.writes[2]);
  cr_assert_eq(json_int(buf, "disk_reads"), n.reads[2]);
  cr_assert_eq(json_int(buf, "cost"), (int64_t)n.cost); /* integer costs: exact */
  cr_assert_eq(json_int(buf, "optimal_cost"), (int64_t)n.cost);
  cr_assert(n.writes[1] > 0 && n.writes[2] > 0, "every tier used: %s", buf);
  rw_two_level_counts two;
  RW_TEST_OK(rw_two_level_cost(4000, 6, 30, 4, 3, &two));
  cr_assert(n.cost < two.cost, "the host tier pays: %.17g vs RAM + disk %.17g", n.cost, two.cost);
  cr_assert_eq(run_plan("--steps 4000 --ram 60MiB --snapshot-bytes 10MiB --host 120MiB "
                        "--host-write-cost 1 --host-read-cost 1 --disk 300MiB --write-cost 4 "
                        "--read-cost 3 --json",
                        buf, sizeof buf),
               0, "%s", buf);
  cr_assert_eq(json_int(buf, "host_slots"), 12);
  cr_assert_eq(json_int(buf, "cost"), (int64_t)n.cost);
  cr_assert_eq(json_int(buf, "host_checkpoint_bytes"), n.slots_used[1] * 10 * 1048576LL);
  cr_assert_eq(
      run_plan("--steps 60 --ram-slots 2 --host-slots 2 --host-write-cost 0.5 "
               "--host-read-cost 0.5 --disk-slots 2 --write-cost 2 --read-cost 2 --actions",
               buf, sizeof buf),
      0, "%s", buf);
  cr_assert(strstr(buf, "-> host[0]") && strstr(buf, "restore host[0]") &&
                strstr(buf, "-> disk[0]"),
            "%s", buf);
  cr_assert_eq(run_plan("--steps 100 --ram-slots 3 --host-slots 2 --online", buf, sizeof buf), 2);
  cr_assert(strstr(buf, "host slots (--host-slots) need the binomial schedule"), "%s", buf);
}

Test(plan, online_and_unknown)
{
  cr_assert_eq(run_plan("--steps 2000 --ram-slots 8 --online --json", buf, sizeof buf), 0, "%s",
               buf);
  int64_t t = 0;
  RW_TEST_OK(rw_binomial_advances(2000, 8, NULL, &t));
  cr_assert_eq(json_int(buf, "optimal_advances"), t);
  cr_assert(json_int(buf, "advances") >= t);
  cr_assert(strstr(buf, "\"online_excess\": "));
  cr_assert_eq(run_plan("--steps unknown --online --ram-slots 8 --json", buf, sizeof buf), 0, "%s",
               buf);
  cr_assert(strstr(buf, "\"steps\": \"unknown\""));
  cr_assert(strstr(buf, "\"steps\": 1000000"));
}

/* Online with disk (length unknown to the schedule): with enough disk slots its cost is
 * close to the offline optimum with unlimited disk (Disk-Revolve), which knows the length;
 * with few slots the period doubles and the disk slots are never exceeded. */
Test(plan, online_disk_near_the_offline_optimum)
{
  cr_assert_eq(run_plan("--steps 20000 --ram-slots 10 --disk-slots 1000 --write-cost 20 "
                        "--read-cost 10 --online --json",
                        buf, sizeof buf),
               0, "%s", buf);
  cr_assert(strstr(buf, "\"schedule\": \"online_disk\""), "%s", buf);
  int64_t cost = json_int(buf, "cost"), period = json_int(buf, "disk_period");
  rw_two_level_counts n;
  RW_TEST_OK(rw_two_level_cost(20000, 10, -1, 20, 10, &n));
  int64_t P = 0;
  RW_TEST_OK(rw_online_disk_period(10, 20, 10, &P, NULL));
  cr_assert_eq(period, P);
  cr_assert(cost >= (int64_t)n.cost && (double)cost <= 1.005 * n.cost,
            "online disk cost %lld, offline unlimited-disk optimum %.0f", (long long)cost, n.cost);
  cr_assert_eq(run_plan("--steps 20000 --ram-slots 10 --disk-slots 20 --write-cost 20 "
                        "--read-cost 10 --online --json",
                        buf, sizeof buf),
               0, "%s", buf);
  cr_assert(json_int(buf, "disk_slots_used") <= 20);
  cr_assert(json_int(buf, "disk_period") > P);
}

Test(plan, bad_command_lines_exit_2)
{
  static const struct {
    const char *args, *says;
  } bad[] = {
      {"--steps 10 --ram-slots 3 --bogus", "--bogus"},
      {"--steps ten --ram-slots 3", "--steps"},
      {"--steps 10 --ram-slots 0", "--ram-slots"},
      {"--steps 10 --ram 2XB --snapshot-bytes 1", "--ram"},
      {"--steps 10 --ram 1KiB", "--snapshot-bytes"},
      {"--steps 10 --ram 100 --snapshot-bytes 1KiB", "smaller than one snapshot"},
      {"--steps unknown --ram-slots 3", "--online"},
      {"--steps 10 --ram-slots 3 --disk-slots unlimited --online", "--disk-slots"},
      {"--steps 10 --ram-slots 3 --disk-slots many", "--disk-slots"},
      {"--steps 10 --ram-slots 3 --disk-slots 2 --disk 1MiB --snapshot-bytes 1KiB", "not both"},
      {"--steps 10 --ram-slots 3 --disk-slots 2 --step-cost 0", "--step-cost"},
      {"--steps 10 --ram-slots 3 --schedule magic", "--schedule"},
      {"--steps 10 --ram-slots 3 --step-cost -1", "--step-cost"},
      {"--steps 10", "--ram-slots"},
      {"--ram-slots 3", "--steps"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = run_plan(bad[i].args, buf, sizeof buf);
    cr_assert_eq(rc, 2, "'%s' exited with %d:\n%s", bad[i].args, rc, buf);
    cr_assert(strstr(buf, bad[i].says), "'%s' does not mention %s:\n%s", bad[i].args, bad[i].says,
              buf);
  }
  cr_assert_eq(run_plan("--help", buf, sizeof buf), 0);
  cr_assert(strstr(buf, "--ram-slots"));
}

/* The number after "key": at or after `from` in a JSON text. */
static double json_num_after(const char *text, const char *from, const char *key)
{
  const char *base = strstr(text, from);
  cr_assert(base, "%s missing in:\n%s", from, text);
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *at = strstr(base, pat);
  cr_assert(at, "key %s missing after %s in:\n%s", key, from, text);
  return strtod(at + strlen(pat), NULL);
}

static int cmp_dbl(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* --up-to: the sweep's mean, median, 90th percentile and worst (and where) equal what full
 * runs of every length give (rw_schedule_run, the end learnt after the last step), computed here.
 */
Test(plan, online_sweep_equals_full_runs)
{
  enum { L = 400, C = 5 };
  cr_assert_eq(
      run_plan("--steps unknown --online --ram-slots 5 --up-to 400 --json", buf, sizeof buf), 0,
      "%s", buf);
  static double xo[L - 1], xb[L - 1];
  double worst[2] = {-1, -1}, mean[2] = {0, 0};
  int64_t worst_at[2] = {0, 0};
  for (int64_t l = 2; l <= L; l++) {
    rw_schedule s = NULL;
    rw_schedule_stats st;
    int64_t t = 0, tb = 0;
    RW_TEST_OK(rw_schedule_create_online(C, &s));
    RW_TEST_OK(rw_schedule_run(s, l, &st));
    rw_schedule_destroy(&s);
    RW_TEST_OK(rw_binomial_advances(l, C, NULL, &t));
    RW_TEST_OK(rw_binomial_advances(l + 1, C, NULL, &tb));
    xo[l - 2] = (double)(st.advances + l) / (double)(t + l) - 1;
    xb[l - 2] = (double)(st.advances + l) / (double)(tb + l) - 1;
    mean[0] += xo[l - 2] / (L - 1);
    mean[1] += xb[l - 2] / (L - 1);
    if (xo[l - 2] > worst[0]) worst[0] = xo[l - 2], worst_at[0] = l;
    if (xb[l - 2] > worst[1]) worst[1] = xb[l - 2], worst_at[1] = l;
  }
  double *x[2] = {xo, xb};
  const char *key[2] = {"\"excess_vs_offline\"", "\"excess_vs_online_bound\""};
  for (int k = 0; k < 2; k++) {
    qsort(x[k], L - 1, sizeof(double), cmp_dbl);
    const double med = x[k][(L - 1) / 2], p90 = x[k][(int)(0.9 * (L - 1))];
    cr_assert_float_eq(json_num_after(buf, key[k], "mean"), mean[k], 1e-10, "%s mean", key[k]);
    cr_assert_float_eq(json_num_after(buf, key[k], "median"), med, 1e-9, "%s median", key[k]);
    cr_assert_float_eq(json_num_after(buf, key[k], "p90"), p90, 1e-9, "%s p90", key[k]);
    cr_assert_float_eq(json_num_after(buf, key[k], "worst"), worst[k], 1e-9, "%s worst", key[k]);
    cr_assert_eq((int64_t)json_num_after(buf, key[k], "worst_at"), worst_at[k]);
  }
  /* the online bound is never above the schedule: no excess below zero */
  cr_assert(xb[0] >= 0, "a length beats t(l + 1, c) + l: %g", xb[0]);
  cr_assert_eq(run_plan("--steps 100 --online --ram-slots 5 --up-to 400", buf, sizeof buf), 2);
  cr_assert(strstr(buf, "--up-to needs --steps unknown --online"), "%s", buf);
  cr_assert_eq(run_plan("--steps unknown --online --ram-slots 5 --disk-slots 3 --up-to 400", buf,
                        sizeof buf),
               2);
  cr_assert(strstr(buf, "RAM slots only"), "%s", buf);
  cr_assert_eq(run_plan("--steps unknown --online --ram-slots 5 --up-to 1", buf, sizeof buf), 2);
  cr_assert(strstr(buf, "--up-to '1'"), "%s", buf);
}
