/* The Rewind context: the MPI communicator every object lives on, the SUNDIALS context for
 * the state vectors, logging, and the byte-counting allocator through which every buffer
 * Rewind owns is allocated (so budgets and peak memory are exact counts, and tests can make
 * the N-th allocation fail on purpose, as Lua's allocator hook allows). */
#ifndef REWIND_RW_CONTEXT_H
#define REWIND_RW_CONTEXT_H

#include "rw_error.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <sundials/sundials_context.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_context_s *rw_context;

typedef enum {
  RW_LOG_QUIET = 0,
  RW_LOG_SUMMARY = 1,
  RW_LOG_INFO = 2,
  RW_LOG_DEBUG = 3
} rw_log_level;

/* Creates a context on `comm` (duplicated; the caller keeps its own). MPI must already be
 * initialised. Collective on comm. */
int rw_context_create(MPI_Comm comm, rw_context *out);

/* Destroys the context; accepts NULL and sets *ctx to NULL. Collective. */
int rw_context_destroy(rw_context *ctx);

MPI_Comm rw_context_comm(rw_context ctx);
int rw_context_rank(rw_context ctx);
int rw_context_size(rw_context ctx);
SUNContext rw_context_sunctx(rw_context ctx);
void rw_context_set_log_level(rw_context ctx, rw_log_level level);
rw_log_level rw_context_log_level(rw_context ctx);

/* Prints on rank 0 only when `level` <= the context's level. Not collective (other ranks
 * return at once). */
