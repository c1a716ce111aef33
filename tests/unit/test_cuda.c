/* CUDA backend check: the device linear combination equals the CPU reference (same shared
 * element formula with explicit fma, so bit for bit). Skips (exit 77, reported by ctest as
 * skipped with the reason) when CUDA is not built or there is no device. */
#include "rewind/rw_cuda.h"
#include "rewind/rw_error.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
  int ndev = 0;
  if (!rw_cuda_built()) {
    printf("SKIP: this build has no CUDA backend (REWIND_ENABLE_CUDA=OFF or nvcc not found)\n");
    return 77;
  }
  if (rw_cuda_device_count(&ndev) != 0) {
    printf("SKIP: %s\n", rw_error_message());
    return 77;
  }
  enum { N = 100003, NV = 5 };
  static double x[NV][N], zh[N], zd[N];
  const double *xp[NV];
  double c[NV] = {1.0, 0.1, -0.25, 1.0 / 3.0, 2.5e-3};
  for (int k = 0; k < NV; k++) {
    for (long i = 0; i < N; i++)
      x[k][i] = (double)((i * 7919 + k * 104729) % 1000) / 997.0 - 0.5;
    xp[k] = x[k];
  }
  rw_host_linear_combination(NV, c, xp, zh, N);
  if (rw_cuda_linear_combination(NV, c, xp, zd, N) != 0) {
    printf("FAIL: %s\n", rw_error_message());
    return 1;
  }
  if (memcmp(zh, zd, sizeof zh) != 0) {
    long i = 0;
    while (zh[i] == zd[i])
      i++;
    printf("FAIL: device and host differ first at %ld: %.17g vs %.17g\n", i, zd[i], zh[i]);
    return 1;
  }
  printf("PASS: %d devices, device result equals the CPU reference bit for bit\n", ndev);
  return 0;
}
