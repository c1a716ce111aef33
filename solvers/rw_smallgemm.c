/* Small dense products through LIBXSMM (see rw_smallgemm.h). */
#include "rw_smallgemm.h"

#include <stdio.h>

#ifdef REWIND_HAVE_LIBXSMM
#include <libxsmm.h>

/* Row-major C = A B is column-major C^T = B^T A^T: LIBXSMM's (m, n, k) = (N, rows, K) with
 * its A operand our B and its B operand our A, no transposes. */
static libxsmm_dmmfunction sgemm_kernel(int N, int rows, int K, int lda, int ldb, int ldc,
                                        double beta)
{
  const libxsmm_blasint xa = ldb, xb = lda, xc = ldc;
  const double alpha = 1.0;
  return libxsmm_dmmdispatch(N, rows, K, &xa, &xb, &xc, &alpha, &beta, NULL, NULL);
}

int rw_sgemm_rm_nn(int M, int N, int K, const double *A, int lda, const double *B, int ldb,
                   double beta, double *C, int ldc)
{
  if (M <= 0 || N <= 0) return 0;
  if (K <= 0 || (beta != 0.0 && beta != 1.0)) return 1;
  libxsmm_dmmfunction full = NULL, rest = NULL;
  const int nfull = M / RW_SGEMM_ROWS, nrest = M % RW_SGEMM_ROWS;
  if (nfull > 0 && !(full = sgemm_kernel(N, RW_SGEMM_ROWS, K, lda, ldb, ldc, beta))) return 1;
  if (nrest > 0 && !(rest = sgemm_kernel(N, nrest, K, lda, ldb, ldc, beta))) return 1;
  for (int b = 0; b < nfull; b++) {
    const size_t r = (size_t)b * RW_SGEMM_ROWS;
    full(B, A + r * (size_t)lda, C + r * (size_t)ldc);
  }
  if (rest) {
    const size_t r = (size_t)nfull * RW_SGEMM_ROWS;
    rest(B, A + r * (size_t)lda, C + r * (size_t)ldc);
  }
  return 0;
}

/* Row-major C = A^T B is column-major C^T = B^T A: (m, n, k) = (N, M, K), LIBXSMM's A operand
 * our B, its B operand our A transposed. */
int rw_sgemm_rm_tn(int M, int N, int K, const double *A, int lda, const double *B, int ldb,
                   double beta, double *C, int ldc)
{
  if (M <= 0 || N <= 0) return 0;
  if (K <= 0 || (beta != 0.0 && beta != 1.0)) return 1;
  const libxsmm_blasint xa = ldb, xb = lda, xc = ldc;
  const double alpha = 1.0;
  const int flags = LIBXSMM_GEMM_FLAG_TRANS_B;
  libxsmm_dmmfunction k = libxsmm_dmmdispatch(N, M, K, &xa, &xb, &xc, &alpha, &beta, &flags, NULL);
  if (!k) return 1;
  k(B, A, C);
  return 0;
}

int rw_sgemm_available(void)
{
  static int avail = -1;
  if (avail < 0) {
    libxsmm_init();
    avail = sgemm_kernel(64, RW_SGEMM_ROWS, 64, 64, 64, 64, 0.0) != NULL;
  }
  return avail;
}

const char *rw_sgemm_describe(void)
{
  static char buf[96];
  if (!rw_sgemm_available()) return "LIBXSMM (no kernel on this CPU)";
  snprintf(buf, sizeof buf, "LIBXSMM %s (%s kernels)", LIBXSMM_VERSION, libxsmm_get_target_arch());
  return buf;
}

#else

int rw_sgemm_available(void) { return 0; }

int rw_sgemm_rm_nn(int M, int N, int K, const double *A, int lda, const double *B, int ldb,
                   double beta, double *C, int ldc)
{
  (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
  return 1;
}

int rw_sgemm_rm_tn(int M, int N, int K, const double *A, int lda, const double *B, int ldb,
                   double beta, double *C, int ldc)
{
  (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
  return 1;
}

const char *rw_sgemm_describe(void) { return "none (built without LIBXSMM)"; }

#endif
