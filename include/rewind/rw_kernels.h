/* Element-wise kernels shared by the CPU and CUDA paths: one formula, two compilers. */
#ifndef REWIND_RW_KERNELS_H
#define REWIND_RW_KERNELS_H

#include <math.h>

#if defined(__CUDACC__)
#define RW_HD __host__ __device__
#else
#define RW_HD
#endif

/* RW_SIMD_CLONES before a hot CPU loop's definition compiles it for AVX-512, AVX2 and the
 * baseline, and the loader picks the widest the CPU has (GCC's target_clones, an ifunc). The
 * clones compute the same bits: the build does not contract into fused multiply-adds
 * (-std=c11 implies -ffp-contract=off), so only the vector width changes. Empty elsewhere
 * (other compilers, sanitizer builds, CUDA). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&       \
    !defined(__CUDACC__) && !defined(__SANITIZE_ADDRESS__)
#define RW_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RW_SIMD_CLONES
#endif

/* sum_k c[k] * x[k][i], accumulated in index order with explicit fma so host and device
 * round identically. */
static inline RW_HD double rw_kernel_lincomb(int nv, const double *c, const double *const *x,
                                             long i)
{
  double s = c[0] * x[0][i];
  for (int k = 1; k < nv; k++)
    s = fma(c[k], x[k][i], s);
  return s;
}

#endif
