/* Context, logging and the counting allocator. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_HUGEPAGE, fallocate, FALLOC_FL_KEEP_SIZE */
#include "rewind/rw_context.h"

#include "rewind/rw_device.h"
#include "rewind/rw_error.h"
#include "rewind/rw_kernels.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

/* Under AddressSanitizer the blocks of a group (rw_calloc_whole_many) are fenced by hand: the
 * headers and padding between them, and a block once freed, are poisoned, so that running off
 * a slot or reading a freed one is reported as for a block of its own. */
#if defined(__SANITIZE_ADDRESS__)
#define RW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RW_ASAN 1
#endif
#endif
#ifdef RW_ASAN
#include <sanitizer/asan_interface.h>
#define RW_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define RW_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RW_POISON(p, n)   ((void)(p), (void)(n))
#define RW_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define RW_MXCSR_FTZ 0x8000u /* flush to zero */
#define RW_MXCSR_DAZ 0x0040u /* denormals are zero */
#endif

struct rw_context_s {
  MPI_Comm comm;
  int rank, size;
  SUNContext sunctx;
  rw_log_level level;
  rw_device device;
};

int rw_context_create(MPI_Comm comm, rw_context *out)
{
  int ierr = 0;
  rw_context ctx = NULL;
  int inited = 0;
  RW_CHECK(out, RW_ERR_ARG, "rw_context_create: output pointer is NULL");
  *out = NULL;
  RW_CALL_MPI(MPI_Initialized(&inited));
  RW_CHECK(inited, RW_ERR_ARG, "rw_context_create: call MPI_Init before creating a context");
  RW_CALL(rw_calloc(1, sizeof *ctx, "context", &ctx));
  ctx->comm = MPI_COMM_NULL;
  ctx->level = RW_LOG_SUMMARY;
  if (MPI_Comm_dup(comm, &ctx->comm) != MPI_SUCCESS) {
    ierr = RW_ERROR(RW_ERR_MPI, "MPI_Comm_dup failed");
    goto cleanup;
  }
  MPI_Comm_rank(ctx->comm, &ctx->rank);
  MPI_Comm_size(ctx->comm, &ctx->size);
  if (SUNContext_Create((void *)&ctx->comm, &ctx->sunctx) != 0) {
    ierr = RW_ERROR(RW_ERR_SUNDIALS, "SUNContext_Create failed");
    goto cleanup;
  }
  *out = ctx;
  return 0;
cleanup:
  rw_context_destroy(&ctx);
  return ierr;
}

int rw_context_destroy(rw_context *pctx)
{
  if (!pctx || !*pctx) return 0;
  rw_context ctx = *pctx;
  if (ctx->sunctx) SUNContext_Free(&ctx->sunctx);
  if (ctx->comm != MPI_COMM_NULL) MPI_Comm_free(&ctx->comm);
  rw_free(pctx);
  return 0;
}

MPI_Comm rw_context_comm(rw_context ctx) { return ctx->comm; }
int rw_context_rank(rw_context ctx) { return ctx->rank; }
int rw_context_size(rw_context ctx) { return ctx->size; }
SUNContext rw_context_sunctx(rw_context ctx) { return ctx->sunctx; }

int rw_fp_flush_subnormals(int on)
{
#if defined(__x86_64__) || defined(__i386__)
  unsigned csr = _mm_getcsr();
  csr = on ? csr | RW_MXCSR_FTZ | RW_MXCSR_DAZ : csr & ~(RW_MXCSR_FTZ | RW_MXCSR_DAZ);
  _mm_setcsr(csr);
  return RW_SUCCESS;
#elif defined(__aarch64__)
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr = on ? fpcr | (1ul << 24) : fpcr & ~(1ul << 24);
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
  return RW_SUCCESS;
#else
  if (!on) return RW_SUCCESS;
  return RW_ERROR(RW_ERR_NOT_IMPLEMENTED,
                  "flushing subnormals to zero is implemented for x86-64 and aarch64 only");
#endif
}

int rw_fp_subnormals_flushed(void)
{
#if defined(__x86_64__) || defined(__i386__)
  return (_mm_getcsr() & (RW_MXCSR_FTZ | RW_MXCSR_DAZ)) == (RW_MXCSR_FTZ | RW_MXCSR_DAZ);
#elif defined(__aarch64__)
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  return (fpcr >> 24) & 1u;
#else
  return 0;
#endif
}

