/* rewind-plan: plans a checkpointed adjoint run before it starts.
 *
 * Given the number of steps (or "unknown"), the slots (or a byte budget and the snapshot
 * size) and the costs of a step, a write and a read, it prints the forward advances, the
 * recomputation overhead against storing everything and the cost, and on request the
 * action list. Its numbers come from iterating the same schedule code the adjoint driver
 * runs (include/rewind/rw_schedule.h); nothing here re-derives them. Exit status: 0 on
 * success, 2 for a bad command line, 1 when a schedule call fails. */
#include "rewind/rw_schedule.h"
#include "rewind/rw_store.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

typedef enum {
  SCHED_BINOMIAL,
  SCHED_ONLINE,
  SCHED_FIXED,
  SCHED_STORE_ALL,
  SCHED_TWO_LEVEL,
  SCHED_ONLINE_DISK, /* online with disk slots: periodic disk checkpoints */
  SCHED_THREE_LEVEL  /* binomial with host slots: the fast, host and disk tiers */
} sched_kind;

typedef struct {
  int64_t steps;      /* -1: unknown */
  int64_t ram_slots;  /* -1: not given */
  int64_t disk_slots; /* -1: unlimited */
  int have_disk_slots;
  int64_t host_slots; /* the middle tier (0: none) */
  size_t ram_bytes, disk_bytes, host_bytes, snapshot_bytes;
  int have_ram_bytes, have_disk_bytes, have_host_bytes, have_host_slots, have_snapshot;
  double step_cost, write_cost, read_cost, host_write_cost, host_read_cost;
  sched_kind kind;
  int64_t interval;
  int64_t up_to; /* --up-to L: the online schedule priced at every length 2 .. L (0: off) */
  int actions, json;
} plan_options;

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: rewind-plan --steps L|unknown (--ram-slots C | --ram BYTES --snapshot-bytes S)\n"
          "                   [options]\n"
          "Plans the checkpoints of an adjoint run: forward advances, recomputations against\n"
          "storing every state, disk traffic and cost, from the schedule code the driver runs.\n"
          "\n"
          "  --steps L            number of time steps (>= 1), or 'unknown' with --online;\n"
          "                       at most 10^8 (binomial), 10^7 (fixed, store-all, online\n"
          "                       with disk) or 10^6 (online, two-level, three-tier): the\n"
          "                       plan iterates every action of the schedule\n"
          "  --ram-slots C        checkpoint slots in RAM (>= 1); C counts the slot holding\n"
          "                       the initial state (Revolve's convention)\n"
          "  --ram BYTES          RAM budget for checkpoints, e.g. 512MiB, 2GB, 1048576\n"
          "  --snapshot-bytes S   bytes of one snapshot per rank (needed with --ram / --disk /\n"
          "                       --host); a budget gives the whole snapshots it holds, at\n"
          "                       most 10^6 slots, as the driver takes them\n"
          "  --disk-slots D       checkpoint slots on disk (>= 0, or 'unlimited' / -1); with\n"
          "                       D != 0 the optimal two-level (RAM + disk) schedule is used;\n"
          "                       with --online, a disk checkpoint every P steps, P chosen\n"
          "                       from the costs, each period reversed in RAM\n"
          "  --disk BYTES         disk budget (gives D = BYTES / snapshot bytes)\n"
          "  --host-slots H       a middle tier between the RAM slots and the disk (a GPU\n"
          "                       run: device memory, page-locked host RAM, disk); with\n"
          "                       H > 0 the optimal three-tier schedule is used\n"
          "  --host BYTES         middle-tier budget (gives H = BYTES / snapshot bytes)\n"
          "  --host-write-cost X  cost of one copy to the middle tier (default 0)\n"
          "  --host-read-cost X   cost of one copy back from it (default 0)\n"
          "  --step-cost X        cost of one forward step (default 1)\n"
          "  --write-cost X       cost of one disk write (default 0)\n"
          "  --read-cost X        cost of one disk read (default 0)\n"
          "  --schedule NAME      binomial (default), online, fixed, store-all\n"
          "  --interval K         checkpoint interval of the fixed schedule\n"
          "  --online             same as --schedule online: the run's length is learnt only\n"
          "                       when it ends; --steps is the length it turns out to have\n"
          "                       (as in an adaptive run, which learns it after its last\n"
          "                       step; a fixed-step run under the online schedule learns it\n"
          "                       one step earlier and takes a few advances fewer)\n"
          "  --up-to L            with --steps unknown --online (RAM only): price every\n"
          "                       length 2 .. L from one forward sweep and print the median,\n"
          "                       90th percentile and worst excess in forward steps over the\n"
          "                       offline optimum t(l,c) + l and over t(l+1,c) + l, the least\n"
          "                       any schedule needs when the end is learnt after the last step\n"
          "  --actions            print the action list\n"
          "  --json               print one JSON object\n"
          "  --help               print this help\n"
          "Each option may be given once.\n"
          "\n"
          "advances: forward steps not followed at once by their adjoint (Revolve's count,\n"
          "t(l,c) = r l - C(c+r, r-1) at the optimum); forward_steps: every forward step\n"
          "evaluation (advances + one per reversed step); cost = advances x step cost +\n"
          "disk writes x write cost + disk reads x read cost. With disk slots the two-level\n"
          "schedule minimises that cost exactly (H-Revolve; Disk-Revolve when unlimited); with\n"
          "host slots the three-tier schedule does, the host terms added to the cost.\n");
}

static int usage_error(const char *fmt, const char *a, const char *b)
{
  fprintf(stderr, "rewind-plan: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\nRun 'rewind-plan --help' for the options.\n");
  return EXIT_USAGE;
}

