// CUDA backend: device discovery and the linear combination that every RK stage uses,
// with the element formula shared with the CPU path (rewind/rw_kernels.h). MPI here is not
// CUDA-aware, so distributed GPU vectors will stage halos through host memory.
#include "rewind/rw_cuda.h"
#include "rewind/rw_error.h"
#include "rewind/rw_kernels.h"

#include <cstdio>
#include <cstring>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

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

/* ---------------------------------------------------------------------------------------
 * The CUDA device backend of device vectors (rw_device.h): the element formulas and the
 * reduction order of rw_kernels.h, which the emulated device runs on the CPU. Built with
 * --fmad=false (solvers/cuda/CMakeLists.txt) so no multiply-add is contracted: the kernels
 * round as the CPU does. Every operation is queued on the default stream; copies to the host
 * wait for what was queued before them. */

#include "../../core/rw_device_impl.h"

namespace
{

struct rw_cuda_impl {
  double *partials; /* device array of chunk values */
  long cap;
  /* the copy queue (rw_device_copy_start): a non-blocking stream, so the compute work on the
   * legacy default stream does not wait for it; `after` orders each copy after the work
   * queued before it; done[t % RW_COPY_RING] completes with copy t */
  cudaStream_t copy;
  cudaEvent_t after, done[RW_COPY_RING];
  int have_queue;
  /* cuBLAS, loaded at the first matrix product (rw_cuda_blas): the PDE problems never need
   * it, so a machine without the library still runs them */
  void *blas_lib;
  cublasHandle_t blas;
  cublasStatus_t (*blas_destroy)(cublasHandle_t);
  cublasStatus_t (*blas_dgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                               const double *, const double *, int, const double *, int,
                               const double *, double *, int);
};

struct rw_dk_lincomb_args {
  int n;
  double c[RW_LINCOMB_MAX];
  const double *x[RW_LINCOMB_MAX];
};

int rw_cuda_check(cudaError_t e, const char *what)
{
  if (e == cudaSuccess) return 0;
  return RW_ERROR(RW_ERR_CUDA, "%s failed: %s", what, cudaGetErrorString(e));
}

const int rw_cuda_threads = 256;

unsigned rw_cuda_blocks(long len)
{
  long b = (len + rw_cuda_threads - 1) / rw_cuda_threads;
  return (unsigned)(b < 1 ? 1 : (b > 1048576 ? 1048576 : b));
}

} // namespace

__global__ void rw_dk_lincomb_kernel(rw_dk_lincomb_args a, double *z, long len)
{
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < len;
       i += (long)gridDim.x * blockDim.x)
    z[i] = rw_dk_lincomb(a.n, a.c, a.x, i);
}

__global__ void rw_dk_map_kernel(int op, double a, const double *x, const double *y, double *z,
                                 long len)
{
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < len;
       i += (long)gridDim.x * blockDim.x)
    z[i] = rw_dk_map(op, a, x, y, i);
}

/* One block per chunk: the threads' values, then the halving tree in shared memory. */
__global__ void rw_dk_reduce_kernel(int op, const double *x, const double *y, long len,
                                    long nchunks, double *partials)
{
  __shared__ double s[RW_DK_RED_THREADS];
  const int t = threadIdx.x;
  for (long p = blockIdx.x; p < nchunks; p += gridDim.x) {
    s[t] = rw_dk_red_thread(op, x, y, len, p, t);
    __syncthreads();
    for (int w = RW_DK_RED_THREADS / 2; w > 0; w >>= 1) {
      if (t < w) s[t] = rw_dk_red_combine(op, s[t], s[t + w]);
      __syncthreads();
    }
    if (t == 0) partials[p] = s[0];
    __syncthreads();
  }
}

static int rw_cuda_alloc(rw_device d, size_t bytes, void **p)
{
  (void)d;
  *p = nullptr;
  RW_CALL(rw_cuda_check(cudaMalloc(p, bytes ? bytes : 1), "cudaMalloc"));
  int ierr = rw_cuda_check(cudaMemset(*p, 0, bytes ? bytes : 1), "cudaMemset");
  if (ierr) {
    cudaFree(*p);
    *p = nullptr;
  }
  return ierr;
}

static void rw_cuda_release(rw_device d, void *p, size_t bytes)
{
  (void)d, (void)bytes;
  cudaFree(p);
}

static int rw_cuda_copy(rw_device d, void *dst, const void *src, size_t bytes, int dir)
{
  (void)d;
  cudaMemcpyKind k = dir == RW_COPY_H2D   ? cudaMemcpyHostToDevice
                     : dir == RW_COPY_D2H ? cudaMemcpyDeviceToHost
                                          : cudaMemcpyDeviceToDevice;
  return rw_cuda_check(cudaMemcpy(dst, src, bytes, k), "cudaMemcpy");
}

static int rw_cuda_lincomb(rw_device d, int n, const double *c, const double *const *x, double *z,
                           long len)
{
  (void)d;
  rw_dk_lincomb_args a;
  RW_CHECK(n >= 1 && n <= RW_LINCOMB_MAX, RW_ERR_ARG, "device linear combination of %d vectors", n);
  a.n = n;
  for (int j = 0; j < n; j++) {
    a.c[j] = c[j];
    a.x[j] = x[j];
  }
  if (len <= 0) return 0;
  rw_dk_lincomb_kernel<<<rw_cuda_blocks(len), rw_cuda_threads>>>(a, z, len);
  return rw_cuda_check(cudaGetLastError(), "linear combination kernel launch");
}

static int rw_cuda_map(rw_device d, int op, double a, const double *x, const double *y, double *z,
                       long len)
{
  (void)d;
  if (len <= 0) return 0;
  rw_dk_map_kernel<<<rw_cuda_blocks(len), rw_cuda_threads>>>(op, a, x, y, z, len);
  return rw_cuda_check(cudaGetLastError(), "element-wise kernel launch");
}

/* The reduction kernel of rw_device_reduce into the device partials (grown as needed): *np
 * chunks (0: nothing launched). */
static int rw_cuda_reduce_launch(rw_device d, int op, const double *x, const double *y, long len,
                                 long *np)
{
  rw_cuda_impl *im = (rw_cuda_impl *)d->impl;
  *np = rw_device_chunks(len);
  if (*np == 0) return 0;
  if (*np > im->cap) {
    if (im->partials) cudaFree(im->partials);
    im->partials = nullptr;
    im->cap = 0;
    RW_CALL(rw_cuda_check(cudaMalloc((void **)&im->partials, (size_t)*np * sizeof(double)),
                          "cudaMalloc (reduction partials)"));
    im->cap = *np;
  }
  unsigned blocks = (unsigned)(*np < 1048576 ? *np : 1048576);
  rw_dk_reduce_kernel<<<blocks, RW_DK_RED_THREADS>>>(op, x, y, len, *np, im->partials);
  return rw_cuda_check(cudaGetLastError(), "reduction kernel launch");
}

static int rw_cuda_reduce(rw_device d, int op, const double *x, const double *y, long len,
                          double *partials)
{
  rw_cuda_impl *im = (rw_cuda_impl *)d->impl;
  long np = 0;
  RW_CALL(rw_cuda_reduce_launch(d, op, x, y, len, &np));
  if (np == 0) return 0;
  return rw_cuda_check(
      cudaMemcpy(partials, im->partials, (size_t)np * sizeof(double), cudaMemcpyDeviceToHost),
      "cudaMemcpy (reduction partials)");
}

/* One thread: acc[0] += the partials folded in rw_device_reduce's order (the host's loop). */
__global__ void rw_dk_fold_acc_kernel(int op, const double *partials, long np, double *acc)
{
  double a = rw_dk_red_identity(op);
  for (long p = 0; p < np; p++)
    a = rw_dk_red_combine(op, a, partials[p]);
  acc[0] += a;
}

static int rw_cuda_reduce_acc(rw_device d, int op, const double *x, const double *y, long len,
                              double *acc)
{
  rw_cuda_impl *im = (rw_cuda_impl *)d->impl;
  long np = 0;
  RW_CALL(rw_cuda_reduce_launch(d, op, x, y, len, &np));
  if (np == 0) return 0;
  rw_dk_fold_acc_kernel<<<1, 1>>>(op, im->partials, np, acc);
  return rw_cuda_check(cudaGetLastError(), "reduction fold kernel launch");
}

