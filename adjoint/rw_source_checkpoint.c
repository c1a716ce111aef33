/* State source "recomputed under a schedule" (checkpoint mode): the schedule from checkpoint/
 * decides what is stored, restored and recomputed; the stores (RAM, and an HDF5 disk tier)
 * hold the snapshots in preallocated slots. The schedule drives the forward sweep itself (its
 * advances and stores, up to the first reversal) and, in the backward sweep, fetch(n) executes
 * its actions up to the reversal of step n. With adaptive stepping the length is unknown until
 * tf: the online schedule is told the number of steps after the step that lands on tf, and the
 * accepted times are recorded and replayed. Every step, first or recomputed, runs through
 * rw_stepper_step from the same input state, so the gradient equals store mode's bit for bit. */
#include "rewind/rw_device.h"
#include "rewind/rw_schedule.h"
#include "rewind/rw_store.h"
#include "rw_adjoint_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rw_make_schedule(const rw_adjoint_options *opt, long N, int slots, int dslots, double wd,
                            double rd, rw_schedule *out)
{
  RW_CHECK(dslots == 0 || opt->schedule == RW_SCHEDULE_BINOMIAL ||
               opt->schedule == RW_SCHEDULE_ONLINE,
           RW_ERR_ARG,
           "disk checkpoints (checkpoint_disk) run under the binomial schedule (the optimal "
           "two-level RAM + disk schedule) or the online one (periodic disk checkpoints); the %s "
           "schedule keeps its checkpoints in RAM",
           opt->schedule == RW_SCHEDULE_FIXED ? "fixed-interval" : "store-all");
  RW_CHECK(opt->host_slots == 0 || (opt->schedule == RW_SCHEDULE_BINOMIAL && !opt->adaptive),
           RW_ERR_ARG,
           "a host checkpoint tier (checkpoint_ram on a device run) runs under the binomial "
           "schedule with a fixed step (the optimal three-tier schedule)");
  switch (opt->schedule) {
  case RW_SCHEDULE_BINOMIAL:
    if (opt->host_slots > 0) {
      /* without disk slots the disk costs are not measured (-1, "auto"): they do not matter */
      rw_tier tiers[3] = {{slots, 0.0, 0.0},
                          {opt->host_slots, opt->host_write_cost, opt->host_read_cost},
                          {dslots, dslots > 0 ? wd : 0.0, dslots > 0 ? rd : 0.0}};
      RW_CALL(rw_schedule_create_tiered(N, 3, tiers, out));
    } else if (dslots > 0)
      RW_CALL(rw_schedule_create_two_level(N, slots, dslots, wd, rd, out));
    else
      RW_CALL(rw_schedule_create_binomial(N, slots, out));
    break;
  case RW_SCHEDULE_ONLINE:
    if (dslots > 0)
      RW_CALL(rw_schedule_create_online_disk(slots, dslots, wd, rd, out));
    else
      RW_CALL(rw_schedule_create_online(slots, out));
    break;
  case RW_SCHEDULE_FIXED:
    RW_CHECK(opt->interval >= 1, RW_ERR_ARG, "fixed-interval schedule: interval %ld must be >= 1",
             opt->interval);
    RW_CALL(rw_schedule_create_fixed_interval(N, opt->interval, out));
    break;
  case RW_SCHEDULE_STORE_ALL:
    RW_CALL(rw_schedule_create_store_all(N, out));
    break;
  default:
    return RW_ERROR(RW_ERR_ARG, "unknown schedule kind %d", (int)opt->schedule);
  }
  return 0;
}

/* A fresh copy of the run's schedule `base` (from its first action): a clone that shares its plan
 * where the kind has one (the tiered schedules: no second planning), else created again. */
static int rw_schedule_again(rw_schedule base, const rw_adjoint_options *opt, long N, int slots,
                             int dslots, double wd, double rd, rw_schedule *out)
{
  if (base) {
    int e = rw_schedule_clone(base, out);
    if (e != RW_ERR_NOT_IMPLEMENTED) {
      RW_CALL(e);
      return 0;
    }
    rw_error_clear();
  }
  RW_CALL(rw_make_schedule(opt, N, slots, dslots, wd, rd, out));
  return 0;
}

/* Step-size controller for adaptive stepping (Hairer, Norsett & Wanner I, Sec. II.4):
 * h_new = h min(5, max(0.2, 0.9 err^(-1/(q+1)))), no growth right after a rejection. */
static double rw_next_h(double h, double err, int q, int after_reject)
{
  double fac = err > 0.0 ? 0.9 * pow(err, -1.0 / (q + 1)) : 5.0;
  fac = fmin(after_reject ? 1.0 : 5.0, fmax(0.2, fac));
  return h * fac;
}

/* Recorded grid of an adaptive run: times[0..n], grown geometrically (amortised O(1); the
 * record is 8 bytes per step, counted by the allocator). */
typedef struct {
  double *t;
  long n, cap;
} rw_time_record;

/* Room for times[0..n] (and one more), entries 0..r->n kept. */
static int rw_time_record_reserve(rw_time_record *r, long n)
{
  if (n + 1 < r->cap) return 0;
  long cap = r->cap ? 2 * r->cap : 1024;
  while (n + 1 >= cap)
    cap *= 2;
  double *nt = NULL;
  RW_CALL(rw_calloc((size_t)cap, sizeof *nt, "adaptive step record", &nt));
  if (r->t) memcpy(nt, r->t, (size_t)(r->n + 1) * sizeof *nt);
  rw_free(&r->t);
  r->t = nt;
  r->cap = cap;
  return 0;
}

static int rw_time_record_push(rw_time_record *r, double t)
{
  RW_CALL(rw_time_record_reserve(r, r->n + 1));
  r->t[++r->n] = t;
  return 0;
}

/* One accepted adaptive step from cur (time t) into cur; records the new time. */
static int rw_adaptive_advance(rw_stepper st, const rw_adjoint_options *opt, N_Vector cur,
                               N_Vector trial, N_Vector *stages, double *hprop, double *q,
                               rw_time_record *rec, rw_adjoint_stats *s)
{
  double t = rec->t[rec->n], h = *hprop, err = 0.0;
  int order = 4, rejected = 0;
  rw_stepper_is_adaptive(st, &order);
  long max_steps = opt->max_steps > 0 ? opt->max_steps : 10000000L;
  RW_CHECK(rec->n < max_steps, RW_ERR_STEP,
           "adaptive stepping reached max_steps = %ld at t = %.17g before tf = %g; raise max_steps "
           "or loosen rtol/atol",
           max_steps, t, opt->tf);
  for (;;) {
    int last = 0;
    double tnew = t + h;
    if (tnew >= opt->tf || opt->tf - tnew <= 1e-12 * fabs(opt->tf)) {
      tnew = opt->tf;
      last = 1;
    }
    /* Step with the size the replay will compute from the recorded times, exactly. */
    h = tnew - t;
    RW_CHECK(h > 1e-14 * fmax(1.0, fabs(t)), RW_ERR_STEP,
             "adaptive step size underflow (h = %g) at t = %.17g: the problem may be stiff or "
             "singular there",
             h, t);
    double dq = 0.0;
    rw_stepper_set_step_index(st, rec->n); /* a retried step is the same step: same noise */
    RW_CALL(rw_stepper_try_step(st, t, h, cur, trial, stages, &dq, opt->rtol, opt->atol, &err));
    RW_CHECK(isfinite(err), RW_ERR_STEP, "non-finite error estimate at t = %.17g (h = %g)", t, h);
    if (err <= 1.0) {
      rw_vec_copy(trial, cur);
      *q += dq;
      RW_CALL(rw_time_record_push(rec, tnew));
      /* the next proposal ignores the clipping to tf */
      *hprop = rw_next_h(last ? *hprop : h, err, order, rejected);
      s->accepted++;
      return 0;
    }
    s->rejected++;
    rejected = 1;
    h = rw_next_h(h, err, order, 1);
  }
}

/* The tag of snapshot `step`: its time and the size of the step from it (0 while an adaptive
 * run has not taken that step). */
static rw_snapshot_tag rw_tag(const rw_adjoint_options *opt, long N, const double *rec_t,
                              long rec_n, int64_t step)
{
  rw_snapshot_tag tg = {.step = step};
  if (N < 0) { /* adaptive, length not known yet: the record holds times up to rec_n */
    tg.t = rec_t[step];
    tg.h = step < rec_n ? rec_t[step + 1] - rec_t[step] : 0.0;
    return tg;
  }
  tg.t = rw_grid_t(opt, N, (long)step);
  tg.h = step < N ? rw_grid_t(opt, N, (long)step + 1) - tg.t : 0.0;
  return tg;
}

/* Stores the stage snapshot of `step` that the last step computed. */
static int rw_put_pending(rw_store st, int slot, const rw_adjoint_options *opt, long N,
                          const rw_time_record *rec, int64_t step, double q, double h,
                          N_Vector *stages)
{
  rw_snapshot_tag tg = rw_tag(opt, N, rec->t, rec->n, step);
  tg.q = q;
  if (h > 0.0) tg.h = h; /* an adaptive first sweep's: the step size proposed from there */
  RW_CALL(rw_store_put(st, slot, &tg, stages));
  return 0;
}

/* Measures the costs of a write and a read of one snapshot through the one-slot store `probe`
 * (destroyed here), in units of one step from y: the fastest of `reps` rounds of one step, one
 * put (with its write-behind waited for) and one get, a device run waiting for its device after
 * the step and the get. Every rank takes the largest time over ranks, so all build the same
 * schedule. Collective. */