/* Parses a whole non-negative integer; 0 on success. */
static int parse_int64(const char *text, int64_t *out)
{
  char *end = NULL;
  if (!text || !*text || *text == '-' || isspace((unsigned char)*text)) return 1;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || *end) return 1;
  *out = (int64_t)v;
  return 0;
}

static int parse_double(const char *text, double *out)
{
  char *end = NULL;
  if (!text || !*text) return 1;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || *end || !isfinite(v) || v < 0) return 1;
  *out = v;
  return 0;
}

/* A byte size with an optional unit: B, kB/KB/k, KiB, MB/M, MiB, GB/G, GiB, TB/T, TiB
 * (case-insensitive; decimal units are powers of 1000, binary ones of 1024). A local
 * parser: librewind does not carry the deck's. 0 on success. */
static int parse_size(const char *text, size_t *bytes)
{
  static const struct {
    const char *unit;
    double factor;
  } units[] = {{"", 1},
               {"b", 1},
               {"k", 1e3},
               {"kb", 1e3},
               {"kib", 1024.0},
               {"m", 1e6},
               {"mb", 1e6},
               {"mib", 1048576.0},
               {"g", 1e9},
               {"gb", 1e9},
               {"gib", 1073741824.0},
               {"t", 1e12},
               {"tb", 1e12},
               {"tib", 1099511627776.0}};
  char *end = NULL;
  if (!text || !*text || *text == '-') return 1;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || !isfinite(v) || v < 0) return 1;
  while (*end == ' ')
    end++;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    size_t n = strlen(units[i].unit);
    if (strlen(end) != n) continue;
    int same = 1;
    for (size_t k = 0; k < n; k++)
      if (tolower((unsigned char)end[k]) != units[i].unit[k]) same = 0;
    if (!same) continue;
    double b = floor(v * units[i].factor);
    if (b >= 18446744073709551615.0) return 1;
    *bytes = (size_t)b;
    return 0;
  }
  return 1;
}

/* The options given so far, to refuse one given twice (the last value would silently win). */
typedef struct {
  char name[64][64];
  const char *value[64];
  int n;
} seen_options;

/* Records option `name` (with its value, or NULL); 1 when it was given before (*before: the
 * value it had). */
static int seen_before(seen_options *s, const char *name, const char *value, const char **before)
{
  for (int k = 0; k < s->n; k++)
    if (!strcmp(s->name[k], name)) {
      *before = s->value[k];
      return 1;
    }
  if (s->n < 64) {
    snprintf(s->name[s->n], sizeof s->name[s->n], "%s", name);
    s->value[s->n++] = value;
  }
  return 0;
}

/* The most steps each schedule is planned for. The plan iterates every action of the
 * schedule the driver runs (nothing is re-derived in closed form), so its time grows with the
 * length, and faster than linearly for some schedules: measured in a Release build (one core
 * of a shared VM), binomial about 0.05 s per 10^6 steps; fixed interval and store-all the
 * same, with 17 bytes per stored step (store-all at 10^7 steps: 170 MB); online with disk
 * 1.1 s at 10^7; online in RAM 7 s at 10^6 and 184 s at 10^7; two- and three-tier 4 s and
 * 60-125 MB at 10^6, 60 s at 10^7. Each limit keeps a plan within a few seconds (the apps
 * accept up to 10^12 steps). */
static int64_t steps_limit(sched_kind k)
{
  switch (k) {
  case SCHED_BINOMIAL:
    return 100000000;
  case SCHED_FIXED:
  case SCHED_STORE_ALL:
  case SCHED_ONLINE_DISK:
    return 10000000;
  case SCHED_ONLINE:
  case SCHED_TWO_LEVEL:
  case SCHED_THREE_LEVEL:
    return 1000000;
  }
  return 1000000;
}

static const char *kind_name(sched_kind k);

/* Refuses a length the plan would take minutes or hours to iterate. Exit status 2. */
static int check_steps_limit(const plan_options *o)
{
  int64_t max = steps_limit(o->kind);
  if (o->steps <= max) return 0;
  fprintf(stderr,
          "rewind-plan: --steps %" PRId64 ": this tool plans the %s schedule for at most %" PRId64
          " steps (it iterates every action of the schedule, and longer plans take minutes to "
          "hours); plan a length up to %" PRId64
          " (the overhead per step changes slowly with the length)\n"
          "Run 'rewind-plan --help' for the options.\n",
          o->steps, kind_name(o->kind), max, max);
  return EXIT_USAGE;
}

/* The slots a byte budget gives, as the driver takes them (rw_store_slots_for_budget: the
 * whole snapshots it holds, at most 10^6). A budget below one snapshot is refused as the
 * driver refuses it. Notes a capped budget on stdout's plan (g_capped). */
static int64_t g_capped[3]; /* snapshots a --ram, --disk, --host budget holds when capped */
static int budget_slots(const char *flag, size_t bytes, size_t snapshot, int64_t *slots)
{
  if (bytes / snapshot < 1) {
    fprintf(stderr,
            "rewind-plan: %s %zu bytes is smaller than one snapshot (%zu bytes); raise %s to at "
            "least --snapshot-bytes%s\n"
            "Run 'rewind-plan --help' for the options.\n",
            flag, bytes, snapshot, flag, strcmp(flag, "--ram") ? " (or 0 for none)" : "");
    return EXIT_USAGE;
  }
  int n = 0;
  if (rw_store_slots_for_budget(bytes, snapshot, &n)) {
    fprintf(stderr, "rewind-plan: %s: %s\n", flag, rw_error_message());
    return EXIT_USAGE;
  }
  *slots = n;
  if ((size_t)n < bytes / snapshot)
    g_capped[!strcmp(flag, "--ram")    ? 0
             : !strcmp(flag, "--disk") ? 1
                                       : 2] =
        (int64_t)(bytes / snapshot > INT64_MAX ? INT64_MAX : bytes / snapshot);
  return 0;
}

