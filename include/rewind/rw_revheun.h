/* The reversible Heun stepper (Kidger, Foster, Li & Lyons, "Efficient and accurate gradients
 * for neural SDEs", NeurIPS 2021, Sec. 3; there named for SDEs, here used on ODEs), with its
 * inverse step and its discrete adjoint, for any first-order problem y' = f(t, y; p).
 *
 * It runs on the partnered problem (rw_problem_create_partnered): the state is (y, yhat),
 * both of the inner problem's layout, and y_0 = yhat_0 = the initial state. One step over
 * [t, t + h] (F0, F1 inner rhs evaluations):
 *   F0      = f(t, yhat_n)
 *   yhat+   = 2 y_n - yhat_n + h F0
 *   F1      = f(t + h, yhat+)
 *   y+      = y_n + (h/2) F0 + (h/2) F1
 *   q      += (h/2) r(t, yhat_n) + (h/2) r(t + h, yhat+)       (running cost, trapezoid)
 * y is second-order accurate (Heun's method with yhat in place of the Euler predictor).
 *
 * Inverse step (rw_stepper_reverse_step; RW_REVERSE_INVERSE), algebraically exact:
 *   F1 = f(t + h, yhat+),  yhat_n = 2 y+ - yhat+ - h F1,  F0 = f(t, yhat_n),
 *   y_n = y+ - (h/2) F0 - (h/2) F1.
 * In floating point each inverse step carries the rounding of these operations; the scheme
 * is not dissipative in (y, yhat), so the drift grows slowly, and the drift checks of
 * adjoint_mode reversible bound it.
 *
 * Adjoint step (exact transpose; lambda = (ly, lh) = dJ/d(y+, yhat+) on entry):
 *   lh += (h/2) dr/dy(t + h, yhat+),          pbar += (h/2) dr/dp(t + h, yhat+)
 *   a   = lh + J1^T ((h/2) ly),               pbar += (df/dp)^T ((h/2) ly)  at (t + h, yhat+)
 *   W0  = (h/2) ly + h a
 *   ly <- ly + 2 a
 *   lh <- -a + J0^T W0 + (h/2) dr/dy(t, yhat_n), pbar += (df/dp)^T W0 + (h/2) dr/dp(t, yhat_n)
 * with J0, J1 the Jacobians df/dy at (t, yhat_n) and (t + h, yhat+). dJ/dy0 of the inner
 * problem is ly + lh at step 0 (y_0 and yhat_0 are both the initial state).
 *
 * Stability (why the drift checks matter even for the forward sweep): on y' = lambda y with
 * z = h lambda, one step maps (y, yhat) by [[1 + z, z^2 / 2], [2, z - 1]], whose eigenvalues
 * are z +- sqrt(z^2 + 1). On the imaginary segment |z| <= 1 both have modulus 1; for any real
 * part, of either sign, one of them is larger than 1 in modulus: the parasitic mode (y - yhat)
 * grows like exp(|Re lambda| t). The method suits oscillatory problems and moderate horizons;
 * on Lotka-Volterra (alpha 1.5, beta 1, gamma 3, delta 1, h = 0.01) y and yhat part visibly by
 * t = 10 and overflow by t = 20. Then the forward J is wrong, not only the rebuild: compare
 * with an RK stepper before trusting a long run.
 *
 * With noise (the inner problem has a diffusion term g and a nonzero noise amplitude when the
 * stepper is created: rw_problem_set_noise first), the SDE form of Kidger et al. for the
 * Stratonovich SDE dy = f dt + g o dW, with dW the increment of step n (the index the driver
 * sets, rw_stepper_set_step_index; refused without it), G0 = g(t, yhat_n) dW and
 * G1 = g(t + h, yhat+) dW elementwise (g is diagonal):
 *   yhat+ = 2 y_n - yhat_n + h F0 + G0,   y+ = y_n + (h/2)(F0 + F1) + (1/2)(G0 + G1),
 * inverse: yhat_n = 2 y+ - yhat+ - h F1 - G1, y_n = y+ - (h/2)(F0 + F1) - (1/2)(G0 + G1),
 * the same increment redrawn; adjoint: a gains D1 (dW ly / 2) and lh gains D0 (dW (ly / 2 +
 * a)), D the diffusion's VJP (rw_problem_diffusion_vjp, which adds its parameter part to
 * pbar). Strong order 1 on additive noise (measured in test_sde).
 *
 * The stepper keeps no state between calls: store, checkpoint and the memory-free modes all
 * see (y, yhat) as the state, so every mode gives the same gradient as with any stepper.
 * One "stage vector" (the step's input state) per step for store_stages. */
#ifndef REWIND_RW_REVHEUN_H
#define REWIND_RW_REVHEUN_H

#include "rw_stepper.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates the reversible Heun stepper for `partnered`, a problem made by
 * rw_problem_create_partnered (RW_ERR_ARG otherwise). Workspace is allocated here.
 * Collective (vector creation). */
int rw_stepper_create_revheun(rw_problem partnered, rw_stepper *out);

/* y0 -> (y0, y0) in a partnered state; (ly, lh) -> ly + lh (dJ/dy0 of the inner problem).
 * Through views and vector operations, so device vectors work too. Return 0, or an error when
 * the two views cannot be made. Not collective. */
int rw_revheun_initial_state(N_Vector y0, N_Vector Y);
int rw_revheun_initial_adjoint(N_Vector L, N_Vector dJdy0);

#ifdef __cplusplus
}
#endif
#endif