static int rw_measure_store_costs(rw_stepper st, const rw_adjoint_options *opt, N_Vector y, int per,
                                  rw_store *probe, int reps, double *w, double *r)
{
  int ierr = 0, ns = rw_stepper_num_stage_vectors(st);
  N_Vector tmp = NULL, *vecs = NULL;
  rw_device dev = rw_vec_device(y);
  RW_TRY(rw_vec_clone(y, &tmp));
  RW_TRY(rw_vec_clone_array(y, ns > per ? ns : per, &vecs));
  for (int k = 0; k < per; k++)
    rw_vec_copy(y, vecs[k]);
  double t = rw_grid_t(opt, 1, 0), h = opt->dt > 0.0 ? opt->dt : 1e-3;
  double times[3] = {INFINITY, INFINITY, INFINITY};
  rw_snapshot_tag tg = {.step = 0, .t = t, .h = h};
  for (int rep = 0; rep < reps; rep++) {
    if (rep > 0) RW_TRY(rw_store_release(*probe, 0));
    double w0 = rw_wtime();
    rw_stepper_set_step_index(st, 0);
    RW_TRY(rw_stepper_step(st, t, h, y, tmp, NULL, NULL));
    if (dev) RW_TRY(rw_device_sync(dev));
    double w1 = rw_wtime();
    RW_TRY(rw_store_put(*probe, 0, &tg, vecs));
    RW_TRY(rw_store_sync(*probe)); /* the write itself, not only its hand-off */
    double w2 = rw_wtime();
    RW_TRY(rw_store_get(*probe, 0, NULL, vecs));
    if (dev) RW_TRY(rw_device_sync(dev));
    double w3 = rw_wtime();
    times[0] = fmin(times[0], w1 - w0);
    times[1] = fmin(times[1], w2 - w1);
    times[2] = fmin(times[2], w3 - w2);
  }
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, times, 3, MPI_DOUBLE, MPI_MAX, rw_vec_comm(y)));
  double step = times[0] > 1e-9 ? times[0] : 1e-9;
  *w = times[1] / step;
  *r = times[2] / step;
cleanup:
  rw_store_destroy(probe);
  rw_vec_destroy(&tmp);
  rw_vec_destroy_array(&vecs, ns > per ? ns : per);
  return ierr;
}

/* The disk costs: one round through a one-slot disk store in the checkpoint directory. */
static int rw_measure_disk_costs(rw_stepper st, const rw_adjoint_options *opt, N_Vector y, int per,
                                 double *wd, double *rd)
{
  rw_store probe = NULL;
  char id[80];
  /* within the 64 characters a run id may have: at most 40 of the run's own, then -probe and
   * the FNV-1a hash of all of it, so that two runs whose ids share a prefix do not collide */
  const char *rid = opt->run_id ? opt->run_id : "run";
  uint32_t hash = 2166136261u;
  for (const char *q = rid; *q; q++)
    hash = (hash ^ (unsigned char)*q) * 16777619u;
  snprintf(id, sizeof id, "%.40s-probe-%08x", rid, (unsigned)hash);
  rw_store_hdf5_options ho = {
      .dir = opt->disk_dir ? opt->disk_dir : ".", .run_id = id, .contents = "probe"};
  RW_CALL(rw_store_create_hdf5(y, per, 1, &ho, &probe));
  RW_CALL(rw_measure_store_costs(st, opt, y, per, &probe, 1, wd, rd));
  return 0;
}

/* The host tier's copy costs: the fastest of three rounds through a one-slot host store (a copy
 * is short, so one round would measure noise). The probe's copies are synchronous: a whole
 * transfer each way, what a copy costs when nothing hides it (an asynchronous store would
 * serve the read from its device staging copy and measure a device copy instead). */
static int rw_measure_host_costs(rw_stepper st, const rw_adjoint_options *opt, N_Vector y, int per,
                                 double *wh, double *rh)
{
  rw_store probe = NULL;
  RW_CALL(rw_store_create_host_sync(y, per, 1, &probe));
  RW_CALL(rw_measure_store_costs(st, opt, y, per, &probe, 3, wh, rh));
  return 0;
}

/* Read-ahead for the disk store. Schedules are pure and deterministic, so a second copy of
 * the run's schedule, iterated ahead of the driver, tells which disk snapshot the driver will
 * restore next. Its read is started as soon as the last write to that slot before it has
 * been handed to the store (the store runs its I/O in order), so the read overlaps the
 * steps and adjoint steps in between. */
typedef struct {
  rw_storage_level level; /* RW_LEVEL_DISK, or RW_LEVEL_HOST (the host store's transfers) */
  rw_schedule ahead;
  long ahead_idx;   /* actions the copy has emitted */
  long *last_store; /* [slots of the level] index of the last STORE seen per slot */
  long at;          /* index of the next disk RESTORE (0: none known, -1: none left) */
  int slot, issued;
  int64_t step;
} rw_read_ahead;

/* Online schedules: the copy can only run ahead once the length is known. When the driver
 * tells its schedule the length after `emitted` actions, a copy replays those actions
 * (recording the disk stores among them) and is told the same length. Not collective. */
static int rw_read_ahead_begin(rw_read_ahead *ra, const rw_adjoint_options *opt, int slots,
                               int dslots, double wd, double rd, long emitted, long N)
{
  if (!ra->last_store) return 0; /* no disk store */
  RW_CALL(rw_make_schedule(opt, N, slots, dslots, wd, rd, &ra->ahead));
  for (long i = 0; i < emitted; i++) {
    rw_action a;
    RW_CALL(rw_schedule_next(ra->ahead, &a));
    ra->ahead_idx++;
    if (a.level == ra->level && a.type == RW_ACTION_STORE) ra->last_store[a.slot] = ra->ahead_idx;
  }
  RW_CALL(rw_schedule_set_steps(ra->ahead, N));
  return 0;
}

/* After the driver has executed `idx` actions: finds the next restore from the level's store
 * and starts its read when it is safe. Not collective. */
static int rw_read_ahead_step(rw_read_ahead *ra, long idx, rw_store disk, int pend_disk_slot)
{
  if (!ra->ahead || ra->at < 0) return 0;
  if (ra->at <= idx) { /* the known read was done: look for the next */
    ra->at = 0;
    while (ra->at == 0) {
      rw_action a;
      RW_CALL(rw_schedule_next(ra->ahead, &a));
      ra->ahead_idx++;
      if (a.type == RW_ACTION_TERMINATE) {
        ra->at = -1;
        return 0;
      }
      if (a.level == ra->level && a.type == RW_ACTION_STORE) ra->last_store[a.slot] = ra->ahead_idx;
      if (a.level == ra->level && a.type == RW_ACTION_RESTORE && ra->ahead_idx > idx) {
        ra->at = ra->ahead_idx;
        ra->slot = a.slot;
        ra->step = a.step;
        ra->issued = 0;
      }
    }
  }
  if (!ra->issued && ra->last_store[ra->slot] <= idx && pend_disk_slot != ra->slot) {
    RW_CALL(rw_store_prefetch(disk, ra->slot, ra->step));
    ra->issued = 1;
  }
  return 0;
}

/* --- Restart ------------------------------------------------------------------------------
 * A run with a disk tier records in its checkpoint files the facts its schedule was built
 * from (the step count, slot counts and disk costs: a measured cost would differ if measured
 * again, and so would the schedule). A restarted run rebuilds the same schedule from them and
 * replays its actions without executing them up to a resume point: a disk STORE of the first
 * sweep such that
 *   - every disk slot full at that point holds, on every rank, a complete snapshot of the
 *     step the schedule put there (rw_store_hdf5_check_slot: tag and chunk checksums as
 *     written), and
 *   - every RAM slot full at that point holds the same state (RAM is lost with the process;
 *     those slots are filled again from the disk snapshot).
 * The latest such point is taken; the state and the running cost come from its snapshot, so
 * every later step computes the same bits as the uninterrupted run. With none, the run
 * starts again from y0. Disk slots not needed from there on are released. */

#define RW_RESTART_FORMAT   "rewind-restart 1 steps=%ld ram_slots=%d disk_slots=%d per=%d"
#define RW_RESTART_COSTS    " write_cost=%a read_cost=%a"
#define RW_RESTART_COSTS_IN " write_cost=%la read_cost=%la"
/* A run with a host tier (three tiers) adds its host slots and copy costs to the record. */
#define RW_RESTART_HOST    " host_slots=%d host_write_cost=%a host_read_cost=%a"
#define RW_RESTART_HOST_IN " host_slots=%d host_write_cost=%la host_read_cost=%la"

/* Reads the killed run's schedule facts from the store's info and checks them against this
 * run's; returns its disk slots and costs. Not collective (every rank reads its own file; the
 * files of one run agree). */
