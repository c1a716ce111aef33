/* Checkpoint stores: slots that hold snapshots (a fixed number of N_Vectors each, tagged
 * with the step, time and step size of the state), preallocated from a byte budget so that
 * nothing is allocated inside the time loop. A store knows nothing of solvers or schedules;
 * the driver decides what a snapshot holds (the state, or the stages too) and picks the
 * store of an action's storage level. Two implementations share one ops table:
 *
 *  - RAM (rw_store_create_ram): vectors from the counting allocator (on a device run, device
 *    memory: they are shaped like the state). Not collective.
 *  - Host (rw_store_create_host): host copies of the state, page-locked on a GPU; the middle
 *    tier between device memory and disk. Not collective.
 *  - HDF5 files (rw_store_create_hdf5): one file per rank in a checkpoint directory, each
 *    slot a row of a chunked dataset with a Fletcher32 checksum, written behind the
 *    computation and read ahead by an I/O thread. Every call is collective
 *    over the vectors' communicator (all ranks run the same schedule, so they call it in
 *    the same order): a failure on one rank (disk full, a corrupted or truncated file) is
 *    returned on every rank, with the failing rank's message.
 *
 * Reading back a snapshot checks everything that can be checked: the checksum of the data,
 * the tag against the one the driver expects. A store never returns data it cannot vouch
 * for. */
#ifndef REWIND_RW_STORE_H
#define REWIND_RW_STORE_H

#include "rw_vector.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_store_s *rw_store;

/* What identifies a snapshot: the index of the state, its time and the size of the step that
 * starts from it (0 when not known; for a snapshot an adaptive run's first sweep takes, the
 * size its step-size controller proposes from there, which a rejected trial may shrink: what
 * a restart from it starts the controller with), and q, the running cost this rank had
 * accumulated when the forward sweep reached the state (what a restarted run resumes its sum
 * from). */
typedef struct {
  int64_t step;
  double t, h, q;
} rw_snapshot_tag;

/* Slots that fit in `budget_bytes` for snapshots of `snapshot_bytes` each. A budget smaller
 * than one snapshot is RW_ERR_BUDGET with a message naming both sizes and `what` (e.g.
 * "checkpoint_ram"). Not collective. */
int rw_store_slots_for_budget(size_t budget_bytes, size_t snapshot_bytes, int *slots);
int rw_store_slots_for_budget_named(const char *what, size_t budget_bytes, size_t snapshot_bytes,
                                    int *slots);

/* A RAM store with `slots` slots of `nvec` vectors shaped like `tmpl`, all allocated now.
 * Not collective. */
int rw_store_create_ram(N_Vector tmpl, int nvec, int slots, rw_store *out);

/* A host store with `slots` slots of `nvec` vectors shaped like `tmpl`, all allocated now: the
 * middle tier of a three-tier device run. Its slots are this rank's entries in host memory,
 * page-locked on a GPU (rw_device_host_alloc) so that the copies from and to the device run at
 * the link's speed; for CPU vectors, plain host arrays. For device vectors the copies are
 * asynchronous (rw_device_copy_start) through two staging snapshots in device memory (which
 * this store allocates): a put returns once its snapshot is copied on the device, its transfer
 * to the host overlapping what follows; rw_store_prefetch starts a slot's transfer back, and
 * the get that follows waits only for what is still in flight; rw_store_sync waits for every
 * transfer. Not collective. */
int rw_store_create_host(N_Vector tmpl, int nvec, int slots, rw_store *out);
/* The same with the copies synchronous on a device too (no staging snapshots, no read-ahead):
 * what the asynchronous store is measured against. Not collective. */
int rw_store_create_host_sync(N_Vector tmpl, int nvec, int slots, rw_store *out);
/* How many gets of a host store were served by a prefetch, and by the device staging copy of
 * the last put (the slot it went to, before the next put); 0 for other stores. */
long rw_store_host_prefetch_hits(rw_store st);
long rw_store_host_staged_hits(rw_store st);

