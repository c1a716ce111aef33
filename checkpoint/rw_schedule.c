/* The schedule interface: allocation, the iterator that keeps the statistics, planning
 * runs and action formatting. The implementations live in rw_schedule_revolve.c
 * (binomial), rw_schedule_fixed.c (fixed interval, store everything) and
 * rw_schedule_online.c (unknown length) and rw_schedule_disk.c (two-level RAM + disk). */
#include "rewind/rw_context.h"
#include "rw_schedule_impl.h"

#include <stdio.h>

int rw_schedule_alloc(const char *kind, const rw_schedule_ops *ops, rw_schedule *out)
{
  rw_schedule s = NULL;
  RW_CALL(rw_calloc(1, sizeof *s, "schedule", &s));
  s->kind = kind;
  s->ops = *ops;
  s->steps = -1;
  s->stats.steps = -1;
  *out = s;
  return 0;
}

/* Destroys a schedule (see rw_schedule.h). Not collective. */
int rw_schedule_destroy(rw_schedule *ps)
{
  if (!ps || !*ps) return 0;
  rw_schedule s = *ps;
  if (s->ops.destroy) s->ops.destroy(s);
  rw_free(ps);
  return 0;
}

/* A fresh iterator sharing s's plan (see rw_schedule.h). Not collective. */
int rw_schedule_clone(rw_schedule s, rw_schedule *out)
{
  RW_CHECK(s && out, RW_ERR_ARG, "rw_schedule_clone: NULL argument");
  *out = NULL;
  RW_CHECK(s->ops.clone, RW_ERR_NOT_IMPLEMENTED,
           "rw_schedule_clone: the %s schedule is created again instead", s->kind);
  RW_CALL(s->ops.clone(s, out));
  return 0;
}

/* Emits the next action and counts it (see rw_schedule.h). Not collective. */
int rw_schedule_next(rw_schedule s, rw_action *a)
{
  RW_CHECK(s && a, RW_ERR_ARG, "rw_schedule_next: schedule or action pointer is NULL");
  RW_CHECK(s->ops.next, RW_ERR_NOT_IMPLEMENTED, "rw_schedule_next: schedule '%s' has no next",
           s->kind);
  RW_CALL(s->ops.next(s, a));
  rw_schedule_stats *st = &s->stats;
  st->steps = s->steps;
  switch (a->type) {
  case RW_ACTION_ADVANCE:
    a->first_sweep = a->step >= s->frontier;
    st->advances += a->to - a->step;
    st->forward_steps += a->to - a->step;
    if (!a->first_sweep) st->recomputations += a->to - a->step;
    if (a->to > s->frontier) s->frontier = a->to;
    break;
  case RW_ACTION_FIRST_REVERSE:
  case RW_ACTION_REVERSE:
    a->first_sweep = a->type == RW_ACTION_FIRST_REVERSE && a->step >= s->frontier;
    st->reversals++;
    st->forward_steps++;
    if (a->step + 1 > s->frontier) s->frontier = a->step + 1;
    break;
  case RW_ACTION_STORE:
    st->stores++;
    if (a->level == RW_LEVEL_DISK) {
      st->disk_writes++;
      s->full_disk++;
    } else if (a->level == RW_LEVEL_HOST) {
      st->host_writes++;
      s->full_host++;
    } else {
      s->full_ram++;
    }
    if (s->full_ram > st->peak_ram_slots) st->peak_ram_slots = s->full_ram;
    if (s->full_disk > st->peak_disk_slots) st->peak_disk_slots = s->full_disk;
    if (s->full_host > st->peak_host_slots) st->peak_host_slots = s->full_host;
    if (s->full_ram + s->full_disk + s->full_host > st->peak_slots)
      st->peak_slots = s->full_ram + s->full_disk + s->full_host;
    break;
  case RW_ACTION_RESTORE:
    st->restores++;
    if (a->level == RW_LEVEL_DISK) st->disk_reads++;
    if (a->level == RW_LEVEL_HOST) st->host_reads++;
    break;
  case RW_ACTION_FREE:
    st->frees++;
    if (a->level == RW_LEVEL_DISK)
      s->full_disk--;
    else if (a->level == RW_LEVEL_HOST)
      s->full_host--;
    else
      s->full_ram--;
    break;
  case RW_ACTION_TERMINATE:
    break;
  }
  return 0;
}

/* Announces the number of steps to an online schedule (see rw_schedule.h). Not
 * collective. */
int rw_schedule_set_steps(rw_schedule s, int64_t steps)
{
  RW_CHECK(s, RW_ERR_ARG, "rw_schedule_set_steps: schedule is NULL");
  RW_CHECK(s->ops.set_steps, RW_ERR_ARG,
           "rw_schedule_set_steps: the %s schedule knows its number of steps (%lld); only an "
           "online schedule takes it during the run",
           s->kind, (long long)s->steps);
  RW_CHECK(s->steps < 0, RW_ERR_ARG,
           "rw_schedule_set_steps: the number of steps was already set (%lld)",
           (long long)s->steps);
  RW_CALL(s->ops.set_steps(s, steps));
  s->steps = steps;
  s->stats.steps = steps;
  return 0;
}

