/* Inside the device layer: the backend table a device kind implements, the device object,
 * and the hooks rw_vector.c calls for device vectors. Compiled as C and as CUDA C++. */
#ifndef REWIND_RW_DEVICE_IMPL_H
#define REWIND_RW_DEVICE_IMPL_H

#include "rewind/rw_device.h"
#include "rewind/rw_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest parameter block an element body takes (bytes): a CUDA kernel argument. */
#define RW_BODY_PARAMS_MAX_BYTES 1536
/* Element body ids are 1 .. RW_BODY_ID_END - 1 (solvers/rw_dev_bodies.h, checked there). */
#define RW_BODY_ID_END 22

/* Directions of rw_device_backend.copy. */
enum { RW_COPY_H2D, RW_COPY_D2H, RW_COPY_D2D };

/* What a device kind provides. Every function returns 0 or an RW_ERR_* code with the
 * message recorded. reduce writes one value per chunk of RW_DK_RED_CHUNK entries
 * (rw_kernels.h) to the host array `partials` (at least rw_device_chunks(len) values). */
typedef struct {
  int (*alloc)(rw_device d, size_t bytes, void **p); /* zeroed */
  void (*release)(rw_device d, void *p, size_t bytes);
  int (*copy)(rw_device d, void *dst, const void *src, size_t bytes, int dir);
  int (*lincomb)(rw_device d, int n, const double *c, const double *const *x, double *z, long len);
  int (*map)(rw_device d, int op, double a, const double *x, const double *y, double *z, long len);
  int (*reduce)(rw_device d, int op, const double *x, const double *y, long len, double *partials);
  int (*sync)(rw_device d);
  void (*close)(rw_device d);
  /* items 0 .. n-1 of element body `id` (solvers/rw_dev_bodies.h) with its parameter block;
   * NULL for the emulated device, which loops on the host (rw_device_run) */
  int (*run)(rw_device d, int id, const void *params, size_t psize, long n);
  /* page-locked host memory for staging copies (NULL: ordinary host memory will do) */
  int (*host_alloc)(rw_device d, size_t bytes, void **p);
  void (*host_free)(rw_device d, void *p);
  /* the copy queue (rw_device_copy_start): starts copy number `ticket` after everything
   * queued on the device so far, and waits for copy `ticket` (and so every earlier one) */
  int (*copy_start)(rw_device d, void *dst, const void *src, size_t bytes, int dir, long ticket);
  int (*copy_wait)(rw_device d, long ticket);
  /* waits for the compute work only, not the copy queue (NULL: nothing to wait for) */
  int (*sync_compute)(rw_device d);
  /* C = alpha op(A) op(B) + beta C on the compute stream, row-major as cblas_dgemm with
   * CblasRowMajor (rw_device_gemm) */
  int (*gemm)(rw_device d, int ta, int tb, int M, int N, int K, double alpha, const double *A,
              int lda, const double *B, int ldb, double beta, double *C, int ldc);
  /* orders the compute work queued from now on after copy `ticket`, without waiting on the
   * host (NULL: rw_device_copy_order waits on the host instead) */
  int (*copy_order)(rw_device d, long ticket);
  /* *acc += the value rw_device_reduce gives (its partials folded in the same order), acc in
   * device memory, queued on the compute stream: the host does not wait (NULL: computed by
   * rw_device_reduce and added through copies) */
  int (*reduce_acc)(rw_device d, int op, const double *x, const double *y, long len, double *acc);
} rw_device_backend;

/* Copies in flight on a device's copy queue at most (rw_device_copy_start waits for the
 * oldest beyond this). */
#define RW_COPY_RING 32

/* The emulated device's copy queue: requests run in order when waited for. */
typedef struct {
  void *dst;
  const void *src;
  size_t bytes;
  int dir;
  long ticket;
} rw_emu_copy_req;

typedef struct {
  void *p;
  size_t len;
  int used;
} rw_emu_block;

