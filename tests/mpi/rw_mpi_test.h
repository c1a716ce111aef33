/* Shared helpers for the MPI test programs (run by ctest through mpiexec). */
#ifndef REWIND_TESTS_RW_MPI_TEST_H
#define REWIND_TESTS_RW_MPI_TEST_H

#include "rewind/rw_error.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>

/* A Rewind call that must succeed: on failure print its message and stop every rank. */
#define CHECK(expr)                                                                                \
  do {                                                                                             \
    if ((expr) != 0) {                                                                             \
      fprintf(stderr, "%s failed: %s\n", #expr, rw_error_message());                               \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

/* |a - b| relative to the larger magnitude. */
static inline double rw_test_rel(double a, double b)
{
  return fabs(a - b) / fmax(fmax(fabs(a), fabs(b)), 1e-300);
}

#endif