static int rw_restart_info(rw_store disk, const char *dir, long N, int slots, int per, int *dslots,
                           double *wd, double *rd, rw_adjoint_options *opt)
{
  const char *info = rw_store_hdf5_info(disk);
  long n = -1;
  int rs = -1, ds = -1, pp = -1;
  RW_CHECK(sscanf(info, RW_RESTART_FORMAT RW_RESTART_COSTS_IN, &n, &rs, &ds, &pp, wd, rd) == 6,
           RW_ERR_IO,
           "restart_from '%s': the checkpoint file '%s' does not say which schedule wrote it "
           "(info = '%.80s'): it was not written by this version of Rewind",
           dir, rw_store_path(disk), info);
  RW_CHECK(n == N && rs == slots && pp == per, RW_ERR_DECK,
           "restart_from '%s': the checkpoints were written by a run of %ld steps with %d RAM "
           "slots and %d vectors per snapshot; this run has %ld steps, %d slots and %d vectors",
           dir, n, rs, pp, N, slots, per);
  *dslots = ds;
  /* the host tier: the killed run's slots must be this run's; its costs are adopted */
  const char *h = strstr(info, " host_slots=");
  int hs = 0;
  double hw = 0.0, hr = 0.0;
  if (h)
    RW_CHECK(sscanf(h, RW_RESTART_HOST_IN, &hs, &hw, &hr) == 3, RW_ERR_IO,
             "restart_from '%s': the checkpoint file '%s' has an unreadable host-tier record "
             "('%.60s')",
             dir, rw_store_path(disk), h);
  RW_CHECK(hs == opt->host_slots, RW_ERR_DECK,
           "restart_from '%s': the checkpoints were written by a run with %d host-tier slots "
           "(checkpoint_ram on a device run); this run has %d",
           dir, hs, opt->host_slots);
  opt->host_write_cost = hw;
  opt->host_read_cost = hr;
  return 0;
}

/* Replays the schedule's first sweep without executing it. With k >= 0: stops after action k
 * and leaves the slot contents there in ram/disk (step held, -1 empty) and action k in *kact.
 * With k < 0: counts in *ncand the disk STOREs of the first sweep and, when cand != NULL,
 * records their action indices in cand and in ok whether this rank could resume there (see
 * above). An adaptive run (N < 0) does not know where its first sweep ended: the replay stops
 * after step `last` (the latest step its files hold, agreed over ranks). Not collective. */
static int rw_restart_scan(rw_schedule base, const rw_adjoint_options *opt, long N, int slots,
                           int dslots, double wd, double rd, long k, int64_t *ram, int nram,
                           int64_t *disk, int ndisk, int64_t *host, int nhost, rw_action *kact,
                           rw_store ds, long *cand, int *ok, long *ncand, int64_t last)
{
  int ierr = 0;
  rw_schedule sc = NULL;
  for (int i = 0; i < nram; i++)
    ram[i] = -1;
  for (int i = 0; i < nhost; i++)
    host[i] = -1;
  for (int i = 0; i < ndisk; i++)
    disk[i] = -1;
  *ncand = 0;
  RW_TRY(rw_schedule_again(base, opt, N, slots, dslots, wd, rd, &sc));
  int64_t at = 0; /* the forward sweep's step */
  for (long i = 0;; i++) {
    rw_action a;
    /* An online schedule's first sweep ends where the driver tells it the length (ckpt_next:
     * before the action after the one that reaches step N - 1); it stores nothing after. */
    if (opt->schedule == RW_SCHEDULE_ONLINE && at == (N >= 0 ? N - 1 : last + 1)) break;
    RW_TRY(rw_schedule_next(sc, &a));
    if (a.type == RW_ACTION_FIRST_REVERSE || a.type == RW_ACTION_TERMINATE) break;
    if (a.type == RW_ACTION_ADVANCE) at = a.to;
    if (k >= 0 && i > k) break;
    if (a.type == RW_ACTION_STORE || a.type == RW_ACTION_FREE) {
      int64_t *lv = a.level == RW_LEVEL_DISK ? disk : a.level == RW_LEVEL_HOST ? host : ram;
      int nl = a.level == RW_LEVEL_DISK ? ndisk : a.level == RW_LEVEL_HOST ? nhost : nram;
      RW_CHECK_GOTO(a.slot >= 0 && a.slot < nl, RW_ERR_INTERNAL,
                    "restart: schedule slot %d outside the store's %d", a.slot, nl);
      lv[a.slot] = a.type == RW_ACTION_STORE ? a.step : -1;
    }
    if (i == k) *kact = a;
    if (k < 0 && a.type == RW_ACTION_STORE && a.level == RW_LEVEL_DISK) {
      if (cand) {
        int good = 1;
        for (int r = 0; good && r < nram; r++)
          good = ram[r] < 0 || ram[r] == a.step;
        for (int r = 0; good && r < nhost; r++) /* lost with the process too */
          good = host[r] < 0 || host[r] == a.step;
        for (int d = 0; good && d < ndisk; d++)
          if (disk[d] >= 0) RW_TRY(rw_store_hdf5_check_slot(ds, d, disk[d], 0, &good));
        cand[*ncand] = i;
        ok[*ncand] = good;
      }
      (*ncand)++;
    }
  }
cleanup:
  rw_schedule_destroy(&sc);
  return ierr;
}

/* Finds the resume point (see above), brings the stores, the state, the running cost and the
 * schedule `sch` to it, and sets *idx (actions done) and *at (the current step). Collective. */
static int rw_restart_resume(const rw_adjoint_options *opt, long N, int slots, int dslots,
                             double wd, double rd, rw_store *stores, rw_schedule sch, int per,
                             N_Vector cur, N_Vector *stages, long *idx, int64_t *at, double *q,
                             rw_time_record *rec, double *hprop, rw_adjoint_stats *s)
{
  int ierr = 0, nram = rw_store_num_slots(stores[RW_LEVEL_RAM]);
  int ndisk = rw_store_num_slots(stores[RW_LEVEL_DISK]);
  int nhost = rw_store_num_slots(stores[RW_LEVEL_HOST]);
  rw_store ds = stores[RW_LEVEL_DISK];
  int64_t *ram = NULL, *disk = NULL, *host = NULL;
  long *cand = NULL, ncand = 0, K = -1;
  int *ok = NULL;
  int64_t *seen = NULL; /* per disk slot: the step whose data were verified */
  double *tbuf = NULL;  /* adaptive: the time record read from the files */
  int64_t last = -1;    /* adaptive: the latest step held on disk, over ranks */
  rw_action ka;
  memset(&ka, 0, sizeof ka);
  if (N < 0) {
    int none_here = !rw_store_hdf5_has_times(ds);
    RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, &none_here, 1, MPI_INT, MPI_MAX, rw_vec_comm(cur)));
    RW_CHECK_GOTO(!none_here, RW_ERR_IO,
                  "restart_from '%s': the checkpoint files hold no adaptive time record (they "
                  "were written by a version of Rewind before 2026-12-02, which kept none), so "
                  "this adaptive run cannot continue from them; remove this run's "
                  "rewind-ckpt-* files there and run again without restart_from",
                  opt->restart_dir ? opt->restart_dir : "");
    for (int d = 0; d < ndisk; d++)
      if (rw_store_slot_step(ds, d) > last) last = rw_store_slot_step(ds, d);
    RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, &last, 1, MPI_INT64_T, MPI_MAX, rw_vec_comm(cur)));
    RW_TRY(rw_calloc((size_t)(last > 0 ? last : 0) + 2, sizeof *tbuf, "restart", &tbuf));
  }
  RW_TRY(rw_calloc((size_t)nram + 1, sizeof *ram, "restart", &ram));
  RW_TRY(rw_calloc((size_t)ndisk + 1, sizeof *disk, "restart", &disk));
  RW_TRY(rw_calloc((size_t)nhost + 1, sizeof *host, "restart", &host));
  long none = 0;
  RW_TRY(rw_restart_scan(sch, opt, N, slots, dslots, wd, rd, -1, ram, nram, disk, ndisk, host,
                         nhost, &ka, ds, NULL, NULL, &ncand, last));
  RW_TRY(rw_calloc((size_t)ncand + 1, sizeof *cand, "restart", &cand));
  RW_TRY(rw_calloc((size_t)ncand + 1, sizeof *ok, "restart", &ok));
  RW_TRY(rw_restart_scan(sch, opt, N, slots, dslots, wd, rd, -1, ram, nram, disk, ndisk, host,
                         nhost, &ka, ds, cand, ok, &ncand, last));
  /* The latest candidate that passes everywhere: the cheap check (stamps) first, then the
   * data of every disk slot it needs, each (slot, step) read once; agreed over ranks. */
  RW_TRY(rw_calloc((size_t)ndisk + 1, sizeof *seen, "restart", &seen));
  for (int d = 0; d < ndisk; d++)
    seen[d] = -1;
  long damaged = 0; /* later resume points whose data failed their checksums on some rank */
  for (long c = ncand - 1; c >= 0 && K < 0; c--) {
    int good = ok[c];
    if (good) {
      RW_TRY(rw_restart_scan(sch, opt, N, slots, dslots, wd, rd, cand[c], ram, nram, disk, ndisk,
                             host, nhost, &ka, ds, NULL, NULL, &none, last));
      for (int d = 0; good && d < ndisk; d++) {
        if (disk[d] < 0 || seen[d] == disk[d]) continue;
        RW_TRY(rw_store_hdf5_check_slot(ds, d, disk[d], 1, &good));
        if (good) seen[d] = disk[d];
      }
      /* adaptive: the time record up to here, which the run wrote before the snapshot (so a
       * record short of it or failing its checksums is damage, reported as such) */
      if (good && N < 0) {
        RW_TRY(rw_store_hdf5_get_times(ds, ka.step, tbuf, &good));
        good = good && tbuf[ka.step] < opt->tf;
      }
    }
    /* a point some rank's stamps call incomplete is one the crash cut short (expected, not
     * reported); one complete by its stamps whose data fail their checksums is reported */
    int res[2] = {-good, ok[c] && !good}; /* MAX: any rank not good; any rank's bad data */
    RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, res, 2, MPI_INT, MPI_MAX, rw_vec_comm(cur)));
    if (res[0] == -1)
      K = cand[c];
    else if (res[1])
      damaged++;
  }
  int me = 0;
  MPI_Comm_rank(rw_vec_comm(cur), &me);
  if (damaged > 0 && me == 0) /* not silent: the summary then names an earlier step */
    fprintf(stderr,
            "warning: restart: %ld later resume point(s) in %s hold snapshots%s whose data fail "
            "their checksums on some rank (a write the crash tore, or a damaged file) and were "
            "skipped; %s\n",
            damaged, opt->restart_dir ? opt->restart_dir : "the checkpoint directory",
            N < 0 ? " or adaptive time records" : "",
            K >= 0 ? "resuming from an earlier one" : "starting again from step 0");
  /* The slot contents at the resume point (none when starting again). */
  if (K >= 0)
    RW_TRY(rw_restart_scan(sch, opt, N, slots, dslots, wd, rd, K, ram, nram, disk, ndisk, host,
                           nhost, &ka, ds, NULL, NULL, &none, last));
  else { /* no resume point: start again from y0 */
    for (int d = 0; d < ndisk; d++)
      disk[d] = -1;
  }
  /* Release the disk slots not needed from here on. The files of the ranks may differ (the
   * killed run's ranks got to different points), and release is collective (it agrees on
   * errors): a rank whose slot is empty where another's is full takes part through sync. */
  for (int d = 0; d < ndisk; d++)
    seen[d] = disk[d] < 0 && rw_store_slot_step(ds, d) >= 0;
  RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, seen, ndisk, MPI_INT64_T, MPI_MAX, rw_vec_comm(cur)));
  for (int d = 0; d < ndisk; d++) {
    if (!seen[d]) continue;
    if (disk[d] < 0 && rw_store_slot_step(ds, d) >= 0)
      RW_TRY(rw_store_release(ds, d));
    else
      RW_TRY(rw_store_sync(ds));
  }
  /* adaptive: the time record cut to the resume point (the restarted run writes on from it),
   * after the slots past it are released: a restart of this restart never finds a complete
   * slot past the record */
  if (N < 0) RW_TRY(rw_store_hdf5_trim_times(ds, K >= 0 ? ka.step : -1));
  s->restart_step = 0;
  if (K >= 0) {
    rw_snapshot_tag tag = {.step = -1};
    RW_TRY(rw_store_get(ds, ka.slot, &tag, per == 1 ? &cur : stages));
    if (per > 1) rw_vec_copy(stages[0], cur);
    RW_CHECK_GOTO(tag.step == ka.step, RW_ERR_INTERNAL,
                  "restart: slot %d holds step %lld, not %lld", ka.slot, (long long)tag.step,
                  (long long)ka.step);
    for (int r = 0; r < nram; r++)
      if (ram[r] >= 0)
        RW_TRY(rw_store_put(stores[RW_LEVEL_RAM], r, &tag, per == 1 ? &cur : stages));
    for (int r = 0; r < nhost; r++)
      if (host[r] >= 0)
        RW_TRY(rw_store_put(stores[RW_LEVEL_HOST], r, &tag, per == 1 ? &cur : stages));
    for (long i = 0; i <= K; i++) {
      rw_action a;
      RW_TRY(rw_schedule_next(sch, &a));
    }
    *idx = K + 1;
    *at = ka.step;
    *q = tag.q;
    s->restart_step = (long)ka.step;
    if (N < 0) { /* adaptive: the record up to the resume point, and the step proposed there */
      int good = 0;
      RW_TRY(rw_time_record_reserve(rec, (long)ka.step));
      RW_TRY(rw_store_hdf5_get_times(ds, ka.step, rec->t, &good));
      int e = good && tag.h > 0.0 ? 0
                                  : RW_ERROR(RW_ERR_INTERNAL,
                                             "restart: the time record of step %lld cannot be "
                                             "read again",
                                             (long long)ka.step);
      RW_TRY(rw_error_agree(rw_vec_comm(cur), e));
      rec->n = (long)ka.step;
      *hprop = tag.h;
    }
  }
