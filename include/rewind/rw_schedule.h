/* Checkpoint schedules: which states to keep, restore and recompute in an adjoint run.
 *
 * A schedule is pure: it knows nothing of solvers or stores. It is an iterator that emits
 * one action at a time; a driver executes each action before it asks for the next one.
 * Every rank of an MPI run creates the same schedule and runs the same actions, so every
 * function here is "Not collective".
 *
 * Model and conventions
 * ---------------------
 * The run has l >= 1 steps: step i takes the state y_i to y_{i+1}, i = 0 .. l-1, and the
 * objective J is evaluated on y_l. The driver holds one "current" forward state (not a
 * slot) and the adjoint lambda. Slots are numbered 0 .. capacity-1 per storage level
 * (RW_LEVEL_DISK in the two-level schedule only); the slot count c given to a schedule
 * COUNTS THE SLOT THAT HOLDS THE INITIAL STATE y_0 (Revolve's convention, and issue 3's).
 * With c slots the binomial schedule takes the proven minimum number of advances
 *   t(l, c) = r l - C(c + r, r - 1),   r the smallest integer with C(c + r, c) >= l
 * (Griewank & Walther, ACM TOMS 26(1), 2000, Algorithm 799); e.g. t(l, 1) = l (l - 1) / 2
 * and t(l, c) = l - 1 for c >= l - 1.
 *
 * Actions and what the driver must do (rw_action fields in brackets):
 *   RW_ACTION_ADVANCE [step, to]: the current state is y_step; take steps step .. to-1
 *       (to > step) without keeping anything for the adjoint; the current state becomes
 *       y_to. [first_sweep] is 1 when these steps are taken for the first time (the
 *       forward sweep: call monitors, accumulate the running cost, record adaptive step
 *       sizes) and 0 for a recomputation (replay the recorded step sizes).
 *   RW_ACTION_STORE [step, slot, level]: copy the current state (it is y_step) into the
 *       slot. The slot is empty before (a schedule never overwrites a full slot: it emits
 *       FREE first). The current state is unchanged.
 *   RW_ACTION_RESTORE [step, slot, level]: copy the slot (which holds y_step) into the
 *       current state. The slot stays full.
 *   RW_ACTION_FREE [step, slot, level]: the slot (which held y_step) is no longer needed;
 *       it is empty afterwards.
 *   RW_ACTION_FIRST_REVERSE [step = l-1]: the current state is y_{l-1}. Take step l-1
 *       keeping what its adjoint needs, evaluate J on y_l, set lambda = dJ/dy_l, and apply
 *       the adjoint of step l-1 (lambda becomes dJ/dy_{l-1}). Emitted exactly once, first
 *       of the reversals. [first_sweep] is 1 when step l-1 is taken here for the first
 *       time (always, except for an online run whose end was learnt after the last step:
 *       the driver then already has y_l and J, and this recomputes them bit for bit).
 *   RW_ACTION_REVERSE [step = i]: the current state is y_i. Take step i keeping what its
 *       adjoint needs, then apply the adjoint of step i (lambda: dJ/dy_{i+1} -> dJ/dy_i).
 *       Reversals come in strictly decreasing order l-1, l-2, .., 0, each exactly once.
 *   After FIRST_REVERSE or REVERSE the current state is undefined (the driver may have
 *       overwritten it): the next action that needs it is a RESTORE.
 *   RW_ACTION_TERMINATE: every step has been reversed (lambda = dJ/dy_0) and every slot is
 *       empty. Further calls return TERMINATE again.
 * The first action starts from the current state y_0. A schedule never holds more full
 * slots than its capacity (rw_schedule_capacity), so a store preallocated with that many
 * slots never allocates inside the time loop. Counting rules: "advances" are the steps of
 * ADVANCE actions (Revolve's count); "forward steps" are advances plus one per reversal
 * (every evaluation of a forward step); "recomputations" are the advances with
 * first_sweep == 0.
 *
 * Unknown length (online schedule): the forward sweep is emitted one step at a time
 * (ADVANCE i -> i+1, with STORE/FREE in between) until the driver calls
 * rw_schedule_set_steps(s, l). Let n be the step of the current state after the driver
 * has executed every action returned so far. Then either
 *   l == n: the driver took the last step and only then learned that it was the last
 *           (an event, or an adaptive step that landed on tf); or
 *   l == n + 1: the driver knows that the next step is the last one (it does not ask for
 *           an ADVANCE to take it; FIRST_REVERSE takes it).
 * From then on the schedule reverses the run from the checkpoints it holds. Once l is
 * known no ADVANCE goes past y_{l-1}; before, the online forward sweep stores every new
 * state (one copy per step, freeing an older checkpoint first when all slots are full). */
