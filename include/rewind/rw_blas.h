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

/* Instruction sets of this CPU that select kernels (rw_cpu_isa's bits). */
enum { RW_ISA_AVX2 = 1u, RW_ISA_AVX512 = 2u };

/* RW_ISA_AVX2 when the CPU has AVX2 and FMA, RW_ISA_AVX512 when it has AVX-512 F and DQ. */
unsigned rw_cpu_isa(void);

/* When OpenBLAS's kernels `core` (openblas_get_corename) are one of its generic fallbacks for a
 * CPU it does not know (Prescott, Katmai, Core2, Barcelona, ...) and the CPU has the
 * instruction sets `isa` (rw_cpu_isa) for better ones: the OPENBLAS_CORETYPE that selects them
 * ("SkylakeX" with AVX-512, "Haswell" with AVX2); NULL otherwise. Pure. */
const char *rw_blas_better_core(const char *core, unsigned isa);

/* A warning for users (a static string), or NULL: OpenBLAS runs fallback kernels on a CPU that
 * has better ones (rw_blas_better_core) and OPENBLAS_CORETYPE is not set. Rewind still does
 * not override the choice (above); it says what the choice costs and how to change it. */
const char *rw_blas_advice(void);

/* One line for summaries, e.g. "OpenBLAS, Haswell kernels (OPENBLAS_CORETYPE=Haswell)" or
 * "OpenBLAS, Cooperlake kernels (detected)"; "CBLAS (not OpenBLAS)" otherwise. */
void rw_blas_describe(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
