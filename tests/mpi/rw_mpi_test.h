/* Shared helpers for the MPI test programs (run by ctest through mpiexec). */
#ifndef REWIND_TESTS_RW_MPI_TEST_H
#define REWIND_TESTS_RW_MPI_TEST_H

#include "rewind/rw_error.h"
#include "rewind/rw_grid.h"
#include "rewind/rw_vector.h"

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A Rewind call that must succeed: on failure print its message and stop every rank. */
#define CHECK(expr)                                                                                \
  do {                                                                                             \
    if ((expr) != 0) {                                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, rw_error_message());    \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

/* The larger and the smaller of a and b, NaN when either is (fmax and fmin drop a NaN): a
 * reduction of errors, differences or Taylor orders over entries one of which is NaN (a NaN
 * gradient, J or remainder) stays NaN, and every check on it (x <= tol, x > order) fails
 * instead of passing. */
static inline double rw_test_max(double a, double b)
{
  return isnan(a) || isnan(b) ? NAN : fmax(a, b);
}

static inline double rw_test_min(double a, double b)
{
  return isnan(a) || isnan(b) ? NAN : fmin(a, b);
}

/* Uniform in [-1, 1) from (seed, index): splitmix64's finaliser (Steele, Lea and Flood, "Fast
 * splittable pseudorandom number generators", OOPSLA 2014), so a field filled from global node
 * indices is the same whatever the decomposition. */
static inline double rw_test_hash01(uint64_t seed, uint64_t i)
{
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

/* |a - b| relative to the larger magnitude. */
static inline double rw_test_rel(double a, double b)
{
  return fabs(a - b) / fmax(fmax(fabs(a), fabs(b)), 1e-300);
}

/* 2-D grid fields (test_burgers, test_wave). A smooth deterministic function of the global node, so
 * fields are the same whatever the decomposition. */
static inline double rw_test_smooth(long i, long j, int c, int seed)
{
  return sin(0.37 * (double)i + 0.91 * seed + 1.3 * c) * cos(0.23 * (double)j - 0.4 * seed) +
         0.3 * sin(0.11 * (double)(i * j) + seed);
}

/* v(i, j, c) = a + b smooth(i, j, c, seed) over the owned nodes of grid g. */
static inline void rw_test_fill(rw_grid g, N_Vector v, double a, double b, int seed)
{
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  int nc = rw_grid_get_config(g)->ncomp;
  double *x = rw_vec_data(v);
  for (long j = 0; j < cnt[1]; j++)
    for (long i = 0; i < cnt[0]; i++)
      for (int c = 0; c < nc; c++)
        x[(j * cnt[0] + i) * nc + c] = a + b * rw_test_smooth(st[0] + i, st[1] + j, c, seed);
}

/* The global field (every node, every component) on every rank of g's communicator. */
static inline double *rw_test_gather(rw_grid g, N_Vector v, long *len)
{
  const rw_grid_config *cf = rw_grid_get_config(g);
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  int nc = cf->ncomp;
  *len = cf->n[0] * cf->n[1] * nc;
  double *out = calloc((size_t)*len, sizeof(double));
  const double *x = rw_vec_data(v);
  for (long j = 0; j < cnt[1]; j++)
    for (long i = 0; i < cnt[0]; i++)
      for (int c = 0; c < nc; c++)
        out[((st[1] + j) * cf->n[0] + st[0] + i) * nc + c] = x[(j * cnt[0] + i) * nc + c];
  MPI_Allreduce(MPI_IN_PLACE, out, (int)*len, MPI_DOUBLE, MPI_SUM,
                rw_context_comm(rw_grid_context(g)));
  return out;
}

#endif