void rw_context_set_log_level(rw_context ctx, rw_log_level level) { ctx->level = level; }
rw_log_level rw_context_log_level(rw_context ctx) { return ctx->level; }
void rw_context_set_device(rw_context ctx, rw_device dev) { ctx->device = dev; }
rw_device rw_context_device(rw_context ctx) { return ctx ? ctx->device : NULL; }

void rw_log(rw_context ctx, rw_log_level level, const char *fmt, ...)
{
  if (!ctx || ctx->rank != 0 || level > ctx->level) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

/* Each block carries a header with its size, so frees are counted exactly, and how it was
 * allocated. The header is 32 bytes (a max_align_t here) and sits right before the payload, which
 * starts on a cache line (RW_LEAD bytes into a mapping; within a calloc'd block, its lead from
 * calloc's pointer kept in the header), so every payload is 64-byte aligned: a
 * 512-bit load of a vector's entries 8 i .. 8 i + 7 then never spans two lines (on the Zen 5 VM
 * a row kernel whose loads all split lines ran 1.3-1.5 x slower than with aligned ones). A
 * block of a group (rw_calloc_whole_many) names its group's header, which counts the group's
 * blocks not yet freed. */
typedef union {
  struct {
    size_t bytes;
    size_t mapped; /* 0: calloc; else the length of its own mapping (rw_big_alloc) */
    void *group;   /* NULL: a block of its own; else the header of the group it lies in */
    size_t live;   /* a group's header: its blocks not yet freed; a calloc'd block: its lead */
  } b;
  max_align_t align;
} rw_block_header;
_Static_assert(sizeof(rw_block_header) == 32, "rw_block_header: 32 bytes");
#define RW_ALIGN 64                                   /* every payload's alignment */
#define RW_LEAD  (RW_ALIGN - sizeof(rw_block_header)) /* from the allocation to the header */

/* Blocks of RW_BIG_BYTES or more from rw_calloc_whole (checkpoint slots) get a mapping
 * of their own, aligned to 2 MiB and marked MADV_HUGEPAGE before anything touches it, so that
 * the kernel backs them with transparent huge pages where it is set to (`madvise` mode, the
 * default of many distributions): one page fault per 2 MiB instead of 512. Pages of such a
 * block are first touched inside the timed sweeps (a store-everything run writes each state
 * into a fresh slot), and in a virtual machine a fault is dear: on an AMD EPYC (Zen 5) VM,
 * Gray-Scott 512^2, 200 steps, 1 rank, the store-everything forward sweep took 2.22-2.35 s
 * with 4 KiB pages and 0.50-0.64 s with huge ones (the plain forward 0.36-0.47 s). Zeroed like
 * calloc's (a fresh anonymous mapping); where the kernel has no huge pages the advice is ignored
 * and the block is an ordinary mapping. */
#define RW_BIG_BYTES  ((size_t)2 << 20)
#define RW_HUGE_ALIGN ((size_t)2 << 20)

static rw_block_header *rw_big_alloc(size_t bytes)
{
#if defined(__linux__) && defined(MAP_ANONYMOUS)
  const size_t pg = 4096, len = (RW_ALIGN + bytes + pg - 1) / pg * pg;
  if (len > (size_t)-1 - RW_HUGE_ALIGN) return NULL;
  char *m =
      mmap(NULL, len + RW_HUGE_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  /* keep the 2 MiB-aligned part: unmap the head before it and the tail after it */
  const uintptr_t a = ((uintptr_t)m + RW_HUGE_ALIGN - 1) & ~(uintptr_t)(RW_HUGE_ALIGN - 1);
  char *p = (char *)a;
  const size_t head = (size_t)(p - m), tail = RW_HUGE_ALIGN - head;
  if (head) munmap(m, head);
  if (tail) munmap(p + len, tail);
#ifdef MADV_HUGEPAGE
  (void)madvise(p, len, MADV_HUGEPAGE); /* advice: refused where THP is off, harmless */
#endif
  rw_block_header *h = (rw_block_header *)(void *)(p + RW_LEAD);
  h->b.mapped = len, h->b.group = NULL;
  return h;
#else
  (void)bytes;
  return NULL;
#endif
}

/* current bytes; the peak since the caller's last rw_mem_reset_peak; the peak of the adjoint
 * driver's window (rw_mem_window_*), kept apart so that a solve does not reset the caller's */
static size_t rw_mem_cur, rw_mem_pk, rw_mem_wpk;
static long rw_mem_fail_n;

static int rw_calloc_impl(size_t count, size_t size, const char *what, void *out_ptr, int whole)
{
  void **out = (void **)out_ptr;
  *out = NULL;
  if (count && size > ((size_t)-1 - 2 * RW_ALIGN) / count)
    return RW_ERROR(RW_ERR_MEM, "allocation of %zu x %zu bytes for %s overflows", count, size,
                    what ? what : "?");
  size_t bytes = count * size;
  if (rw_mem_fail_n > 0 && --rw_mem_fail_n == 0)
    return RW_ERROR(RW_ERR_MEM, "allocation of %zu bytes for %s failed (injected by test)", bytes,
                    what ? what : "?");
  rw_block_header *h = whole && bytes >= RW_BIG_BYTES ? rw_big_alloc(bytes) : NULL;
  char *raw = NULL; /* calloc, not posix_memalign + memset: a fresh mapping's zero pages are
                     * left untouched (resident only once written), as with plain calloc */
  if (!h && (raw = calloc(1, 2 * RW_ALIGN + bytes)) != NULL) {
    const uintptr_t pay = ((uintptr_t)raw + RW_ALIGN + RW_ALIGN - 1) & ~(uintptr_t)(RW_ALIGN - 1);
    h = (rw_block_header *)(void *)(pay - sizeof(rw_block_header));
    h->b.mapped = 0, h->b.group = NULL, h->b.live = (size_t)((char *)h - raw);
  }
  if (!h)
    return RW_ERROR(RW_ERR_MEM, "out of memory allocating %zu bytes for %s", bytes,
                    what ? what : "?");
  h->b.bytes = bytes;
  rw_mem_cur += bytes;
  if (rw_mem_cur > rw_mem_pk) rw_mem_pk = rw_mem_cur;
  if (rw_mem_cur > rw_mem_wpk) rw_mem_wpk = rw_mem_cur;
  *out = h + 1;
  return 0;
}

int rw_calloc(size_t count, size_t size, const char *what, void *out_ptr)
{
  return rw_calloc_impl(count, size, what, out_ptr, 0);
}

int rw_calloc_whole(size_t count, size_t size, const char *what, void *out_ptr)
{
  return rw_calloc_impl(count, size, what, out_ptr, 1);
}

/* The group's blocks lie in one mapping of rw_big_alloc, after its header: block i's header and
 * payload at i * stride from the group's payload (RW_LEAD bytes, the header, then the payload,
 * 64-byte aligned: stride a multiple of 64). */
int rw_calloc_whole_many(size_t n, size_t count, size_t size, const char *what, void **ptrs)
{
  for (size_t i = 0; i < n; i++)
    ptrs[i] = NULL;
  if (n == 0) return 0;
  if (count && size > ((size_t)-1 - 2 * RW_ALIGN) / count)
    return RW_ERROR(RW_ERR_MEM, "allocation of %zu x %zu bytes for %s overflows", count, size,
                    what ? what : "?");
  const size_t bytes = count * size, hs = RW_ALIGN; /* the group's own lead and header */
  const size_t stride = (RW_ALIGN + bytes + RW_ALIGN - 1) / RW_ALIGN * RW_ALIGN;
  rw_block_header *g = NULL;
  if (bytes < RW_BIG_BYTES && n > 1 && stride <= ((size_t)-1 - hs) / n &&
      hs + n * stride >= RW_BIG_BYTES) {
    if (rw_mem_fail_n > 0 && --rw_mem_fail_n == 0)
      return RW_ERROR(RW_ERR_MEM, "allocation of %zu x %zu bytes for %s failed (injected by test)",
                      n, bytes, what ? what : "?");
    g = rw_big_alloc(n * stride); /* the group's header is rw_big_alloc's */
  }
  if (!g) { /* blocks of their own: small groups, large blocks, or no mapping to be had */
    for (size_t i = 0; i < n; i++) {
      const int e = rw_calloc_impl(count, size, what, &ptrs[i], 1);
      if (e) {
        for (size_t k = 0; k < i; k++)
          rw_free(&ptrs[k]);
        return e;
      }
    }
    return 0;
  }
  g->b.bytes = 0, g->b.live = n;
  for (size_t i = 0; i < n; i++) {
    rw_block_header *h = (rw_block_header *)(void *)((char *)(g + 1) + i * stride + RW_LEAD);
    h->b.bytes = bytes, h->b.mapped = 0, h->b.group = g, h->b.live = 0;
    ptrs[i] = h + 1;
    RW_POISON((char *)h - RW_LEAD, RW_ALIGN); /* the lead, the header, the padding after */
    RW_POISON((char *)(h + 1) + bytes, stride - RW_ALIGN - bytes);
  }
  rw_mem_cur += n * bytes;
  if (rw_mem_cur > rw_mem_pk) rw_mem_pk = rw_mem_cur;
  if (rw_mem_cur > rw_mem_wpk) rw_mem_wpk = rw_mem_cur;
  return 0;
}

void rw_free(void *ptr_to_ptr)
{
  void **pp = (void **)ptr_to_ptr;
  if (!pp || !*pp) return;
  rw_block_header *h = (rw_block_header *)*pp - 1;
  RW_UNPOISON(h, sizeof *h);
  rw_mem_cur -= h->b.bytes;
  if (h->b.group) { /* a group's block: the group goes when its last block does */
    rw_block_header *g = h->b.group;
    RW_POISON(h, sizeof *h + h->b.bytes); /* a read of the freed block is reported */
    *pp = NULL;
    if (--g->b.live > 0) return;
    RW_UNPOISON((char *)g - RW_LEAD, g->b.mapped); /* the mapping goes back clean */
    h = g;
  }
#if defined(__linux__) && defined(MAP_ANONYMOUS)
  if (h->b.mapped) {
    munmap((char *)h - RW_LEAD, h->b.mapped);
    *pp = NULL;
    return;
  }
#endif
  free((char *)h - h->b.live); /* a calloc'd block: live holds its lead */
  *pp = NULL;
}

size_t rw_mem_current(void) { return rw_mem_cur; }
size_t rw_mem_peak(void) { return rw_mem_pk; }
void rw_mem_reset_peak(void) { rw_mem_pk = rw_mem_cur; }
size_t rw_mem_window_begin(void)
{
  size_t outer = rw_mem_wpk;
  rw_mem_wpk = rw_mem_cur;
  return outer;
}
size_t rw_mem_window_end(size_t outer)
{
  size_t peak = rw_mem_wpk;
  if (outer > rw_mem_wpk) rw_mem_wpk = outer; /* an enclosing window keeps the larger peak */
  return peak;
}
void rw_mem_fail_after(long n) { rw_mem_fail_n = n; }

size_t rw_peak_rss(void)
{
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (size_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
}

/* A number read from the first line of `path` (a cgroup file); -1 if absent or "max". */
static double rw_read_number(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f) return -1.0;
  char buf[64] = "";
  double v = -1.0;
  if (fgets(buf, sizeof buf, f) && strncmp(buf, "max", 3) != 0) v = strtod(buf, NULL);
  fclose(f);
  return v;
}

size_t rw_mem_available(void)
{
  double avail = -1.0;
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (strncmp(line, "MemAvailable:", 13) == 0) {
        avail = strtod(line + 13, NULL) * 1024.0; /* kB */
        break;
      }
    fclose(f);
  }
  const double max = rw_read_number("/sys/fs/cgroup/memory.max"),
               cur = rw_read_number("/sys/fs/cgroup/memory.current");
  if (max >= 0.0 && cur >= 0.0 && (avail < 0.0 || max - cur < avail))
    avail = max > cur ? max - cur : 0.0;
  return avail > 0.0 ? (size_t)avail : 0;
}

int rw_mem_check_available(MPI_Comm comm, size_t bytes, const char *what, const char *fix)
{
  MPI_Comm node = MPI_COMM_NULL;
  RW_CALL_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  double mine = (double)bytes, sum = 0.0, avail = 0.0;
  int nr = 1, nrank = 0, err = MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, node);
  MPI_Comm_size(node, &nr);
  MPI_Comm_rank(node, &nrank);
  if (nrank == 0) avail = (double)rw_mem_available();
  if (err == MPI_SUCCESS) err = MPI_Bcast(&avail, 1, MPI_DOUBLE, 0, node);
  MPI_Comm_free(&node);
  RW_CHECK(err == MPI_SUCCESS, RW_ERR_MPI, "checking the memory for %s: MPI failed", what);
  /* every rank's answer, so that all refuse together */
  double over = avail > 0.0 && sum > avail ? 1.0 : 0.0, any = 0.0;
  RW_CALL_MPI(MPI_Allreduce(&over, &any, 1, MPI_DOUBLE, MPI_MAX, comm));
  const double G = 1024.0 * 1024.0 * 1024.0;
  RW_CHECK(over == 0.0, RW_ERR_BUDGET,
           "not enough memory for %s: %.2f GiB on this rank, %.2f GiB for the %d rank(s) on "
           "its node, and the node has %.2f GiB available; %s",
           what, mine / G, sum / G, nr, avail / G, fix);
  RW_CHECK(any == 0.0, RW_ERR_BUDGET, "not enough memory for %s on another rank's node; %s", what,
           fix);
  return 0;
}