/* Options of the HDF5 file store. */
typedef struct {
  const char *dir;      /* checkpoint directory; must exist and be writable */
  const char *run_id;   /* identity of the run (hash of deck and decomposition), written to
                           every file; [0-9a-zA-Z_-] only, at most 64 characters */
  const char *contents; /* what a snapshot holds, e.g. "state" or "stages"; an attribute */
  int keep;             /* 1: leave the files at destroy (0 removes them) */
  /* Written to every file and compared on restart, so that a refusal says what differs:
   * the deck (one "key: value" per line), the decomposition (free text, e.g. "2 ranks, local
   * lengths 512 512") and the driver's own record (free text it reads back on restart, e.g.
   * the slot counts and disk costs its schedule was built from). Each may be NULL. */
  const char *deck, *decomposition, *info;
  /* 1: open the files an earlier run with the same run_id left in dir (restart) instead of
   * creating them; their slots keep their snapshots (see rw_store_hdf5_check_slot). */
  int restart;
  /* Device vectors: 1 gives the store a device staging snapshot (nvec vectors of device
   * memory), so a put copies the vectors into it on the device and queues its transfer to
   * page-locked memory (rw_device_copy_start) instead of copying to the host synchronously;
   * the transfer is waited for and the write queued at the store's next operation (any op,
   * destroy included), so the link's transfer overlaps the steps after the put. 0: the put's
   * copy is synchronous. Ignored for CPU vectors. */
  int device_staging;
} rw_store_hdf5_options;

/* An HDF5 store with `slots` slots of `nvec` vectors shaped like `tmpl`. Each rank creates
 * its own file <dir>/rewind-ckpt-<run_id>.<rank>-of-<nranks>.h5 (created exclusively: a file
 * left there by an earlier run with the same identity is an error that says how to restart
 * or remove it). Before returning, checks that the directory exists and is writable and that
 * its file system has room for every slot (on a file system shared by all ranks, for every
 * rank's slots), so an impossible disk budget fails before the first step.
 * With opt->restart the files must exist: the store opens them, checks that they are Rewind
 * checkpoint files of this format version, run_id, rank count, vector length and contents,
 * and takes its slot count and the tags of its full slots from them. Files of another run in
 * the directory are refused with a message that names what differs (deck keys and values,
 * decomposition, format version). Collective over the communicator of `tmpl`. */
int rw_store_create_hdf5(N_Vector tmpl, int nvec, int slots, const rw_store_hdf5_options *opt,
                         rw_store *out);

/* A store opened with opt->restart keeps its files when it is destroyed, also when the
 * restarted run fails (they are the earlier run's work, and another restart can use them),
 * until the run tells it that it finished: then they go as opt->keep says. No-op for other
 * stores. Not collective. */
void rw_store_hdf5_finished(rw_store st);

/* Keeps the store's files when it is destroyed (a run that failed on an I/O error after it
 * wrote checkpoints: another run restarts from them). No-op for other stores. Not
 * collective. */
void rw_store_hdf5_keep(rw_store st);

/* Restart: the record the run that wrote the files gave as `info` ("" when none), and the
 * slot count of the files (the earlier run's disk slots). Not collective. */
const char *rw_store_hdf5_info(rw_store st);

/* An adaptive run's time record t[0..n] (the accepted times up to step n, which its backward
 * sweep replays), kept in the files beside the snapshots: written before each disk snapshot of
 * the first sweep, so a restart can take up the record of its resume point. Writes the entries
 * past those already written (or, after rw_store_hdf5_get_times, verified), and flushes. A
 * failed write (a full disk) is RW_ERR_IO naming the file. Collective, errors agreed. */
int rw_store_hdf5_put_times(rw_store st, const double *t, int64_t n);
/* Restart: reads t[0..n] from this rank's file; *ok = 0 when the file has fewer, has no
 * record (a file of a fixed-step run, or of an earlier version), or a chunk of it fails its
 * checksum (a write the crash tore). Later puts write past n. Not collective. */
int rw_store_hdf5_get_times(rw_store st, int64_t n, double *t, int *ok);
/* Restart: 1 when this rank's file has a time record (files of Rewind before 2026-12-02 have
 * none), else 0. Not collective. */
int rw_store_hdf5_has_times(rw_store st);
/* Restart: cuts the record to t[0..n] (n = -1: empty), so that the restarted run writes on
 * from there into chunks that hold no later (possibly damaged) times. Collective, errors
 * agreed. */
int rw_store_hdf5_trim_times(rw_store st, int64_t n);

/* Restart: *ok = 1 when slot `slot` of this rank's file holds a complete snapshot of `step`:
 * its tag says so and the checksums of its chunks, read from the file, are the ones recorded
 * with the tag when it was written (so a slot whose checksums were being overwritten when the
 * run was killed does not pass). With `full` the data are read and checked against those
 * checksums as well (a torn write that reached the data but not the checksums does not pass
 * either); without, only the checksums are read (cheap: a few bytes per chunk). Must not be
 * called while a read is prefetched. Not collective. */
int rw_store_hdf5_check_slot(rw_store st, int slot, int64_t step, int full, int *ok);

/* Closes the store (HDF5: closes and, unless `keep`, removes its file). Accepts NULL or
 * *st == NULL and sets *st to NULL. Not collective. */
int rw_store_destroy(rw_store *st);

