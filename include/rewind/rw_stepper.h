/* Time steppers and their discrete adjoints.
 *
 * A stepper advances y_n -> y_{n+1} over [t, t + h] and accumulates the running-cost
 * quadrature q_{n+1} = q_n + (its own quadrature of r over the step). Its adjoint step is the
 * exact transpose of that step's linearisation (Hager 2000; Sandu 2006): given
 * lambda = dJ/dy_{n+1} it returns dJ/dy_n in place and accumulates dJ/dp, including the
 * running-cost terms, so the gradient is the gradient of the J the forward run computed.
 *
 * Explicit Runge-Kutta methods come from Butcher tableaux:
 *   Y_i = y_n + h sum_{j<i} a_ij K_j,  K_i = f(t + c_i h, Y_i),
 *   y_{n+1} = y_n + h sum_i b_i K_i,    q_{n+1} = q_n + h sum_i b_i r(t + c_i h, Y_i).
 * Adjoint (lambda = dJ/dy_{n+1}, dJ/dq = 1):
 *   Kbar_i = h b_i lambda + h sum_{j>i} a_ji Ybar_j,
 *   Ybar_i = (df/dy(Y_i))^T Kbar_i + h b_i dr/dy(Y_i),
 *   pbar  += (df/dp(Y_i))^T Kbar_i + h b_i dr/dp(Y_i),
 *   dJ/dy_n = lambda + sum_i Ybar_i.
 * The stages a step needs are recomputed from y_n by the same code the forward step runs
 * (so recomputation is bitwise deterministic), or taken from storage when the caller kept
 * them. */
#ifndef REWIND_RW_STEPPER_H
#define REWIND_RW_STEPPER_H

#include "rw_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_stepper_s *rw_stepper;

/* A Butcher tableau with s stages: c[s], a[s*s] row-major (strictly lower triangular for
 * explicit methods), b[s], and optionally bhat[s] (embedded method, NULL if none; then
 * embedded_order >= 1 is required, the order that sets the step-size controller's exponent).
 * A user's own tableau needs c, a and b; a NULL name is reported as "custom". */
typedef struct {
  const char *name;
  const char *description;
  int stages;
  int order;
  int embedded_order; /* 0 when there is no embedded method */
  const double *c, *a, *b, *bhat;
} rw_tableau;

/* The built-in explicit tableaux, by name: euler, heun, ssprk3, rk4, rk38, dopri5.
 * Returns NULL for an unknown name. */
const rw_tableau *rw_tableau_find(const char *name);
/* The i-th built-in tableau (NULL past the end), for listings and tests. */
const rw_tableau *rw_tableau_get(int i);
/* Comma-separated names of the built-in tableaux (for help and error messages). */
const char *rw_tableau_names(void);

/* Creates an explicit RK stepper for `prob` with tableau `tab` (copied). Workspace vectors
 * are allocated here, never inside the time loop. Collective. */
int rw_stepper_create_erk(rw_problem prob, const rw_tableau *tab, rw_stepper *out);
int rw_stepper_destroy(rw_stepper *st);

const char *rw_stepper_name(rw_stepper st);
/* Number of stage vectors a "store stages" snapshot holds (s for explicit RK, the stage
 * inputs Y_i with Y_1 = y_n). */
int rw_stepper_num_stage_vectors(rw_stepper st);

/* The step index. A stochastic stepper (rw_sde.h) draws the noise of step n, the step
 * [t_n, t_n + h_n] of the run's grid, as a pure function of n (rw_rng.h), so that every
 * recomputation under any checkpoint schedule draws the same numbers. The drivers therefore
 * tell the stepper the GLOBAL index n of the step before every call that takes, retakes,
 * reverses or differentiates it: rw_stepper_step, rw_stepper_try_step,
 * rw_stepper_adjoint_step and rw_stepper_reverse_step. An index is good for one call: each of
 * those calls clears it, so a stochastic stepper refuses (RW_ERR_ARG) a call that was not
 * indexed, and a driver path that forgets the index fails loudly instead of drawing the noise
 * of another step. Deterministic steppers ignore it (and callers that only drive
 * deterministic steppers need not set it). n < 0 clears the index. Not collective. */