static int parse_args(int argc, char **argv, plan_options *o)
{
  int have_steps = 0;
  seen_options seen;
  char schedule_opt[96] = ""; /* what chose the schedule: "--online" or "--schedule NAME" */
  memset(&seen, 0, sizeof seen);
  for (int i = 1; i < argc; i++) {
    char *arg = argv[i], *val = NULL;
    char name[64];
    if (strncmp(arg, "--", 2) != 0)
      return usage_error("unexpected argument '%s'%s: options start with --", arg, "");
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len >= sizeof name) return usage_error("unknown option '%s'%s", arg, "");
    memcpy(name, arg, len);
    name[len] = '\0';
    /* flags without a value */
    if (!strcmp(name, "--help")) {
      usage(stdout);
      exit(0);
    }
    if (!strcmp(name, "--online") || !strcmp(name, "--actions") || !strcmp(name, "--json")) {
      if (eq) return usage_error("option %s takes no value (got '%s')", name, eq + 1);
      const char *before = NULL;
      if (seen_before(&seen, name, NULL, &before))
        return usage_error("option %s is given twice%s; give it once", name, "");
      if (!strcmp(name, "--online") && schedule_opt[0] && o->kind != SCHED_ONLINE)
        return usage_error("--online contradicts %s; give one of them%s", schedule_opt, "");
      if (!strcmp(name, "--online")) snprintf(schedule_opt, sizeof schedule_opt, "--online");
      if (!strcmp(name, "--online"))
        o->kind = SCHED_ONLINE;
      else if (!strcmp(name, "--actions"))
        o->actions = 1;
      else
        o->json = 1;
      continue;
    }
    static const char *valued[] = {
        "--steps",          "--ram-slots",  "--ram",        "--disk-slots",      "--disk",
        "--snapshot-bytes", "--step-cost",  "--write-cost", "--read-cost",       "--schedule",
        "--interval",       "--host-slots", "--host",       "--host-write-cost", "--host-read-cost",
        "--up-to"};
    int known = 0;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
      known |= !strcmp(name, valued[k]);
    if (!known)
      return usage_error("unknown option '%s'%s; the options are --steps, --ram-slots, --ram, "
                         "--snapshot-bytes, --disk-slots, --disk, --host-slots, --host, "
                         "--step-cost, --write-cost, --read-cost, --host-write-cost, "
                         "--host-read-cost, --schedule, --interval, --up-to, --online, --actions, "
                         "--json, --help",
                         name, "");
    if (eq)
      val = (char *)eq + 1;
    else if (i + 1 < argc)
      val = argv[++i];
    else
      return usage_error("option %s needs a value%s", name, "");
    {
      const char *before = NULL;
      if (seen_before(&seen, name, val, &before)) {
        fprintf(stderr,
                "rewind-plan: option %s is given twice ('%s', then '%s'); give it once\n"
                "Run 'rewind-plan --help' for the options.\n",
                name, before, val);
        return EXIT_USAGE;
      }
    }

    int64_t iv = 0;
    if (!strcmp(name, "--steps")) {
      have_steps = 1;
      if (!strcmp(val, "unknown"))
        o->steps = -1;
      else if (parse_int64(val, &iv) || iv < 1)
        return usage_error("--steps '%s': expected an integer >= 1 or 'unknown'%s", val, "");
      else
        o->steps = iv;
    } else if (!strcmp(name, "--ram-slots")) {
      if (parse_int64(val, &iv) || iv < 1 || iv > INT_MAX)
        return usage_error("--ram-slots '%s': expected an integer in [1, 2147483647]%s", val, "");
      o->ram_slots = iv;
    } else if (!strcmp(name, "--disk-slots")) {
      if (!strcmp(val, "unlimited") || !strcmp(val, "-1"))
        iv = -1;
      else if (parse_int64(val, &iv) || iv > INT_MAX)
        return usage_error("--disk-slots '%s': expected an integer >= 0, or 'unlimited' (-1)%s",
                           val, "");
      o->disk_slots = iv;
      o->have_disk_slots = 1;
    } else if (!strcmp(name, "--host-slots")) {
      if (parse_int64(val, &iv) || iv > INT_MAX)
        return usage_error("--host-slots '%s': expected an integer in [0, 2147483647]%s", val, "");
      o->host_slots = iv;
      o->have_host_slots = 1;
    } else if (!strcmp(name, "--up-to")) {
      if (parse_int64(val, &iv) || iv < 2 || iv > 10000000)
        return usage_error("--up-to '%s': expected an integer in [2, 10000000]%s", val, "");
      o->up_to = iv;
    } else if (!strcmp(name, "--interval")) {
      if (parse_int64(val, &iv) || iv < 1)
        return usage_error("--interval '%s': expected an integer >= 1%s", val, "");
      o->interval = iv;
    } else if (!strcmp(name, "--ram") || !strcmp(name, "--disk") || !strcmp(name, "--host") ||
               !strcmp(name, "--snapshot-bytes")) {
      size_t b = 0;
      if (parse_size(val, &b))
        return usage_error("%s '%s': expected a size such as 4096, 64KiB, 512MiB, 2GB or 1.5GiB "
                           "(units B, kB, KiB, MB, MiB, GB, GiB, TB, TiB)",
                           name, val);
      if (!strcmp(name, "--ram"))
        o->ram_bytes = b, o->have_ram_bytes = 1;
      else if (!strcmp(name, "--disk"))
        o->disk_bytes = b, o->have_disk_bytes = 1;
      else if (!strcmp(name, "--host"))
        o->host_bytes = b, o->have_host_bytes = 1;
      else
        o->snapshot_bytes = b, o->have_snapshot = 1;
    } else if (!strcmp(name, "--schedule")) {
      if (!strcmp(val, "binomial"))
        o->kind = SCHED_BINOMIAL;
      else if (!strcmp(val, "online"))
        o->kind = SCHED_ONLINE;
      else if (!strcmp(val, "fixed"))
        o->kind = SCHED_FIXED;
      else if (!strcmp(val, "store-all"))
        o->kind = SCHED_STORE_ALL;
      else
        return usage_error("--schedule '%s': expected binomial, online, fixed or store-all%s", val,
                           "");
      if (schedule_opt[0] && o->kind != SCHED_ONLINE)
        return usage_error("--schedule %s contradicts %s; give one of them", val, schedule_opt);
      snprintf(schedule_opt, sizeof schedule_opt, "--schedule %.60s", val);
    } else { /* costs */
      double d = 0;
      if (parse_double(val, &d))
        return usage_error("%s '%s': expected a finite number >= 0", name, val);
      if (!strcmp(name, "--step-cost"))
        o->step_cost = d;
      else if (!strcmp(name, "--write-cost"))
        o->write_cost = d;
      else if (!strcmp(name, "--read-cost"))
        o->read_cost = d;
      else if (!strcmp(name, "--host-write-cost"))
        o->host_write_cost = d;
      else
        o->host_read_cost = d;
    }
  }
  if (!have_steps)
    return usage_error("--steps is required (an integer >= 1, or 'unknown')%s%s", "", "");
  if (o->steps < 0 && o->kind != SCHED_ONLINE && o->kind != SCHED_ONLINE_DISK)
    return usage_error("--steps unknown needs --online: an offline schedule needs the number of "
                       "steps%s%s",
                       "", "");
  if (o->have_ram_bytes || o->have_disk_bytes || o->have_host_bytes) {
    if (!o->have_snapshot)
      return usage_error("--ram, --host and --disk budgets need --snapshot-bytes (the size of one "
                         "snapshot)%s%s",
                         "", "");
    if (o->snapshot_bytes == 0) return usage_error("--snapshot-bytes must be > 0%s%s", "", "");
  }
  if (o->have_ram_bytes) {
    if (o->ram_slots >= 0)
      return usage_error("give either --ram-slots or --ram with --snapshot-bytes, not both%s%s", "",
                         "");
    int rc = budget_slots("--ram", o->ram_bytes, o->snapshot_bytes, &o->ram_slots);
    if (rc) return rc;
  }
  if (o->have_disk_bytes) {
    if (o->have_disk_slots)
      return usage_error("give either --disk-slots or --disk with --snapshot-bytes, not both%s%s",
                         "", "");
    o->disk_slots = 0; /* --disk 0: no disk, as in the apps */
    if (o->disk_bytes > 0) {
      int rc = budget_slots("--disk", o->disk_bytes, o->snapshot_bytes, &o->disk_slots);
      if (rc) return rc;
    }
  }
  if (o->have_host_bytes) {
    if (o->have_host_slots)
      return usage_error("give either --host-slots or --host with --snapshot-bytes, not both%s%s",
                         "", "");
    o->host_slots = 0;
    if (o->host_bytes > 0) {
      int rc = budget_slots("--host", o->host_bytes, o->snapshot_bytes, &o->host_slots);
      if (rc) return rc;
    }
  }
  if (o->host_slots > 0) {
    if (o->kind != SCHED_BINOMIAL)
      return usage_error("host slots (%s) need the binomial schedule (the three-tier schedule "
                         "is offline); not %s",
                         o->have_host_bytes ? "--host" : "--host-slots", schedule_opt);
    if (o->step_cost <= 0)
      return usage_error("the three-tier schedule needs --step-cost > 0 (copies are weighed "
                         "against steps)%s%s",
                         "", "");
  }
  if (o->disk_slots != 0) {
    if (o->kind != SCHED_BINOMIAL && o->kind != SCHED_ONLINE)
      return usage_error("disk slots (%s) need the binomial schedule (the two-level RAM + disk "
                         "schedule) or the online one (periodic disk checkpoints); not "
                         "--schedule %s",
                         o->have_disk_bytes ? "--disk" : "--disk-slots",
                         o->kind == SCHED_FIXED ? "fixed" : "store-all");
    if (o->kind == SCHED_ONLINE && o->disk_slots < 0)
      return usage_error("the online schedule with disk needs --disk-slots D or --disk BYTES (its "
                         "files are preallocated), not 'unlimited'%s%s",
                         "", "");
    if (o->step_cost <= 0)
      return usage_error("the two-level schedule needs --step-cost > 0 (disk costs are weighed "
                         "against steps)%s%s",
                         "", "");
    o->kind = o->kind == SCHED_ONLINE ? SCHED_ONLINE_DISK : SCHED_TWO_LEVEL;
  }
  if (o->host_slots > 0) o->kind = SCHED_THREE_LEVEL;
  if (o->up_to > 0 && (o->steps >= 0 || o->kind != SCHED_ONLINE))
    return usage_error("--up-to needs --steps unknown --online with RAM slots only (it prices "
                       "the RAM online schedule at every length)%s%s",
                       "", "");
  if ((o->kind == SCHED_BINOMIAL || o->kind == SCHED_ONLINE || o->kind == SCHED_TWO_LEVEL ||
       o->kind == SCHED_ONLINE_DISK || o->kind == SCHED_THREE_LEVEL) &&
      o->ram_slots < 0)
    return usage_error("the %s schedule needs --ram-slots C or --ram BYTES with --snapshot-bytes%s",
                       o->kind == SCHED_ONLINE || o->kind == SCHED_ONLINE_DISK ? "online"
                       : o->kind == SCHED_TWO_LEVEL                            ? "two-level"
                       : o->kind == SCHED_THREE_LEVEL                          ? "three-tier"
                                                                               : "binomial",
                       "");
  if (o->kind == SCHED_FIXED && o->interval < 1)
    return usage_error("--schedule fixed needs --interval K (K >= 1)%s%s", "", "");
  if (o->kind != SCHED_FIXED && o->interval > 0)
    return usage_error("--interval is only for --schedule fixed%s%s", "", "");
  return check_steps_limit(o);
}