/* Copies v[0..nvec-1] into empty slot `slot`, tagged with *tag. Writing a full slot is
 * RW_ERR_INTERNAL (the schedule must free it first). RAM: not collective; HDF5: collective,
 * a write error on any rank (RW_ERR_IO) is returned on every rank. */
int rw_store_put(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v);
/* Copies full slot `slot` into v[0..nvec-1]; *tag (may be NULL) receives its tag. Reading
 * an empty slot is RW_ERR_INTERNAL; a snapshot whose checksum or tag does not match what was
 * written is RW_ERR_IO naming the file, slot and step. Collectivity as rw_store_put. */
int rw_store_get(rw_store st, int slot, rw_snapshot_tag *tag, N_Vector *v);
/* The slot's own vectors instead of a copy, where the store keeps them as vectors (RAM): on
 * success *viewed is 1, v[0..nvec-1] are the slot's vectors, to be read only and only until the
 * slot's release or the store's destruction, and the read is counted as rw_store_get counts it;
 * *tag (may be NULL) receives the slot's tag. A store without such vectors (HDF5, host) sets
 * *viewed to 0 and leaves v alone: the caller then copies with rw_store_get. Reading an empty
 * slot is RW_ERR_INTERNAL. Not collective. */
int rw_store_view(rw_store st, int slot, rw_snapshot_tag *tag, N_Vector *v, int *viewed);
/* Empties the slot. Collectivity as rw_store_put. */
int rw_store_release(rw_store st, int slot);

/* Read-ahead hint: the next rw_store_get will probably ask for full slot `slot`, which holds
 * `step`; the HDF5 store starts reading it in the background (the get then waits only for
 * what is left). RAM: nothing to do. Not collective. */
int rw_store_prefetch(rw_store st, int slot, int64_t step);
/* Waits until every write and read in flight is done and returns any error they met, agreed
 * across ranks (HDF5; RAM: nothing to do). The driver calls it before it reports results, so
 * an I/O error is never hidden by write-behind. Accepts NULL. Collectivity as
 * rw_store_put. */
int rw_store_sync(rw_store st);

/* The Fletcher32 checksum of `len` bytes exactly as HDF5's Fletcher32 filter computes and
 * stores it (the HDF5 store writes its chunks directly, checksum included, so any HDF5 reader
 * verifies them). Not collective. */
uint32_t rw_checksum_fletcher32(const void *data, size_t len);

/* "ram", "host" or "hdf5". */
const char *rw_store_kind(rw_store st);
int rw_store_num_slots(rw_store st);
/* The step slot `slot` holds, -1 when it is empty or out of range. Not collective. */
int64_t rw_store_slot_step(rw_store st, int slot);
/* Bytes this rank holds for snapshots when every slot is full. */
size_t rw_store_bytes(rw_store st);
size_t rw_store_snapshot_bytes(rw_store st);
/* Most slots full at once since creation. */
int rw_store_peak_used(rw_store st);
/* Snapshots written and read back since creation. */
long rw_store_writes(rw_store st);
long rw_store_reads(rw_store st);
/* Seconds spent in writes and reads on this rank (HDF5: the file I/O; RAM: the copies). */
double rw_store_write_time(rw_store st);
double rw_store_read_time(rw_store st);
/* Path of this rank's file (HDF5), or NULL. */
const char *rw_store_path(rw_store st);

/* Fault injection for tests (after Lua's ltests: every error path gets run). After the
 * `after`-th successful write, the HDF5 store damages what it just wrote, as failing
 * hardware or another process would: "flip" flips one byte inside the snapshot's data on
 * disk, "truncate" truncates the file in the middle of it, "fill" (once that write is on
 * disk on every rank) has rank 0 fill the file system of the checkpoint directory with a file
 * named rewind-fault-fill (the test removes it; "fill:N" leaves N bytes of it free, so a test
 * can put the end of the room anywhere), "kill"
 * kills rank 0 with SIGKILL once that write is on disk on every rank (a crash or a lost
 * node; the other ranks block in their next collective until the MPI launcher ends them),
 * "term" sends SIGTERM to every rank after its write (a batch system ending the job),
 * "torn" flips a byte of the snapshot on rank 0 and then kills it (a write the crash
 * interrupted). The adjoint driver (rw_adjoint_solve, and so every app and every program that
 * uses it with a disk tier) sets it from the environment variable REWIND_FAULT_INJECT=kind@after
 * (e.g. flip@2, or fill@2:8192 for "fill:8192"): never set that variable outside tests.
 * Returns RW_ERR_ARG for an unknown kind or a RAM store. Not collective. */
int rw_store_inject_fault(rw_store st, const char *kind, long after);

#ifdef __cplusplus
}
#endif
#endif
