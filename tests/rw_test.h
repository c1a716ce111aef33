/* Shared helpers for Criterion unit tests: MPI set-up per test process (Criterion runs each
 * test in its own child process, so each initialises MPI as a singleton) and small checks. */
#ifndef REWIND_TESTS_RW_TEST_H
#define REWIND_TESTS_RW_TEST_H

#include "rewind/rw_context.h"

#include <criterion/criterion.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>

static inline void rw_test_mpi_init(void)
{
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) MPI_Init(NULL, NULL);
}

static inline void rw_test_mpi_fini(void)
{
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

/* Asserts a Rewind call succeeded, printing the error message otherwise. */
#define RW_TEST_OK(expr)                                                                           \
  do {                                                                                             \
    int rw_test_ierr_ = (expr);                                                                    \
    cr_assert_eq(rw_test_ierr_, 0, "%s failed (%d): %s", #expr, rw_test_ierr_,                     \
                 rw_error_message());                                                              \
  } while (0)

static inline double rw_test_relerr(double a, double b)
{
  double s = fmax(fabs(a), fabs(b));
  return s == 0.0 ? 0.0 : fabs(a - b) / s;
}

#endif