struct rw_device_s {
  rw_device_kind kind;
  const rw_device_backend *be;
  char name[160];
  size_t bytes, peak;
  long nvec;
  /* host scratch for reduction partials */
  double *partials;
  long partials_cap;
  /* emulated: the reserved range (the handed-out view, the emulator's own view and the
   * memory file behind both), its blocks and the depth of open host scopes */
  void *arena, *alias;
  int arena_fd;
  size_t arena_top;
  rw_emu_block *blocks;
  int nblocks, cap_blocks, open;
  /* the copy queue: copies started and known complete (tickets 1, 2, ..); emulated, the
   * requests not yet run */
  long copy_issued, copy_done;
  rw_emu_copy_req queue[RW_COPY_RING];
  int nqueue;
  /* halos: handed to MPI from device memory (rw_device_set_mpi), and why */
  int mpi_direct;
  char mpi_mode[200];
  /* CUDA: ordinal and the backend's own state */
  int ordinal;
  void *impl;
};

static inline long rw_device_chunks(long len)
{
  return len <= 0 ? 0 : (len + RW_DK_RED_CHUNK - 1) / RW_DK_RED_CHUNK;
}

/* CUDA backend (solvers/cuda/rw_cuda.cu): opens device `ordinal` into d (backend, name).
 * Without CUDA in the build: RW_ERR_NOT_IMPLEMENTED. */
int rw_cuda_device_open(rw_device d, int local_rank);

/* Device memory for work arrays (ghosted copies, halo buffers), counted like vectors'. */
int rw_device_alloc(rw_device d, size_t bytes, double **p);
void rw_device_free(rw_device d, double **p, size_t bytes);
int rw_device_copy(rw_device d, void *dst, const void *src, size_t bytes, int dir);
/* Asynchronous copies between device memory and page-locked host memory (or within the
 * device), on the device's copy queue: copy_start queues one after every operation queued on
 * the device so far and returns at once with its ticket (> 0); copy_wait(t) returns when copy
 * t and every copy started before it have completed (t <= 0 or already known complete: at
 * once). Until then the source must not be written and the destination not read: the caller
 * orders its own accesses by waiting. Later device operations do not wait for the queue. On a
 * GPU the queue is a non-blocking stream ordered after the compute stream by an event; on the
 * emulated device a request runs only when it is waited for (or the queue is full), the
 * latest a GPU could complete it, so a missing wait reads stale data there and fails the
 * comparisons with the CPU. rw_device_sync also waits for the queue. */
int rw_device_copy_start(rw_device d, void *dst, const void *src, size_t bytes, int dir,
                         long *ticket);
int rw_device_copy_wait(rw_device d, long ticket);
/* Orders every device operation queued after this call (on the compute stream) after copy
 * `ticket` and every copy before it, without making the host wait: on a GPU the compute stream
 * waits for the copy's event (cudaStreamWaitEvent); elsewhere it is rw_device_copy_wait. For a
 * device-side read of a copy's destination (a prefetched snapshot copied into the state on the
 * device). The host must still wait (rw_device_copy_wait) before it reads the destination. */
int rw_device_copy_order(rw_device d, long ticket);
/* Waits for the kernels and copies queued on the compute stream, not for the copy queue (before
 * MPI reads device buffers a kernel wrote); a no-op on the emulated device. */
int rw_device_sync_compute(rw_device d);
/* Zeroed host memory for staging copies to and from the device: page-locked (pinned) on a GPU,
 * so copies run at full speed and without an extra bounce; rw_calloc'ed (counted) otherwise.
 * Release with rw_device_host_free and the same byte count. */
int rw_device_host_alloc(rw_device d, size_t bytes, double **p);
void rw_device_host_free(rw_device d, double **p);
/* Runs items 0 .. n-1 of element body `id`: on a GPU one thread per item; emulated, `host`
 * (which runs one item) in a loop with the device memory open. */