cleanup:
  rw_free(&ram);
  rw_free(&disk);
  rw_free(&host);
  rw_free(&cand);
  rw_free(&ok);
  rw_free(&seen);
  rw_free(&tbuf);
  return ierr;
}

/* --- The source ---------------------------------------------------------------------------- */

typedef struct {
  rw_state_source base;
  rw_adjoint_options o; /* the run's options; o.times becomes the adaptive run's record */
  int per, ns;          /* vectors per snapshot (1, or the stages), stage vectors */
  int slots, dslots;    /* RAM and disk slots from the budgets */
  double wd, rd;        /* disk write and read costs in steps */
  double hprop;         /* adaptive: the next proposed step size */
  size_t snap;          /* bytes of one snapshot on this rank */
  rw_schedule sch;
  rw_store stores[3];   /* indexed by rw_storage_level (RAM, DISK, HOST) */
  rw_read_ahead ra, rh; /* read-ahead of the disk store and of the host store */
  int staging_slots;    /* device slots given to the host tier's staging snapshots */
  int dstaging_slots;   /* device slots given to the disk tier's staging snapshot */
  long idx;             /* actions executed */
  /* cur: the state; yout: the driver's y, which the forward sweep's last step writes y_N into
   * (its y0 was copied into cur at the start); ynext: a spare state, for an adaptive step's
   * trial and for the step whose output is dropped (a pending stage snapshot's), allocated
   * where a run takes one (adaptive: at the start; else on the first such step) */
  N_Vector cur, yout, ynext, *stages;
  /* A restore from RAM lends the slot's vector (rw_store_view) instead of copying it into cur:
   * view is that vector (NULL: cur holds the state), at (view_level, view_slot). The next step
   * reads it where it lies and writes cur; the adjoint step reads it (fetch); anything else that
   * needs cur, or the slot's release, copies it first (ckpt_settle). Once the adjoint step has
   * read it (rev), the slot's release drops it instead: the state of a reversed step is not
   * used again until a RESTORE (dead: cur holds none, and an action that would read it is an
   * internal error rather than a silent wrong state). */
  N_Vector view;
  int view_slot, view_rev, dead;
  rw_storage_level view_level;
  rw_time_record rec;
  double *q; /* the driver's running-cost accumulator (the snapshots' tags record it) */
  int told;  /* the schedule knows the length */
  int64_t at, staged, have, ready; /* current step; step whose stages `stages` holds (staged:
                                      now, have: before the action); step fetch(n) finds ready */
  /* A stage snapshot waits for the next step from its state, which computes the stages. */
  /* Stores of one step on several levels (the online schedule's disk and RAM copies of a
   * period's start) wait together: the next step from there fills them all. */
  int pend_n, pend_slot[3];
  rw_storage_level pend_level[3];
  int64_t pend_step;
  double pend_q;
  double pend_h; /* adaptive first sweep: the step size proposed from the pending snapshot */
} rw_ckpt;

/* Options the checkpoint mode needs; the grid (unknown for adaptive runs). */
static int ckpt_check(rw_ckpt *c)
{
  rw_adjoint_options *opt = &c->o;
  if (!opt->adaptive) {
    double last;
    RW_CALL(rw_grid_setup(opt, &c->base.N, &last));
    return 0;
  }
  RW_CHECK(rw_stepper_is_adaptive(c->base.st, NULL), RW_ERR_ARG,
           "adaptive stepping needs a stepper with an embedded error estimate; '%s' has none "
           "(use dopri5)",
           rw_stepper_name(c->base.st));
  RW_CHECK(opt->schedule == RW_SCHEDULE_ONLINE, RW_ERR_ARG,
           "adaptive stepping does not know the number of steps in advance: it runs under the "
           "online schedule (checkpoint schedule 'online')");
  RW_CHECK(opt->rtol > 0.0 && opt->atol >= 0.0 && isfinite(opt->rtol) && isfinite(opt->atol),
           RW_ERR_ARG, "adaptive stepping needs rtol > 0 and atol >= 0 (got %g, %g)", opt->rtol,
           opt->atol);
  RW_CHECK(isfinite(opt->tf) && opt->tf > opt->t0 && opt->dt > 0.0, RW_ERR_ARG,
           "adaptive stepping needs tf > t0 and a first step dt > 0 (got [%g, %g], dt = %g)",
           opt->t0, opt->tf, opt->dt);
  opt->times = NULL;
  return 0;
}

/* Slots for a byte budget, the same on every rank (from the largest snapshot over ranks). */
static int ckpt_slots_for(const char *key, size_t bytes, size_t snap, N_Vector y, int *slots)
{
  unsigned long long big = snap;
  RW_CALL_MPI(
      MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, rw_vec_comm(y)));
  if (key)
    RW_CALL(rw_store_slots_for_budget_named(key, bytes, big ? (size_t)big : 1, slots));
  else
    RW_CALL(rw_store_slots_for_budget(bytes, big ? (size_t)big : 1, slots));
  return 0;
}

