/* Step-size stability of explicit Runge-Kutta steppers on diffusion problems, and a cheap
 * blow-up test for a forward sweep.
 *
 * An explicit RK method applied to y' = lambda y multiplies y by R(dt lambda) per step, R its
 * stability polynomial. For a diffusion operator the eigenvalues lie on the negative real
 * axis, in [-rho, 0] with rho a bound on the spectral radius (for the 5/7-point Laplacian,
 * 4 D dim / h^2), so the steps stay bounded while dt rho <= beta, beta the method's real
 * stability interval: the largest beta with |R(z)| <= 1 on [-beta, 0]. It is computed here
 * from the Butcher tableau (R(z) = 1 + sum_k z^k b^T A^(k-1) 1 for an explicit method):
 * euler 2, heun 2, ssprk3 2.5127, rk4 and rk38 2.7853, dopri5 3.3066 (Hairer & Wanner,
 * Solving ODEs II, section IV.2). The problems give rho (rw_gs_eigen_bound,
 * rw_burgers_eigen_bound); the apps compare dt with beta / rho at start-up. */
#ifndef REWIND_RW_STABILITY_H
#define REWIND_RW_STABILITY_H

#include "rw_stepper.h"
#include "rw_vector.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The real stability interval beta of an explicit tableau (see above). Not collective.
 * RW_ERR_ARG for a NULL or implicit tableau. */
int rw_tableau_real_stability(const rw_tableau *tab, double *beta);

/* The largest |y_i| over every rank of y's communicator, or +INFINITY when any entry is not
 * finite. Collective. */
int rw_state_max_abs(N_Vector y, double *amax);

/* What to do when dt exceeds the stability limit (the apps' key stability_check). */
typedef enum {
  RW_STABILITY_ERROR = 0,
  RW_STABILITY_WARN = 1,
  RW_STABILITY_OFF = 2
} rw_stability_mode;

/* Compares the longest step, min(dt, span) with span = tf - t0 (0: dt), with the limit
 * beta / rho of stepper `tab` (rho from the problem, described by
 * rho_text for the message, e.g. "4 dim max(D_u, D_v) / h^2 + ..."). *limit = beta / rho
 * (+INFINITY for rho = 0). Above the limit: RW_STABILITY_ERROR returns RW_ERR_DECK naming dt
 * (and dt_source, where it came from), the limit, the stepper and how to override;
 * RW_STABILITY_WARN prints a warning with the factor on stderr (rank 0) and returns 0;
 * RW_STABILITY_OFF returns 0. Collective in the sense that every rank must pass the same
 * values (it communicates nothing). */
int rw_stability_check_dt(rw_context ctx, const rw_tableau *tab, double dt, double span,
                          const char *dt_source, double rho, const char *rho_text,
                          rw_stability_mode mode, double *limit);

/* The blow-up test of a forward sweep: RW_ERR_STEP when max |y| over all ranks is not finite
 * or above `bound`, naming the step, the time and dt. Collective. */
int rw_state_check_blowup(N_Vector y, double bound, long step, double t, double dt);

#ifdef __cplusplus
}
#endif
#endif
