/* Steppers for stochastic differential equations with diagonal noise,
 *
 *     dy = f(t, y; p) dt + g(t, y; p) o dW      (g elementwise: rw_problem_ops.diffusion),
 *
 * and their exact discrete adjoints (issue 12). Schemes after Kloeden & Platen, "Numerical
 * Solution of Stochastic Differential Equations" (1992), Secs. 10.2 and 11.1, and Rumelin
 * (1982) for the Stratonovich Heun scheme.
 *
 * Noise. Step n (the step [t_n, t_n + h] of the run's grid) uses the increment
 * dW_n = amplitude sqrt(h / R) sum_r z_{nR+r} of rw_problem_noise_increment (rw_problem.h):
 * Philox normals keyed by (seed, n, global entry index), so a step's noise is a pure function of
 * its index. The drivers give the index before every call (rw_stepper_set_step_index); a call
 * without one is refused (RW_ERR_ARG). The noise is never stored: the forward step, every
 * recomputation and the adjoint step draw it again, bit for bit.
 *
 *   em     Euler-Maruyama, Ito interpretation (strong order 1/2; 1 for additive noise):
 *            y+ = y + h f(t, y) + g(t, y) dW,       q += h r(t, y)
 *   sheun  stochastic Heun, Stratonovich interpretation (strong order 1 for commutative noise,
 *          which diagonal noise is; order 2 in h for an ODE):
 *            Yt = y + h f(t, y) + g(t, y) dW                       (predictor)
 *            y+ = y + (h/2) (f(t, y) + f(t + h, Yt)) + (1/2) (g(t, y) + g(t + h, Yt)) dW
 *            q += (h/2) (r(t, y) + r(t + h, Yt))
 *   (products with dW are elementwise). With g = 0 they are the explicit Euler and Heun
 *   methods. An Ito SDE with multiplicative noise is a different Stratonovich SDE (drift
 *   f - (1/2) g dg/dy); choose the scheme of the interpretation the model means.
 *
 * Adjoints. Given dW, each step is a deterministic map of (y_n, p); its adjoint is the exact
 * transpose of that map's linearisation (lambda = dJ/dy_{n+1} on entry, dJ/dy_n on return,
 * pbar accumulates dJ/dp including the running cost, J_f = df/dy, G' = dg/dy diagonal):
 *   em:    lambda <- lambda + J_f^T (h lambda) + G' (dW lambda) + h dr/dy,
 *          pbar   += f_p^T (h lambda) + g_p^T (dW lambda) + h dr/dp          (all at (t, y_n))
 *   sheun: A       = J_f1^T ((h/2) lambda) + G1' ((1/2) dW lambda) + (h/2) dr/dy(t + h, Yt)
 *          lambda <- lambda + A + J_f0^T ((h/2) lambda + h A) + G0' (dW ((1/2) lambda + A))
 *                    + (h/2) dr/dy(t, y_n)
 *          pbar   += the same weights through f_p, g_p, r_p at (t + h, Yt) and (t, y_n).
 * The Taylor-remainder and dot-product tests (tests/unit/test_sde.c) check them.
 *
 * Stored stages (store_stages): the stage INPUTS of the step, as for Runge-Kutta: em holds
 * (y_n), sheun (y_n, Yt). With them the sheun adjoint evaluates no f and no g of the predictor;
 * the noise is still redrawn (never stored), one normal vector per increment (R with
 * refinement R). Bitwise: the predictor is recomputed by the code of the forward step, so every
 * mode and schedule gives the store-mode gradient bit for bit.
 *
 * The steppers are fixed-step: no embedded error estimate, no reverse step (adjoint_mode
 * store or checkpoint). */
#ifndef REWIND_RW_SDE_H
#define REWIND_RW_SDE_H

#include "rw_stepper.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates the SDE stepper `method` ("em" or "sheun") for `prob`, which must have the
 * diffusion op (RW_ERR_ARG naming the problem otherwise). Workspace vectors are allocated
 * here. Collective (vector creation). out: the new stepper (rw_stepper_destroy). */
int rw_stepper_create_sde(rw_problem prob, const char *method, rw_stepper *out);

/* 1 when `name` is an SDE method name ("em", "sheun"). */
int rw_sde_method_known(const char *name);
/* "em, sheun", for help texts and messages. */
const char *rw_sde_method_names(void);
/* The strong order of `method` for additive (additive = 1) or diagonal multiplicative noise;
 * 0 for an unknown name. */
double rw_sde_strong_order(const char *method, int additive);

#ifdef __cplusplus
}
#endif
#endif
