/* The leapfrog (central difference, Stormer-Verlet in two-level form) stepper for
 * second-order-in-time equations u_tt = a(t, u; p), with its discrete adjoint.
 *
 * State layout: y holds (u^n, u^{n-1}) interleaved, 2 components per node:
 *   y[2 i] = u^n_i,  y[2 i + 1] = u^{n-1}_i.
 * The problem's rhs returns the acceleration a(t, y) in the FIRST component of f
 * (f[2 i] = a_i; the second component is ignored by the step, and a problem should set it
 * to 0). One step over [t, t + h]:
 *   u^{n+1} = 2 u^n - u^{n-1} + h^2 a(t, y_n),     y_{n+1} = (u^{n+1}, u^n),
 *   q_{n+1} = q_n + h r(t + h, y_{n+1})            (running cost on the NEW state),
 * so over N steps q_N = sum_{n=1}^{N} h_n r(t_n, y_n): the right-endpoint rule, which for a
 * receiver misfit is J = 1/2 sum_r sum_{n=1}^{N} dt (u^n(x_r) - d_r^n)^2.
 *
 * Adjoint step (lambda = (lu, lv) = dJ/dy_{n+1} on entry, exact transpose of the above):
 *   lambda += h dr/dy(t + h, y_{n+1})       (y_{n+1} recomputed: one rhs, only when the
 *   pbar   += h dr/dp(t + h, y_{n+1})        problem has a running cost)
 *   w       = (h^2 lu, 0)
 *   g       = (da/dy(y_n))^T w,   pbar += (da/dp(y_n))^T w  (and the field adjoint)
 *   dJ/dy_n = (2 lu + lv + g_u,  -lu + g_v).
 *
 * The scheme is the constant-step leapfrog: it is second-order accurate only when every step
 * has the same h (the variable-step form needs h_{n-1}, which the state does not hold).
 * The step and its adjoint are exact transposes for any h, so a gradient is always the
 * gradient of the J computed, but apps should choose dt dividing tf - t0 (rewind-wave
 * requires it). One "stage vector" is stored per step (y_n itself).
 *
 * Inverse step (adjoint_mode reversible, rw_stepper_reverse_step): from y_{n+1} = (u^{n+1}, u^n),
 *   u^{n-1} = 2 u^n - u^{n+1} + h^2 a(t, y_n),   y_n = (u^n, u^{n-1}).
 * It needs a(t, y_n) from u^n alone: the problem's acceleration must not read the second
 * component (true of rw_wave; a damped equation whose a uses (u^n - u^{n-1}) / h would need
 * an implicit inverse). In floating point the rebuilt u^{n-1} carries the rounding of the
 * update; the scheme is non-dissipative, so that error is not amplified.
 *
 * The step reads and writes the interleaved components through rw_vec_data: it is a
 * host-memory stepper (a device vector would need a component-wise kernel). */
#ifndef REWIND_RW_LEAPFROG_H
#define REWIND_RW_LEAPFROG_H

#include "rw_stepper.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates the leapfrog stepper for `prob`, whose state must hold two interleaved components
 * per node (local length even; RW_ERR_ARG otherwise). Workspace vectors are allocated here.
 * The stepper is fixed-step (no embedded error estimate): do not run it adaptively.
 * Collective (vector creation). out: the new stepper (destroy with rw_stepper_destroy). */
int rw_stepper_create_leapfrog(rw_problem prob, rw_stepper *out);

/* The exact (fixed-point) leapfrog, after the JANUS integrator (Rein & Tamayo, MNRAS 473,
 * 2018): every u is held on the grid of multiples of 2^-s, and each step's increment h^2 a is
 * rounded to that grid, so 2u^n - u^{n-1} + [h^2 a] is integer arithmetic in units of 2^-s and
 * the inverse step u^{n-1} = 2u^n - u^{n+1} + [h^2 a] restores every bit: zero drift, and
 * adjoint_mode reversible gives the store-mode gradient of this scheme bit for bit.
 * The integers are held in the state's doubles (exact below 2^53 units), so vectors, norms
 * and output work unchanged; s is chosen from `range`, the largest |u| the run may reach:
 * 2^(53 - s) >= 16 range, so 2u - v and the increment stay exact. Resolution 2^-s: about
 * range x 2^-49 (e.g. 1.8e-15 for range 1, 1.8e-12 for range 1000). Each step checks (one
 * reduction over ranks) that |u| <= range, and stops every rank with RW_ERR_STEP past it: the
 * arithmetic would no longer be exact. The initial state must lie on the grid: round it with
 * rw_leapfrog_exact_round (zero, the wave app's start, is). The discrete adjoint is that of
 * the unrounded scheme at the stored states (the rounding is a perturbation of 2^-s).
 * Collective. */
int rw_stepper_create_leapfrog_exact(rw_problem prob, double range, rw_stepper *out);
/* Grid spacing 2^-s of an exact leapfrog (0 for the plain one). */
double rw_leapfrog_exact_resolution(rw_stepper st);
/* Rounds y onto an exact leapfrog's grid (no-op for the plain one). Not collective. */
void rw_leapfrog_exact_round(rw_stepper st, N_Vector y);

#ifdef __cplusplus
}
#endif
#endif