/* The budget: a snapshot holds the state, or with store_stages the stage inputs Y_1..Y_s of
 * the step that starts there (Y_1 is the state), so reversing that step after a restore needs
 * no recomputation. RAM and disk slots; the disk costs from the deck or measured now, before
 * anything is counted. Collective. */
static int ckpt_plan(rw_ckpt *c, N_Vector y)
{
  rw_adjoint_options *opt = &c->o;
  c->per = opt->store_stages ? c->ns : 1;
  c->snap = (size_t)c->per * rw_vec_bytes(y);
  c->slots = opt->ram_slots;
  if (opt->ram_bytes > 0) RW_CALL(ckpt_slots_for(NULL, opt->ram_bytes, c->snap, y, &c->slots));
  if (opt->schedule == RW_SCHEDULE_BINOMIAL || opt->schedule == RW_SCHEDULE_ONLINE)
    RW_CHECK(c->slots >= 1, RW_ERR_BUDGET,
             "checkpointing needs at least one RAM slot (ram_slots = %d)", c->slots);
  c->dslots = opt->disk_slots;
  c->wd = opt->write_cost;
  c->rd = opt->read_cost;
  if (opt->disk_bytes > 0)
    RW_CALL(ckpt_slots_for("checkpoint_disk", opt->disk_bytes, c->snap, y, &c->dslots));
  RW_CHECK(c->dslots >= 0, RW_ERR_ARG, "disk_slots = %d must be >= 0", c->dslots);
  RW_CHECK(!opt->restart_dir || opt->schedule == RW_SCHEDULE_ONLINE ||
               (opt->schedule == RW_SCHEDULE_BINOMIAL && !opt->adaptive),
           RW_ERR_ARG,
           "restart_from '%s': a restart continues a run with disk checkpoints under the binomial "
           "schedule at a fixed step or the online schedule",
           opt->restart_dir);
  if (opt->host_bytes > 0)
    RW_CALL(ckpt_slots_for("checkpoint_ram (the host tier)", opt->host_bytes, c->snap, y,
                           &opt->host_slots));
  RW_CHECK(opt->host_slots >= 0, RW_ERR_ARG, "host_slots = %d must be >= 0", opt->host_slots);
  int hstage = opt->host_slots > 0 && rw_vec_device(y) && !opt->host_sync;
  int dstage = c->dslots > 0 && rw_vec_device(y) && !opt->disk_sync;
  if ((hstage || dstage) && opt->ram_bytes > 0) {
    /* the host tier's two device staging snapshots (rw_store_create_host) and the disk tier's
     * one (rw_store_hdf5_options.device_staging) come out of the device budget; a budget
     * below three snapshots keeps its slots and copies synchronously. Should the schedule
     * leave a tier unused, ckpt_make_schedule gives its staging back. */
    unsigned long long big = c->snap;
    RW_CALL_MPI(
        MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, rw_vec_comm(y)));
    int full = c->slots, part = full;
    if (opt->ram_bytes >= 3 * big) {
      if (hstage) {
        RW_CALL(ckpt_slots_for(NULL, opt->ram_bytes - 2 * (size_t)big, c->snap, y, &part));
        c->staging_slots = full - part;
      }
      if (dstage && opt->ram_bytes >= (size_t)(2 * hstage + 2) * big) {
        RW_CALL(ckpt_slots_for(NULL, opt->ram_bytes - (size_t)(2 * hstage + 1) * big, c->snap, y,
                               &c->slots));
        c->dstaging_slots = part - c->slots;
      } else {
        c->slots = part;
        if (dstage) opt->disk_sync = 1;
      }
    } else {
      if (hstage) opt->host_sync = 1;
      if (dstage) opt->disk_sync = 1;
    }
  }
  if (opt->host_slots > 0 && (opt->host_write_cost < 0.0 || opt->host_read_cost < 0.0) &&
      !opt->restart_dir) { /* a restart takes the killed run's costs from its files */
    double mwh = 0.0, mrh = 0.0;
    RW_CALL(rw_measure_host_costs(c->base.st, opt, y, c->per, &mwh, &mrh));
    if (opt->host_write_cost < 0.0) opt->host_write_cost = mwh;
    if (opt->host_read_cost < 0.0) opt->host_read_cost = mrh;
    c->base.s->costs_measured = 1;
  }
  if (c->dslots > 0 && (c->wd < 0.0 || c->rd < 0.0) && !opt->restart_dir) {
    double mwd = 0.0, mrd = 0.0;
    RW_CALL(rw_measure_disk_costs(c->base.st, opt, y, c->per, &mwd, &mrd));
    if (c->wd < 0.0) c->wd = mwd;
    if (c->rd < 0.0) c->rd = mrd;
    c->base.s->costs_measured = 1;
  }
  return 0;
}

static const char *ckpt_contents(const rw_ckpt *c) { return c->per == 1 ? "state" : "stages"; }

/* Restart: the killed run's files, and the schedule it built (its slot counts and costs). */
static int ckpt_open_restart(rw_ckpt *c, N_Vector y)
{
  rw_adjoint_options *opt = &c->o;
  rw_store_hdf5_options ho = {.dir = opt->restart_dir,
                              .run_id = opt->run_id ? opt->run_id : "run",
                              .contents = ckpt_contents(c),
                              .keep = opt->disk_keep,
                              .deck = opt->run_deck,
                              .decomposition = opt->run_decomposition,
                              .restart = 1,
                              .device_staging = !opt->disk_sync};
  RW_CALL(rw_store_create_hdf5(y, c->per, 0, &ho, &c->stores[RW_LEVEL_DISK]));
  RW_CALL(rw_error_agree(rw_vec_comm(y),
                         rw_restart_info(c->stores[RW_LEVEL_DISK], opt->restart_dir, c->base.N,
                                         c->slots, c->per, &c->dslots, &c->wd, &c->rd, opt)));
  opt->disk_dir = opt->restart_dir;
  return 0;
}

/* The schedule, checked against the budget. */
static int ckpt_make_schedule(rw_ckpt *c, int *cap, int *dcap)
{
  rw_adjoint_options *opt = &c->o;
  RW_CALL(rw_make_schedule(opt, c->base.N, c->slots, c->dslots, c->wd, c->rd, &c->sch));
  int hcap = 0, dcap0 = 0;
  RW_CALL(rw_schedule_level_capacity(c->sch, RW_LEVEL_HOST, &hcap));
  RW_CALL(rw_schedule_level_capacity(c->sch, RW_LEVEL_DISK, &dcap0));
  int give = (hcap == 0 ? c->staging_slots : 0) + (dcap0 == 0 ? c->dstaging_slots : 0);
  if (give > 0) { /* a tier unused after all: no staging for it either */
    c->slots += give;
    if (hcap == 0) c->staging_slots = 0;
    if (dcap0 == 0) c->dstaging_slots = 0;
    rw_schedule_destroy(&c->sch);
    RW_CALL(rw_make_schedule(opt, c->base.N, c->slots, c->dslots, c->wd, c->rd, &c->sch));
  }
  RW_CALL(rw_schedule_capacity(c->sch, cap, dcap));
  if (opt->schedule == RW_SCHEDULE_BINOMIAL || opt->schedule == RW_SCHEDULE_ONLINE)
    RW_CHECK(*cap <= c->slots, RW_ERR_INTERNAL, "schedule wants %d slots, budget gives %d", *cap,
             c->slots);
  /* The fixed-interval and store-all schedules choose their own slot count: with a byte
   * budget it must fit, or the run stops here, before any step. */
  RW_CHECK(opt->ram_bytes == 0 || *cap <= c->slots, RW_ERR_BUDGET,
           "the %s schedule needs %d snapshots of %zu bytes (%.0f bytes) but the checkpoint "
           "budget is %zu bytes; use the binomial schedule, a longer interval or a larger "
           "budget",
           opt->schedule == RW_SCHEDULE_FIXED ? "fixed-interval" : "store-all", *cap, c->snap,
           (double)*cap * (double)c->snap, opt->ram_bytes);
  if (opt->restart_dir)
    RW_CHECK(*dcap == rw_store_num_slots(c->stores[RW_LEVEL_DISK]), RW_ERR_INTERNAL,
             "restart: the schedule wants %d disk slots, the files have %d", *dcap,
             rw_store_num_slots(c->stores[RW_LEVEL_DISK]));
  return 0;
}

/* The disk tier of dcap slots (the restart's files are open already), its fault injection and
 * its read-ahead. */