static const char *kind_name(sched_kind k)
{
  switch (k) {
  case SCHED_BINOMIAL:
    return "binomial";
  case SCHED_ONLINE:
    return "online";
  case SCHED_FIXED:
    return "fixed_interval";
  case SCHED_STORE_ALL:
    return "store_all";
  case SCHED_TWO_LEVEL:
    return "two_level";
  case SCHED_ONLINE_DISK:
    return "online_disk";
  case SCHED_THREE_LEVEL:
    return "three_level";
  }
  return "?";
}

static void print_error(const char *what, int ierr)
{
  fprintf(stderr, "rewind-plan: %s failed (%s): %s\n", what, rw_error_string(ierr),
          rw_error_message());
}

/* Creates the schedule the options ask for. */
static int make_schedule(const plan_options *o, int64_t steps, rw_schedule *s)
{
  switch (o->kind) {
  case SCHED_BINOMIAL:
    return rw_schedule_create_binomial(steps, (int)o->ram_slots, s);
  case SCHED_ONLINE:
    return rw_schedule_create_online((int)o->ram_slots, s);
  case SCHED_FIXED:
    return rw_schedule_create_fixed_interval(steps, o->interval, s);
  case SCHED_STORE_ALL:
    return rw_schedule_create_store_all(steps, s);
  case SCHED_TWO_LEVEL:
    return rw_schedule_create_two_level(steps, (int)o->ram_slots, (int)o->disk_slots,
                                        o->write_cost / o->step_cost, o->read_cost / o->step_cost,
                                        s);
  case SCHED_ONLINE_DISK:
    return rw_schedule_create_online_disk((int)o->ram_slots, (int)o->disk_slots,
                                          o->write_cost / o->step_cost, o->read_cost / o->step_cost,
                                          s);
  case SCHED_THREE_LEVEL: {
    rw_tier tiers[3] = {
        {(int)o->ram_slots, 0.0, 0.0},
        {(int)o->host_slots, o->host_write_cost / o->step_cost, o->host_read_cost / o->step_cost},
        {(int)o->disk_slots, o->write_cost / o->step_cost, o->read_cost / o->step_cost}};
    return rw_schedule_create_tiered(steps, 3, tiers, s);
  }
  }
  return RW_ERR_ARG;
}

