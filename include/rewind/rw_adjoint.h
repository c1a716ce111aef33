/* The adjoint driver: forward sweep, objective, backward sweep, gradients.
 *
 * Time grid: t_n = t0 + n dt for n < N and t_N = tf exactly, where N is the number of steps
 * of size dt that fit in [t0, tf] rounded up; when dt does not divide tf - t0 the last step
 * is shorter and lands exactly on tf. The forward sweep computes
 *   J = g(y_N; p) + q_N,   q_N = the stepper's quadrature of the running cost r,
 * and the backward sweep applies each step's discrete adjoint, so dJ/dp and dJ/dy0 are the
 * exact derivatives of that J (to rounding).
 *
 * Modes: RW_ADJOINT_STORE keeps every state (or every stage with store_stages) in RAM.
 * Checkpointed modes run under a schedule (see checkpoint/). The memory-free modes rebuild
 * each y_n from y_{n+1} instead: RW_ADJOINT_REVERSIBLE by the stepper's inverse step
 * (leapfrog), RW_ADJOINT_BACKSOLVE by a step of negative size (explicit RK). Both keep sparse
 * anchors (the exact y_n every drift_interval steps) and, when the backward sweep reaches an
 * anchor, measure the drift ||y_rebuilt - y_anchor||_2 / ||y_anchor||_2 (global norms) of the
 * segment it just reversed. Past drift_tol, drift_action says what happens:
 *   RW_DRIFT_FALLBACK: the segment's adjoint contributions are dropped (lambda, dJ/dp and the
 *     field adjoint go back to their values at the segment's end) and the segment is reversed
 *     again from its anchor under a binomial schedule in the slots the anchors leave free, so
 *     its gradient is exactly the checkpointed one (bit for bit the store-mode gradient when
 *     every segment falls back);
 *   RW_DRIFT_ABORT: RW_ERR_DRIFT on every rank, naming the segment, drift and tolerance, before
 *     any gradient is returned;
 *   RW_DRIFT_WARN: the gradient is kept and the largest accepted drift reported in the stats.
 * Below the tolerance the segment's last adjoint step uses the anchor itself, and the rebuild
 * of the next segment starts from it. */
#ifndef REWIND_RW_ADJOINT_H
#define REWIND_RW_ADJOINT_H

#include "rw_stepper.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RW_ADJOINT_STORE = 0,
  RW_ADJOINT_CHECKPOINT = 1,
  RW_ADJOINT_REVERSIBLE = 2,
  RW_ADJOINT_BACKSOLVE = 3
} rw_adjoint_mode;

typedef enum { RW_DRIFT_FALLBACK = 0, RW_DRIFT_ABORT, RW_DRIFT_WARN } rw_drift_action;

/* Schedules for RW_ADJOINT_CHECKPOINT (see rw_schedule.h). */
typedef enum {
  RW_SCHEDULE_BINOMIAL = 0, /* Revolve: fewest recomputations for the slots */
  RW_SCHEDULE_ONLINE,       /* for a number of steps not known in advance */
  RW_SCHEDULE_FIXED,        /* every `interval` steps, as CVODES / PETSc stride */
  RW_SCHEDULE_STORE_ALL     /* every state, through the store (baseline) */
} rw_schedule_kind;

/* Called after each forward step of the first sweep (never during recomputation) with the
 * step index n (0 = initial state), time and state. Collective. Return 0 to go on. A nonzero
 * return does not end the run early: it aborts the solve, which returns that code as an error
 * (give it a message with RW_ERROR), with no objective or gradient. The driver calls the
 * monitor holding rw_hdf5_lock (it may write HDF5 output); it must not take that lock itself,
 * which is not recursive. */
typedef int (*rw_monitor_fn)(void *mctx, long n, double t, N_Vector y);

/* Progress report: phase 0 = forward sweep (step = steps taken, t = simulated time),
 * phase 1 = backward sweep (step = steps still to reverse), with the recomputed steps so
 * far. Called every step; throttle in the callback. Not collective. */
typedef void (*rw_progress_fn)(void *pctx, int phase, long step, double t, long recomputed);