#ifndef REWIND_RW_SCHEDULE_H
#define REWIND_RW_SCHEDULE_H

#include "rw_error.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_schedule_s *rw_schedule;

/* Storage levels of slots. RW_LEVEL_RAM is the fastest tier, where the binomial schedule keeps
 * its checkpoints (host RAM; on a device run, device memory: the driver's RAM store holds
 * vectors shaped like the state). RW_LEVEL_DISK is the HDF5 tier. RW_LEVEL_HOST is the middle
 * tier of a three-tier schedule (pinned host RAM between device memory and disk). The values
 * are labels, not an order. */
typedef enum { RW_LEVEL_RAM = 0, RW_LEVEL_DISK = 1, RW_LEVEL_HOST = 2 } rw_storage_level;

typedef enum {
  RW_ACTION_ADVANCE = 0,
  RW_ACTION_STORE,
  RW_ACTION_RESTORE,
  RW_ACTION_FREE,
  RW_ACTION_FIRST_REVERSE,
  RW_ACTION_REVERSE,
  RW_ACTION_TERMINATE
} rw_action_type;

/* One action; see the header comment for the meaning of each field per type. Fields not
 * used by a type are: to = step, slot = -1, level = RW_LEVEL_RAM, first_sweep = 0. */
typedef struct {
  rw_action_type type;
  int64_t step;           /* ADVANCE: start step; STORE/RESTORE/FREE: the slot's step;
                             (FIRST_)REVERSE: the step reversed; TERMINATE: 0 */
  int64_t to;             /* ADVANCE: the step reached (> step) */
  int slot;               /* STORE/RESTORE/FREE: slot index in [0, capacity of level) */
  rw_storage_level level; /* STORE/RESTORE/FREE: storage level of the slot */
  int first_sweep;        /* ADVANCE, FIRST_REVERSE: 1 when the steps are new */
} rw_action;

/* Counts of the actions emitted so far (complete once TERMINATE has been returned). */
typedef struct {
  int64_t steps;          /* l, or -1 while an online schedule does not know it */
  int64_t advances;       /* steps of ADVANCE actions: t(l, c) for the binomial schedule */
  int64_t forward_steps;  /* advances + reversals: every forward step evaluation */
  int64_t recomputations; /* advances with first_sweep == 0 */
  int64_t reversals;      /* FIRST_REVERSE + REVERSE actions */
  int64_t stores, restores, frees;
  int64_t disk_writes, disk_reads; /* STORE / RESTORE at RW_LEVEL_DISK */
  int64_t host_writes, host_reads; /* STORE / RESTORE at RW_LEVEL_HOST */
  int peak_slots;                  /* most full slots at once, all levels */
  int peak_ram_slots, peak_disk_slots, peak_host_slots;
} rw_schedule_stats;

/* Offline binomial checkpointing (Revolve; Griewank & Walther, ACM TOMS 26(1), 2000) for
 * `steps` >= 1 steps and `slots` >= 1 RAM slots (counting the slot of y_0). Its advances
 * are the minimum t(steps, slots). Generated lazily with O(min(slots, steps)) memory.
 * Not collective. */
int rw_schedule_create_binomial(int64_t steps, int slots, rw_schedule *out);

/* Fixed-interval checkpointing, as CVODES and PETSc's trajectory stride do: the forward
 * sweep stores y_0, y_k, y_2k, .. (and every state of the last interval); the reverse
 * sweep recomputes each earlier interval once from its checkpoint, storing every state of
 * it, then reverses it. With n = ceil(l / k) intervals its advances are
 *   (l - 1) + (n - 1)(k - 1)
 * and rw_fixed_interval_counts gives its slot capacity. `interval` >= 1. Not collective. */
int rw_schedule_create_fixed_interval(int64_t steps, int64_t interval, rw_schedule *out);

/* Store everything: the fixed-interval schedule with k = 1 (l - 1 advances, l - 1 slots).
 * Not collective. */
int rw_schedule_create_store_all(int64_t steps, rw_schedule *out);