/* The online disk schedule's period after the last simulation: used and chosen. */
static int64_t g_period, g_period0;
static rw_tiered_counts g_opt; /* two- and three-level: the optimum of the schedule's own plan */

/* Iterates the schedule (printing the actions when asked) and returns its statistics. For
 * the online schedule the end is announced after the step that reaches it, as an adaptive
 * stepper learns it. */
static int simulate(const plan_options *o, int64_t steps, int print, int *first_printed,
                    rw_schedule_stats *st, int *capacity, int *disk_capacity)
{
  rw_schedule s = NULL;
  int ierr = make_schedule(o, steps, &s);
  if (ierr) return ierr;
  ierr = rw_schedule_capacity(s, capacity, disk_capacity);
  rw_action a;
  char line[128];
  int known = o->kind != SCHED_ONLINE && o->kind != SCHED_ONLINE_DISK;
  while (!ierr) {
    ierr = rw_schedule_next(s, &a);
    if (ierr || a.type == RW_ACTION_TERMINATE) break;
    if (print) {
      ierr = rw_action_format(&a, line, sizeof line);
      if (ierr) break;
      if (o->json)
        printf("%s\n    \"%s\"", *first_printed ? "" : ",", line);
      else
        printf("%s\n", line);
      *first_printed = 0;
    }
    if (!known && a.type == RW_ACTION_ADVANCE && a.to == steps) {
      ierr = rw_schedule_set_steps(s, steps);
      known = 1;
    }
  }
  if (!ierr) ierr = rw_schedule_get_stats(s, st);
  if (!ierr && o->kind == SCHED_ONLINE_DISK)
    ierr = rw_schedule_online_disk_period(s, &g_period, &g_period0);
  if (!ierr && (o->kind == SCHED_TWO_LEVEL || o->kind == SCHED_THREE_LEVEL))
    ierr = rw_schedule_tiered_counts(s, &g_opt);
  rw_schedule_destroy(&s);
  return ierr;
}

static void print_json_string(const char *key, const char *v)
{
  printf("  \"%s\": \"%s\",\n", key, v);
}
static void print_json_int(const char *key, int64_t v)
{
  printf("  \"%s\": %" PRId64 ",\n", key, v);
}
static void print_json_num(const char *key, double v) { printf("  \"%s\": %.10g,\n", key, v); }