typedef struct {
  double t0, tf, dt;
  rw_progress_fn progress; /* optional */
  void *progress_ctx;
  rw_adjoint_mode mode;
  int store_stages; /* store mode: store every stage (no recomputation in the adjoint step) */
  /* Checkpoint mode: snapshots hold the state. The RAM slot count (which counts the slot that
   * holds y0) is ram_slots, or ram_bytes / snapshot bytes when ram_bytes > 0; a budget below
   * one snapshot is RW_ERR_BUDGET before any step is taken. */
  rw_schedule_kind schedule;
  int ram_slots;
  size_t ram_bytes;
  long interval; /* RW_SCHEDULE_FIXED */
  /* Disk tier (binomial schedule: the optimal two-level schedule; online schedule, also with
   * adaptive steps: a disk checkpoint every P steps, P chosen from the costs, each period
   * reversed in RAM, see rw_schedule_create_online_disk): disk_slots HDF5 slots, or disk_bytes /
   * snapshot bytes when disk_bytes > 0, in files under disk_dir ("." when NULL), one per rank,
   * removed at the end unless disk_keep. The two-level schedule minimises advances + write_cost x
   * disk writes + read_cost x disk reads with the costs in units of one step; a negative cost is
   * measured at start-up (one step, one write and one read of a snapshot, the largest time over
   * ranks). run_id names the files and is written into them (the apps hash the deck and the
   * decomposition). */
  int disk_slots;
  size_t disk_bytes;
  const char *disk_dir;
  int disk_keep;
  double write_cost, read_cost;
  const char *run_id;
  /* Host tier (a device run's middle tier; binomial schedule, fixed step): host_slots slots of
   * page-locked host RAM, or host_bytes / snapshot bytes when host_bytes > 0, between the
   * RAM-store slots (device memory on a device run) and the disk. The schedule is then the
   * optimal three-tier one (rw_schedule_create_tiered): advances + host_write_cost x host
   * writes + host_read_cost x host reads + the disk terms, costs in units of one step; a
   * negative host cost is measured at start-up (one step, one copy to the host tier and one
   * back, the largest time over ranks). 0 slots: no host tier. */
  int host_slots;
  size_t host_bytes;
  double host_write_cost, host_read_cost;
  /* 1: the host tier's copies synchronous, without the staging snapshots (rw_store_create_host),
   * to measure what overlapping them gains; 0 (default): asynchronous on a device */
  int host_sync;
  /* 1: the disk tier's copies from device memory synchronous; 0 (default): on a device the
   * disk store gets a device staging snapshot and its transfers overlap the steps
   * (rw_store_hdf5_options.device_staging). Out of a byte budget (ram_bytes) as the host
   * tier's staging is; below three snapshots of budget the copies stay synchronous. */
  int disk_sync;
  /* Recorded in the disk checkpoint files so that a refused restart says what differs: the
   * effective deck (one "key: value" per line) and the decomposition (free text). May be NULL. */
  const char *run_deck, *run_decomposition;
  /* Restart (a disk tier under the binomial schedule at a fixed step, or under the online
   * schedule, adaptive runs included): continue the forward sweep of a
   * run with the same run_id that was killed, from the disk checkpoints it left in
   * restart_dir (which then replaces disk_dir). The driver replays the schedule to the last
   * disk snapshot of the first sweep that every rank holds complete (checksums as written)
   * and that no lost RAM checkpoint is needed past, restores it with the running cost it
   * had (an adaptive run: with its accepted times up to there and the step size proposed
   * there, from the files), and goes on; the gradient equals an uninterrupted run's bit for
   * bit. The disk
   * costs and slot counts are the killed run's (recorded in its files), so a measured cost
   * is not measured again. NULL: a new run. */
  const char *restart_dir;
  /* Replay grid: when times != NULL the steps go times[0] -> times[1] -> .. -> times[nsteps]
   * (strictly increasing; t0, tf and dt are then ignored). */
  const double *times;
  long nsteps;
  /* Adaptive stepping with the stepper's embedded pair (dopri5): dt is the first trial
   * step; accepted step sizes are recorded and replayed by recomputations and the adjoint,
   * so the gradient is exact for the accepted step sequence. Runs in checkpoint mode under
   * the online schedule (the number of steps is unknown until tf is reached). */
  int adaptive;
  double rtol, atol;
  long max_steps; /* 0: 10^7 */
  /* Memory-free modes (reversible, backsolve): the anchors and the fallback's slots share the
   * checkpoint budget (ram_slots, or ram_bytes / state bytes). drift_interval > 0 puts an
   * anchor every drift_interval steps and leaves the other slots to the fallback (at least
   * one must be left); 0 gives half the budget to anchors, evenly spaced. With disk_slots
   * or disk_bytes the anchors live in the HDF5 store (disk_dir), as many as it holds or one
   * every drift_interval steps, and every RAM slot goes to the fallback. */
  double drift_tol; /* relative; default 1e-6 */
  rw_drift_action drift_action;
  long drift_interval;
  rw_monitor_fn monitor; /* optional */
  void *monitor_ctx;
} rw_adjoint_options;