/* Online checkpointing for a run whose number of steps is not known in advance, with
 * `slots` >= 1 RAM slots (counting the slot of y_0). The forward sweep stores each new
 * state in place of the held checkpoint whose removal raises the binomial reversal cost
 * least (or skips it), never more than `slots`, except that it keeps anchors at binomial
 * positions (beta(c, r), then beta(c - 1, r') past it, ..: stored when reached, never
 * replaced; see rw_schedule_online.c), and at the online-Revolve comparator's lattice points
 * it looks ahead and takes that lattice's anchors for an interval where its own would end
 * worse than the comparator; once rw_schedule_set_steps gives l, held checkpoints that do not
 * pay are freed and each interval between the kept ones is reversed by the binomial schedule
 * (optimal up to l = beta(c, 2); beyond, never more forward steps than online Revolve at
 * any l <= 10^5 for c = 3 .. 20, measured; the excess over t(l, c) is measured by tests and
 * tests/bench/bench_online). Not collective. */
int rw_schedule_create_online(int slots, rw_schedule *out);

/* Online checkpointing with a disk tier (Pringle, Jones, Goldberg, Heimbach & Campin, 2016):
 * for a run of unknown length with `ram_slots` >= 1 RAM slots (counting a period's start)
 * and `disk_slots` >= 1 disk slots, disk write and read costs >= 0 in units of one step.
 * The forward sweep writes y_0 and every P-th state to disk, P minimising
 * (t(P, c) + wd + rd) / P (rw_online_disk_period); when the disk slots are full it frees
 * the checkpoints at odd multiples of P and doubles P. Once rw_schedule_set_steps gives l,
 * each period is reversed from its disk checkpoint (read once, then freed) by the binomial
 * schedule in RAM, the last period first. Not collective. */
int rw_schedule_create_online_disk(int ram_slots, int disk_slots, double write_cost,
                                   double read_cost, rw_schedule *out);

/* The period P >= 1 minimising (t(P, c) + wd + rd) / P for c = ram_slots; *cost (may be
 * NULL) gets that minimum, the extra forward-step cost per step of the online disk
 * schedule. Not collective. */
int rw_online_disk_period(int ram_slots, double write_cost, double read_cost, int64_t *period,
                          double *cost);

/* For an online schedule (rw_schedule_create_online) whose length is not known yet: the
 * advances the whole run would take (the forward sweep so far plus the reversal) if
 * rw_schedule_set_steps were called now, with the state at step n; both allowed lengths, n
 * and n + 1, reverse the same way from the held checkpoints (l = n + 1 reverses its last
 * step from the current state). It changes nothing the schedule does next: planning tools
 * call it after each ADVANCE to price every length in one forward sweep. Returns
 * RW_ERR_ARG for another kind of schedule, NULL arguments, or once the length is known.
 * Not collective. */
int rw_schedule_online_advances_if_ended(rw_schedule s, int64_t *advances);

/* Which anchors an online schedule keeps now (see rw_schedule_online.c): *levels = 0 its own
 * (binomial positions beta(c, r), ..), w >= 1 those of the online-Revolve comparator's
 * lattice (beta(c - 1, r), ..) at w levels, taken for one of the comparator's intervals where
 * a look-ahead showed its own would end worse than the comparator. For tests and
 * diagnostics. Returns RW_ERR_ARG for another kind of schedule or NULL arguments. Not
 * collective. */
int rw_schedule_online_lattice(rw_schedule s, int *levels);

/* The period an online disk schedule uses now (doubled each time the disk filled) and the
 * one it chose from the costs. Returns RW_ERR_ARG for another kind of schedule. Not
 * collective. */
int rw_schedule_online_disk_period(rw_schedule s, int64_t *period, int64_t *chosen);

/* A new schedule equal to s as it was created (it starts again from the first action, with
 * fresh counts), sharing s's plan read-only instead of planning again: for the tiered and
 * two-level schedules, whose planning can take seconds at l = 10^5. The plan lives until the
 * last schedule sharing it is destroyed. RW_ERR_NOT_IMPLEMENTED for the other kinds (cheap to
 * create again). Not collective. */
int rw_schedule_clone(rw_schedule s, rw_schedule *out);

/* Destroys the schedule; accepts NULL or *s == NULL, sets *s to NULL. Not collective. */
int rw_schedule_destroy(rw_schedule *s);

/* Emits the next action into *a (see the header comment for what the driver must do).
 * Returns RW_ERR_ARG for NULL arguments. Not collective. */
int rw_schedule_next(rw_schedule s, rw_action *a);

/* Tells an online schedule the number of steps `steps`, which must be n or n + 1 with n
 * the step of the current state (see the header comment). Returns RW_ERR_ARG for other
 * values, for a second call, or for an offline schedule. Not collective. */
int rw_schedule_set_steps(rw_schedule s, int64_t steps);

/* The counts so far (*stats). Not collective. */
int rw_schedule_get_stats(rw_schedule s, rw_schedule_stats *stats);