int rw_device_run(rw_device d, int id, const void *params, size_t psize, long n,
                  void (*host)(int id, const void *params, long idx));
/* This rank's value of reduction `op` (rw_kernels.h) over n entries of device arrays, in the
 * device's fixed order. */
int rw_device_reduce(rw_device d, int op, const double *x, const double *y, long n, double *out);
/* A problem's deferred parameter gradient on a device (rw_problem_params_defer): while the
 * driver's pbar is deferred, the VJP terms into it are summed in the device array acc (np
 * values) and added to pbar at the flush, with one copy. */
typedef struct {
  rw_device dev; /* NULL: the problem is on the CPU (nothing is held) */
  long np;
  double *acc;  /* device (np): the held sums */
  double *host; /* host (np): the flush's copy */
  double *pbar; /* the deferred array (NULL: none) */
  int live;     /* acc holds terms not yet added to pbar */
} rw_pdefer;
int rw_pdefer_init(rw_pdefer *q, rw_device dev, long np);
void rw_pdefer_free(rw_pdefer *q);
/* ops params_defer: pbar (NULL: none) is deferred from now on; what was held is dropped. */
int rw_pdefer_set(rw_pdefer *q, double *pbar);
/* 1 when terms into out are held (a device, out the deferred pbar). */
int rw_pdefer_held(const rw_pdefer *q, const double *out);
/* out[k] += the sum of the device array x (n values, rw_device_reduce's value): held on the
 * device (rw_device_reduce_acc into acc[k]) when out is the deferred pbar, else added now. */
int rw_pdefer_sum(rw_pdefer *q, double *out, long k, const double *x, long n);
/* ops params_flush: adds the held sums to pbar. */
int rw_pdefer_flush(rw_pdefer *q);

/* acc[0] += that value, with acc in device memory: on a GPU a second kernel folds the partials
 * in rw_device_reduce's order and adds, so the host does not wait for the reduction (a deferred
 * parameter gradient, rw_problem_params_defer). The bits of rw_device_reduce's value added. */
int rw_device_reduce_acc(rw_device d, int op, const double *x, const double *y, long n,
                         double *acc);

/* C (M x N) = alpha op(A) op(B) + beta C for row-major device arrays, op(X) = X or X^T (ta,
 * tb; op(A) is M x K, op(B) K x N; leading dimensions as cblas_dgemm's with CblasRowMajor);
 * beta = 0 does not read C. On a GPU cuBLAS's dgemm (loaded at the first call: a missing
 * library is an error naming it), deterministic on one GPU model (no atomics: cuBLAS's
 * default); emulated, the host BLAS (cblas_dgemm) with the blocks open, so the results differ
 * from a GPU's in the last bits. M, N or K = 0 is allowed (K = 0: C = beta C). */
int rw_device_gemm(rw_device d, int ta, int tb, int M, int N, int K, double alpha, const double *A,
                   int lda, const double *B, int ldb, double beta, double *C, int ldc);

/* CUDA: the generic element-body kernel (solvers/cuda/rw_cuda.cu). */
int rw_cuda_run(rw_device d, int id, const void *params, size_t psize, long n);

/* Device vector hooks for rw_vector.c. */
int rw_dvec_is(N_Vector v);
int rw_dvec_make(rw_device dev, MPI_Comm comm, SUNContext sunctx, sunindextype local_n,
                 sunindextype global_n, int own, N_Vector *out);
void rw_dvec_free(N_Vector v);
double *rw_dvec_data(N_Vector v);
void rw_dvec_set_data(N_Vector v, double *data);
sunindextype rw_dvec_local_length(N_Vector v);
sunindextype rw_dvec_global_length(N_Vector v);
MPI_Comm rw_dvec_comm(N_Vector v);
void rw_dvec_copy(N_Vector x, N_Vector y);

#ifdef __cplusplus
}
#endif
#endif