void rw_log(rw_context ctx, rw_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* --- Floating-point environment (the calling thread) ------------------------------------
 *
 * Subnormal numbers (|x| < 2.2e-308) take a slow path in x86 floating-point units: each
 * operation on one costs tens to a hundred cycles. Diffusion tails of a field that is zero far
 * from its initial patch decay into them: Gray-Scott's ex5adj set-up at 512^2 ran its forward
 * sweep 1.64x slower than with them flushed (6.87 against 4.18 ms per step, 2026-11-28).
 * rw_fp_flush_subnormals(1) sets flush-to-zero and denormals-are-zero in the calling thread's
 * control register (x86-64 MXCSR FTZ + DAZ; aarch64 FPCR FZ): subnormal results become 0 and
 * subnormal inputs read as 0. Results change only where a subnormal would have appeared
 * (below 2.2e-308 absolute), and the run is still deterministic: a checkpointed gradient
 * equals the store-everything one bit for bit under the same setting. Off by default (the
 * IEEE behaviour every peer uses by default, PETSc included). Threads started afterwards by
 * other libraries (BLAS) keep their own setting. Returns RW_ERR_NOT_IMPLEMENTED on other
 * architectures. Not collective: call it on every rank. */
int rw_fp_flush_subnormals(int on);
/* 1 when the calling thread flushes subnormals (rw_fp_flush_subnormals), else 0. */
int rw_fp_subnormals_flushed(void);

/* --- Counting allocator (process-wide) -------------------------------------------- */

/* Allocates `bytes` (zeroed) and counts them. Returns RW_ERR_MEM with a message naming
 * `what` on failure. Not collective. */
int rw_calloc(size_t count, size_t size, const char *what, void *out_ptr);

/* rw_calloc for a block that is written whole whenever it is used (a checkpoint slot): from
 * 2 MiB up it gets a mapping of its own marked for transparent huge pages, one page fault per
 * 2 MiB instead of 512 when the timed sweeps first write it. Other blocks keep calloc's 4 KiB
 * pages, which a block touched only in part does not fill. Counted and freed as rw_calloc's. */
int rw_calloc_whole(size_t count, size_t size, const char *what, void *out_ptr);

/* n blocks of count x size bytes for rw_calloc_whole's use (ptrs[0 .. n), each freed with
 * rw_free on its own). Blocks under 2 MiB that come to 2 MiB or more together share one mapping
 * marked for huge pages, so that a store of many small slots (a trajectory of a small state)
 * takes one page fault per 2 MiB too; the mapping goes back when its last block is freed.
 * Otherwise each is rw_calloc_whole's. Counted as n blocks; on failure none is left. */
int rw_calloc_whole_many(size_t n, size_t count, size_t size, const char *what, void **ptrs);

/* Frees memory from rw_calloc and sets *ptr to NULL; accepts NULL. */
void rw_free(void *ptr_to_ptr);

/* Bytes currently allocated through rw_calloc, and the peak since the caller last called
 * rw_mem_reset_peak (process-wide; the adjoint driver measures its own runs separately and
 * does not reset it). */
size_t rw_mem_current(void);
size_t rw_mem_peak(void);
void rw_mem_reset_peak(void);

/* Test hook: the n-th rw_calloc from now fails (n >= 1); 0 disables. */
void rw_mem_fail_after(long n);

/* Peak resident set size of this process in bytes (from getrusage), 0 if unknown. */
size_t rw_peak_rss(void);

/* The memory a node can still give, in bytes: MemAvailable (/proc/meminfo), or less where the
 * process's cgroup (v2) has a limit (memory.max less memory.current); 0 if unknown. */
size_t rw_mem_available(void);

/* Whether `bytes` more on this rank fit, with every rank of comm on the same node taking its
 * own share at once, in the memory the node has available (rw_mem_available). Linux lends
 * memory it does not have (an allocation succeeds, and the process is killed when it touches
 * it), so a large preallocation asks first: RW_ERR_BUDGET with a message naming `what` and
 * `fix` (what to change) and the sizes when it does not fit, the same answer on every rank; 0
 * when it fits or the memory is unknown. Collective on comm. */
int rw_mem_check_available(MPI_Comm comm, size_t bytes, const char *what, const char *fix);

/* Monotonic wall-clock seconds. */
double rw_wtime(void);

/* FNV-1a, 64 bits (Fowler, Noll & Vo): folds n bytes into the hash h (start from
 * RW_FNV1A_INIT). An identity and integrity stamp, not a security hash. Not collective. */
#define RW_FNV1A_INIT 14695981039346656037ULL
uint64_t rw_fnv1a(uint64_t h, const void *data, size_t n);

/* Agrees on a failure across the ranks of `comm`: returns 0 on every rank when `ierr` is 0
 * on every rank; otherwise every rank returns the code of the lowest failing rank, and the
 * other ranks take over its message ("on rank r: ..."), so whichever rank reports the
 * error reports the real cause. Collective. */
int rw_error_agree(MPI_Comm comm, int ierr);

/* One process-wide lock around HDF5 calls: the HDF5 library Debian ships is not
 * thread-safe, and the checkpoint store's I/O thread calls it while the solver runs. Code
 * that may call HDF5 while a disk store is open (the driver's monitor call, which may write
 * output) takes it. Not collective. */
void rw_hdf5_lock(void);
void rw_hdf5_unlock(void);
/* Whether the calling thread holds the HDF5 lock (for checks of the lock discipline). */
int rw_hdf5_lock_held(void);

/* An HDF5 file failed to close (it could not write its metadata: a full disk). HDF5 1.10
 * leaves such a file half closed, and its own clean-up in MPI_Finalize closes it again and
 * crashes (SIGSEGV in H5F__close_cb), so once this is marked the apps end with _exit instead
 * of MPI_Finalize. Not collective. */
void rw_hdf5_mark_broken(void);
int rw_hdf5_broken(void);

/* Reserves real blocks for `bytes` bytes of the open file `fd` from offset `from`, without
 * changing its size (fallocate with FALLOC_FL_KEEP_SIZE), so writes there cannot fail for
 * want of space. Returns 0, or the errno: ENOSPC (or EDQUOT, EFBIG) when there is no room,
 * EOPNOTSUPP where the file system (or the platform) cannot reserve. Not collective. */
int rw_file_reserve(int fd, int64_t from, int64_t bytes);

#ifdef __cplusplus
}
#endif
#endif