static int ckpt_create_disk(rw_ckpt *c, N_Vector y, int dcap)
{
  rw_adjoint_options *opt = &c->o;
  char info[384];
  int at = snprintf(info, sizeof info, RW_RESTART_FORMAT RW_RESTART_COSTS, c->base.N, c->slots,
                    c->dslots, c->per, c->wd, c->rd);
  if (opt->host_slots > 0 && at > 0 && (size_t)at < sizeof info)
    snprintf(info + at, sizeof info - (size_t)at, RW_RESTART_HOST, opt->host_slots,
             opt->host_write_cost, opt->host_read_cost);
  rw_store_hdf5_options ho = {.dir = opt->disk_dir ? opt->disk_dir : ".",
                              .run_id = opt->run_id ? opt->run_id : "run",
                              .contents = ckpt_contents(c),
                              .keep = opt->disk_keep,
                              .deck = opt->run_deck,
                              .decomposition = opt->run_decomposition,
                              .info = info,
                              .device_staging = !opt->disk_sync};
  if (!opt->restart_dir)
    RW_CALL(rw_store_create_hdf5(y, c->per, dcap, &ho, &c->stores[RW_LEVEL_DISK]));
  /* Fault injection for the tests (REWIND_FAULT_INJECT=kind@after, see rw_store.h). */
  const char *fault = getenv("REWIND_FAULT_INJECT");
  if (fault && *fault) {
    char kind[40] = "";
    long after = 0, leave = -1;
    int got = sscanf(fault, "%15[a-z]@%ld:%ld", kind, &after, &leave);
    RW_CHECK(got == 2 || (got == 3 && !strcmp(kind, "fill") && leave >= 0), RW_ERR_ARG,
             "REWIND_FAULT_INJECT = '%s': expected kind@after, e.g. flip@2, or fill@after:bytes",
             fault);
    if (got == 3) snprintf(kind + strlen(kind), sizeof kind - strlen(kind), ":%ld", leave);
    RW_CALL(rw_store_inject_fault(c->stores[RW_LEVEL_DISK], kind, after));
    /* a test hook: a real run that inherits it by mistake must not lose its files silently */
    if (rw_context_rank(rw_problem_context(c->base.prob)) == 0)
      fprintf(stderr,
              "warning: REWIND_FAULT_INJECT=%s is set: this run injects that fault into its disk "
              "checkpoints on purpose (a test hook; unset it for real runs)\n",
              fault);
  }
  /* an online schedule's copy starts when the length is known (rw_read_ahead_begin) */
  if (opt->schedule != RW_SCHEDULE_ONLINE)
    RW_CALL(
        rw_schedule_again(c->sch, opt, c->base.N, c->slots, c->dslots, c->wd, c->rd, &c->ra.ahead));
  RW_CALL(rw_calloc((size_t)dcap, sizeof *c->ra.last_store, "read-ahead", &c->ra.last_store));
  return 0;
}

/* Everything the sweeps touch, allocated here, never inside them (the adaptive step record
 * excepted: 8 bytes per step, grown geometrically). */
static int ckpt_alloc(rw_state_source *src, N_Vector y)
{
  rw_ckpt *c = (rw_ckpt *)src;
  rw_adjoint_stats *s = src->s;
  int cap = 0, dcap = 0;
  if (c->o.restart_dir) RW_CALL(ckpt_open_restart(c, y));
  RW_CALL(ckpt_make_schedule(c, &cap, &dcap));
  if (!rw_vec_device(y)) { /* RAM slots larger than the node's memory: refused here */
    char what[160];
    snprintf(what, sizeof what, "checkpoint mode's %d RAM slots", cap > 0 ? cap : 1);
    RW_CALL(rw_mem_check_available(
        rw_vec_comm(y), (size_t)(cap > 0 ? cap : 1) * (size_t)c->per * rw_vec_bytes(y), what,
        "give fewer slots or a smaller RAM budget (checkpoint_slots, checkpoint_ram), with disk "
        "slots (checkpoint_disk_slots) for the rest"));
  }
  RW_CALL(rw_store_create_ram(y, c->per, cap > 0 ? cap : 1, &c->stores[RW_LEVEL_RAM]));
  if (dcap > 0) RW_CALL(ckpt_create_disk(c, y, dcap));
  int hcap = 0;
  RW_CALL(rw_schedule_level_capacity(c->sch, RW_LEVEL_HOST, &hcap));
  if (hcap > 0) {
    if (c->o.host_sync)
      RW_CALL(rw_store_create_host_sync(y, c->per, hcap, &c->stores[RW_LEVEL_HOST]));
    else
      RW_CALL(rw_store_create_host(y, c->per, hcap, &c->stores[RW_LEVEL_HOST]));
    /* the host tier runs under a fixed-step binomial schedule only: its length is known */
    RW_CALL(rw_schedule_again(c->sch, &c->o, c->base.N, c->slots, c->dslots, c->wd, c->rd,
                              &c->rh.ahead));
    RW_CALL(rw_calloc((size_t)hcap, sizeof *c->rh.last_store, "read-ahead", &c->rh.last_store));
  }
  RW_CALL(rw_vec_clone(y, &c->cur));
  if (c->o.adaptive) RW_CALL(rw_vec_clone(y, &c->ynext));
  RW_CALL(rw_vec_clone_array(y, c->ns, &c->stages));
  if (c->o.adaptive) {
    RW_CALL(rw_calloc(1024, sizeof *c->rec.t, "adaptive step record", &c->rec.t));
    c->rec.cap = 1024;
    c->rec.t[0] = c->o.t0;
  }
  s->ram_slots = rw_store_num_slots(c->stores[RW_LEVEL_RAM]);
  s->disk_slots = rw_store_num_slots(c->stores[RW_LEVEL_DISK]);
  s->snapshot_bytes = c->snap;
  s->checkpoint_bytes = rw_store_bytes(c->stores[RW_LEVEL_RAM]);
  s->disk_bytes = rw_store_bytes(c->stores[RW_LEVEL_DISK]);
  s->write_cost = c->dslots > 0 ? c->wd : 0.0;
  s->read_cost = c->dslots > 0 ? c->rd : 0.0;
  s->host_slots = rw_store_num_slots(c->stores[RW_LEVEL_HOST]);
  s->host_bytes = rw_store_bytes(c->stores[RW_LEVEL_HOST]);
  s->host_staging_bytes =
      s->host_slots > 0 && rw_vec_device(y) && !c->o.host_sync ? 2 * c->snap : 0;
  s->disk_staging_bytes = s->disk_slots > 0 && rw_vec_device(y) && !c->o.disk_sync ? c->snap : 0;
  s->host_write_cost = c->o.host_slots > 0 ? c->o.host_write_cost : 0.0;
  s->host_read_cost = c->o.host_slots > 0 ? c->o.host_read_cost : 0.0;
  return 0;
}

/* Stores the pending stage snapshot, whose stages `stages` now holds. */
static int ckpt_put_pending(rw_ckpt *c)
{
  for (int i = 0; i < c->pend_n; i++)
    RW_CALL(rw_put_pending(c->stores[c->pend_level[i]], c->pend_slot[i], &c->o, c->base.N, &c->rec,
                           c->pend_step, c->pend_q, c->pend_h, c->stages));
  c->pend_n = 0;
  return 0;
}

/* The next action. Tells an online schedule the length when the forward sweep reaches the
 * last step of a fixed grid (l = n + 1; adaptively it is told just after that step, l = n),
 * and computes the stages of a pending stage snapshot that this action does not compute
 * itself (one extra step evaluation). */
static int ckpt_next(rw_ckpt *c, rw_action *a)
{
  long N = c->base.N;
  if (!c->told && !c->o.adaptive && c->at == N - 1) {
    RW_CALL(rw_schedule_set_steps(c->sch, N));
    RW_CALL(rw_read_ahead_begin(&c->ra, &c->o, c->slots, c->dslots, c->wd, c->rd, c->idx, N));
    c->told = 1;
  }
  RW_CALL(rw_schedule_next(c->sch, a));
  if (a->type == RW_ACTION_TERMINATE) return 0;
  if (a->type == RW_ACTION_ADVANCE) c->at = a->to;
  if (a->type == RW_ACTION_RESTORE) c->at = a->step;
  if (c->pend_n > 0 && !((a->type == RW_ACTION_ADVANCE || a->type == RW_ACTION_FIRST_REVERSE ||
                          a->type == RW_ACTION_STORE) &&
                         a->step == c->pend_step)) {
    /* an adaptive first sweep's step from there is not taken yet: its size is unknown */
    RW_CHECK(!c->o.adaptive || c->told, RW_ERR_INTERNAL,
             "checkpoint schedule: a stage snapshot of step %lld waits for a step the adaptive "
             "first sweep has not taken (action %d at step %lld)",
             (long long)c->pend_step, (int)a->type, (long long)a->step);
    double t = rw_grid_t(&c->o, N, c->pend_step);
    double h = rw_grid_t(&c->o, N, c->pend_step + 1) - t;
    rw_stepper_set_step_index(c->base.st, (long)c->pend_step);
    if (!c->ynext) RW_CALL(rw_vec_clone(c->cur, &c->ynext)); /* its output is dropped */
    RW_CALL(rw_stepper_step(c->base.st, t, h, c->cur, c->ynext, c->stages, NULL));
    RW_CALL(ckpt_put_pending(c));
    c->staged = -1;
  }
  c->have = c->staged; /* stages valid for this step, if the state was just restored */
  if (a->type != RW_ACTION_STORE && a->type != RW_ACTION_FREE) c->staged = -1;
  return 0;
}

/* One accepted adaptive step of the first sweep (step i); when it lands on tf, the length is
 * known and the schedule told. */
static int ckpt_adaptive_step(rw_ckpt *c, int64_t i, N_Vector *capture)
{
  rw_adjoint_options *opt = &c->o;
  RW_CALL(rw_adaptive_advance(c->base.st, opt, c->cur, c->ynext, capture, &c->hprop, c->q, &c->rec,
                              c->base.s));
  if (capture) RW_CALL(ckpt_put_pending(c));
  if (c->rec.t[c->rec.n] == opt->tf) {
    c->base.N = c->rec.n;
    opt->times = c->rec.t;
    opt->nsteps = c->base.N;
    RW_CALL(rw_schedule_set_steps(c->sch, c->base.N));
    RW_CALL(
        rw_read_ahead_begin(&c->ra, opt, c->slots, c->dslots, c->wd, c->rd, c->idx + 1, c->base.N));
    c->told = 1;
  }
  if (opt->monitor) RW_CALL(rw_call_monitor(opt, (long)(i + 1), c->rec.t[c->rec.n], c->cur));
  if (opt->progress)
    opt->progress(opt->progress_ctx, 0, (long)(i + 1), c->rec.t[c->rec.n], c->base.recomputed);
  return 0;
}

