/* Devices and device vectors: the N_Vector implementation whose entries live in device
 * memory, over a backend table (the emulated device here, CUDA in solvers/cuda/rw_cuda.cu).
 * The element formulas and the reduction order are shared with the GPU kernels through
 * rw_kernels.h. */
#define _GNU_SOURCE
#include "rewind/rw_error.h"
#include "rw_device_impl.h"

#include <cblas.h>
#include <math.h>
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------
 * The emulated device: page-aligned mappings kept PROT_NONE outside its own operations and
 * outside host scopes, so host code that touches device data faults where it does. */

static size_t rw_emu_round(size_t bytes)
{
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (bytes + page - 1) / page * page;
}

/* The device memory is one reserved range (RW_EMU_RESERVE bytes of address space, nothing
 * committed until written) of an anonymous memory file, handed out in page-rounded blocks.
 * It is mapped twice: the view whose addresses are handed out (d->arena) is PROT_NONE
 * except inside host scopes, and the emulator's own view (d->alias) is always open. A
 * kernel works on the emulator's view of the addresses it is given, so it opens and closes
 * nothing, and host code that touches the handed-out addresses faults where it does. A
 * freed block's pages are given back (a hole punched in the file, so they read as zeros
 * when reused) and the block is reused by the next allocation of its size. Opening or
 * closing all of the handed-out view for a host scope is one mprotect call. */
#define RW_EMU_RESERVE ((size_t)1 << 36)

static int rw_emu_protect_all(rw_device d, int prot)
{
  if (d->arena_top && mprotect(d->arena, d->arena_top, prot) != 0)
    return RW_ERROR(RW_ERR_INTERNAL, "emulated device: mprotect failed");
  return 0;
}

void rw_device_host_begin(rw_device d)
{
  if (!d || d->kind != RW_DEVICE_EMULATED) return;
  if (d->open++ == 0 && rw_emu_protect_all(d, PROT_READ | PROT_WRITE) != 0) abort();
}

void rw_device_host_end(rw_device d)
{
  if (!d || d->kind != RW_DEVICE_EMULATED || d->open <= 0) return;
  if (--d->open == 0 && rw_emu_protect_all(d, PROT_NONE) != 0) abort();
}