/* Copies the counts so far into *stats. Not collective. */
int rw_schedule_get_stats(rw_schedule s, rw_schedule_stats *stats)
{
  RW_CHECK(s && stats, RW_ERR_ARG, "rw_schedule_get_stats: NULL argument");
  *stats = s->stats;
  stats->steps = s->steps;
  return 0;
}

/* Slot capacity per level (see rw_schedule.h). Not collective. */
int rw_schedule_capacity(rw_schedule s, int *ram_slots, int *disk_slots)
{
  RW_CHECK(s, RW_ERR_ARG, "rw_schedule_capacity: schedule is NULL");
  if (ram_slots) *ram_slots = s->capacity_ram;
  if (disk_slots) *disk_slots = s->capacity_disk;
  return 0;
}

/* Slot capacity of one level (see rw_schedule.h). Not collective. */
int rw_schedule_level_capacity(rw_schedule s, rw_storage_level level, int *slots)
{
  RW_CHECK(s && slots, RW_ERR_ARG, "rw_schedule_level_capacity: NULL argument");
  RW_CHECK(level == RW_LEVEL_RAM || level == RW_LEVEL_DISK || level == RW_LEVEL_HOST, RW_ERR_ARG,
           "rw_schedule_level_capacity: unknown storage level %d", (int)level);
  *slots = level == RW_LEVEL_RAM    ? s->capacity_ram
           : level == RW_LEVEL_DISK ? s->capacity_disk
                                    : s->capacity_host;
  return 0;
}

/* Number of steps and kind (see rw_schedule.h). Not collective. */
int rw_schedule_get_info(rw_schedule s, int64_t *steps, const char **kind)
{
  RW_CHECK(s, RW_ERR_ARG, "rw_schedule_get_info: schedule is NULL");
  if (steps) *steps = s->steps;
  if (kind) *kind = s->kind;
  return 0;
}

/* Runs the schedule to TERMINATE without a solver (see rw_schedule.h). Not collective. */
int rw_schedule_run(rw_schedule s, int64_t online_steps, rw_schedule_stats *stats)
{
  RW_CHECK(s, RW_ERR_ARG, "rw_schedule_run: schedule is NULL");
  RW_CHECK(s->steps >= 1 || online_steps >= 1, RW_ERR_ARG,
           "rw_schedule_run: the online schedule needs online_steps >= 1 (got %lld)",
           (long long)online_steps);
  rw_action a;
  for (;;) {
    RW_CALL(rw_schedule_next(s, &a));
    if (a.type == RW_ACTION_TERMINATE) break;
    if (s->steps < 0 && a.type == RW_ACTION_ADVANCE && a.to == online_steps)
      RW_CALL(rw_schedule_set_steps(s, online_steps));
  }
  if (stats) RW_CALL(rw_schedule_get_stats(s, stats));
  return 0;
}

/* Name of an action type. Not collective. */
const char *rw_action_type_name(rw_action_type type)
{
  switch (type) {
  case RW_ACTION_ADVANCE:
    return "advance";
  case RW_ACTION_STORE:
    return "store";
  case RW_ACTION_RESTORE:
    return "restore";
  case RW_ACTION_FREE:
    return "free";
  case RW_ACTION_FIRST_REVERSE:
    return "first_reverse";
  case RW_ACTION_REVERSE:
    return "reverse";
  case RW_ACTION_TERMINATE:
    return "terminate";
  }
  return "unknown";
}

/* One-line description of an action (see rw_schedule.h). Not collective. */
int rw_action_format(const rw_action *a, char *buf, size_t len)
{
  RW_CHECK(a && buf && len > 0, RW_ERR_ARG, "rw_action_format: NULL argument");
  const char *lev = a->level == RW_LEVEL_DISK ? "disk" : a->level == RW_LEVEL_HOST ? "host" : "ram";
  long long step = (long long)a->step, to = (long long)a->to;
  int n = 0;
  switch (a->type) {
  case RW_ACTION_ADVANCE:
    n = snprintf(buf, len, "advance %lld -> %lld", step, to);
    break;
  case RW_ACTION_STORE:
    n = snprintf(buf, len, "store %lld -> %s[%d]", step, lev, a->slot);
    break;
  case RW_ACTION_RESTORE:
    n = snprintf(buf, len, "restore %s[%d] -> %lld", lev, a->slot, step);
    break;
  case RW_ACTION_FREE:
    n = snprintf(buf, len, "free %s[%d] (%lld)", lev, a->slot, step);
    break;
  case RW_ACTION_FIRST_REVERSE:
  case RW_ACTION_REVERSE:
    n = snprintf(buf, len, "%s %lld", rw_action_type_name(a->type), step);
    break;
  case RW_ACTION_TERMINATE:
    n = snprintf(buf, len, "terminate");
    break;
  }
  RW_CHECK(n >= 0 && (size_t)n < len, RW_ERR_ARG, "rw_action_format: buffer of %zu bytes too small",
           len);
  return 0;
}
