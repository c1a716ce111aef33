/* CPU reference of the shared kernels, and the CUDA entry points when CUDA is not built. */
#include "../core/rw_device_impl.h"
#include "rewind/rw_cuda.h"
#include "rewind/rw_error.h"
#include "rewind/rw_kernels.h"

void rw_host_linear_combination(int nv, const double *c, const double *const *x, double *z, long n)
{
  for (long i = 0; i < n; i++)
    z[i] = rw_kernel_lincomb(nv, c, x, i);
}

#ifndef REWIND_HAVE_CUDA
int rw_cuda_built(void) { return 0; }

int rw_cuda_device_count(int *count)
{
  *count = 0;
  return RW_ERROR(RW_ERR_NOT_IMPLEMENTED,
                  "this Rewind was built without CUDA (configure with -DREWIND_ENABLE_CUDA=ON "
                  "where nvcc is installed)");
}

int rw_cuda_linear_combination(int nv, const double *c, const double *const *x, double *z, long n)
{
  (void)nv, (void)c, (void)x, (void)z, (void)n;
  return RW_ERROR(RW_ERR_NOT_IMPLEMENTED, "this Rewind was built without CUDA");
}

int rw_cuda_run(rw_device d, int id, const void *params, size_t psize, long n)
{
  (void)d, (void)id, (void)params, (void)psize, (void)n;
  return RW_ERROR(RW_ERR_NOT_IMPLEMENTED, "this Rewind was built without CUDA");
}

int rw_cuda_device_open(rw_device d, int local_rank)
{
  (void)d, (void)local_rank;
  return RW_ERROR(RW_ERR_NOT_IMPLEMENTED,
                  "device cuda: this Rewind was built without CUDA (configure with "
                  "-DREWIND_ENABLE_CUDA=ON where nvcc is installed); device emulated runs the "
                  "same vector code on the CPU");
}
#endif