typedef struct {
  long steps;     /* N */
  double last_dt; /* size of the last step */
  double J, J_terminal, J_running;
  long rhs_forward, rhs_backward; /* right-hand-side evaluations in each sweep */
  long vjp_y, vjp_p;
  long snapshots;          /* snapshots stored */
  long advances;           /* schedule advances (Revolve's count; store mode: N - 1) */
  long optimal_advances;   /* t(N, c), the binomial optimum with the same slots (fixed, store-all:
                              the RAM slots they used) */
  long recomputed_steps;   /* forward steps taken again during the backward sweep */
  long restores;           /* snapshots read back */
  long accepted, rejected; /* adaptive steps */
  int ram_slots;           /* slots the store holds (checkpoint mode) */
  int disk_slots;          /* slots of the disk store (0: none) */
  long disk_writes, disk_reads;
  int host_slots; /* slots of the host tier (0: none) */
  long host_writes, host_reads;
  double host_write_cost, host_read_cost; /* the host tier's costs the schedule used, in steps */
  size_t host_bytes;                      /* bytes of the host slots on this rank */
  long host_prefetched;      /* host reads served by a transfer started ahead (a device run) */
  long host_from_staging;    /* host reads served by the device staging copy of the last write */
  size_t host_staging_bytes; /* device memory of the host tier's two staging snapshots */
  size_t disk_staging_bytes; /* device memory of the disk tier's staging snapshot */
  double time_host_write, time_host_read; /* seconds in the host tier on this rank */
  double write_cost, read_cost;           /* the costs the schedule used, in steps */
  int costs_measured;                     /* 1 when they were measured at start-up */
  double schedule_cost;                   /* advances + write_cost writes + read_cost reads */
  size_t disk_bytes;                      /* bytes of the disk slots on this rank */
  long disk_period, disk_period_chosen;   /* online with disk: period used (doubled when the
                                             disk filled) and chosen from the costs; else 0 */
  long restart_step;                      /* restart: the step resumed from (-1: none;
                                             0: no usable snapshot, started again) */
  long restart_skipped;                   /* restart: first-sweep steps not taken again */
  double time_disk_write, time_disk_read; /* seconds in the disk store on this rank */
  int peak_slots;                         /* most slots full at once */
  size_t snapshot_bytes;                  /* bytes of one snapshot on this rank */
  size_t checkpoint_bytes;                /* peak bytes held in snapshots on this rank */
  size_t peak_alloc_bytes;                /* peak bytes through Rewind's allocator during the run */
  double time_forward, time_backward;
  /* Memory-free modes: anchors and their spacing, the fallback's slots, the drift of every
   * segment reversed (max, mean), the largest drift accepted (<= drift_tol unless
   * drift_action is warn), segments that fell back and the forward steps they took again. */
  long anchors, anchor_interval;
  int fallback_slots;
  long drift_segments, drift_fallbacks, fallback_steps, rebuilt_steps;
  double drift_max, drift_mean, drift_accepted_max;
} rw_adjoint_stats;

/* Default options: t0 = 0, tf = 1, dt = 0.01, store mode, states only; every other field 0 or
 * NULL, which means: no slots (set ram_slots or ram_bytes for checkpoint mode), no disk tier,
 * disk costs 0 (disk traffic taken as free: set the costs, or a negative value to measure
 * them), disk_dir "." and run_id "run" when a disk tier is set, rtol = atol = 0 (set both for
 * adaptive steps), drift_tol 1e-6 with the fallback action, no monitor or progress callback.
 * The fixed-interval and store-all schedules take the slots they need: ram_slots does not
 * limit them, ram_bytes does (RW_ERR_BUDGET when they do not fit). */
void rw_adjoint_options_default(rw_adjoint_options *opt);

/* Number of steps and last step size of the grid (see above). Returns RW_ERR_ARG for
 * tf <= t0, dt <= 0, or non-finite values. Not collective. */
int rw_time_grid(double t0, double tf, double dt, long *nsteps, double *last_dt);
/* Time of grid point n (0 <= n <= N). */
double rw_time_grid_point(double t0, double tf, double dt, long nsteps, long n);

/* Forward solve only: y (in: y0, out: y(tf)) and J. Collective. */
int rw_forward_solve(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector y,
                     double *J, rw_adjoint_stats *stats);

/* Forward and adjoint solve. y: in y0, out y(tf). dJdp: global dJ/dp (length nparams,
 * identical on every rank; may be NULL; left as the caller set it when the parameters are
 * frozen, rw_problem_set_active). dJdy0: dJ/dy0 (may be NULL; when it shares no data with y it
 * is the backward sweep's adjoint state itself, one state less held, so after an error it
 * holds no result). When the problem has a parameter field, dJ/dfield is left in
 * rw_problem_field_adjoint(prob). stats may be NULL.
 * Before any step, a problem without the ops the adjoint needs is refused with
 * RW_ERR_NOT_IMPLEMENTED (rw_problem_check_adjoint). Collective. */
int rw_adjoint_solve(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector y,
                     double *J, double *dJdp, N_Vector dJdy0, rw_adjoint_stats *stats);

/* The mean objective over an ensemble of M noise paths and its gradient (stochastic forcing,
 * rw_problem_set_noise): path m (0 <= m < M) uses the problem's noise with seed `seed + m` (its
 * amplitude and refinement unchanged) and starts from y0; J = (1/M) sum_m J_m, and dJ/dp,
 * dJ/dy0 and dJ/dfield (left in rw_problem_field_adjoint) are the same means of the paths'
 * gradients, summed in path order (deterministic). The paths are solved one after another
 * with `opt` (memory of one path; opt->monitor sees the last path only). y: in y0, out y(tf)
 * of the last path (seed + M - 1).
 * stats: counts and times summed over the paths, sizes of one path. M = 1 is
 * rw_adjoint_solve; M > 1 needs a problem with noise (RW_ERR_ARG otherwise). The problem's
 * noise seed is restored on return. Collective. */
int rw_adjoint_solve_ensemble(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, long M,
                              N_Vector y, double *J, double *dJdp, N_Vector dJdy0,
                              rw_adjoint_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