/* Most slots the schedule may hold full at once per level: what a store must preallocate.
 * Either pointer may be NULL. Not collective. */
int rw_schedule_capacity(rw_schedule s, int *ram_slots, int *disk_slots);
/* The same for one level (RW_LEVEL_HOST: the middle tier of a three-tier schedule, 0 for
 * every other schedule). Not collective. */
int rw_schedule_level_capacity(rw_schedule s, rw_storage_level level, int *slots);

/* The schedule's number of steps (-1 while an online schedule does not know it) and its
 * kind ("binomial", "fixed_interval", "store_all", "online", "two_level"); either may be
 * NULL.
 * Not collective. */
int rw_schedule_get_info(rw_schedule s, int64_t *steps, const char **kind);

/* Iterates the schedule to TERMINATE without a solver (planning, tests) and returns the
 * final counts in *stats (may be NULL). For an online schedule that does not know its
 * length, `online_steps` is announced after the ADVANCE that reaches it (the end learnt
 * after the last step, as with an adaptive stepper); it is ignored otherwise.
 * Not collective. */
int rw_schedule_run(rw_schedule s, int64_t online_steps, rw_schedule_stats *stats);

/* Lower-case name of an action type ("advance", "first_reverse", ..). Not collective. */
const char *rw_action_type_name(rw_action_type type);

/* Writes a one-line description of *a into buf (at most len bytes, NUL-terminated), e.g.
 * "advance 0 -> 12", "store 12 -> ram[3]", "restore ram[3] -> 12", "free ram[3] (12)",
 * "reverse 11". Returns RW_ERR_ARG when it does not fit. Not collective. */
int rw_action_format(const rw_action *a, char *buf, size_t len);

/* --- Closed forms (Griewank & Walther 2000) --------------------------------------- */

/* beta(c, r) = C(c + r, c): the most steps that c slots reverse with at most r advances
 * per step. Saturates at INT64_MAX. `c`, `r` >= 0. Not collective. */
int rw_binomial_beta(int64_t c, int64_t r, int64_t *beta);

/* The repetition number r (smallest r with beta(slots, r) >= steps) and the minimal
 * advances t(steps, slots) = r steps - C(slots + r, r - 1); either pointer may be NULL.
 * `steps` >= 1, `slots` >= 1 (counting the slot of y_0). Not collective. */
int rw_binomial_advances(int64_t steps, int slots, int64_t *repetitions, int64_t *advances);

/* The fixed-interval schedule's advances and slot capacity for `steps` and `interval`
 * (see rw_schedule_create_fixed_interval); either pointer may be NULL. Not collective. */
int rw_fixed_interval_counts(int64_t steps, int64_t interval, int64_t *advances, int *slots);

/* --- Two-level (RAM + disk) offline schedule ------------------------------------------ */

/* Counts of the optimal two-level schedule (rw_two_level_cost). */
typedef struct {
  double cost;         /* advances + write_cost x disk_writes + read_cost x disk_reads */
  int64_t advances;    /* steps of ADVANCE actions (step cost 1) */
  int64_t disk_writes; /* STOREs at RW_LEVEL_DISK */
  int64_t disk_reads;  /* RESTOREs at RW_LEVEL_DISK */
  int disk_slots_used; /* most disk slots full at once (the schedule's disk capacity) */
} rw_two_level_counts;

/* The optimal offline schedule over two storage levels for `steps` steps (1 .. 2^30 - 1):
 * `ram_slots` >= 1 RAM slots (counting the slot that holds a RAM segment's start, as the
 * binomial schedule), `disk_slots` >= 0 disk slots or -1 for unlimited, and the costs of a
 * disk write and a disk read (>= 0, in units of one forward step). With R(n) = t(n,
 * ram_slots) its cost advances + write_cost x disk_writes + read_cost x disk_reads is
 * exactly the minimum of
 *   finite disk (H-Revolve; Herrmann & Pallez, ACM TOMS 46(2), 2020): H(steps, disk_slots),
 *     H(n, 0) = R(n),  H(n, m) = min(R(n), wd + P(n, m)),
 *     P(n, m) = min(R(n), min_{1<=j<=n-2} j + H(n-j, m-1) + rd + P(j, m));
 *   unlimited disk (Disk-Revolve; Aupy, Herrmann, Hovland & Robert, SIAM J. Sci. Comput.
 *     38(3), 2016): D(steps), D(n) = min(R(n), min_{1<=j<=n-2} wd + j + D(n-j) + rd + R(j)).
 * disk_slots = 0 gives the binomial schedule. Actions are the usual ones; STORE, RESTORE
 * and FREE carry level RW_LEVEL_DISK for disk slots (indices in [0, disk capacity)). A disk
 * slot is freed right after its last read; a segment reversed in RAM after a disk read
 * stores its start in RAM again. rw_schedule_capacity gives the RAM slots and the disk
 * slots actually used at most (<= disk_slots). Planning is exact, in O(l) memory plus a
 * few run-length-encoded decisions per disk slot; the kind is "two_level". Not collective. */
