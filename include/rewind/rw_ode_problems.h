/* Small ODE problems with named parameters, as ensembles distributed over MPI ranks.
 *
 * An ensemble of E independent copies of a 2-component system (member e starts at
 * y0 + e * spread * (1, 0)); member e lives on one rank (block distribution), the
 * parameters are shared, so dJ/dp sums contributions from every rank.
 *   vanderpol:      x' = v,  v' = mu (1 - x^2) v - x;                 parameters: mu
 *   lotkavolterra:  x' = alpha x - beta x y,  y' = delta x y - gamma y; alpha beta gamma delta
 * Objective: J = wT/2 sum_e |y_e(T) - target|^2 + wR/2 integral sum_e |y_e(t)|^2 dt. */
#ifndef REWIND_RW_ODE_PROBLEMS_H
#define REWIND_RW_ODE_PROBLEMS_H

#include "rw_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *model;      /* "vanderpol" or "lotkavolterra" */
  long ensemble;          /* E >= the rank count (every rank holds a member) */
  double y0[2];           /* initial state of member 0 */
  double spread;          /* member e starts at y0 + e * spread * (1, 0) */
  double target[2];       /* terminal target */
  double terminal_weight; /* wT */
  double running_weight;  /* wR */
} rw_ode_config;

/* Names of the models ("vanderpol, lotkavolterra"). */
const char *rw_ode_model_names(void);

/* Creates the problem; parameters get the model's default values (mu = 1; alpha = 1.5,
 * beta = 1, gamma = 3, delta = 1). Collective. */
int rw_ode_problem_create(rw_context ctx, const rw_ode_config *cfg, rw_problem *out);

/* Fills y with the ensemble's initial state. Not collective. */
int rw_ode_initial_state(rw_problem prob, N_Vector y);

/* Index of the first member this rank owns. */
long rw_ode_member_offset(rw_problem prob);

#ifdef __cplusplus
}
#endif
#endif
