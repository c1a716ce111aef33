/* Optional CUDA backend. Built when CMake finds nvcc (REWIND_ENABLE_CUDA=AUTO/ON); when not
 * built, every function returns RW_ERR_NOT_IMPLEMENTED with a message saying so by name.
 * The element-wise math is shared with the CPU path through rw_kernels.h. */
#ifndef REWIND_RW_CUDA_H
#define REWIND_RW_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build of Rewind includes the CUDA backend. */
int rw_cuda_built(void);

/* Number of usable CUDA devices; RW_ERR_NO_DEVICE (with the CUDA runtime's reason) when
 * there are none. Not collective. */
int rw_cuda_device_count(int *count);

/* z = sum_k c[k] x[k] over n host values, computed on the device (staged through device
 * memory). The per-element formula is rw_kernel_lincomb, the one the CPU reference
 * rw_host_linear_combination uses. Not collective. */
int rw_cuda_linear_combination(int nv, const double *c, const double *const *x, double *z, long n);

/* CPU reference of the same operation. */
void rw_host_linear_combination(int nv, const double *c, const double *const *x, double *z, long n);

#ifdef __cplusplus
}
#endif
#endif