/* The plan for a known number of steps. */
static int plan_steps(const plan_options *o)
{
  int64_t l = o->steps;
  rw_schedule_stats st;
  int cap = 0, disk_cap = 0, first = 1, ierr = 0;
  /* Slots a store must hold: with a budget (ram_slots given) the fixed and store-all
   * schedules must fit it. Checked before anything is printed. */
  if (o->kind == SCHED_FIXED || o->kind == SCHED_STORE_ALL) {
    ierr = rw_fixed_interval_counts(l, o->kind == SCHED_FIXED ? o->interval : 1, NULL, &cap);
    if (ierr) {
      print_error("rw_fixed_interval_counts", ierr);
      return 1;
    }
    if (o->ram_slots >= 0 && cap > o->ram_slots) {
      fprintf(stderr,
              "rewind-plan: the %s schedule needs %d RAM slots for %" PRId64
              " steps, more than the %" PRId64 " given; %s\n",
              kind_name(o->kind), cap, l, o->ram_slots,
              o->kind == SCHED_FIXED ? "choose another --interval or --schedule binomial"
                                     : "use --schedule binomial");
      return EXIT_USAGE;
    }
  }
  if (o->json) printf("{\n");
  if (o->actions && o->json)
    printf("  \"actions\": [");
  else if (o->actions)
    printf("# actions of the %s schedule\n", kind_name(o->kind));
  ierr = simulate(o, l, o->actions, &first, &st, &cap, &disk_cap);
  if (ierr) {
    if (o->actions && o->json) printf("]\n}\n");
    print_error("the schedule", ierr);
    return 1;
  }
  if (o->actions && o->json) printf("\n  ],\n");
  int64_t slots = o->ram_slots >= 0 ? o->ram_slots : cap;
  int64_t r = 0, t_opt = 0;
  if (rw_binomial_advances(l, (int)(slots < INT_MAX ? slots : INT_MAX), &r, &t_opt)) {
    print_error("rw_binomial_advances", rw_error_last());
    return 1;
  }
  /* The two-level optimum: the value of the recurrences in the schedule's plan (planned once;
   * the walk of its decisions checked against the table), which the cost of the actions
   * iterated above must equal. */
  rw_tiered_counts opt = g_opt;
  int three = o->kind == SCHED_THREE_LEVEL, tiered = three || o->kind == SCHED_TWO_LEVEL;
  int disky = tiered || o->kind == SCHED_ONLINE_DISK;
  int64_t sa_adv = l - 1, sa_fwd = 2 * l - 1;
  double cost = (double)st.advances * o->step_cost + (double)st.disk_writes * o->write_cost +
                (double)st.disk_reads * o->read_cost + (double)st.host_writes * o->host_write_cost +
                (double)st.host_reads * o->host_read_cost;
  double sa_cost = (double)sa_adv * o->step_cost;
  double overhead = (double)st.forward_steps / (double)sa_fwd - 1.0;
  if (o->json) {
    print_json_string("schedule", kind_name(o->kind));
    print_json_int("steps", l);
    print_json_int("ram_slots", slots);
    print_json_int("disk_slots", o->disk_slots);
    if (o->kind == SCHED_ONLINE_DISK) {
      print_json_int("disk_period", g_period);
      print_json_int("disk_period_chosen", g_period0);
    }
    if (disky) {
      print_json_int("disk_slots_used", st.peak_disk_slots);
      print_json_int("ram_slots_used", st.peak_ram_slots);
      print_json_int("disk_capacity", disk_cap);
    }
    if (three) {
      print_json_int("host_slots", o->host_slots);
      print_json_int("host_slots_used", st.peak_host_slots);
    }
    print_json_int("peak_slots", st.peak_slots);
    if (o->have_snapshot) {
      print_json_int("snapshot_bytes", (int64_t)o->snapshot_bytes);
      print_json_int("checkpoint_bytes", (int64_t)o->snapshot_bytes * st.peak_ram_slots);
      if (disky)
        print_json_int("disk_checkpoint_bytes", (int64_t)o->snapshot_bytes * st.peak_disk_slots);
      if (three)
        print_json_int("host_checkpoint_bytes", (int64_t)o->snapshot_bytes * st.peak_host_slots);
    }
    if (o->kind == SCHED_FIXED) print_json_int("interval", o->interval);
    print_json_int("repetitions", r);
    print_json_int("advances", st.advances);
    print_json_int("optimal_advances", t_opt);
    if (o->kind == SCHED_ONLINE || o->kind == SCHED_ONLINE_DISK)
      print_json_num("online_excess", t_opt ? (double)(st.advances - t_opt) / (double)t_opt : 0.0);
    print_json_int("forward_steps", st.forward_steps);
    print_json_int("recomputations", st.recomputations);
    print_json_num("recomputations_per_step", (double)st.recomputations / (double)l);
    print_json_int("stores", st.stores);
    print_json_int("restores", st.restores);
    print_json_int("disk_writes", st.disk_writes);
    print_json_int("disk_reads", st.disk_reads);
    print_json_num("step_cost", o->step_cost);
    print_json_num("write_cost", o->write_cost);
    print_json_num("read_cost", o->read_cost);
    if (three) {
      print_json_int("host_writes", st.host_writes);
      print_json_int("host_reads", st.host_reads);
      print_json_num("host_write_cost", o->host_write_cost);
      print_json_num("host_read_cost", o->host_read_cost);
    }
    print_json_num("cost", cost);
    if (tiered) {
      print_json_num("optimal_cost", opt.cost * o->step_cost);
      print_json_num("ram_only_cost", (double)t_opt * o->step_cost);
    }
    print_json_int("store_all_slots", l > 1 ? l - 1 : 1);
    print_json_int("store_all_advances", sa_adv);
    print_json_int("store_all_forward_steps", sa_fwd);
    print_json_num("store_all_cost", sa_cost);
    printf("  \"overhead\": %.10g\n}\n", overhead);
    return 0;
  }
  printf("rewind-plan: %s schedule, %" PRId64 " steps\n", kind_name(o->kind), l);
  {
    static const char *what[3] = {"--ram", "--disk", "--host"};
    for (int k = 0; k < 3; k++)
      if (g_capped[k])
        printf("  (%s holds %" PRId64 " snapshots; the driver takes at most %d slots from a "
               "budget, as planned here)\n",
               what[k], g_capped[k],
               k == 0   ? (int)o->ram_slots
               : k == 1 ? (int)o->disk_slots
                        : (int)o->host_slots);
  }
  printf("  RAM slots                %" PRId64 " (counting the initial state's), %d used at peak\n",
         slots, st.peak_ram_slots);
  if (o->have_snapshot)
    printf("  checkpoint memory        %d x %zu B = %.4g MiB at peak\n", st.peak_ram_slots,
           o->snapshot_bytes, (double)st.peak_ram_slots * (double)o->snapshot_bytes / 1048576.0);
  if (three) {
    printf("  host slots               %" PRId64 ", %d used at peak\n", o->host_slots,
           st.peak_host_slots);
    if (o->have_snapshot)
      printf("  checkpoint host          %d x %zu B = %.4g MiB at peak\n", st.peak_host_slots,
             o->snapshot_bytes, (double)st.peak_host_slots * (double)o->snapshot_bytes / 1048576.0);
  }
  if (disky) {
    if (o->disk_slots < 0)
      printf("  disk slots               unlimited, %d used at peak\n", st.peak_disk_slots);
    else
      printf("  disk slots               %" PRId64 ", %d used at peak\n", o->disk_slots,
             st.peak_disk_slots);
    if (o->have_snapshot)
      printf("  checkpoint disk          %d x %zu B = %.4g MiB at peak\n", st.peak_disk_slots,
             o->snapshot_bytes, (double)st.peak_disk_slots * (double)o->snapshot_bytes / 1048576.0);
  } else {
    printf("  disk slots               0\n");
  }
  if (o->kind == SCHED_FIXED) printf("  interval                 %" PRId64 "\n", o->interval);
  if (o->kind == SCHED_ONLINE_DISK)
    printf("  disk period              %" PRId64 " steps (%" PRId64 " chosen from the costs%s)\n",
           g_period, g_period0, g_period > g_period0 ? ", doubled as the disk filled" : "");
  printf("  advances                 %" PRId64 "   (optimum with %" PRId64 " slots: t = %" PRId64
         ", repetition number %" PRId64 ")\n",
         st.advances, slots, t_opt, r);
  if (o->kind == SCHED_ONLINE || o->kind == SCHED_ONLINE_DISK)
    printf("  online excess            %.2f%% over the offline optimum\n",
           t_opt ? 100.0 * (double)(st.advances - t_opt) / (double)t_opt : 0.0);
  printf("  forward steps            %" PRId64 "   (store everything: %" PRId64 ")\n",
         st.forward_steps, sa_fwd);
  printf("  recomputations           %" PRId64 "   (%.3f per step)\n", st.recomputations,
         (double)st.recomputations / (double)l);
  printf("  overhead vs store-all    %+.2f%% forward step evaluations\n", 100.0 * overhead);
  printf("  stores / restores        %" PRId64 " / %" PRId64 "\n", st.stores, st.restores);
  if (three)
    printf("  host writes / reads      %" PRId64 " / %" PRId64 "\n", st.host_writes, st.host_reads);
  printf("  disk writes / reads      %" PRId64 " / %" PRId64 "\n", st.disk_writes, st.disk_reads);
  printf("  cost                     %.6g   (store everything: %.6g)\n", cost, sa_cost);
  if (tiered)
    printf("  %s %.6g   (RAM only: %.6g)\n",
           three ? "three-tier optimum      " : "two-level optimum       ", opt.cost * o->step_cost,
           (double)t_opt * o->step_cost);
  return 0;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Mean, median (the (n/2)-th of n sorted), 90th percentile (the floor(0.9 n)-th) and worst
 * of x[n] (sorted in place), and the length where the worst occurs. */
typedef struct {
  double mean, median, p90, worst;
  int64_t worst_at;
} excess_summary;

static void summarise(double *x, int64_t n, int64_t first_l, excess_summary *r)
{
  r->worst = -1;
  r->mean = 0;
  for (int64_t i = 0; i < n; i++) {
    r->mean += x[i] / (double)n;
    if (x[i] > r->worst) r->worst = x[i], r->worst_at = first_l + i;
  }
  qsort(x, (size_t)n, sizeof *x, cmp_double);
  r->median = x[n / 2];
  r->p90 = x[(int64_t)(0.9 * (double)n)];
}

/* --up-to L: one forward sweep of the online schedule, priced after each advance by
 * rw_schedule_online_advances_if_ended (the run of length l = n, its end learnt after the
 * last step, takes that many advances), for l = 2 .. L. Excess in forward steps (advances +
 * l, the reversals included) over the offline optimum t(l, c) + l and over t(l + 1, c) + l,
 * the least any schedule needs that learns the end only after the last step. */
static int online_sweep(const plan_options *o, excess_summary *off, excess_summary *bound)
{
  const int64_t L = o->up_to, n = L - 1;
  const int c = (int)o->ram_slots;
  double *xo = malloc(sizeof *xo * (size_t)n), *xb = malloc(sizeof *xb * (size_t)n);
  rw_schedule s = NULL;
  int ierr = xo && xb ? rw_schedule_create_online(c, &s) : RW_ERR_MEM;
  if (ierr == RW_ERR_MEM)
    fprintf(stderr, "rewind-plan: --up-to %lld: out of memory\n", (long long)L);
  rw_action a;
  while (!ierr) {
    ierr = rw_schedule_next(s, &a);
    if (ierr || a.type != RW_ACTION_ADVANCE || a.to < 2) continue;
    const int64_t l = a.to;
    if (l > L) break;
    int64_t q = 0, t = 0, tb = 0;
    ierr = rw_schedule_online_advances_if_ended(s, &q);
    if (!ierr) ierr = rw_binomial_advances(l, c, NULL, &t);
    if (!ierr) ierr = rw_binomial_advances(l + 1, c, NULL, &tb);
    xo[l - 2] = (double)(q + l) / (double)(t + l) - 1;
    xb[l - 2] = (double)(q + l) / (double)(tb + l) - 1;
  }
  if (!ierr) {
    summarise(xo, n, 2, off);
    summarise(xb, n, 2, bound);
  } else if (ierr != RW_ERR_MEM)
    print_error("the online sweep", ierr);
  rw_schedule_destroy(&s);
  free(xo);
  free(xb);
  return ierr;
}

/* --steps unknown --online: the online schedule for runs of 10 .. 10^6 steps. */
static int plan_unknown(const plan_options *o)
{
  static const int64_t lengths[] = {10, 100, 1000, 10000, 100000, 1000000};
  size_t n = sizeof lengths / sizeof lengths[0];
  if (o->actions) {
    fprintf(stderr, "rewind-plan: --actions needs a number of steps (--steps L)\n");
    return EXIT_USAGE;
  }
  if (o->json)
    printf("{\n  \"schedule\": \"online\",\n  \"steps\": \"unknown\",\n  \"ram_slots\": %" PRId64
           ",\n  \"disk_slots\": 0,\n  \"runs\": [",
           o->ram_slots);
  else
    printf("rewind-plan: online schedule, %" PRId64
           " RAM slots, unknown length (end learnt after the last step)\n"
           "%10s %14s %14s %9s %14s %9s %14s %9s\n",
           o->ram_slots, "steps", "advances", "optimum", "excess", "forward", "overhead",
           "online bound", "excess");
  for (size_t i = 0; i < n; i++) {
    rw_schedule_stats st;
    int cap = 0, first = 1;
    int64_t l = lengths[i], t = 0, tb = 0;
    int ierr = simulate(o, l, 0, &first, &st, &cap, NULL);
    if (!ierr) ierr = rw_binomial_advances(l, (int)o->ram_slots, NULL, &t);
    if (!ierr) ierr = rw_binomial_advances(l + 1, (int)o->ram_slots, NULL, &tb);
    if (ierr) {
      print_error("the schedule", ierr);
      return 1;
    }
    double ex = t ? (double)(st.advances - t) / (double)t : 0.0;
    double exb = (double)(st.advances - tb) / (double)tb;
    double ov = (double)st.forward_steps / (double)(2 * l - 1) - 1.0;
    double cost = (double)st.advances * o->step_cost;
    if (o->json)
      printf("%s\n    {\"steps\": %" PRId64 ", \"advances\": %" PRId64
             ", \"optimal_advances\": %" PRId64
             ", \"online_excess\": %.6g, \"online_bound_advances\": %" PRId64
             ", \"online_excess_vs_bound\": %.6g, \"forward_steps\": %" PRId64
             ", \"disk_writes\": 0, \"disk_reads\": 0, \"cost\": %.10g, \"overhead\": %.6g}",
             i ? "," : "", l, st.advances, t, ex, tb, exb, st.forward_steps, cost, ov);
    else
      printf("%10" PRId64 " %14" PRId64 " %14" PRId64 " %8.2f%% %14" PRId64 " %+8.1f%% %14" PRId64
             " %8.2f%%\n",
             l, st.advances, t, 100 * ex, st.forward_steps, 100 * ov, tb, 100 * exb);
  }
  excess_summary off, bnd;
  if (o->up_to > 0 && online_sweep(o, &off, &bnd)) return 1;
  if (o->json) {
    printf("\n  ]");
    if (o->up_to > 0) {
      printf(",\n  \"sweep\": {\"up_to\": %" PRId64 ", \"end\": \"after the last step\"", o->up_to);
      const excess_summary *e[2] = {&off, &bnd};
      const char *key[2] = {"excess_vs_offline", "excess_vs_online_bound"};
      for (int k = 0; k < 2; k++)
        printf(",\n    \"%s\": {\"mean\": %.12g, \"median\": %.12g, \"p90\": %.12g, "
               "\"worst\": %.12g, \"worst_at\": %" PRId64 "}",
               key[k], e[k]->mean, e[k]->median, e[k]->p90, e[k]->worst, e[k]->worst_at);
      printf("}");
    }
    printf("\n}\n");
  } else if (o->up_to > 0) {
    printf("every length l = 2 .. %" PRId64 " (one forward sweep), excess in forward steps\n"
           "(advances + l) over:\n",
           o->up_to);
    const excess_summary *e[2] = {&off, &bnd};
    const char *what[2] = {"the offline optimum t(l,c) + l", "the online bound t(l+1,c) + l"};
    for (int k = 0; k < 2; k++)
      printf("  %-31s mean %6.2f%%  median %6.2f%%  p90 %6.2f%%  worst %6.2f%% (l = %" PRId64 ")\n",
             what[k], 100 * e[k]->mean, 100 * e[k]->median, 100 * e[k]->p90, 100 * e[k]->worst,
             e[k]->worst_at);
    printf(
        "(t(l+1,c) + l: the fewest forward steps of any schedule that learns the end only after\n"
        "the last step; t(l,c) + l needs the length known before the last step)\n");
  }
  return 0;
}

int main(int argc, char **argv)
{
  plan_options o = {.steps = 0, .ram_slots = -1, .step_cost = 1.0, .kind = SCHED_BINOMIAL};
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  if (o.steps < 0) return plan_unknown(&o);
  return plan_steps(&o);
}
