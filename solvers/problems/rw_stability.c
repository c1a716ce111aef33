/* Explicit stability limits and the blow-up test (see rw_stability.h). It lives with the
 * problems that use it (Gray-Scott, Burgers) so that the problem folder builds it. */
#include "rewind/rw_stability.h"

#include "rewind/rw_device.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>

#define RW_STAB_MAX_STAGES 16

/* R(z) from its coefficients g[0..s] (g[0] = 1), by Horner's rule. */
static double rw_stab_poly(const double *g, int s, double z)
{
  double r = g[s];
  for (int k = s - 1; k >= 0; k--)
    r = r * z + g[k];
  return r;
}

/* A tableau's name for messages: a user's tableau may have none (as rw_stepper_create_erk). */
static const char *rw_stab_name(const rw_tableau *tab) { return tab->name ? tab->name : "custom"; }

/* The real stability interval: R's coefficients are g_k = b^T A^(k-1) 1 (k >= 1), then the
 * first z < 0 where |R(z)| exceeds 1 is found by a scan in steps of 1e-3 (an explicit
 * s-stage method has beta <= 2 s^2) and refined by bisection to 1e-12.
 *   tab   an explicit tableau (a strictly lower triangular)
 *   beta  out: the interval's length
 * Not collective. Returns RW_ERR_ARG for a NULL, implicit or too large tableau. */
int rw_tableau_real_stability(const rw_tableau *tab, double *beta)
{
  RW_CHECK(tab && beta && tab->stages >= 1 && tab->stages <= RW_STAB_MAX_STAGES, RW_ERR_ARG,
           "rw_tableau_real_stability: NULL or unsupported tableau");
  RW_CHECK(tab->a && tab->b, RW_ERR_ARG, "rw_tableau_real_stability: tableau '%s' has no %s",
           rw_stab_name(tab), tab->a ? "b" : "a");
  int s = tab->stages;
  for (int i = 0; i < s; i++)
    for (int j = i; j < s; j++)
      RW_CHECK(tab->a[i * s + j] == 0.0, RW_ERR_ARG,
               "rw_tableau_real_stability: tableau '%s' is not explicit", rw_stab_name(tab));
  double g[RW_STAB_MAX_STAGES + 1], v[RW_STAB_MAX_STAGES], w[RW_STAB_MAX_STAGES];
  g[0] = 1.0;
  for (int i = 0; i < s; i++)
    v[i] = 1.0;
  for (int k = 1; k <= s; k++) {
    double gk = 0.0;
    for (int i = 0; i < s; i++)
      gk += tab->b[i] * v[i];
    g[k] = gk;
    for (int i = 0; i < s; i++) {
      w[i] = 0.0;
      for (int j = 0; j < i; j++)
        w[i] += tab->a[i * s + j] * v[j];
    }
    for (int i = 0; i < s; i++)
      v[i] = w[i];
  }
  const double step = 1e-3, zmax = 2.0 * s * s + 1.0;
  double lo = 0.0, hi = -1.0;
  for (double x = step; x <= zmax; x += step) {
    if (fabs(rw_stab_poly(g, s, -x)) > 1.0 + 1e-12) {
      hi = x;
      break;
    }
    lo = x;
  }
  RW_CHECK(hi > 0.0, RW_ERR_INTERNAL,
           "rw_tableau_real_stability: no end of the stability interval of '%s' below %g",
           rw_stab_name(tab), zmax);
  while (hi - lo > 1e-12) {
    double mid = 0.5 * (lo + hi);
    if (fabs(rw_stab_poly(g, s, -mid)) > 1.0 + 1e-12)
      hi = mid;
    else
      lo = mid;
  }
  *beta = lo;
  return 0;
}

/* The largest |y_i| over all ranks; +INFINITY when an entry is NaN or infinite (NaN fails
 * every comparison, so it is looked for explicitly).
 *   y     a parallel state vector
 *   amax  out: the maximum, the same on every rank
 * Collective on y's communicator. */
int rw_state_max_abs(N_Vector y, double *amax)
{
  RW_CHECK(y && amax, RW_ERR_ARG, "rw_state_max_abs: NULL argument");
  const double *d = NULL;
  double *tmp = NULL; /* a device vector's host copy */
  RW_CALL(rw_vec_host_read(y, &d, &tmp));
  long n = (long)rw_vec_local_length(y);
  double m = 0.0;
  for (long i = 0; i < n; i++) {
    double a = fabs(d[i]);
    if (!isfinite(a)) {
      m = INFINITY;
      break;
    }
    if (a > m) m = a;
  }
  rw_free(&tmp);
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, rw_vec_comm(y)));
  *amax = m;
  return 0;
}

/* See rw_stability.h. Not collective (every rank computes the same answer).
 *   ctx        for the rank (only rank 0 prints the warning)
 *   tab        the stepper's tableau
 *   dt         the step size, dt_source where it came from ("command line", ...)
 *   span       tf - t0: a dt beyond it makes one step of span, which is what is checked
 *   rho        the problem's eigenvalue bound, rho_text its formula for the message
 *   mode       error, warn or off
 *   limit      out: beta / rho
 * Returns 0, RW_ERR_DECK (dt above the limit in error mode) or RW_ERR_ARG. */
int rw_stability_check_dt(rw_context ctx, const rw_tableau *tab, double dt, double span,
                          const char *dt_source, double rho, const char *rho_text,
                          rw_stability_mode mode, double *limit)
{
  double beta = 0.0;
  RW_CHECK(ctx && limit && rho >= 0.0, RW_ERR_ARG, "rw_stability_check_dt: bad argument");
  RW_CALL(rw_tableau_real_stability(tab, &beta));
  *limit = rho > 0.0 ? beta / rho : INFINITY;
  double h = span > 0.0 && dt > span ? span : dt; /* the longest step taken */
  char one[64] = "";
  if (h < dt) snprintf(one, sizeof one, "; one step of tf - t0 = %g", h);
  if (mode == RW_STABILITY_OFF || h <= *limit) return 0;
  RW_CHECK(mode != RW_STABILITY_ERROR, RW_ERR_DECK,
           "dt = %g (from %s%s) exceeds the explicit stability limit %.4g of stepper %s, by a "
           "factor %.3g (limit = its real stability interval %.4g / the eigenvalue bound %.4g = "
           "%s); reduce dt, or set stability_check: warn (or off) to run anyway",
           dt, dt_source ? dt_source : "?", one, *limit, rw_stab_name(tab), h / *limit, beta, rho,
           rho_text);
  if (rw_context_rank(ctx) == 0)
    fprintf(stderr,
            "warning: dt = %g%s exceeds the explicit stability limit %.4g of stepper %s by a "
            "factor %.3g (stability_check: warn); the solution may blow up\n",
            dt, one, *limit, rw_stab_name(tab), h / *limit);
  return 0;
}

/* See rw_stability.h.
 *   y      the state after step `step` at time t
 *   bound  the largest acceptable max |y|
 *   dt     the step size (for the message)
 * Collective on y's communicator. Returns 0 or RW_ERR_STEP. */
int rw_state_check_blowup(N_Vector y, double bound, long step, double t, double dt)
{
  double amax = 0.0;
  RW_CALL(rw_state_max_abs(y, &amax));
  RW_CHECK(amax <= bound, RW_ERR_STEP,
           "the solution blew up at step %ld (t = %g): max |y| = %g is not finite or above %g; "
           "reduce dt (%g) or check the parameters",
           step, t, amax, bound, dt);
  return 0;
}
