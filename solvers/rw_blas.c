/* BLAS threads and a description of the kernels (see rw_blas.h). */
#include "rewind/rw_blas.h"

#include "rewind/rw_error.h"
#include "rw_smallgemm.h"

#include <stdio.h>
#include <stdlib.h>

/* OpenBLAS's own entry points, not in cblas.h; weak so that another CBLAS links too. */
extern void openblas_set_num_threads(int) __attribute__((weak));
extern char *openblas_get_corename(void) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

int rw_blas_threads(void) { return openblas_get_num_threads ? openblas_get_num_threads() : 1; }

int rw_blas_set_threads(int threads)
{
  if (threads < 1) return RW_ERR_ARG;
  if (openblas_set_num_threads) openblas_set_num_threads(threads);
  return RW_SUCCESS;
}

void rw_blas_describe(char *buf, size_t len)
{
  if (!openblas_get_corename) {
    snprintf(buf, len, "CBLAS (not OpenBLAS)");
    return;
  }
  const char *core = openblas_get_corename();
  const char *env = getenv("OPENBLAS_CORETYPE");
  if (env && env[0])
    snprintf(buf, len, "OpenBLAS, %s kernels (OPENBLAS_CORETYPE=%s)", core ? core : "unknown", env);
  else
    snprintf(buf, len, "OpenBLAS, %s kernels (detected)", core ? core : "unknown");
}

const char *rw_blas_small_describe(long threads)
{
  static char buf[160];
  if (!rw_sgemm_available())
    snprintf(buf, sizeof buf, "BLAS (%s)", rw_sgemm_describe());
  else if (threads != 1)
    snprintf(buf, sizeof buf,
             "%s for layers up to %d x %d, threaded BLAS for larger ones (%ld threads)",
             rw_sgemm_describe(), RW_SGEMM_THREADED_MAX_SIDE, RW_SGEMM_THREADED_MAX_SIDE, threads);
  else
    snprintf(buf, sizeof buf, "%s", rw_sgemm_describe());
  return buf;
}