uint64_t rw_fnv1a(uint64_t h, const void *data, size_t n)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

double rw_wtime(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* See rw_kernels.h. */
int rw_simd_isa(void)
{
  static atomic_int chosen = -1;
  int v = atomic_load_explicit(&chosen, memory_order_relaxed);
  if (v >= 0) return v;
  int have = 0;
#if RW_ISA_X86
  __builtin_cpu_init();
  have = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
#endif
  v = have;
  const char *e = getenv("REWIND_SIMD");
  if (e && *e) {
    const int cap = !strcmp(e, "avx512")     ? 2
                    : !strcmp(e, "avx2")     ? 1
                    : !strcmp(e, "baseline") ? 0
                                             : -1;
    if (cap < 0)
      fprintf(stderr, "rewind: REWIND_SIMD='%s' is not avx512, avx2 or baseline; ignored\n", e);
    else if (cap < v)
      v = cap;
  }
  int expect = -1; /* the first caller's choice stands (they all choose the same) */
  if (!atomic_compare_exchange_strong(&chosen, &expect, v)) v = expect;
  return v;
}

/* See rw_kernels.h. */
const char *rw_simd_isa_name(void)
{
  static const char *const names[3] = {"baseline (2 doubles a vector)", "avx2 (4 doubles a vector)",
                                       "avx512 (8 doubles a vector)"};
  return names[rw_simd_isa()];
}

static pthread_mutex_t rw_hdf5_mutex = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local int rw_hdf5_held; /* whether this thread holds the lock */

/* Takes the process-wide HDF5 lock (see rw_context.h). Not collective. */
void rw_hdf5_lock(void)
{
  pthread_mutex_lock(&rw_hdf5_mutex);
  rw_hdf5_held = 1;
}

/* Releases the process-wide HDF5 lock. Not collective. */
void rw_hdf5_unlock(void)
{
  rw_hdf5_held = 0;
  pthread_mutex_unlock(&rw_hdf5_mutex);
}

int rw_hdf5_lock_held(void) { return rw_hdf5_held; }

static atomic_int rw_hdf5_is_broken = 0;

/* See rw_context.h. Not collective. */
void rw_hdf5_mark_broken(void) { atomic_store(&rw_hdf5_is_broken, 1); }

int rw_hdf5_broken(void) { return atomic_load(&rw_hdf5_is_broken); }

/* See rw_context.h. Not collective. */
int rw_file_reserve(int fd, int64_t from, int64_t bytes)
{
#if defined(__linux__) && defined(FALLOC_FL_KEEP_SIZE)
  if (fd < 0 || from < 0 || bytes <= 0) return EINVAL;
  if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)bytes) == 0) return 0;
  return errno == ENOSYS ? EOPNOTSUPP : errno;
#else
  (void)fd, (void)from, (void)bytes;
  return EOPNOTSUPP;
#endif
}
