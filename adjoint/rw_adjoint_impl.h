/* Private: what the adjoint driver's units share.
 *
 * The driver (rw_adjoint.c) runs one forward sweep, the objective, and one backward loop of
 * adjoint steps for every mode. What differs between the modes is only how the backward sweep
 * gets y_n, and that is a state source (rw_state_source below), one unit per way:
 *   rw_source_store.c       stored: every state (or every step's stages) kept in RAM;
 *   rw_source_checkpoint.c  recomputed under a schedule from checkpoint/ (RAM + disk stores,
 *                           adaptive steps, read-ahead, restart);
 *   rw_source_rebuild.c     rebuilt from y_{n+1} by the stepper's inverse step (reversible) or
 *                           a step of negative size (backsolve), checked against anchors, with
 *                           the exact fallback of a segment that drifted too far;
 * and they share the time grid, the monitor call and the reductions below. */
#ifndef REWIND_RW_ADJOINT_IMPL_H
#define REWIND_RW_ADJOINT_IMPL_H

#include "rewind/rw_adjoint.h"

/* The grid of opt (fixed step or replayed times): N steps, the last of size *last. */
int rw_grid_setup(const rw_adjoint_options *opt, long *N, double *last);
double rw_grid_t(const rw_adjoint_options *opt, long N, long n);
double rw_grid_end(const rw_adjoint_options *opt, long N);
int rw_call_monitor(const rw_adjoint_options *opt, long n, double t, N_Vector y);
int rw_sum_over_ranks(rw_context ctx, double *v, int n);
/* J at the end of a forward sweep: *q (this rank's running-cost sum) becomes the global sum,
 * *g = g(y(t_end)), and a non-finite J is RW_ERR_STEP (reached by every rank alike).
 * Collective. */
int rw_objective(rw_problem prob, const rw_adjoint_options *opt, double t_end, N_Vector y,
                 double *q, double *g);

/* --- State sources: how the backward sweep gets y_n ---------------------------------------
 *
 * Life of a source, driven by rw_adjoint_solve:
 *   create   (per mode: rw_source_*_create) checks the options, plans the budget, may measure
 *            (disk costs); allocates nothing the run's peak should count but the handle;
 *   alloc    every snapshot, slot and work vector, before the first step (a budget problem
 *            shows at start-up; the driver counts the peak from here);
 *   forward  the forward sweep y_0 -> y_N (y in, y_N out), keeping what the mode keeps; adds
 *            this rank's running cost to *q (the accumulator stays the driver's: a source may
 *            keep the pointer, the checkpoint tags record it); sets N and the grid (opt);
 *   fetch    called for n = N-1 .. 0: makes y_n (and the stage inputs of step n when it holds
 *            them) ready for the adjoint step of step n, doing whatever the mode needs first
 *            (nothing, schedule actions, a rebuild step). It may also rewind: set the adjoint
 *            state back to its value before the adjoint step of a later step m and ask the loop
 *            to go on from m (the rebuild modes' fallback, which reverses a drifted segment
 *            again from exact states);
 *   end      after the adjoint step of step 0: what is left (the schedule's last actions, the
 *            disk's write-behind), before any result exists;
 *   stats    the mode's statistics (the driver fills the sweeps', times and peak);
 *   destroy  frees everything (also half-built sources).
 * The driver keeps the one backward loop (terminal gradient, adjoint steps, the sum of dJ/dp
 * over ranks once at the end, the finiteness check of the gradient); it has no branch on the
 * mode. */

/* The adjoint state the backward loop carries (a source that rewinds saves and restores it). */
typedef struct {
  N_Vector lambda; /* dJ/dy_n */
  double *pbar;    /* this rank's dJ/dp so far */
  int np;
  N_Vector field; /* the problem's field adjoint, or NULL */
} rw_adjoint_state;

/* What fetch(n) returns. */
typedef struct {
  N_Vector y;        /* y_n, valid until the next call */
  N_Vector *stages;  /* the stage inputs of step n when held, else NULL (recomputed from y) */
  N_Vector *scratch; /* with stages NULL: stage vectors the source holds and does not need
                        until the next fetch, lent to the stepper for the recomputation
                        (rw_stepper_lend_stage_vectors); NULL: none */
  long resume;       /* -1; or >= n: the adjoint state was set back to its value before step
                        `resume`'s adjoint step, and the loop goes on from there */
} rw_fetch;

typedef struct rw_state_source rw_state_source;

typedef struct {
  int (*alloc)(rw_state_source *src, N_Vector y);
  int (*forward)(rw_state_source *src, N_Vector y, double *q);
  /* Used by rw_source_forward_steps: before step n from y = y_n; may point *stages at the
   * vectors the step should fill with its stage inputs. */
  int (*record)(rw_state_source *src, long n, N_Vector y, N_Vector **stages);
  /* Optional, for rw_source_forward_steps: the vector that keeps y_n (0 <= n < N) for the
   * whole run, or NULL. Where it gives one for every n, the sweep steps from each such vector
   * into the next (y_N into y) instead of stepping y in place and copying what it keeps (record
   * is then not called). */
  N_Vector (*home)(rw_state_source *src, long n);
  int (*fetch)(rw_state_source *src, long n, rw_adjoint_state *adj, rw_fetch *out);
  int (*end)(rw_state_source *src);
  int (*stats)(rw_state_source *src, rw_adjoint_stats *s);
  void (*destroy)(rw_state_source *src);
} rw_state_source_ops;

/* The common part of every source (the first member of each concrete one). */
struct rw_state_source {
  const rw_state_source_ops *ops;
  rw_problem prob;
  rw_stepper st;
  const rw_adjoint_options *opt; /* the grid the sweeps walk (an adaptive run's record) */
  long N;                        /* steps (known after forward for adaptive runs) */
  long recomputed;               /* forward steps taken again so far (progress reports) */
  rw_adjoint_stats *s;           /* the run's statistics, filled during the run */
};

/* The plain forward sweep for sources that follow the grid step by step (store, rebuild):
 * monitor, progress, running cost; ops->record before each step, or the steps between the
 * vectors of ops->home (src may be NULL: nothing kept). */
int rw_source_forward_steps(rw_state_source *src, rw_stepper st, const rw_adjoint_options *opt,
                            long N, N_Vector y, double *q);
/* Time and size of step n of src's grid. */
void rw_source_step(const rw_state_source *src, long n, double *t, double *h);

int rw_source_store_create(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                           N_Vector y, rw_adjoint_stats *s, rw_state_source **out);
int rw_source_checkpoint_create(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                                N_Vector y, rw_adjoint_stats *s, rw_state_source **out);
int rw_source_rebuild_create(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                             N_Vector y, rw_adjoint_stats *s, rw_state_source **out);

/* The driver's allocation window (core/rw_context.c): rw_mem_window_begin starts a window at
 * the bytes allocated now and returns the enclosing window's state; rw_mem_window_end(that)
 * returns the window's peak and restores the enclosing one. Unlike rw_mem_reset_peak, it
 * leaves the peak a caller reads with rw_mem_peak alone. */
size_t rw_mem_window_begin(void);
size_t rw_mem_window_end(size_t outer);

#endif