int rw_schedule_create_two_level(int64_t steps, int ram_slots, int disk_slots, double write_cost,
                                 double read_cost, rw_schedule *out);

/* The optimum of rw_schedule_create_two_level's recurrences and the counts of that schedule
 * (*counts), without iterating actions. Same arguments and errors. Not collective. */
int rw_two_level_cost(int64_t steps, int ram_slots, int disk_slots, double write_cost,
                      double read_cost, rw_two_level_counts *counts);

/* The same for a schedule made by rw_schedule_create_two_level, from the plan it already holds
 * (no second planning): the optimum and the counts its tree of decisions gives, the walk
 * checked against the table value. RW_ERR_ARG for another kind of schedule. Not collective. */
int rw_schedule_two_level_counts(rw_schedule s, rw_two_level_counts *counts);

/* --- Tiered (K-level) offline schedule --------------------------------------------------- */

/* Most storage tiers of a tiered schedule: the fastest (binomial) tier, a middle one and disk. */
#define RW_MAX_TIERS 3

/* One storage tier: its slots and the costs, in units of one forward step, of writing a state
 * there and reading it back. Tier 0 (the fastest) must have costs 0: copies within it are not
 * counted, as in the binomial model. */
typedef struct {
  int slots;
  double write_cost, read_cost;
} rw_tier;

/* Counts of the optimal tiered schedule, per tier (index as in the tiers array; entry 0 of
 * writes and reads stays 0: tier-0 copies are not counted). */
typedef struct {
  double cost;      /* advances + sum over tiers k >= 1 of write_cost_k writes_k + read_cost_k
                       reads_k */
  int64_t advances; /* steps of ADVANCE actions */
  int64_t writes[RW_MAX_TIERS], reads[RW_MAX_TIERS];
  int slots_used[RW_MAX_TIERS]; /* most slots of tier k full at once (k >= 1) */
} rw_tiered_counts;

/* The optimal offline schedule over K = ntiers (1 .. RW_MAX_TIERS) storage tiers, fastest
 * first: the H-Revolve recurrences (Herrmann & Pallez, ACM TOMS 46(2), 2020) applied tier by
 * tier, each tier's segments without a checkpoint of that tier reversed by the optimal
 * schedule of the tiers below. With H_0(n) = t(n, tiers[0].slots) and, for k >= 1,
 * c = tiers[k].slots, wd, rd its costs and H_{k-1} the optimum of the tiers below with all
 * their slots:
 *   H_k(n, 0) = H_{k-1}(n),  H_k(n, m) = min(H_{k-1}(n), wd + P_k(n, m)),
 *   P_k(n, m) = min(H_{k-1}(n), min_{1<=j<=n-2} j + H_k(n-j, m-1) + rd + P_k(j, m)),
 * and the schedule costs exactly H_{K-1}(steps, c_{K-1}). The top tier may have -1 slots
 * (unlimited: the Disk-Revolve recurrence D with R = H_{K-2}); the others need >= 0 (a tier
 * with 0 slots is skipped). Levels of the actions: K = 1 RW_LEVEL_RAM; K = 2 RAM, DISK; K = 3
 * RAM, HOST, DISK. Every slot of a tier above 0 is freed right after its last read, and a
 * tier's segment starts with every slot of the tiers below it free. The kind is "binomial"
 * "two_level" (K <= 2) or "three_level"; steps 1 .. 2^30 - 1. Planning is exact, in
 * O(l) memory per tier (see rw_schedule_disk.c). Not collective. */
int rw_schedule_create_tiered(int64_t steps, int ntiers, const rw_tier *tiers, rw_schedule *out);

/* The optimum and the counts of that schedule, without iterating actions. Not collective. */
int rw_tiered_cost(int64_t steps, int ntiers, const rw_tier *tiers, rw_tiered_counts *counts);

/* The same from the plan a schedule made by rw_schedule_create_tiered or
 * rw_schedule_create_two_level holds. RW_ERR_ARG for another kind. Not collective. */
int rw_schedule_tiered_counts(rw_schedule s, rw_tiered_counts *counts);

/* --- End of the tiered section ----------------------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif
