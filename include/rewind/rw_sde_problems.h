/* Scalar SDE test problems as ensembles of independent paths distributed over MPI ranks
 * (issue 12): M components, component i the path of index i (block distribution over ranks),
 * each driven by its own Brownian motion (noise entry i), so the noise's global index matters.
 *   ou:   Ornstein-Uhlenbeck, additive noise     dY = -theta Y dt + sigma dW;  theta, sigma
 *   gbm:  geometric Brownian motion, diagonal    dY = mu Y dt + sigma Y dW;    mu, sigma
 *         multiplicative noise (with sheun, read o dW: the Stratonovich SDE, whose solution
 *         is Y0 exp(mu t + sigma W_t); with em the Ito SDE, Y0 exp((mu - sigma^2/2) t +
 *         sigma W_t))
 * Component i starts at y0 + spread * i. Objective:
 *   J = wT/2 sum_i (Y_i(T) - target)^2 + wR/2 integral sum_i Y_i(t)^2 dt. */
#ifndef REWIND_RW_SDE_PROBLEMS_H
#define REWIND_RW_SDE_PROBLEMS_H

#include "rw_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *model;      /* "ou" or "gbm" */
  long paths;             /* M >= the rank count (every rank holds a path) */
  double y0, spread;      /* component i starts at y0 + spread * i */
  double target;          /* terminal target */
  double terminal_weight; /* wT */
  double running_weight;  /* wR */
} rw_sde_config;

/* "ou, gbm". */
const char *rw_sde_model_names(void);
/* Creates the problem; parameters get the defaults theta = 1, sigma = 0.5 (ou) and
 * mu = 0.5, sigma = 0.5 (gbm); the noise is seed 0, amplitude 1, refinement 1
 * (rw_problem_set_noise changes it). Collective. */
int rw_sde_problem_create(rw_context ctx, const rw_sde_config *cfg, rw_problem *out);
/* Fills y with the initial state. Not collective. */
int rw_sde_initial_state(rw_problem prob, N_Vector y);
/* Index of the first path this rank owns. */
long rw_sde_path_offset(rw_problem prob);

#ifdef __cplusplus
}
#endif
#endif
