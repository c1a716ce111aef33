/* Small dense products on one core through LIBXSMM's just-in-time kernels (internal).
 *
 * The neural ODE's hidden layers multiply a few hundred rows by a 64 x 64 weight matrix at
 * every stage: products too small for OpenBLAS's packing to pay (measured on P0's shape on an
 * AVX-512 core: 44 to 54 GFLOP/s through cblas_dgemm, 65 to 80 through LIBXSMM). LIBXSMM
 * generates a register-blocked kernel for each shape once (its own registry caches it); the
 * rows are taken in blocks of RW_SGEMM_ROWS so that one kernel shape serves any batch. */
#ifndef REWIND_RW_SMALLGEMM_H
#define REWIND_RW_SMALLGEMM_H

/* Rows per kernel call: a 64 x 64 block of doubles (32 KiB) stays in the first-level cache. */
#define RW_SGEMM_ROWS 64

/* With more than one BLAS thread, a layer whose weight matrix has at most this many entries
 * still goes to these one-thread kernels (OpenBLAS's threads cost more than they share there;
 * measured in docs/architecture.md), and a larger one to the threaded BLAS. */
#define RW_SGEMM_THREADED_MAX_SIDE 128

/* 1 when the build has LIBXSMM and it made a kernel on this CPU for a test shape (so
 * rw_sgemm_rm_nn will not fall back); 0 otherwise. The first call initialises LIBXSMM. */
int rw_sgemm_available(void);

/* Row-major C (M x N, ldc) = beta C + A (M x K, lda) B (K x N, ldb), beta 0 or 1. Returns 0
 * when done, 1 when no kernel is available (no LIBXSMM, or it declined the shape): the
 * caller then uses cblas_dgemm. Each row of C is summed over k in ascending order by the
 * same kernel whatever M is, so a row's bits do not depend on how the rows are split across
 * ranks. */
int rw_sgemm_rm_nn(int M, int N, int K, const double *A, int lda, const double *B, int ldb,
                   double beta, double *C, int ldc);

/* Row-major C (M x N, ldc) = beta C + A^T B, A K x M (lda), B K x N (ldb), beta 0 or 1: one
 * kernel over all K rows (the weight gradient's sum over the batch). Returns as rw_sgemm_rm_nn. */
int rw_sgemm_rm_tn(int M, int N, int K, const double *A, int lda, const double *B, int ldb,
                   double beta, double *C, int ldc);

/* "LIBXSMM 1.17 (target ...)" or "none" for the summary's BLAS line. */
const char *rw_sgemm_describe(void);

#endif
