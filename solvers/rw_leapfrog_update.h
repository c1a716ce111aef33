/* The plain leapfrog's update of a run of nodes (rw_leapfrog.h's layout), shared by the stepper
 * (rw_leapfrog.c, acceleration from the interleaved rhs: as = 2) and by a problem's one-sweep
 * step (rw_problem_ops.leapfrog_step: rw_wave.c, acceleration from a row of its own: as = 1), so
 * that both round every node the same way: o = ((2 u - v) + h2 a, u). In place (o == y, each
 * node's pair read before it is written) through one pointer, so that the compiler sees that
 * the loop carries nothing. Inline into a caller built for several ISAs (RW_SIMD_CLONES) with a
 * constant `as`, it vectorises. Internal header. */
#ifndef REWIND_RW_LEAPFROG_UPDATE_H
#define REWIND_RW_LEAPFROG_UPDATE_H

static inline __attribute__((always_inline)) void rw_leapfrog_update_run(const double *y,
                                                                         const double *restrict a,
                                                                         long as, double *o,
                                                                         double h2, long n)
{
  if (o == y) {
    for (long i = 0; i < n; i++) {
      const double u = o[2 * i], v = o[2 * i + 1];
      o[2 * i] = (2.0 * u - v) + h2 * a[as * i];
      o[2 * i + 1] = u;
    }
    return;
  }
  const double *restrict yr = y;
  double *restrict orr = o;
  for (long i = 0; i < n; i++) {
    const double u = yr[2 * i], v = yr[2 * i + 1];
    orr[2 * i] = (2.0 * u - v) + h2 * a[as * i];
    orr[2 * i + 1] = u;
  }
}

/* The plain inverse step's update (rw_leapfrog.h): from y = (u^{n+1}, u^n) and a = a(t, u^n),
 * o = (u^n, (2 u^n - u^{n+1}) + h2 a); in place or not, as above. */
static inline __attribute__((always_inline)) void rw_leapfrog_reverse_run(const double *y,
                                                                          const double *restrict a,
                                                                          long as, double *o,
                                                                          double h2, long n)
{
  if (o == y) {
    for (long i = 0; i < n; i++) {
      const double un = o[2 * i + 1], u1 = o[2 * i];
      o[2 * i] = un;
      o[2 * i + 1] = (2.0 * un - u1) + h2 * a[as * i];
    }
    return;
  }
  const double *restrict yr = y;
  double *restrict orr = o;
  for (long i = 0; i < n; i++) {
    const double un = yr[2 * i + 1], u1 = yr[2 * i];
    orr[2 * i] = un;
    orr[2 * i + 1] = (2.0 * un - u1) + h2 * a[as * i];
  }
}

#endif
