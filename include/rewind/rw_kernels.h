/* Element-wise kernels shared by the CPU and CUDA paths: one formula, two compilers. */
#ifndef REWIND_RW_KERNELS_H
#define REWIND_RW_KERNELS_H

#include <math.h>

#if defined(__CUDACC__)
#define RW_HD __host__ __device__
#else
#define RW_HD
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
