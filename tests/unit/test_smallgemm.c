/* The small products through LIBXSMM (solvers/rw_smallgemm.h) that the neural ODE's hidden
 * layers use: against a long-double reference for the shapes an MLP meets (hidden widths,
 * the skinny input and output layers, batches that are and are not multiples of the row
 * block, leading dimensions wider than the matrix), beta 0 and 1; a row's bits do not depend on
 * how the rows are split (ranks hold different row counts); refused arguments leave C alone. */
#include "../solvers/rw_smallgemm.h"
#include "rw_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double urand(unsigned *s)
{
  *s = *s * 1103515245u + 12345u;
  return ((double)((*s >> 8) & 0xffffff) / (double)0x1000000) * 2.0 - 1.0;
}

static void need_kernels(void)
{
#ifdef REWIND_HAVE_LIBXSMM
  /* built with LIBXSMM: on x86-64 it must make kernels (a broken link would fail here) */
#if defined(__x86_64__)
  cr_assert(rw_sgemm_available(), "built with LIBXSMM but it made no kernel on this CPU");
#else
  if (!rw_sgemm_available()) cr_skip_test("LIBXSMM made no kernel on this CPU");
#endif
#else
  cr_assert(!rw_sgemm_available());
  cr_skip_test("built without LIBXSMM (REWIND_WITH_LIBXSMM=OFF or libxsmm-dev missing)");
#endif
}

/* max |C - ref| / max(1, |ref|) over the M x N block of C (ldc), ref = beta C0 + op(A) B */
static double check(int tn, int M, int N, int K, const double *A, int lda, const double *B, int ldb,
                    double beta, const double *C0, const double *C, int ldc)
{
  double err = 0.0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      long double s = beta != 0.0 ? (long double)C0[(size_t)i * ldc + j] : 0.0L;
      for (int k = 0; k < K; k++) {
        const double a = tn ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        s += (long double)a * B[(size_t)k * ldb + j];
      }
      const double e = fabs((double)(C[(size_t)i * ldc + j] - s)) / fmax(1.0, fabs((double)s));
      err = fmax(err, e);
    }
  return err;
}

Test(smallgemm, products_match_reference)
{
  need_kernels();
  const int Ms[] = {1, 7, 63, 64, 65, 256, 300},
            NKs[][2] = {{64, 64}, {64, 2}, {2, 64}, {3, 17}, {17, 3}, {128, 64}};
  unsigned s = 11;
  for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
    for (size_t q = 0; q < sizeof NKs / sizeof *NKs; q++)
      for (int tn = 0; tn < 2; tn++)
        for (int b = 0; b < 2; b++) {
          const int M = Ms[mi], N = NKs[q][0], K = NKs[q][1], pad = (int)(mi % 3);
          /* nn: A M x K; tn: A K x M */
          const int lda = (tn ? M : K) + pad, ldb = N + pad, ldc = N + 2 * pad;
          const int arows = tn ? K : M;
          double *A = malloc(sizeof(double) * (size_t)arows * lda);
          double *B = malloc(sizeof(double) * (size_t)K * ldb);
          double *C = malloc(sizeof(double) * (size_t)M * ldc);
          double *C0 = malloc(sizeof(double) * (size_t)M * ldc);
          cr_assert(A && B && C && C0);
          for (long i = 0; i < (long)arows * lda; i++)
            A[i] = urand(&s);
          for (long i = 0; i < (long)K * ldb; i++)
            B[i] = urand(&s);
          for (long i = 0; i < (long)M * ldc; i++)
            C0[i] = C[i] = urand(&s);
          const double beta = b ? 1.0 : 0.0;
          int rc = tn ? rw_sgemm_rm_tn(M, N, K, A, lda, B, ldb, beta, C, ldc)
                      : rw_sgemm_rm_nn(M, N, K, A, lda, B, ldb, beta, C, ldc);
          cr_assert(rc == 0, "%s M %d N %d K %d: no kernel", tn ? "tn" : "nn", M, N, K);
          double err = check(tn, M, N, K, A, lda, B, ldb, beta, C0, C, ldc);
          cr_assert(err < 1e-14, "%s M %d N %d K %d beta %g: error %.3g", tn ? "tn" : "nn", M, N, K,
                    beta, err);
          /* the padding columns of C are not written */
          for (int i = 0; i < M; i++)
            for (int j = N; j < ldc; j++)
              cr_assert(C[(size_t)i * ldc + j] == C0[(size_t)i * ldc + j]);
          free(A), free(B), free(C), free(C0);
        }
}

Test(smallgemm, rows_do_not_depend_on_the_split)
{
  need_kernels();
  enum { M = 300, N = 64, K = 64 };
  static double A[M * K], B[K * N], C[M * N], D[M * N];
  unsigned s = 5;
  for (int i = 0; i < M * K; i++)
    A[i] = urand(&s);
  for (int i = 0; i < K * N; i++)
    B[i] = urand(&s);
  cr_assert(!rw_sgemm_rm_nn(M, N, K, A, K, B, N, 0.0, C, N));
  /* the same rows in pieces of 1, 37 and the rest, as ranks holding other counts would */
  const int cut[] = {0, 1, 38, M};
  for (int p = 0; p < 3; p++)
    cr_assert(!rw_sgemm_rm_nn(cut[p + 1] - cut[p], N, K, A + (size_t)cut[p] * K, K, B, N, 0.0,
                              D + (size_t)cut[p] * N, N));
  cr_assert(!memcmp(C, D, sizeof C), "a row's bits depend on the row count of the product");
}

Test(smallgemm, refused_arguments)
{
  need_kernels();
  double A[4] = {1, 2, 3, 4}, B[4] = {1, 0, 0, 1}, C[4] = {9, 9, 9, 9};
  cr_assert(rw_sgemm_rm_nn(2, 2, 2, A, 2, B, 2, 0.5, C, 2) == 1, "beta 0.5 must be refused");
  cr_assert(rw_sgemm_rm_tn(2, 2, 0, A, 2, B, 2, 0.0, C, 2) == 1, "K 0 must be refused");
  for (int i = 0; i < 4; i++)
    cr_assert(C[i] == 9.0, "a refused product wrote C");
  cr_assert(rw_sgemm_rm_nn(0, 2, 2, A, 2, B, 2, 0.0, C, 2) == 0, "M 0 is an empty product");
  cr_assert(strstr(rw_sgemm_describe(), "LIBXSMM") != NULL);
}
