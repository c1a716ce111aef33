/* Private: what the adjoint driver's units share. Each way of getting y_n in the backward
 * sweep is its own unit:
 *   rw_adjoint.c          stored (store mode) and recomputed under a schedule (checkpoint);
 *   rw_adjoint_rebuild.c  rebuilt from y_{n+1} by the stepper's inverse step (reversible) or a
 *                         step of negative size (backsolve), checked against anchors;
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
/* The statistics every adjoint path fills alike: N, the last step, J and its parts, and the
 * evaluations of each sweep from the problem's counters before the forward sweep (c0), after
 * it (c1) and after the backward sweep (c2). */
void rw_stats_sweeps(rw_adjoint_stats *s, long N, double last, double g, double q,
                     const rw_problem_counts *c0, const rw_problem_counts *c1,
                     const rw_problem_counts *c2);

/* Memory-free modes (RW_ADJOINT_REVERSIBLE, RW_ADJOINT_BACKSOLVE); see rw_adjoint.h. */
int rw_adjoint_solve_rebuild(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                             N_Vector y, double *J, double *dJdp, N_Vector dJdy0,
                             rw_adjoint_stats *stats);

#endif