static int rw_cuda_sync(rw_device d)
{
  (void)d;
  return rw_cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/* Creates the copy stream and its events at the first asynchronous copy. */
static int rw_cuda_queue(rw_cuda_impl *im)
{
  if (im->have_queue) return 0;
  RW_CALL(rw_cuda_check(cudaStreamCreateWithFlags(&im->copy, cudaStreamNonBlocking),
                        "cudaStreamCreateWithFlags (copy queue)"));
  int made = -1, ierr = rw_cuda_check(cudaEventCreateWithFlags(&im->after, cudaEventDisableTiming),
                                      "cudaEventCreate");
  if (!ierr) made = 0;
  for (; !ierr && made < RW_COPY_RING; made++)
    ierr = rw_cuda_check(cudaEventCreateWithFlags(&im->done[made], cudaEventDisableTiming),
                         "cudaEventCreate");
  if (ierr) {                          /* nothing half made is kept: the next copy tries again */
    for (int i = 0; i + 1 < made; i++) /* done[made - 1] failed */
      cudaEventDestroy(im->done[i]);
    if (made >= 0) cudaEventDestroy(im->after);
    cudaStreamDestroy(im->copy);
    return ierr;
  }
  im->have_queue = 1;
  return 0;
}

static int rw_cuda_copy_start(rw_device d, void *dst, const void *src, size_t bytes, int dir,
                              long ticket)
{
  rw_cuda_impl *im = (rw_cuda_impl *)d->impl;
  RW_CALL(rw_cuda_queue(im));
  cudaMemcpyKind k = dir == RW_COPY_H2D   ? cudaMemcpyHostToDevice
                     : dir == RW_COPY_D2H ? cudaMemcpyDeviceToHost
                                          : cudaMemcpyDeviceToDevice;
  /* after everything queued so far on the compute (legacy default) stream */
  RW_CALL(rw_cuda_check(cudaEventRecord(im->after, 0), "cudaEventRecord"));
  RW_CALL(rw_cuda_check(cudaStreamWaitEvent(im->copy, im->after, 0), "cudaStreamWaitEvent"));
  RW_CALL(rw_cuda_check(cudaMemcpyAsync(dst, src, bytes, k, im->copy), "cudaMemcpyAsync"));
  RW_CALL(
      rw_cuda_check(cudaEventRecord(im->done[ticket % RW_COPY_RING], im->copy), "cudaEventRecord"));
  return 0;
}

static int rw_cuda_copy_wait(rw_device d, long ticket)
{
  rw_cuda_impl *im = (rw_cuda_impl *)d->impl;
  if (!im->have_queue) return 0;
  return rw_cuda_check(cudaEventSynchronize(im->done[ticket % RW_COPY_RING]),
                       "cudaEventSynchronize (copy queue)");
}

/* The compute (legacy default) stream waits for copy `ticket`'s event: the host goes on. The
 * event is not recorded again before the host has waited for this copy (rw_device_copy_start
 * keeps at most RW_COPY_RING copies in flight), so the wait is for this copy. */
static int rw_cuda_copy_order(rw_device d, long ticket)
{
  rw_cuda_impl *im = (rw_cuda_impl *)d->impl;
  if (!im->have_queue) return 0;
  return rw_cuda_check(cudaStreamWaitEvent(0, im->done[ticket % RW_COPY_RING], 0),
                       "cudaStreamWaitEvent (copy queue)");
}

static int rw_cuda_sync_compute(rw_device d)
{
  (void)d;
  return rw_cuda_check(cudaStreamSynchronize(0), "cudaStreamSynchronize (compute)");
}

/* Loads cuBLAS (the soname of the toolkit the build used) and makes a handle on the legacy
 * default stream, the one every kernel here is queued on, so products and kernels stay in
 * order. cuBLAS's dgemm uses no atomics unless asked (cublasSetAtomicsMode), so a product
 * repeats bit for bit on one GPU model. */
static int rw_cuda_blas(rw_device d, rw_cuda_impl *im)
{
  if (im->blas_lib) return 0;
  char soname[64];
  snprintf(soname, sizeof soname, "libcublas.so.%d", (int)CUBLAS_VER_MAJOR);
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  RW_CHECK(lib, RW_ERR_CUDA,
           "device %s: the neural-ODE problem's matrix products need cuBLAS, and %s could not be "
           "loaded (%s): add the folder that holds it (CUDA's lib64, or the nvidia-cublas "
           "package's lib) to LD_LIBRARY_PATH",
           d->name, soname, dlerror());
  typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
  create_fn create = (create_fn)dlsym(lib, "cublasCreate_v2");
  im->blas_destroy = (cublasStatus_t(*)(cublasHandle_t))dlsym(lib, "cublasDestroy_v2");
  im->blas_dgemm = (decltype(im->blas_dgemm))dlsym(lib, "cublasDgemm_v2");
  cublasStatus_t st = CUBLAS_STATUS_NOT_INITIALIZED;
  if (create && im->blas_destroy && im->blas_dgemm) st = create(&im->blas);
  if (st != CUBLAS_STATUS_SUCCESS) {
    dlclose(lib);
    return RW_ERROR(RW_ERR_CUDA, "device %s: cuBLAS (%s) %s (status %d)", d->name, soname,
                    create ? "could not make a handle" : "lacks cublasCreate_v2 or cublasDgemm_v2",
                    (int)st);
  }
  im->blas_lib = lib;
  return 0;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B's array read
 * column-major is B^T, so the operands swap and keep their transposition flags. */
static int rw_cuda_gemm(rw_device d, int ta, int tb, int M, int N, int K, double alpha,
                        const double *A, int lda, const double *B, int ldb, double beta, double *C,
                        int ldc)
{
  rw_cuda_impl *im = (rw_cuda_impl *)d->impl;
  RW_CALL(rw_cuda_blas(d, im));
  cublasStatus_t st =
      im->blas_dgemm(im->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M,
                     K, &alpha, B, ldb, A, lda, &beta, C, ldc);
  RW_CHECK(st == CUBLAS_STATUS_SUCCESS, RW_ERR_CUDA,
           "device %s: cublasDgemm (%d x %d x %d) failed with status %d", d->name, M, N, K,
           (int)st);
  return 0;
}

static void rw_cuda_close(rw_device d)
{
  rw_cuda_impl *im = (rw_cuda_impl *)d->impl;
  if (!im) return;
  if (im->blas_lib) {
    im->blas_destroy(im->blas);
    dlclose(im->blas_lib);
  }
  if (im->have_queue) {
    cudaStreamSynchronize(im->copy);
    for (int i = 0; i < RW_COPY_RING; i++)
      cudaEventDestroy(im->done[i]);
    cudaEventDestroy(im->after);
    cudaStreamDestroy(im->copy);
  }
  if (im->partials) cudaFree(im->partials);
  free(im);
  d->impl = nullptr;
}

static int rw_cuda_host_alloc(rw_device d, size_t bytes, void **p)
{
  (void)d;
  *p = nullptr;
  return rw_cuda_check(cudaMallocHost(p, bytes), "cudaMallocHost (pinned staging buffer)");
}

static void rw_cuda_host_free(rw_device d, void *p)
{
  (void)d;
  cudaFreeHost(p);
}

static const rw_device_backend rw_cuda_backend = {
    rw_cuda_alloc,     rw_cuda_release,      rw_cuda_copy,      rw_cuda_lincomb,
    rw_cuda_map,       rw_cuda_reduce,       rw_cuda_sync,      rw_cuda_close,
    rw_cuda_run,       rw_cuda_host_alloc,   rw_cuda_host_free, rw_cuda_copy_start,
    rw_cuda_copy_wait, rw_cuda_sync_compute, rw_cuda_gemm,      rw_cuda_copy_order,
    rw_cuda_reduce_acc};

extern "C" int rw_cuda_device_open(rw_device d, int local_rank)
{
  int count = 0;
  cudaDeviceProp prop;
  RW_CALL(rw_cuda_device_count(&count));
  d->ordinal = local_rank % count;
  RW_CALL(rw_cuda_check(cudaSetDevice(d->ordinal), "cudaSetDevice"));
  RW_CALL(rw_cuda_check(cudaGetDeviceProperties(&prop, d->ordinal), "cudaGetDeviceProperties"));
  snprintf(d->name, sizeof d->name, "%s (device %d)", prop.name, d->ordinal);
  d->impl = calloc(1, sizeof(rw_cuda_impl));
  RW_CHECK(d->impl, RW_ERR_MEM, "no host memory for the CUDA device state");
  d->be = &rw_cuda_backend;
  return 0;
}

/* ---------------------------------------------------------------------------------------
 * Element bodies (solvers/rw_dev_bodies.h): one generic kernel, one thread per item; the
 * parameter block travels by value as the kernel's argument. */

#include "../rw_dev_bodies.h"

struct rw_body_block {
  double a[RW_BODY_PARAMS_MAX_BYTES / sizeof(double)];
};

__global__ void rw_body_kernel(int id, rw_body_block b, long n)
{
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long)gridDim.x * blockDim.x)
    rw_body_run(id, &b, i);
}

extern "C" int rw_cuda_run(rw_device d, int id, const void *params, size_t psize, long n)
{
  (void)d;
  rw_body_block b;
  memcpy(&b, params, psize);
  rw_body_kernel<<<rw_cuda_blocks(n), rw_cuda_threads>>>(id, b, n);
  return rw_cuda_check(cudaGetLastError(), "element kernel launch");
}