static int rw_emu_reserve(rw_device d)
{
  int fd = memfd_create("rewind-emulated-device", MFD_CLOEXEC);
  RW_CHECK(fd >= 0, RW_ERR_MEM, "emulated device: cannot create its memory file: %s",
           strerror(errno));
  void *m = MAP_FAILED, *a = MAP_FAILED;
  if (ftruncate(fd, (off_t)RW_EMU_RESERVE) == 0) {
    m = mmap(NULL, RW_EMU_RESERVE, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    a = mmap(NULL, RW_EMU_RESERVE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  }
  int err = errno;
  if (m == MAP_FAILED || a == MAP_FAILED) {
    if (m != MAP_FAILED) munmap(m, RW_EMU_RESERVE);
    if (a != MAP_FAILED) munmap(a, RW_EMU_RESERVE);
    close(fd);
    return RW_ERROR(RW_ERR_MEM,
                    "emulated device: cannot reserve its %zu bytes of address space: %s",
                    RW_EMU_RESERVE, strerror(err));
  }
  d->arena = m;
  d->alias = a;
  d->arena_fd = fd;
  return 0;
}

static int rw_emu_alloc(rw_device d, size_t bytes, void **p)
{
  *p = NULL;
  size_t len = rw_emu_round(bytes ? bytes : 1);
  rw_emu_block *blk = NULL;
  for (int i = 0; i < d->nblocks && !blk; i++)
    if (!d->blocks[i].used && d->blocks[i].len == len) blk = &d->blocks[i];
  if (!blk) {
    if (!d->arena) RW_CALL(rw_emu_reserve(d));
    RW_CHECK(d->arena_top + len <= RW_EMU_RESERVE, RW_ERR_MEM,
             "emulated device: %zu bytes asked for, beyond its %zu bytes of address space", len,
             RW_EMU_RESERVE);
    if (d->nblocks == d->cap_blocks) {
      int cap = d->cap_blocks ? 2 * d->cap_blocks : 64;
      rw_emu_block *nb = realloc(d->blocks, (size_t)cap * sizeof *nb);
      RW_CHECK(nb, RW_ERR_MEM, "emulated device: no memory for its block table");
      d->blocks = nb;
      d->cap_blocks = cap;
    }
    blk = &d->blocks[d->nblocks++];
    blk->p = (char *)d->arena + d->arena_top;
    blk->len = len;
    d->arena_top += len;
  }
  blk->used = 1;
  if (d->open && mprotect(blk->p, blk->len, PROT_READ | PROT_WRITE) != 0)
    return RW_ERROR(RW_ERR_INTERNAL, "emulated device: mprotect failed");
  *p = blk->p; /* fresh or given back: reads as zeros */
  return 0;
}

static void rw_emu_release(rw_device d, void *p, size_t bytes)
{
  (void)bytes;
  for (int i = 0; i < d->nblocks; i++)
    if (d->blocks[i].p == p) {
      off_t off = (off_t)((char *)p - (char *)d->arena);
      if (fallocate(d->arena_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
                    (off_t)d->blocks[i].len) != 0)
        memset((char *)d->alias + off, 0, d->blocks[i].len); /* reused blocks read as zeros */
      d->blocks[i].used = 0;
      return;
    }
}

/* The emulator's view of an address: one in the reserved range (a device address, or one
 * past a block's end) maps to the always-open view, any other (host memory) to itself. */
static void *rw_emu_at(rw_device d, const void *p)
{
  const char *q = p, *base = d->arena;
  if (!q || !base || q < base || q >= base + RW_EMU_RESERVE) return (void *)(uintptr_t)p;
  return (char *)d->alias + (q - base);
}

static int rw_emu_copy(rw_device d, void *dst, const void *src, size_t bytes, int dir)
{
  if (dir != RW_COPY_D2H) dst = rw_emu_at(d, dst);
  if (dir != RW_COPY_H2D) src = rw_emu_at(d, src);
  memmove(dst, src, bytes);
  return 0;
}

static int rw_emu_lincomb(rw_device d, int n, const double *c, const double *const *x, double *z,
                          long len)
{
  const double *xs[RW_LINCOMB_MAX];
  if (n > RW_LINCOMB_MAX) return RW_ERROR(RW_ERR_INTERNAL, "emulated lincomb of %d vectors", n);
  for (int j = 0; j < n; j++)
    xs[j] = rw_emu_at(d, x[j]);
  z = rw_emu_at(d, z);
  for (long i = 0; i < len; i++)
    z[i] = rw_dk_lincomb(n, c, xs, i);
  return 0;
}

static int rw_emu_map(rw_device d, int op, double a, const double *x, const double *y, double *z,
                      long len)
{
  x = rw_emu_at(d, x), y = rw_emu_at(d, y), z = rw_emu_at(d, z);
  for (long i = 0; i < len; i++)
    z[i] = rw_dk_map(op, a, x, y, i);
  return 0;
}

/* Each chunk as a thread block computes it: the threads' values, then the halving tree. */
static int rw_emu_reduce(rw_device d, int op, const double *x, const double *y, long len,
                         double *partials)
{
  double a[RW_DK_RED_THREADS];
  x = rw_emu_at(d, x), y = rw_emu_at(d, y);
  for (long p = 0; p < rw_device_chunks(len); p++) {
    for (int t = 0; t < RW_DK_RED_THREADS; t++)
      a[t] = rw_dk_red_thread(op, x, y, len, p, t);
    for (int s = RW_DK_RED_THREADS / 2; s > 0; s >>= 1)
      for (int t = 0; t < s; t++)
        a[t] = rw_dk_red_combine(op, a[t], a[t + s]);
    partials[p] = a[0];
  }
  return 0;
}

static int rw_emu_sync(rw_device d)
{
  (void)d;
  return 0;
}

/* The emulated copy queue: a request is kept until it is waited for, then run in order. */
static int rw_emu_copy_start(rw_device d, void *dst, const void *src, size_t bytes, int dir,
                             long ticket)
{
  RW_CHECK(d->nqueue < RW_COPY_RING, RW_ERR_INTERNAL, "emulated copy queue full");
  d->queue[d->nqueue++] = (rw_emu_copy_req){dst, src, bytes, dir, ticket};
  return 0;
}

static int rw_emu_copy_wait(rw_device d, long ticket)
{
  int k = 0;
  for (; k < d->nqueue && d->queue[k].ticket <= ticket; k++) {
    const rw_emu_copy_req *r = &d->queue[k];
    RW_CALL(rw_emu_copy(d, r->dst, r->src, r->bytes, r->dir));
  }
  memmove(d->queue, d->queue + k, (size_t)(d->nqueue - k) * sizeof *d->queue);
  d->nqueue -= k;
  return 0;
}

/* The host BLAS on the emulator's view of the three operands (as a GPU's cuBLAS call reads
 * them). */
static int rw_emu_gemm(rw_device d, int ta, int tb, int M, int N, int K, double alpha,
                       const double *A, int lda, const double *B, int ldb, double beta, double *C,
                       int ldc)
{
  A = rw_emu_at(d, A), B = rw_emu_at(d, B), C = rw_emu_at(d, C);
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
  return 0;
}

static void rw_emu_close(rw_device d)
{
  if (d->arena) {
    munmap(d->arena, RW_EMU_RESERVE);
    munmap(d->alias, RW_EMU_RESERVE);
    close(d->arena_fd);
  }
  d->arena = d->alias = NULL;
  d->arena_top = 0;
  free(d->blocks);
  d->blocks = NULL;
  d->nblocks = d->cap_blocks = 0;
}

static const rw_device_backend rw_emu_backend = {
    rw_emu_alloc,     rw_emu_release, rw_emu_copy, rw_emu_lincomb, rw_emu_map, rw_emu_reduce,
    rw_emu_sync,      rw_emu_close,   NULL,        NULL,           NULL,       rw_emu_copy_start,
    rw_emu_copy_wait, NULL,           rw_emu_gemm, NULL,           NULL};

int rw_device_host_alloc(rw_device d, size_t bytes, double **p)
{
  *p = NULL;
  if (d && d->be->host_alloc) {
    void *q = NULL;
    RW_CALL(d->be->host_alloc(d, bytes ? bytes : 1, &q));
    memset(q, 0, bytes);
    *p = q;
    return 0;
  }
  RW_CALL(rw_calloc(bytes ? bytes : 1, 1, "staging buffer", p));
  return 0;
}

void rw_device_host_free(rw_device d, double **p)
{
  if (!p || !*p) return;
  if (d && d->be->host_free) {
    d->be->host_free(d, *p);
    *p = NULL;
    return;
  }
  rw_free(p);
}

int rw_device_alloc(rw_device d, size_t bytes, double **p)
{
  void *q = NULL;
  *p = NULL;
  RW_CALL(d->be->alloc(d, bytes, &q));
  *p = q;
  d->bytes += bytes;
  if (d->bytes > d->peak) d->peak = d->bytes;
  return 0;
}

void rw_device_free(rw_device d, double **p, size_t bytes)
{
  if (!d || !p || !*p) return;
  d->be->release(d, *p, bytes);
  d->bytes -= bytes;
  *p = NULL;
}

int rw_device_copy(rw_device d, void *dst, const void *src, size_t bytes, int dir)
{
  if (!bytes) return 0;
  RW_CALL(d->be->copy(d, dst, src, bytes, dir));
  return 0;
}

int rw_device_copy_wait(rw_device d, long ticket)
{
  if (!d || ticket <= d->copy_done) return 0;
  if (ticket > d->copy_issued) ticket = d->copy_issued;
  RW_CALL(d->be->copy_wait(d, ticket));
  d->copy_done = ticket;
  return 0;
}

int rw_device_sync_compute(rw_device d)
{
  if (!d || !d->be->sync_compute) return 0;
  return d->be->sync_compute(d);
}

int rw_device_copy_order(rw_device d, long ticket)
{
  if (!d || ticket <= d->copy_done) return 0;
  if (!d->be->copy_order) return rw_device_copy_wait(d, ticket);
  if (ticket > d->copy_issued) ticket = d->copy_issued;
  return d->be->copy_order(d, ticket);
}

int rw_device_copy_start(rw_device d, void *dst, const void *src, size_t bytes, int dir,
                         long *ticket)
{
  *ticket = 0;
  if (!bytes) return 0;
  if (!d->be->copy_start) { /* no queue: the copy is done when this returns */
    RW_CALL(rw_device_copy(d, dst, src, bytes, dir));
    return 0;
  }
  long t = d->copy_issued + 1;
  if (t - d->copy_done > RW_COPY_RING) RW_CALL(rw_device_copy_wait(d, t - RW_COPY_RING));
  RW_CALL(d->be->copy_start(d, dst, src, bytes, dir, t));
  d->copy_issued = t;
  *ticket = t;
  return 0;
}

int rw_device_run(rw_device d, int id, const void *params, size_t psize, long n,
                  void (*host)(int id, const void *params, long idx))
{
  RW_CHECK(psize <= RW_BODY_PARAMS_MAX_BYTES, RW_ERR_INTERNAL,
           "device kernel %d: %zu bytes of parameters, at most %d", id, psize,
           RW_BODY_PARAMS_MAX_BYTES);
  RW_CHECK(id > 0 && id < RW_BODY_ID_END, RW_ERR_INTERNAL, "device kernel %d unknown", id);
  if (n <= 0) return 0;
  if (d->be->run) {
    RW_CALL(d->be->run(d, id, params, psize, n));
    return 0;
  }
  /* The emulated device (no backend kernel). The kernel reaches device memory only through
   * the pointers in its parameters (as a GPU kernel does): each word of them that is a device
   * address is moved to the emulator's view. A word that is not a pointer would have to be a
   * subnormal double or a count near 2^47 to have the bits of an address in the reserved
   * range; padding that does is moved too, and nothing reads it. */
  union {
    max_align_t align;
    unsigned char b[RW_BODY_PARAMS_MAX_BYTES];
  } local;
  memcpy(local.b, params, psize);
  for (size_t w = 0; w + sizeof(void *) <= psize; w += sizeof(void *)) {
    void *q;
    memcpy(&q, local.b + w, sizeof q);
    q = rw_emu_at(d, q);
    memcpy(local.b + w, &q, sizeof q);
  }
  for (long i = 0; i < n; i++)
    host(id, local.b, i);
  return 0;
}

int rw_device_gemm(rw_device d, int ta, int tb, int M, int N, int K, double alpha, const double *A,
                   int lda, const double *B, int ldb, double beta, double *C, int ldc)
{
  RW_CHECK(M >= 0 && N >= 0 && K >= 0, RW_ERR_INTERNAL, "device gemm: M %d, N %d, K %d", M, N, K);
  if (M == 0 || N == 0) return 0;
  RW_CHECK(d->be->gemm, RW_ERR_NOT_IMPLEMENTED, "device %s has no matrix product", d->name);
  return d->be->gemm(d, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static int rw_device_partials(rw_device d, long np)
{
  if (np > d->partials_cap) {
    double *p = realloc(d->partials, (size_t)np * sizeof *p);
    RW_CHECK(p, RW_ERR_MEM, "no host memory for %ld partial sums", np);
    d->partials = p;
    d->partials_cap = np;
  }
  return 0;
}

int rw_device_reduce(rw_device d, int op, const double *x, const double *y, long n, double *out)
{
  long np = rw_device_chunks(n);
  RW_CALL(rw_device_partials(d, np));
  if (np > 0) RW_CALL(d->be->reduce(d, op, x, y, n, d->partials));
  double acc = rw_dk_red_identity(op);
  for (long p = 0; p < np; p++)
    acc = rw_dk_red_combine(op, acc, d->partials[p]);
  *out = acc;
  return 0;
}

int rw_device_reduce_acc(rw_device d, int op, const double *x, const double *y, long n, double *acc)
{
  if (d->be->reduce_acc) return d->be->reduce_acc(d, op, x, y, n, acc);
  double v = 0.0, a = 0.0;
  RW_CALL(rw_device_reduce(d, op, x, y, n, &v));
  RW_CALL(rw_device_copy(d, &a, acc, sizeof a, RW_COPY_D2H));
  a += v;
  RW_CALL(rw_device_copy(d, acc, &a, sizeof a, RW_COPY_H2D));
  return 0;
}

int rw_pdefer_init(rw_pdefer *q, rw_device dev, long np)
{
  memset(q, 0, sizeof *q);
  if (!dev || np <= 0) return 0;
  q->np = np;
  RW_CALL(rw_device_alloc(dev, (size_t)np * sizeof(double), &q->acc));
  q->dev = dev; /* from here rw_pdefer_free releases acc */
  RW_CALL(rw_calloc((size_t)np, sizeof(double), "deferred parameter gradient", &q->host));
  return 0;
}

void rw_pdefer_free(rw_pdefer *q)
{
  if (q->dev) rw_device_free(q->dev, &q->acc, (size_t)q->np * sizeof(double));
  rw_free(&q->host);
  q->dev = NULL;
}

int rw_pdefer_set(rw_pdefer *q, double *pbar)
{
  q->pbar = q->dev ? pbar : NULL;
  q->live = 0;
  return 0;
}

int rw_pdefer_held(const rw_pdefer *q, const double *out)
{
  return q->dev && out && out == q->pbar;
}

int rw_pdefer_sum(rw_pdefer *q, double *out, long k, const double *x, long n)
{
  if (!rw_pdefer_held(q, out)) {
    double v = 0.0;
    RW_CALL(rw_device_reduce(q->dev, RW_DK_SUM, x, NULL, n, &v));
    out[k] += v;
    return 0;
  }
  if (!q->live) { /* the first term of a sweep: the sums start from zero */
    memset(q->host, 0, (size_t)q->np * sizeof(double));
    RW_CALL(rw_device_copy(q->dev, q->acc, q->host, (size_t)q->np * sizeof(double), RW_COPY_H2D));
    q->live = 1;
  }
  RW_CALL(rw_device_reduce_acc(q->dev, RW_DK_SUM, x, NULL, n, q->acc + k));
  return 0;
}

int rw_pdefer_flush(rw_pdefer *q)
{
  if (!q->dev || !q->pbar || !q->live) return 0;
  RW_CALL(rw_device_copy(q->dev, q->host, q->acc, (size_t)q->np * sizeof(double), RW_COPY_D2H));
  for (long k = 0; k < q->np; k++)
    q->pbar[k] += q->host[k];
  q->live = 0;
  return 0;
}

/* --------------------------------------------------------------------------------------- */

int rw_device_create(rw_context ctx, rw_device_kind kind, rw_device *out)
{
  int ierr = 0;
  rw_device d = NULL;
  RW_CHECK(ctx && out, RW_ERR_ARG, "rw_device_create: NULL argument");
  *out = NULL;
  RW_CHECK(kind == RW_DEVICE_EMULATED || kind == RW_DEVICE_CUDA, RW_ERR_ARG,
           "rw_device_create: unknown device kind %d", (int)kind);
  RW_CALL(rw_calloc(1, sizeof *d, "device", &d));
  d->kind = kind;
  d->ordinal = -1;
  if (kind == RW_DEVICE_EMULATED) {
    d->be = &rw_emu_backend;
    snprintf(d->name, sizeof d->name, "emulated");
  } else {
    /* one GPU per rank: the rank among those on this node picks the device */
    MPI_Comm node = MPI_COMM_NULL;
    int local = 0;
    RW_TRY_MPI(
        MPI_Comm_split_type(rw_context_comm(ctx), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    int oerr = rw_cuda_device_open(d, local); /* closes what it opened when it fails */
    /* every rank has its device, or none goes on (the mode below is agreed collectively) */
    int aerr = rw_error_agree(rw_context_comm(ctx), oerr);
    if (aerr && !oerr) d->be->close(d);
    RW_TRY(aerr);
  }
  *out = d;
  /* AUTO fails only on an MPI error: the device is then closed with it */
  RW_TRY(rw_device_set_mpi(d, rw_context_comm(ctx), RW_DEVICE_MPI_AUTO));
  return 0;
cleanup:
  if (*out) { /* opened: destroy closes it */
    rw_device_destroy(out);
    d = NULL;
  }
  rw_free(&d);
  return ierr;
}

int rw_mpi_cuda_support(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  /* the library this process runs with, not the one it was compiled against: a CUDA-aware
   * Open MPI answers 1 here whatever MPIX_CUDA_AWARE_SUPPORT said at compile time */
  return MPIX_Query_cuda_support() ? 1 : 0;
#else
  return -1;
#endif
}

int rw_device_set_mpi(rw_device d, MPI_Comm comm, rw_device_mpi mode)
{
  RW_CHECK(d, RW_ERR_ARG, "rw_device_set_mpi: NULL device");
  RW_CHECK(mode == RW_DEVICE_MPI_AUTO || mode == RW_DEVICE_MPI_STAGED ||
               mode == RW_DEVICE_MPI_DIRECT,
           RW_ERR_ARG, "rw_device_set_mpi: unknown mode %d", (int)mode);
  /* over the ranks: does every library say yes, and the first rank whose library says no */
  int mine = rw_mpi_cuda_support(), rank = 0, yes = mine == 1, all_yes = 0, first = 0;
  MPI_Comm_rank(comm, &rank);
  int no_rank = mine == 0 ? rank : INT32_MAX;
  RW_CALL_MPI(MPI_Allreduce(&yes, &all_yes, 1, MPI_INT, MPI_MIN, comm));
  RW_CALL_MPI(MPI_Allreduce(&no_rank, &first, 1, MPI_INT, MPI_MIN, comm));
  int some_no = first != INT32_MAX;
  const char *lib = all_yes   ? "the MPI library reports CUDA support on every rank"
                    : some_no ? "the MPI library does not report CUDA support"
                              : "the MPI library cannot say whether it takes CUDA memory "
                                "(no MPIX_Query_cuda_support)";
  int cuda = d->kind == RW_DEVICE_CUDA;
  /* a library that says no is believed; one that cannot say (not Open MPI) is trusted when
   * direct is asked for */
  if (mode == RW_DEVICE_MPI_DIRECT && cuda && some_no)
    return RW_ERROR(RW_ERR_ARG,
                    "halos from device memory (direct) need a CUDA-aware MPI library: rank %d's "
                    "does not report CUDA support (MPIX_Query_cuda_support)",
                    first);
  int direct = mode == RW_DEVICE_MPI_DIRECT || (mode == RW_DEVICE_MPI_AUTO && cuda && all_yes);
  d->mpi_direct = direct;
  if (direct && cuda)
    snprintf(d->mpi_mode, sizeof d->mpi_mode, "halos sent from device memory: %s", lib);
  else if (direct)
    snprintf(d->mpi_mode, sizeof d->mpi_mode,
             "halos handed to MPI from the emulated device's memory (direct, as with a "
             "CUDA-aware library)");
  else if (cuda)
    snprintf(d->mpi_mode, sizeof d->mpi_mode, "halos staged through page-locked host buffers%s%s",
             mode == RW_DEVICE_MPI_STAGED ? " (asked for)" : ": ",
             mode == RW_DEVICE_MPI_STAGED ? "" : lib);
  else
    snprintf(d->mpi_mode, sizeof d->mpi_mode, "halos staged through host buffers");
  return 0;
}

int rw_device_mpi_direct(rw_device d) { return d ? d->mpi_direct : 0; }
const char *rw_device_mpi_mode(rw_device d) { return d ? d->mpi_mode : "no device"; }

void rw_device_destroy(rw_device *pd)
{
  if (!pd || !*pd) return;
  rw_device d = *pd;
  d->nqueue = 0; /* emulated requests never waited for are dropped: their owners are gone */
  if (d->be && d->be->close) d->be->close(d);
  free(d->partials);
  rw_free(pd);
}

rw_device_kind rw_device_get_kind(rw_device d) { return d->kind; }
const char *rw_device_name(rw_device d) { return d->name; }
size_t rw_device_bytes(rw_device d) { return d->bytes; }
size_t rw_device_peak_bytes(rw_device d) { return d->peak; }
int rw_device_sync(rw_device d)
{
  if (!d) return 0;
  RW_CALL(rw_device_copy_wait(d, d->copy_issued));
  return d->be->sync(d);
}

/* ---------------------------------------------------------------------------------------
 * Device vectors. */

typedef struct {
  rw_device dev;
  MPI_Comm comm;
  sunindextype local_n, global_n;
  double *data;
  int own;
} rw_dvec_content;

#define DV(v) ((rw_dvec_content *)(v)->content)

/* A failed device operation inside an N_Vector op (which returns no code) cannot be
 * reported up the call chain, and the device's state is lost with it: say so on this rank
 * and stop every rank, as the apps do with any rank-local failure in a solve. */
static void rw_dvec_fatal(int ierr)
{
  int rank = 0;
  if (!ierr) return;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "rank %d: device vector operation failed: %s\n", rank, rw_error_message());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static N_Vector_ID rw_dvec_id(N_Vector v)
{
  (void)v;
  return SUNDIALS_NVEC_CUSTOM;
}

int rw_dvec_is(N_Vector v) { return v && v->ops && v->ops->nvgetvectorid == rw_dvec_id; }
double *rw_dvec_data(N_Vector v) { return DV(v)->data; }
void rw_dvec_set_data(N_Vector v, double *data) { DV(v)->data = data; }
sunindextype rw_dvec_local_length(N_Vector v) { return DV(v)->local_n; }
sunindextype rw_dvec_global_length(N_Vector v) { return DV(v)->global_n; }
MPI_Comm rw_dvec_comm(N_Vector v) { return DV(v)->comm; }

rw_device rw_vec_device(N_Vector v) { return rw_dvec_is(v) ? DV(v)->dev : NULL; }

static N_Vector rw_dvec_clone(N_Vector w)
{
  N_Vector v = NULL;
  if (rw_dvec_make(DV(w)->dev, DV(w)->comm, w->sunctx, DV(w)->local_n, DV(w)->global_n, 1, &v))
    return NULL;
  return v;
}

static N_Vector rw_dvec_clone_empty(N_Vector w)
{
  N_Vector v = NULL;
  if (rw_dvec_make(DV(w)->dev, DV(w)->comm, w->sunctx, DV(w)->local_n, DV(w)->global_n, 0, &v))
    return NULL;
  return v;
}

void rw_dvec_free(N_Vector v)
{
  if (!v) return;
  rw_dvec_content *c = DV(v);
  if (c) {
    if (c->own && c->data) {
      size_t bytes = ((size_t)c->local_n + 1) * sizeof(double);
      c->dev->be->release(c->dev, c->data, bytes);
      c->dev->bytes -= bytes;
    }
    c->dev->nvec--;
    free(c);
    v->content = NULL;
  }
  N_VFreeEmpty(v);
}

static void rw_dvec_space(N_Vector v, sunindextype *lrw, sunindextype *liw)
{
  int size = 1;
  MPI_Comm_size(DV(v)->comm, &size);
  *lrw = DV(v)->global_n;
  *liw = 2 * size;
}

static realtype *rw_dvec_host_pointer(N_Vector v)
{
  (void)v;
  return NULL; /* no host copy: rw_vec_to_host */
}

static realtype *rw_dvec_device_pointer(N_Vector v) { return DV(v)->data; }
static void *rw_dvec_communicator(N_Vector v) { return &DV(v)->comm; }
static sunindextype rw_dvec_length(N_Vector v) { return DV(v)->global_n; }

static void rw_dvec_map(int op, double a, N_Vector x, N_Vector y, N_Vector z)
{
  rw_device d = DV(z)->dev;
  rw_dvec_fatal(d->be->map(d, op, a, x ? DV(x)->data : NULL, y ? DV(y)->data : NULL, DV(z)->data,
                           (long)DV(z)->local_n));
}

static void rw_dvec_linear_sum(realtype a, N_Vector x, realtype b, N_Vector y, N_Vector z)
{
  const double c[2] = {a, b};
  const double *xs[2] = {DV(x)->data, DV(y)->data};
  rw_device d = DV(z)->dev;
  rw_dvec_fatal(d->be->lincomb(d, 2, c, xs, DV(z)->data, (long)DV(z)->local_n));
}

static void rw_dvec_const(realtype a, N_Vector z) { rw_dvec_map(RW_DK_CONST, a, NULL, NULL, z); }
static void rw_dvec_prod(N_Vector x, N_Vector y, N_Vector z)
{
  rw_dvec_map(RW_DK_PROD, 0.0, x, y, z);
}
static void rw_dvec_div(N_Vector x, N_Vector y, N_Vector z)
{
  rw_dvec_map(RW_DK_DIV, 0.0, x, y, z);
}
static void rw_dvec_scale(realtype a, N_Vector x, N_Vector z)
{
  rw_dvec_map(RW_DK_SCALE, a, x, NULL, z);
}
static void rw_dvec_abs(N_Vector x, N_Vector z) { rw_dvec_map(RW_DK_ABS, 0.0, x, NULL, z); }
static void rw_dvec_inv(N_Vector x, N_Vector z) { rw_dvec_map(RW_DK_INV, 0.0, x, NULL, z); }
static void rw_dvec_add_const(N_Vector x, realtype b, N_Vector z)
{
  rw_dvec_map(RW_DK_ADDCONST, b, x, NULL, z);
}
static void rw_dvec_compare(realtype a, N_Vector x, N_Vector z)
{
  rw_dvec_map(RW_DK_COMPARE, a, x, NULL, z);
}

/* This rank's value of reduction `op`: the backend's chunk values combined in chunk order. */
static double rw_dvec_reduce_local(int op, N_Vector x, N_Vector y)
{
  double acc = 0.0;
  rw_dvec_fatal(rw_device_reduce(DV(x)->dev, op, DV(x)->data, y ? DV(y)->data : NULL,
                                 (long)DV(x)->local_n, &acc));
  return acc;
}

static double rw_dvec_allreduce(N_Vector x, double v, MPI_Op op)
{
  double g = 0.0;
  int e = MPI_Allreduce(&v, &g, 1, MPI_DOUBLE, op, DV(x)->comm);
  if (e != MPI_SUCCESS)
    rw_dvec_fatal(rw_error_mpi(e, "MPI_Allreduce", __func__, __FILE__, __LINE__));
  return g;
}

static realtype rw_dvec_dot_local_op(N_Vector x, N_Vector y)
{
  return rw_dvec_reduce_local(RW_DK_DOT, x, y);
}
static realtype rw_dvec_dot(N_Vector x, N_Vector y)
{
  return rw_dvec_allreduce(x, rw_dvec_reduce_local(RW_DK_DOT, x, y), MPI_SUM);
}
static realtype rw_dvec_max_norm_local(N_Vector x)
{
  return rw_dvec_reduce_local(RW_DK_MAXABS, x, NULL);
}
static realtype rw_dvec_max_norm(N_Vector x)
{
  return rw_dvec_allreduce(x, rw_dvec_reduce_local(RW_DK_MAXABS, x, NULL), MPI_MAX);
}
static realtype rw_dvec_wsq_local(N_Vector x, N_Vector w)
{
  return rw_dvec_reduce_local(RW_DK_WSQ, x, w);
}
static realtype rw_dvec_wrms_norm(N_Vector x, N_Vector w)
{
  double s = rw_dvec_allreduce(x, rw_dvec_reduce_local(RW_DK_WSQ, x, w), MPI_SUM);
  return sqrt(s / (double)DV(x)->global_n);
}
static realtype rw_dvec_wl2_norm(N_Vector x, N_Vector w)
{
  return sqrt(rw_dvec_allreduce(x, rw_dvec_reduce_local(RW_DK_WSQ, x, w), MPI_SUM));
}
static realtype rw_dvec_min_local(N_Vector x) { return rw_dvec_reduce_local(RW_DK_MIN, x, NULL); }
static realtype rw_dvec_min(N_Vector x)
{
  return rw_dvec_allreduce(x, rw_dvec_reduce_local(RW_DK_MIN, x, NULL), MPI_MIN);
}
static realtype rw_dvec_l1_norm_local(N_Vector x)
{
  return rw_dvec_reduce_local(RW_DK_L1, x, NULL);
}
static realtype rw_dvec_l1_norm(N_Vector x)
{
  return rw_dvec_allreduce(x, rw_dvec_reduce_local(RW_DK_L1, x, NULL), MPI_SUM);
}

/* Rounds as rw_lincomb does (rw_dk_lincomb), in passes of at most RW_LINCOMB_MAX vectors:
 * z = the first pass, then z = 1 z + ... (1 z is exact), so the same bits as one pass. */
static int rw_dvec_linear_combination(int n, realtype *c, N_Vector *X, N_Vector z)
{
  const double *xs[RW_LINCOMB_MAX];
  double cs[RW_LINCOMB_MAX];
  rw_device d = DV(z)->dev;
  long len = (long)DV(z)->local_n;
  if (n < 1) return -1;
  int first = n < RW_LINCOMB_MAX ? n : RW_LINCOMB_MAX;
  for (int j = 0; j < first; j++)
    xs[j] = DV(X[j])->data;
  rw_dvec_fatal(d->be->lincomb(d, first, c, xs, DV(z)->data, len));
  for (int j0 = first; j0 < n; j0 += RW_LINCOMB_MAX - 1) {
    int m = n - j0 < RW_LINCOMB_MAX - 1 ? n - j0 : RW_LINCOMB_MAX - 1;
    cs[0] = 1.0;
    xs[0] = DV(z)->data;
    for (int j = 0; j < m; j++) {
      cs[j + 1] = c[j0 + j];
      xs[j + 1] = DV(X[j0 + j])->data;
    }
    /* n = 2 with c = (1, c1) takes the plain form: unit coefficient */
    rw_dvec_fatal(d->be->lincomb(d, m + 1, cs, xs, DV(z)->data, len));
  }
  return 0;
}

int rw_dvec_make(rw_device dev, MPI_Comm comm, SUNContext sunctx, sunindextype local_n,
                 sunindextype global_n, int own, N_Vector *out)
{
  int ierr = 0;
  rw_dvec_content *c = NULL;
  *out = NULL;
  N_Vector v = N_VNewEmpty(sunctx);
  RW_CHECK(v, RW_ERR_SUNDIALS, "N_VNewEmpty failed for a device vector");
  c = calloc(1, sizeof *c);
  if (!c) {
    ierr = RW_ERROR(RW_ERR_MEM, "no memory for a device vector's content");
    goto cleanup;
  }
  c->dev = dev;
  c->comm = comm;
  c->local_n = local_n;
  c->global_n = global_n;
  c->own = own;
  v->content = c;
  dev->nvec++;
  if (own) {
    /* one extra element keeps the pointer valid for ranks that own no entries */
    size_t bytes = ((size_t)local_n + 1) * sizeof(double);
    void *p = NULL;
    RW_TRY(dev->be->alloc(dev, bytes, &p));
    c->data = p;
    dev->bytes += bytes;
    if (dev->bytes > dev->peak) dev->peak = dev->bytes;
  }
  N_Vector_Ops o = v->ops;
  o->nvgetvectorid = rw_dvec_id;
  o->nvclone = rw_dvec_clone;
  o->nvcloneempty = rw_dvec_clone_empty;
  o->nvdestroy = rw_dvec_free;
  o->nvspace = rw_dvec_space;
  o->nvgetarraypointer = rw_dvec_host_pointer;
  o->nvgetdevicearraypointer = rw_dvec_device_pointer;
  o->nvsetarraypointer = NULL;
  o->nvgetcommunicator = rw_dvec_communicator;
  o->nvgetlength = rw_dvec_length;
  o->nvlinearsum = rw_dvec_linear_sum;
  o->nvconst = rw_dvec_const;
  o->nvprod = rw_dvec_prod;
  o->nvdiv = rw_dvec_div;
  o->nvscale = rw_dvec_scale;
  o->nvabs = rw_dvec_abs;
  o->nvinv = rw_dvec_inv;
  o->nvaddconst = rw_dvec_add_const;
  o->nvdotprod = rw_dvec_dot;
  o->nvmaxnorm = rw_dvec_max_norm;
  o->nvwrmsnorm = rw_dvec_wrms_norm;
  o->nvmin = rw_dvec_min;
  o->nvwl2norm = rw_dvec_wl2_norm;
  o->nvl1norm = rw_dvec_l1_norm;
  o->nvcompare = rw_dvec_compare;
  o->nvlinearcombination = rw_dvec_linear_combination;
  o->nvdotprodlocal = rw_dvec_dot_local_op;
  o->nvmaxnormlocal = rw_dvec_max_norm_local;
  o->nvminlocal = rw_dvec_min_local;
  o->nvl1normlocal = rw_dvec_l1_norm_local;
  o->nvwsqrsumlocal = rw_dvec_wsq_local;
  /* The masked norms, constraint and quotient tests are not used by Rewind and stay NULL;
   * SUNDIALS' fused and vector-array operations fall back to the ones above. */
  *out = v;
  return 0;
cleanup:
  rw_dvec_free(v);
  return ierr;
}

void rw_dvec_copy(N_Vector x, N_Vector y)
{
  rw_device d = DV(y)->dev;
  if (DV(x)->local_n > 0)
    rw_dvec_fatal(d->be->copy(d, DV(y)->data, DV(x)->data, (size_t)DV(x)->local_n * sizeof(double),
                              RW_COPY_D2D));
}

int rw_vec_to_host(N_Vector v, double *host)
{
  size_t bytes = (size_t)rw_vec_local_length(v) * sizeof(double);
  if (!bytes) return 0;
  if (!rw_dvec_is(v)) {
    memcpy(host, rw_vec_data(v), bytes);
    return 0;
  }
  rw_device d = DV(v)->dev;
  RW_CALL(d->be->copy(d, host, DV(v)->data, bytes, RW_COPY_D2H));
  return 0;
}

int rw_vec_from_host(N_Vector v, const double *host)
{
  size_t bytes = (size_t)rw_vec_local_length(v) * sizeof(double);
  if (!bytes) return 0;
  if (!rw_dvec_is(v)) {
    memcpy(rw_vec_data(v), host, bytes);
    return 0;
  }
  rw_device d = DV(v)->dev;
  RW_CALL(d->be->copy(d, DV(v)->data, host, bytes, RW_COPY_H2D));
  return 0;
}

int rw_vec_host_read(N_Vector v, const double **data, double **tmp)
{
  *tmp = NULL;
  *data = rw_vec_data(v);
  if (!rw_dvec_is(v)) return 0;
  RW_CALL(rw_calloc((size_t)rw_vec_local_length(v) + 1, sizeof(double),
                    "host copy of a device vector", tmp));
  int ierr = rw_vec_to_host(v, *tmp);
  if (ierr) {
    rw_free(tmp);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  *data = *tmp;
  return 0;
}

double rw_vec_dot_local(N_Vector x, N_Vector y) { return N_VDotProdLocal(x, y); }