void rw_stepper_set_step_index(rw_stepper st, long n);
/* The index set for the next call, or -1 when none is set. Not collective. */
long rw_stepper_step_index(rw_stepper st);

/* Advances y_in -> y_out over [t, t+h]; y_out may be y_in. Adds this rank's local running
 * cost increment to *q (q may be NULL when the problem has no running cost). If `stages` is
 * not NULL it receives the stage inputs Y_i (rw_stepper_num_stage_vectors vectors).
 * Collective when the problem's rhs is. */
int rw_stepper_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                    N_Vector *stages, double *q);

/* Adjoint of one step: lambda holds dJ/dy_{n+1} on entry and dJ/dy_n on return; pbar[k]
 * accumulates this rank's local dJ/dp_k. Uses `stages` when given (as stored by
 * rw_stepper_step), else recomputes them from y_n. */
int rw_stepper_adjoint_step(rw_stepper st, double t, double h, N_Vector y_n, N_Vector *stages,
                            N_Vector lambda, double *pbar);

/* Lends the next rw_stepper_adjoint_step (that one call only, whatever it returns) `v`, an
 * array of rw_stepper_num_stage_vectors vectors of the state's layout that the caller does not
 * need until that call returns: when the step has no stored stages and recomputes them, it may
 * write them there instead of into a workspace of its own, so a caller that holds such vectors
 * anyway (the checkpoint mode's stage buffers) saves the stepper allocating the same again.
 * The results are the same bits either way. NULL withdraws a loan. Not collective. */
void rw_stepper_lend_stage_vectors(rw_stepper st, N_Vector *v);

/* How a stepper rebuilds the state y_n from y_{n+1}, which the memory-free adjoint modes
 * (reversible, backsolve; see rw_adjoint.h) use instead of storing or recomputing y_n:
 *   RW_REVERSE_INVERSE:  the step's algebraic inverse (leapfrog). Exact in exact arithmetic;
 *                        in floating point each rebuilt state carries the rounding of one
 *                        step, and a non-dissipative scheme does not amplify it.
 *   RW_REVERSE_BACKWARD: a step of size -h from t + h with the same method (any explicit RK
 *                        stepper), what torchdiffeq's odeint_adjoint and Diffrax's
 *                        BacksolveAdjoint do. Its error is the method's local error per step,
 *                        amplified by the backward flow: a diffusive or chaotic problem blows
 *                        it up within a few steps (the drift checks catch that).
 *   RW_REVERSE_NONE:     the stepper has neither. */
typedef enum { RW_REVERSE_NONE = 0, RW_REVERSE_INVERSE, RW_REVERSE_BACKWARD } rw_reverse_kind;

/* Names "none", "inverse", "backward" for messages. */
const char *rw_reverse_kind_name(rw_reverse_kind k);
rw_reverse_kind rw_stepper_reverse_kind(rw_stepper st);

/* Rebuilds y_n (in y_prev) from y_{n+1} (in y_next, unchanged) for the step [t, t + h], as
 * rw_stepper_reverse_kind says; adds nothing to any running cost. y_prev must not be y_next.
 * RW_ERR_NOT_IMPLEMENTED for RW_REVERSE_NONE. Collective when the problem's rhs is. */
int rw_stepper_reverse_step(rw_stepper st, double t, double h, N_Vector y_next, N_Vector y_prev);

/* 1 when the stepper has an embedded error estimate (adaptive stepping); *order (may be
 * NULL) receives the lower of the pair's orders, which sets the controller's exponent. */
int rw_stepper_is_adaptive(rw_stepper st, int *order);

/* Trial step for adaptive stepping: y_out = the step from y_in over [t, t+h] (bit for bit what
 * rw_stepper_step gives, so an accepted step replays exactly), its stage inputs in `stages`
 * when not NULL, *q += the step's running cost,
 * and *errnorm = the weighted RMS norm of the embedded error estimate with weights
 * 1 / (atol + rtol max(|y_in|, |y_out|)); the step is acceptable when *errnorm <= 1. y_out must
 * not be y_in. Collective (the norm is a global reduction). */
int rw_stepper_try_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                        N_Vector *stages, double *q, double rtol, double atol, double *errnorm);

#ifdef __cplusplus
}
#endif
#endif
