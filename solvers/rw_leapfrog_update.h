/* The plain leapfrog's update of a run of nodes (rw_leapfrog.h's layout), shared by the stepper
 * (rw_leapfrog.c, acceleration from the interleaved rhs: as = 2) and by a problem's one-sweep
 * step (rw_problem_ops.leapfrog_step: rw_wave.c, acceleration from a row of its own: as = 1), so
 * that both round every node the same way. The step (rev = 0) from y = (u^n, u^{n-1}):
 * o = ((2 u^n - u^{n-1}) + h2 a, u^n); the inverse step (rev = 1) from y = (u^{n+1}, u^n):
 * o = (u^n, (2 u^n - u^{n+1}) + h2 a), the same expression with the components' roles swapped.
 * In place (o == y, each node's pair read before it is written) through one pointer, so that
 * the compiler sees that the loop carries nothing. Inline into a caller built for several ISAs
 * (RW_SIMD_CLONES) with constant `as` and `rev`, it vectorises. Internal header. */
#ifndef REWIND_RW_LEAPFROG_UPDATE_H
#define REWIND_RW_LEAPFROG_UPDATE_H

static inline __attribute__((always_inline)) void rw_leapfrog_update_run(const double *y,
                                                                         const double *restrict a,
                                                                         long as, double *o,
                                                                         double h2, long n, int rev)
{
  const int p = rev ? 1 : 0, q = 1 - p; /* the newer level's component, the older one's */
  if (o == y) {
    for (long i = 0; i < n; i++) {
      const double u = o[2 * i + p], v = o[2 * i + q];
      o[2 * i + p] = (2.0 * u - v) + h2 * a[as * i];
      o[2 * i + q] = u;
    }
    return;
  }
  const double *restrict yr = y;
  double *restrict orr = o;
  for (long i = 0; i < n; i++) {
    const double u = yr[2 * i + p], v = yr[2 * i + q];
    orr[2 * i + p] = (2.0 * u - v) + h2 * a[as * i];
    orr[2 * i + q] = u;
  }
}

#endif
