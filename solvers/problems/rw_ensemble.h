/* Inside the ensemble problems (rw_ode_problems.c, rw_sde_problems.c): where their member
 * loops run and how their per-member terms are summed. On a device (the context's) the loops are
 * the element body RW_BODY_ENS (rw_dev_bodies.h) and the terms live in device memory, summed in
 * the device's fixed order and held there while the driver defers pbar (rw_pdefer); on the CPU
 * the same body runs in a host loop and the terms are summed in member order. */
#ifndef REWIND_RW_ENSEMBLE_H
#define REWIND_RW_ENSEMBLE_H

#include "../../core/rw_device_impl.h"
#include "../rw_dev_bodies.h"
#include "rewind/rw_context.h"
#include "rewind/rw_problem.h"

typedef struct {
  rw_device dev; /* NULL: the CPU */
  long n;        /* members on this rank */
  int nt;        /* term rows (parameters summed at once) */
  double *terms; /* nt * n (+ 1) values: device or host memory */
  rw_pdefer pd;  /* the parameter sums held on the device while pbar is deferred */
} rw_ens_work;

/* Work for n members and nt term rows on ctx's device (or the CPU); np parameters. */
int rw_ens_work_init(rw_ens_work *w, rw_context ctx, long n, int nt, long np);
void rw_ens_work_free(rw_ens_work *w);
/* Runs body b (its n set here) over the members. */
int rw_ens_work_run(rw_ens_work *w, rw_body_ens *b);
/* out[k] += the sum of term row r over the members (held on a device while out is the deferred
 * pbar). */
int rw_ens_work_add(rw_ens_work *w, int r, double *out, long k);
/* out[r] += the sum of term row r, r < nr (at most 4): rw_ens_work_add for each row, with the
 * CPU's sums formed side by side in one pass. */
int rw_ens_work_add_rows(rw_ens_work *w, int nr, double *out);
/* *s = the sum of term row 0 over the members (this rank's). */
int rw_ens_work_total(rw_ens_work *w, double *s);
/* *s = the sum of x_i^2 over the first len entries of x (device or host memory). */
int rw_ens_work_sumsq(rw_ens_work *w, const double *x, long len, double *s);
/* The initial state: host values h (len of them) into y. */
int rw_ens_work_set_state(N_Vector y, const double *h);

/* What every ensemble problem keeps, as the first member of its content (so the shared ops
 * below take the content as one of these): the model, this rank's members, the objective
 * J = wT/2 sum_e |y_e(T) - target|^2 + wR/2 int sum_e |y_e|^2 dt, and where the loops run. */
typedef struct {
  int kind;          /* RW_ENS_* */
  int dim;           /* state entries per member (1 or 2) */
  int np;            /* parameters */
  long nloc, offset; /* members on this rank, the global index of its first */
  double target[2], wT, wR;
  rw_ens_work work;
} rw_ens_problem;

/* members split in blocks over ctx's ranks (the first members % size ranks get one more), nt
 * term rows; target has dim values. */
int rw_ens_problem_init(rw_ens_problem *e, rw_context ctx, int kind, int dim, int np, int nt,
                        long members, const double *target, double wT, double wR);
/* A body over the members in the given mode with the parameters p (NULL: none). */
rw_body_ens rw_ens_body(const rw_ens_problem *e, int mode, const double *p);
/* Sets the shared ops: the terminal and running terms where their weights are not 0, the
 * deferral of pbar (on a device dJ/dp's sums stay there until the flush) and destroy (which
 * frees the work and the content). */
void rw_ens_problem_ops(const rw_ens_problem *e, rw_problem_ops *ops);

#endif
