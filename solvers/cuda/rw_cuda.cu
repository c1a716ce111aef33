// CUDA backend: device discovery and the linear combination that every RK stage uses,
// with the element formula shared with the CPU path (rewind/rw_kernels.h). MPI here is not
// CUDA-aware, so distributed GPU vectors will stage halos through host memory.
#include "rewind/rw_cuda.h"
#include "rewind/rw_error.h"
#include "rewind/rw_kernels.h"

#include <cstdio>
#include <cuda_runtime.h>

#define RW_CUDA_MAX_VECS 32

#define RW_CALL_CUDA(expr)                                                                         \
  do {                                                                                             \
    cudaError_t rw_cuda_err_ = (expr);                                                             \
    if (rw_cuda_err_ != cudaSuccess) {                                                             \
      ierr = RW_ERROR(RW_ERR_CUDA, "%s failed: %s", #expr, cudaGetErrorString(rw_cuda_err_));      \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

struct rw_lincomb_args {
  int nv;
  double c[RW_CUDA_MAX_VECS];
  const double *x[RW_CUDA_MAX_VECS];
};

__global__ void rw_lincomb_kernel(rw_lincomb_args a, double *z, long n)
{
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = rw_kernel_lincomb(a.nv, a.c, a.x, i);
}

extern "C" int rw_cuda_built(void) { return 1; }

extern "C" int rw_cuda_device_count(int *count)
{
  *count = 0;
  cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess || *count == 0) {
    *count = 0;
    return RW_ERROR(RW_ERR_NO_DEVICE, "no CUDA device: %s",
                    e != cudaSuccess ? cudaGetErrorString(e) : "zero devices");
  }
  return 0;
}

extern "C" int rw_cuda_linear_combination(int nv, const double *c, const double *const *x,
                                          double *z, long n)
{
  int ierr = 0, ndev = 0;
  rw_lincomb_args a;
  double *dz = nullptr;
  double *dx[RW_CUDA_MAX_VECS] = {nullptr};
  size_t bytes = (size_t)n * sizeof(double);
  RW_CHECK(nv >= 1 && nv <= RW_CUDA_MAX_VECS, RW_ERR_ARG,
           "rw_cuda_linear_combination: %d vectors; 1 to %d supported", nv, RW_CUDA_MAX_VECS);
  RW_CALL(rw_cuda_device_count(&ndev));
  a.nv = nv;
  for (int k = 0; k < nv; k++) {
    a.c[k] = c[k];
    RW_CALL_CUDA(cudaMalloc((void **)&dx[k], bytes ? bytes : 1));
    RW_CALL_CUDA(cudaMemcpy(dx[k], x[k], bytes, cudaMemcpyHostToDevice));
    a.x[k] = dx[k];
  }
  RW_CALL_CUDA(cudaMalloc((void **)&dz, bytes ? bytes : 1));
  if (n > 0) {
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    rw_lincomb_kernel<<<(unsigned)blocks, threads>>>(a, dz, n);
    RW_CALL_CUDA(cudaGetLastError());
    RW_CALL_CUDA(cudaMemcpy(z, dz, bytes, cudaMemcpyDeviceToHost));
  }
cleanup:
  for (int k = 0; k < nv && k < RW_CUDA_MAX_VECS; k++)
    if (dx[k]) cudaFree(dx[k]);
  if (dz) cudaFree(dz);
  return ierr;
}