/* cur made to hold the state: the lent slot's vector copied into it (see rw_ckpt's view). */
static void ckpt_settle(rw_ckpt *c)
{
  if (!c->view) return;
  rw_vec_copy(c->view, c->cur);
  c->view = NULL;
}

/* An action that reads the current state: none after its step was reversed (see rw_ckpt). */
static int ckpt_live(const rw_ckpt *c, const char *what)
{
  RW_CHECK(!c->dead, RW_ERR_INTERNAL,
           "checkpoint schedule: %s after the current state's step was reversed and its slot "
           "freed, with no restore between",
           what);
  return 0;
}

/* ADVANCE: first sweep (running cost, monitor, progress) or recomputation (replay). The first
 * step after a restore from RAM reads the slot's vector and writes cur (a step out of place is
 * the same arithmetic as in place): the restore's copy is saved. */
static int ckpt_advance(rw_ckpt *c, const rw_action *a)
{
  rw_adjoint_options *opt = &c->o;
  if (a->to > a->step) RW_CALL(ckpt_live(c, "an advance"));
  if (opt->adaptive && a->first_sweep) ckpt_settle(c);
  for (int64_t i = a->step; i < a->to; i++) {
    N_Vector *capture = (c->pend_n > 0 && i == c->pend_step) ? c->stages : NULL;
    if (opt->adaptive && a->first_sweep) {
      RW_CALL(ckpt_adaptive_step(c, i, capture));
      continue;
    }
    if (opt->adaptive) opt->times = c->rec.t; /* replay: the record may have moved */
    double t, h;
    rw_source_step(&c->base, (long)i, &t, &h);
    rw_stepper_set_step_index(c->base.st, (long)i);
    N_Vector in = c->view ? c->view : c->cur;
    c->view = NULL;
    RW_CALL(rw_stepper_step(c->base.st, t, h, in, c->cur, capture, a->first_sweep ? c->q : NULL));
    if (capture) RW_CALL(ckpt_put_pending(c));
    if (a->first_sweep && opt->monitor) RW_CALL(rw_call_monitor(opt, (long)(i + 1), t + h, c->cur));
    if (!a->first_sweep) c->base.recomputed++;
    if (a->first_sweep && opt->progress)
      opt->progress(opt->progress_ctx, 0, (long)(i + 1), t + h, c->base.recomputed);
  }
  return 0;
}

static int ckpt_store(rw_ckpt *c, const rw_action *a)
{
  /* An adaptive first sweep's disk snapshot: the times up to its step go to the files first
   * and its tag takes the step size proposed from it, so a restart from it has the record to
   * replay and takes the same steps after it (rw_restart_resume). */
  const int front = c->o.adaptive && !c->told && a->step == c->rec.n;
  if (front && a->level == RW_LEVEL_DISK)
    RW_CALL(rw_store_hdf5_put_times(c->stores[RW_LEVEL_DISK], c->rec.t, c->rec.n));
  if (c->per == 1) {
    rw_snapshot_tag tg = rw_tag(&c->o, c->base.N, c->rec.t, c->rec.n, a->step);
    tg.q = *c->q; /* the running cost so far (meaningful in the first sweep: restarts) */
    if (front) tg.h = c->hprop;
    RW_CALL(ckpt_live(c, "a store"));
    RW_CALL(rw_store_put(c->stores[a->level], a->slot, &tg, c->view ? &c->view : &c->cur));
    return 0;
  }
  RW_CHECK(c->pend_n < 3 && (c->pend_n == 0 || c->pend_step == a->step), RW_ERR_INTERNAL,
           "checkpoint schedule: a stage snapshot of step %lld while %d of step %lld wait",
           (long long)a->step, c->pend_n, (long long)c->pend_step);
  c->pend_q = *c->q;
  c->pend_h = front ? c->hprop : 0.0;
  c->pend_slot[c->pend_n] = a->slot;
  c->pend_level[c->pend_n++] = a->level;
  c->pend_step = a->step;
  return 0;
}

static int ckpt_restore(rw_ckpt *c, const rw_action *a)
{
  rw_snapshot_tag tag = {.step = -1};
  c->view = NULL, c->view_rev = 0, c->dead = 0; /* cur is overwritten, or a new slot lent */
  if (c->per == 1) {
    int viewed = 0;
    N_Vector v = NULL;
    RW_CALL(rw_store_view(c->stores[a->level], a->slot, &tag, &v, &viewed));
    if (viewed)
      c->view = v, c->view_level = a->level, c->view_slot = a->slot;
    else
      RW_CALL(rw_store_get(c->stores[a->level], a->slot, &tag, &c->cur));
  } else {
    RW_CALL(rw_store_get(c->stores[a->level], a->slot, &tag, c->stages));
    rw_vec_copy(c->stages[0], c->cur);
    c->staged = a->step;
  }
  RW_CHECK(tag.step == a->step, RW_ERR_INTERNAL, "slot %d holds step %lld, expected %lld", a->slot,
           (long long)tag.step, (long long)a->step);
  c->base.s->restores++;
  return 0;
}

/* FIRST_REVERSE, its forward part: the last step, its stages kept for its adjoint step, ends
 * the forward sweep in the driver's y = y_N. */
static int ckpt_last_step(rw_ckpt *c, const rw_action *a)
{
  rw_adjoint_options *opt = &c->o;
  RW_CALL(ckpt_live(c, "the last step"));
  ckpt_settle(c);
  long N = c->base.N;
  double t = rw_grid_t(opt, N, a->step), tend = rw_grid_end(opt, N);
  double h = tend - t;
  rw_stepper_set_step_index(c->base.st, (long)a->step);
  RW_CALL(
      rw_stepper_step(c->base.st, t, h, c->cur, c->yout, c->stages, a->first_sweep ? c->q : NULL));
  if (c->pend_n > 0) RW_CALL(ckpt_put_pending(c));
  if (a->first_sweep && opt->monitor) RW_CALL(rw_call_monitor(opt, N, tend, c->yout));
  c->ready = a->step;
  return 0;
}

/* The slot of the level's pending stage snapshot, -1 when none waits there. */
static int ckpt_pending_slot(const rw_ckpt *c, rw_storage_level level)
{
  for (int i = 0; i < c->pend_n; i++)
    if (c->pend_level[i] == level) return c->pend_slot[i];
  return -1;
}

/* Executes one action (fetch answers REVERSE), then starts the read-ahead it allows. */
static int ckpt_execute(rw_ckpt *c, const rw_action *a)
{
  switch (a->type) {
  case RW_ACTION_ADVANCE:
    RW_CALL(ckpt_advance(c, a));
    break;
  case RW_ACTION_STORE:
    RW_CALL(ckpt_store(c, a));
    break;
  case RW_ACTION_RESTORE:
    RW_CALL(ckpt_restore(c, a));
    break;
  case RW_ACTION_FREE: /* a lent slot is lent until its release (rw_store_view) */
    if (c->view && a->level == c->view_level && a->slot == c->view_slot) {
      if (c->view_rev)
        c->view = NULL, c->dead = 1;
      else
        ckpt_settle(c);
    }
    RW_CALL(rw_store_release(c->stores[a->level], a->slot));
    break;
  case RW_ACTION_FIRST_REVERSE:
    RW_CALL(ckpt_last_step(c, a));
    break;
  case RW_ACTION_REVERSE:
    break;
  default:
    return RW_ERROR(RW_ERR_INTERNAL, "unexpected schedule action %d", (int)a->type);
  }
  c->idx++;
  if (c->stores[RW_LEVEL_DISK])
    RW_CALL(rw_read_ahead_step(&c->ra, c->idx, c->stores[RW_LEVEL_DISK],
                               ckpt_pending_slot(c, RW_LEVEL_DISK)));
  if (c->stores[RW_LEVEL_HOST])
    RW_CALL(rw_read_ahead_step(&c->rh, c->idx, c->stores[RW_LEVEL_HOST],
                               ckpt_pending_slot(c, RW_LEVEL_HOST)));
  return 0;
}

/* The forward sweep: the schedule's actions up to its first reversal (the last step). */
/* The forward sweep failed on an I/O error (a full disk, a failed write) after disk
 * checkpoints were written: they are kept, not removed with the store, and the message says
 * how to continue from them (a restart checks each slot and skips one a failed write left
 * incomplete). Returns ierr. */
static int ckpt_keep_for_restart(rw_ckpt *c, int ierr)
{
  rw_store d = c->stores[RW_LEVEL_DISK];
  if (ierr != RW_ERR_IO || !d || rw_store_peak_used(d) < 1) return ierr;
  const char *dir = c->o.restart_dir ? c->o.restart_dir : c->o.disk_dir ? c->o.disk_dir : ".";
  rw_store_hdf5_keep(d);
  rw_error_note("; the disk checkpoints written so far are kept in checkpoint_dir '%s': once "
                "the cause is fixed, run again with -restart_from %s to continue from them",
                dir, dir);
  return ierr;
}

