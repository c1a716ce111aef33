/* The BLAS behind the neural-ODE matrix products: thread count and a description of the
 * kernels in use, for summaries and benchmarks.
 *
 * Rewind calls cblas_dgemm from OpenBLAS. OpenBLAS built with DYNAMIC_ARCH (Debian's) picks
 * its kernels at load time from the CPU, or from OPENBLAS_CORETYPE when that is set; the
 * kernels set the rate of every product (on this project's test machine, AVX-512 EPYC, the
 * MLP's 256 x 64 x 64 products run at about 47 GFLOP/s with the Haswell kernels and 62-70
 * with the Cooperlake/SkylakeX ones), so the summary names them. Rewind does not override
 * the choice: some OpenBLAS releases compute wrong results on some CPUs with the kernels
 * they detect, and sites pin OPENBLAS_CORETYPE for that reason. */
#ifndef REWIND_RW_BLAS_H
#define REWIND_RW_BLAS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the BLAS thread count (threads >= 1; a no-op for a CBLAS without
 * openblas_set_num_threads). Not collective. Returns RW_ERR_ARG for threads < 1. */
int rw_blas_set_threads(int threads);

/* Which library the neural ODE's hidden-layer products go to on the CPU for a run with
 * `threads` BLAS threads: LIBXSMM's generated kernels with one thread where the build has it,
 * else BLAS (a static string, for the summary). */
const char *rw_blas_small_describe(long threads);

/* The number of threads BLAS products use now (1 when the BLAS cannot say). */
int rw_blas_threads(void);

/* One line for summaries, e.g. "OpenBLAS, Haswell kernels (OPENBLAS_CORETYPE=Haswell)" or
 * "OpenBLAS, Cooperlake kernels (detected)"; "CBLAS (not OpenBLAS)" otherwise. */
void rw_blas_describe(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