static int ckpt_forward(rw_state_source *src, N_Vector y, double *q)
{
  rw_ckpt *c = (rw_ckpt *)src;
  rw_adjoint_options *opt = &c->o;
  rw_adjoint_stats *s = src->s;
  c->q = q;
  rw_vec_copy(y, c->cur);
  c->yout = y;
  if (opt->monitor)
    RW_CALL(rw_call_monitor(opt, 0, opt->adaptive ? opt->t0 : rw_grid_t(opt, src->N, 0), c->cur));
  c->told = opt->schedule != RW_SCHEDULE_ONLINE;
  if (opt->restart_dir) {
    RW_CALL(rw_restart_resume(opt, src->N, c->slots, c->dslots, c->wd, c->rd, c->stores, c->sch,
                              c->per, c->cur, c->stages, &c->idx, &c->at, q, &c->rec, &c->hprop,
                              s));
    s->restart_skipped = s->restart_step;
    if (opt->monitor && s->restart_step > 0)
      RW_CALL(rw_call_monitor(
          opt, s->restart_step,
          opt->adaptive ? c->rec.t[c->rec.n] : rw_grid_t(opt, src->N, s->restart_step), c->cur));
  }
  rw_action a;
  do {
    int ierr = ckpt_next(c, &a);
    if (ierr) return ckpt_keep_for_restart(c, rw_error_push(ierr, __func__, __FILE__, __LINE__));
    RW_CHECK(a.type != RW_ACTION_TERMINATE && a.type != RW_ACTION_REVERSE, RW_ERR_INTERNAL,
             "the schedule's first sweep ended without reversing the last step");
    ierr = ckpt_execute(c, &a);
    if (ierr) return ckpt_keep_for_restart(c, rw_error_push(ierr, __func__, __FILE__, __LINE__));
  } while (a.type != RW_ACTION_FIRST_REVERSE);
  /* The sweep's disk writes are done and their errors known here, where a failed one keeps
   * the files for a restart; found later by the backward sweep's first read, a full disk
   * would have read as a damaged slot and the files been removed. Waits for at most the last
   * write (write-behind): the reads the backward sweep queues next would wait for it too. */
  int ierr = rw_store_sync(c->stores[RW_LEVEL_DISK]);
  if (ierr) return ckpt_keep_for_restart(c, rw_error_push(ierr, __func__, __FILE__, __LINE__));
  return 0;
}

/* y_n: the schedule's actions up to its reversal of step n. */
static int ckpt_fetch(rw_state_source *src, long n, rw_adjoint_state *adj, rw_fetch *out)
{
  rw_ckpt *c = (rw_ckpt *)src;
  (void)adj;
  out->y = c->cur;
  if (c->ready == n) { /* the last step: its stages were kept by the forward sweep */
    out->stages = c->stages;
    c->ready = -1;
    return 0;
  }
  rw_action a;
  do {
    RW_CALL(ckpt_next(c, &a));
    RW_CHECK(a.type != RW_ACTION_TERMINATE && a.type != RW_ACTION_FIRST_REVERSE, RW_ERR_INTERNAL,
             "the schedule stopped before reversing step %ld", n);
    RW_CALL(ckpt_execute(c, &a));
  } while (a.type != RW_ACTION_REVERSE);
  RW_CHECK(a.step == n, RW_ERR_INTERNAL, "the schedule reverses step %lld, expected %ld",
           (long long)a.step, n);
  /* the slot's vector where the restore lent it: the adjoint step reads y_n, never writes it */
  RW_CALL(ckpt_live(c, "a reversal"));
  out->y = c->view ? c->view : c->cur;
  if (c->view) c->view_rev = 1;
  out->stages = c->have == a.step ? c->stages : NULL;
  /* Otherwise `stages` holds nothing that is needed: a pending stage snapshot was put before
   * this action (ckpt_next), a restored one belonged to this action alone (have), and the
   * next advance or restore writes it whole. So the stepper may recompute into it. */
  out->scratch = out->stages ? NULL : c->stages;
  return 0;
}

/* The schedule's last actions; then every disk write must be done, and its errors known,
 * before any result (write-behind). */
static int ckpt_end(rw_state_source *src)
{
  rw_ckpt *c = (rw_ckpt *)src;
  for (;;) {
    rw_action a;
    RW_CALL(ckpt_next(c, &a));
    if (a.type == RW_ACTION_TERMINATE) break;
    RW_CHECK(a.type != RW_ACTION_REVERSE && a.type != RW_ACTION_FIRST_REVERSE, RW_ERR_INTERNAL,
             "the schedule reverses step %lld after step 0", (long long)a.step);
    RW_CALL(ckpt_execute(c, &a));
  }
  RW_CALL(rw_store_sync(c->stores[RW_LEVEL_DISK]));
  rw_store_hdf5_finished(c->stores[RW_LEVEL_DISK]); /* a restart's files may go now */
  return 0;
}

static int ckpt_stats(rw_state_source *src, rw_adjoint_stats *s)
{
  rw_ckpt *c = (rw_ckpt *)src;
  long N = src->N;
  rw_schedule_stats ss;
  RW_CALL(rw_schedule_get_stats(c->sch, &ss));
  /* the optimum for the slots this schedule had: its budget, or for the fixed and store-all
   * schedules (whose slots follow from the interval, not the budget) the RAM slots they used */
  int cmp = c->slots;
  if (c->o.schedule == RW_SCHEDULE_FIXED || c->o.schedule == RW_SCHEDULE_STORE_ALL)
    cmp = rw_store_peak_used(c->stores[RW_LEVEL_RAM]);
  int64_t topt = 0;
  if (cmp >= 1) RW_CALL(rw_binomial_advances(N, cmp, NULL, &topt));
  s->snapshots = (long)ss.stores;
  s->advances = (long)ss.advances;
  s->optimal_advances = (long)topt;
  s->recomputed_steps = (long)ss.recomputations;
  s->peak_slots = rw_store_peak_used(c->stores[RW_LEVEL_RAM]) +
                  rw_store_peak_used(c->stores[RW_LEVEL_DISK]) +
                  rw_store_peak_used(c->stores[RW_LEVEL_HOST]);
  rw_store host = c->stores[RW_LEVEL_HOST];
  s->host_writes = rw_store_writes(host);
  s->host_reads = rw_store_reads(host);
  s->host_prefetched = rw_store_host_prefetch_hits(host);
  s->host_from_staging = rw_store_host_staged_hits(host);
  s->time_host_write = rw_store_write_time(host);
  s->time_host_read = rw_store_read_time(host);
  rw_store disk = c->stores[RW_LEVEL_DISK];
  s->disk_writes = rw_store_writes(disk);
  s->disk_reads = rw_store_reads(disk);
  s->time_disk_write = rw_store_write_time(disk);
  s->time_disk_read = rw_store_read_time(disk);
  if (disk && c->o.schedule == RW_SCHEDULE_ONLINE) {
    int64_t pn = 0, p0 = 0;
    RW_CALL(rw_schedule_online_disk_period(c->sch, &pn, &p0));
    s->disk_period = (long)pn;
    s->disk_period_chosen = (long)p0;
  }
  s->schedule_cost = (double)ss.advances + s->write_cost * (double)ss.disk_writes +
                     s->read_cost * (double)ss.disk_reads +
                     s->host_write_cost * (double)ss.host_writes +
                     s->host_read_cost * (double)ss.host_reads;
  return 0;
}

static void ckpt_destroy(rw_state_source *src)
{
  rw_ckpt *c = (rw_ckpt *)src;
  if (!c) return;
  rw_schedule_destroy(&c->sch);
  rw_schedule_destroy(&c->ra.ahead);
  rw_free(&c->ra.last_store);
  rw_schedule_destroy(&c->rh.ahead);
  rw_free(&c->rh.last_store);
  rw_store_destroy(&c->stores[RW_LEVEL_RAM]);
  rw_store_destroy(&c->stores[RW_LEVEL_DISK]);
  rw_store_destroy(&c->stores[RW_LEVEL_HOST]);
  rw_vec_destroy(&c->cur);
  rw_vec_destroy(&c->ynext);
  rw_vec_destroy_array(&c->stages, c->ns);
  rw_free(&c->rec.t);
  rw_free(&c);
}

static const rw_state_source_ops rw_ckpt_ops = {.alloc = ckpt_alloc,
                                                .forward = ckpt_forward,
                                                .fetch = ckpt_fetch,
                                                .end = ckpt_end,
                                                .stats = ckpt_stats,
                                                .destroy = ckpt_destroy};

int rw_source_checkpoint_create(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                                N_Vector y, rw_adjoint_stats *s, rw_state_source **out)
{
  int ierr = 0;
  rw_ckpt *c = NULL;
  RW_CALL(rw_calloc(1, sizeof *c, "checkpoint mode", &c));
  c->base =
      (rw_state_source){.ops = &rw_ckpt_ops, .prob = prob, .st = st, .opt = &c->o, .N = -1, .s = s};
  c->o = *opt;
  c->ns = rw_stepper_num_stage_vectors(st);
  c->hprop = opt->dt;
  c->staged = c->have = c->ready = c->pend_step = -1;
  c->pend_n = 0;
  c->ra.level = RW_LEVEL_DISK;
  c->rh.level = RW_LEVEL_HOST;
  RW_TRY(ckpt_check(c));
  RW_TRY(ckpt_plan(c, y));
  *out = &c->base;
  return 0;
cleanup:
  ckpt_destroy(&c->base);
  return ierr;
}
