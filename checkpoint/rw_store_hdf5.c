/* HDF5 checkpoint store: one file per rank, each slot a row of a chunked dataset with a
 * Fletcher32 checksum.
 *
 * Why one file per rank (and not one shared file with collective MPI-IO): every rank runs
 * the same schedule, so nothing needs to be coordinated between ranks but the error
 * status; independent POSIX files (HDF5's sec2 driver) let each rank write as fast as its
 * disk allows without collective synchronisation, keep working on node-local scratch disks,
 * and turn a full disk into an error returned by H5Dwrite that the store can report and
 * recover from (HDF5 1.10 over MPI-IO crashes on it at close). Errors are still agreed
 * across ranks at every call (rw_error_agree), so all ranks stop together.
 *
 * File layout (h5dump reads it; tools/rewind_ckpt.py prints it):
 *   /            attributes format = "rewind-checkpoint", version, run_id, contents, rank,
 *                nranks, nvec, local_length, slots, snapshot_bytes
 *   /snapshots   double [slots][nvec][nchunk * cn]: each vector in nchunk chunks of cn
 *                values (2^26 at most; the last one zero-padded past local_length), Fletcher32
 *   /step        int64 [slots], -1 for an empty slot, Fletcher32
 *   /time, /dt   double [slots]: time of the state and size of the step starting there
 * Snapshot chunks are written and read directly (H5Dwrite_chunk / H5Dread_chunk) with the
 * Fletcher32 checksum computed here, bit for bit what HDF5's filter stores, so every HDF5
 * reader verifies them while the store avoids the filter pipeline's extra copies (HDF5's own
 * Fletcher32 runs at about 100 MB/s here; this one at about 6 GB/s). Every write goes to the
 * file when the call returns (an I/O error shows at the call that caused it), and the file is
 * flushed after each snapshot so that a
 * killed run leaves consistent checkpoints behind. */
#define _XOPEN_SOURCE 700
#include "rw_store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

enum { RW_H5_WRITE = 0, RW_H5_READ = 1, RW_H5_FREE = 2 };
enum { RW_H5_EMPTY = 0, RW_H5_PENDING = 1, RW_H5_READY = 2, RW_H5_FAILED = 3 };
#define RW_H5_QCAP 8

typedef struct {
  int type, slot, buf;
  rw_snapshot_tag tag; /* WRITE: the tag; READ: the expected step; FREE: step -1 */
} rw_h5job;

typedef struct {
  MPI_Comm comm;
  int rank, nranks, nvec;
  size_t snapshot_bytes;
  char path[4200];
  char dir[4096];
  hid_t file, snap, step, time, dt;
  hsize_t nloc;   /* local length */
  hsize_t cn;     /* values per chunk; a vector is nchunk chunks (the last one zero-padded) */
  hsize_t nchunk; /* chunks per vector: the dataset's last dimension is nchunk * cn */
  size_t stride;  /* bytes between chunks in a staging buffer: cn * 8 + checksum, aligned */
  int keep, created;
  /* fault injection (I/O thread) */
  char fault[16];
  long fault_after, nwritten;
  /* the I/O thread and what it shares with the caller, under mu */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int thread_started, sync_made, quit, busy;
  rw_h5job q[RW_H5_QCAP];
  int qhead, nq;
  char *wbuf[2], *rbuf; /* staging buffers, 4 KiB aligned, in wmem */
  char *wmem;
  int wbusy[2];
  int rstate, rslot;
  int64_t rstep;
  long prefetch_hits;
  int err; /* first asynchronous write error */
  char errmsg[2048], rmsg[2048];
  double io_write_time, io_read_time;
} rw_h5store;

#define H5CHK(expr, ...)                                                                           \
  do {                                                                                             \
    if ((expr) < 0) {                                                                              \
      ierr = RW_ERROR(RW_ERR_IO, __VA_ARGS__);                                                     \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

/* Free bytes on the file system of `dir` (-1 when unknown). */
static double rw_free_bytes(const char *dir)
{
  struct statvfs sv;
  if (statvfs(dir, &sv) != 0) return -1.0;
  return (double)sv.f_bavail * (double)sv.f_frsize;
}

/* A chunked, Fletcher32-checksummed dataset with no chunk cache. */
static hid_t rw_h5_dataset(hid_t file, const char *name, hid_t type, int rank, const hsize_t *dims,
                           const hsize_t *chunk, const void *fill)
{
  hid_t space = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE),
        dapl = H5Pcreate(H5P_DATASET_ACCESS), d = -1;
  if (space >= 0 && dcpl >= 0 && dapl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 &&
      H5Pset_fletcher32(dcpl) >= 0 &&
      H5Pset_fill_time(dcpl, fill ? H5D_FILL_TIME_IFSET : H5D_FILL_TIME_NEVER) >= 0 &&
      (!fill || H5Pset_fill_value(dcpl, type, fill) >= 0) &&
      H5Pset_chunk_cache(dapl, 0, 0, 1.0) >= 0)
    d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, dapl);
  if (space >= 0) H5Sclose(space);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (dapl >= 0) H5Pclose(dapl);
  return d;
}

static int rw_h5_attr(hid_t obj, const char *name, hid_t type, const void *v)
{
  hid_t space = H5Screate(H5S_SCALAR), a = -1;
  int ok = 0;
  if (space >= 0) a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0) ok = H5Awrite(a, type, v) >= 0;
  if (a >= 0) H5Aclose(a);
  if (space >= 0) H5Sclose(space);
  return ok ? 0 : -1;
}

static int rw_h5_attr_str(hid_t obj, const char *name, const char *v)
{
  hid_t t = H5Tcopy(H5T_C_S1);
  int r = -1;
  if (t >= 0 && H5Tset_size(t, strlen(v) + 1) >= 0) r = rw_h5_attr(obj, name, t, v);
  if (t >= 0) H5Tclose(t);
  return r;
}

/* Writes (or reads, when `read`) element `slot` of a 1-D dataset. */
static herr_t rw_h5_elem(hid_t d, hid_t type, int slot, void *v, int read)
{
  hsize_t start = (hsize_t)slot, one = 1;
  hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &one, NULL);
  herr_t r = -1;
  if (fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &one, NULL) >= 0)
    r = read ? H5Dread(d, type, ms, fs, H5P_DEFAULT, v) : H5Dwrite(d, type, ms, fs, H5P_DEFAULT, v);
  if (fs >= 0) H5Sclose(fs);
  if (ms >= 0) H5Sclose(ms);
  return r;
}

/* The checksum HDF5's Fletcher32 filter keeps after each chunk (see rw_store.h). Fletcher's
 * checksum over big-endian 16-bit words, folded back to 16 bits (end-around carry) after
 * every 360 words, which keeps the 32-bit sums from overflowing. Within a block the two sums
 * are s1 + S and s2 + 360 s1 + W with S = sum w_i and W = sum (361 - i) w_i: both loops
 * vectorise, which makes this several times faster than a word-at-a-time loop. */
uint32_t rw_checksum_fletcher32(const void *data, size_t len)
{
  const uint8_t *p = data;
  size_t words = len / 2;
  uint32_t s1 = 0, s2 = 0;
  while (words) {
    uint32_t n = words > 360 ? 360 : (uint32_t)words, S = 0, W = 0;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t w = ((uint32_t)p[2 * i] << 8) | p[2 * i + 1];
      S += w;
      W += (n - i) * w;
    }
    s2 += n * s1 + W;
    s1 += S;
    p += 2 * (size_t)n;
    words -= n;
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
  }
  if (len % 2) {
    s1 += (uint32_t)p[0] << 8;
    s2 += s1;
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
  }
  s1 = (s1 & 0xffff) + (s1 >> 16);
  s2 = (s2 & 0xffff) + (s2 >> 16);
  return (s2 << 16) | s1;
}

/* Writes (read = 0) or reads chunk c of vector k of a slot directly, bypassing HDF5's filter
 * pipeline: the chunk is the cn values followed by their Fletcher32 checksum (4 bytes, little
 * endian), exactly what the filter would have stored, so h5dump and any HDF5 reader verify
 * it. A read checks the checksum here. */
static int rw_h5_chunk(rw_h5store *h, int slot, int k, hsize_t c, char *buf, int read)
{
  hsize_t off[3] = {(hsize_t)slot, (hsize_t)k, c * h->cn};
  size_t nb = (size_t)h->cn * sizeof(double);
  if (!read) {
    uint32_t f = rw_checksum_fletcher32(buf, nb);
    for (int i = 0; i < 4; i++)
      buf[nb + (size_t)i] = (char)((f >> (8 * i)) & 0xff);
    return H5Dwrite_chunk(h->snap, H5P_DEFAULT, 0, off, nb + 4, buf) < 0 ? -1 : 0;
  }
  uint32_t mask = 0;
  hsize_t stored = 0;
  if (H5Dget_chunk_storage_size(h->snap, off, &stored) < 0 || stored != nb + 4) return -1;
  if (H5Dread_chunk(h->snap, H5P_DEFAULT, off, &mask, buf) < 0 || mask != 0) return -1;
  uint32_t f = 0;
  for (int i = 0; i < 4; i++)
    f |= (uint32_t)(unsigned char)buf[nb + (size_t)i] << (8 * i);
  return f == rw_checksum_fletcher32(buf, nb) ? 0 : -1;
}

/* Reads or writes every chunk of a snapshot from or into a staging buffer. */
static int rw_h5_snapshot(rw_h5store *h, int slot, char *buf, int read)
{
  if (h->nloc == 0) return 0;
  for (int k = 0; k < h->nvec; k++)
    for (hsize_t c = 0; c < h->nchunk; c++)
      if (rw_h5_chunk(h, slot, k, c, buf + ((size_t)k * h->nchunk + c) * h->stride, read))
        return -1;
  return 0;
}

/* Damages what the last write put on disk (see rw_store_inject_fault). I/O thread. */
static int rw_h5_fault(rw_h5store *h, int slot)
{
  int ierr = 0;
  if (!strcmp(h->fault, "fill")) {
    char fill[4200];
    snprintf(fill, sizeof fill, "%s/rewind-fault-fill", h->dir);
    struct statvfs sv;
    RW_CHECK(statvfs(h->dir, &sv) == 0 && (double)sv.f_blocks * sv.f_frsize < 4e9, RW_ERR_ARG,
             "fault injection 'fill' refuses to fill '%s': not a small (test) file system", h->dir);
    int fd = open(fill, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    RW_CHECK(fd >= 0, RW_ERR_IO, "fault injection: cannot create '%s'", fill);
    static char block[65536];
    while (write(fd, block, sizeof block) > 0) {
    }
    close(fd);
    return 0;
  }
  unsigned filter_mask = 0;
  haddr_t addr = 0;
  hsize_t size = 0, coord[3] = {(hsize_t)slot, 0, 0};
  RW_CHECK(H5Dget_chunk_info_by_coord(h->snap, coord, &filter_mask, &addr, &size) >= 0 && size > 0,
           RW_ERR_IO, "fault injection: cannot locate slot %d in '%s'", slot, h->path);
  off_t at = (off_t)(addr + size / 2);
  if (!strcmp(h->fault, "truncate")) {
    RW_CHECK(truncate(h->path, at) == 0, RW_ERR_IO, "fault injection: truncate '%s': %s", h->path,
             strerror(errno));
    return 0;
  }
  int fd = open(h->path, O_RDWR);
  RW_CHECK(fd >= 0, RW_ERR_IO, "fault injection: cannot open '%s'", h->path);
  unsigned char b = 0;
  if (pread(fd, &b, 1, at) != 1) ierr = RW_ERROR(RW_ERR_IO, "fault injection: read failed");
  b ^= 0x5a;
  if (!ierr && pwrite(fd, &b, 1, at) != 1)
    ierr = RW_ERROR(RW_ERR_IO, "fault injection: write failed");
  close(fd);
  return ierr;
}

/* Writes one snapshot from a staging buffer (nvec vectors of nloc values, one after the
 * other), its tag, and flushes. I/O thread (under the HDF5 lock). */
static int rw_h5_write_slot(rw_h5store *h, int slot, const rw_snapshot_tag *tag, char *buf)
{
  int ierr = 0;
  int64_t step = tag->step;
  double t = tag->t, dt = tag->h;
  H5CHK(rw_h5_snapshot(h, slot, buf, 0), "write failed");
  H5CHK(rw_h5_elem(h->step, H5T_NATIVE_INT64, slot, &step, 0), "write failed");
  H5CHK(rw_h5_elem(h->time, H5T_NATIVE_DOUBLE, slot, &t, 0), "write failed");
  H5CHK(rw_h5_elem(h->dt, H5T_NATIVE_DOUBLE, slot, &dt, 0), "write failed");
  H5CHK(H5Fflush(h->file, H5F_SCOPE_LOCAL), "flush failed");
  h->nwritten++;
  if (h->fault[0] && h->nwritten == h->fault_after) {
    RW_TRY(rw_h5_fault(h, slot));
    h->fault[0] = '\0';
  }
cleanup:
  if (ierr == RW_ERR_IO) {
    double avail = rw_free_bytes(h->dir);
    rw_error_clear();
    ierr = RW_ERROR(RW_ERR_IO,
                    "writing checkpoint step %lld (slot %d, %zu bytes) to '%s' failed%s; free "
                    "space in checkpoint_dir '%s' or lower checkpoint_disk",
                    (long long)step, slot, h->snapshot_bytes, h->path,
                    avail >= 0.0 && avail < (double)h->snapshot_bytes + 65536.0
                        ? ": the file system is full"
                        : "",
                    h->dir);
  }
  return ierr;
}

/* Reads one snapshot into a buffer and checks its tag. I/O thread (under the HDF5 lock). */
static int rw_h5_read_slot(rw_h5store *h, int slot, int64_t expect, char *buf)
{
  int ierr = 0;
  int64_t step = -2;
  H5CHK(rw_h5_snapshot(h, slot, buf, 1), "read failed");
  H5CHK(rw_h5_elem(h->step, H5T_NATIVE_INT64, slot, &step, 1), "read failed");
  RW_CHECK_GOTO(step == expect, RW_ERR_IO, "tag mismatch");
cleanup:
  if (ierr) {
    rw_error_clear();
    ierr = RW_ERROR(RW_ERR_IO,
                    "checkpoint file '%s' is damaged: slot %d (step %lld) %s; the file was "
                    "modified or truncated after it was written, or the disk is failing. No "
                    "gradient is computed from it",
                    h->path, slot, (long long)expect,
                    step == -2 ? "failed its Fletcher32 checksum or could not be read"
                               : "holds another step");
  }
  return ierr;
}

/* --- The I/O thread ----------------------------------------------------------------------
 * Write-behind: a put copies the snapshot into one of two staging buffers and queues the
 * write; the solver goes on while the thread writes (it waits only when both buffers are
 * still being written). Read-ahead: rw_store_prefetch queues the read of the snapshot the
 * backward sweep needs next into the read buffer; the get that asks for it finds it there.
 * Jobs run in the order they were queued, so a read queued after a write of the same slot
 * reads what was written. The thread makes every HDF5 call of the store during the solve,
 * under rw_hdf5_lock (the HDF5 library is not thread-safe; the driver takes the same lock
 * around its monitor, which may write output). It calls no MPI: errors are kept and
 * reported, agreed across ranks, at the next call of the main thread. Data are copied, never
 * transformed, so the result is bit for bit that of synchronous I/O. */

static void rw_h5_keep_error(rw_h5store *h, int code)
{
  if (h->err) return;
  h->err = code;
  snprintf(h->errmsg, sizeof h->errmsg, "%s", rw_error_message());
}

static void *rw_h5_worker(void *arg)
{
  rw_h5store *h = arg;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (!h->quit && h->nq == 0)
      pthread_cond_wait(&h->cv, &h->mu);
    if (h->nq == 0) break;
    rw_h5job job = h->q[h->qhead];
    h->qhead = (h->qhead + 1) % RW_H5_QCAP;
    h->nq--;
    h->busy = 1;
    pthread_mutex_unlock(&h->mu);
    int e = 0;
    rw_error_clear();
    rw_hdf5_lock();
    double t0 = rw_wtime();
    if (job.type == RW_H5_WRITE)
      e = rw_h5_write_slot(h, job.slot, &job.tag, h->wbuf[job.buf]);
    else if (job.type == RW_H5_READ)
      e = rw_h5_read_slot(h, job.slot, job.tag.step, h->rbuf);
    else if (rw_h5_elem(h->step, H5T_NATIVE_INT64, job.slot, &job.tag.step, 0) < 0)
      e = RW_ERROR(RW_ERR_IO, "marking checkpoint slot %d of '%s' free failed", job.slot, h->path);
    double dt = rw_wtime() - t0;
    rw_hdf5_unlock();
    pthread_mutex_lock(&h->mu);
    h->busy = 0;
    if (job.type == RW_H5_WRITE) {
      h->wbusy[job.buf] = 0;
      h->io_write_time += dt;
      if (e) rw_h5_keep_error(h, e);
    } else if (job.type == RW_H5_READ) {
      h->io_read_time += dt;
      h->rstate = e ? RW_H5_FAILED : RW_H5_READY;
      if (e) snprintf(h->rmsg, sizeof h->rmsg, "%s", rw_error_message());
    } else if (e) {
      rw_h5_keep_error(h, e);
    }
    pthread_cond_broadcast(&h->cv);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* Queues a job (caller holds h->mu); waits while the queue is full. */
static void rw_h5_enqueue(rw_h5store *h, int type, int slot, const rw_snapshot_tag *tag, int buf)
{
  while (h->nq == RW_H5_QCAP)
    pthread_cond_wait(&h->cv, &h->mu);
  rw_h5job *j = &h->q[(h->qhead + h->nq) % RW_H5_QCAP];
  j->type = type;
  j->slot = slot;
  j->tag = *tag;
  j->buf = buf;
  h->nq++;
  pthread_cond_broadcast(&h->cv);
}

/* The first asynchronous error as a Rewind error on this rank (0 when none), then agreed
 * across ranks. Caller does not hold h->mu. */
static int rw_h5_agree(rw_h5store *h, int ierr)
{
  if (!ierr) {
    pthread_mutex_lock(&h->mu);
    if (h->err) ierr = RW_ERROR(h->err, "%s", h->errmsg);
    pthread_mutex_unlock(&h->mu);
  }
  return rw_error_agree(h->comm, ierr);
}

/* Copies vector k between a staging buffer (chunk by chunk) and the vector's data. */
static void rw_h5_stage(rw_h5store *h, char *buf, int k, double *data, int to_vector)
{
  for (hsize_t c = 0; c < h->nchunk; c++) {
    hsize_t first = c * h->cn, n = h->nloc - first < h->cn ? h->nloc - first : h->cn;
    char *chunk = buf + ((size_t)k * h->nchunk + c) * h->stride;
    if (to_vector)
      memcpy(data + first, chunk, n * sizeof(double));
    else
      memcpy(chunk, data + first, n * sizeof(double));
  }
}

/* Drops the read buffer if it holds `slot` (waiting for a read in flight). Holds h->mu. */
static void rw_h5_forget_read(rw_h5store *h, int slot)
{
  while (h->rstate == RW_H5_PENDING && h->rslot == slot)
    pthread_cond_wait(&h->cv, &h->mu);
  if (h->rslot == slot) h->rstate = RW_H5_EMPTY;
}

static int rw_h5_put(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  rw_h5store *h = st->content;
  pthread_mutex_lock(&h->mu);
  rw_h5_forget_read(h, slot);
  while (h->wbusy[0] && h->wbusy[1])
    pthread_cond_wait(&h->cv, &h->mu);
  int b = h->wbusy[0] ? 1 : 0;
  h->wbusy[b] = 1; /* reserved: the worker does not touch it until it is queued */
  pthread_mutex_unlock(&h->mu);
  for (int k = 0; k < st->nvec; k++)
    rw_h5_stage(h, h->wbuf[b], k, rw_vec_data(v[k]), 0);
  pthread_mutex_lock(&h->mu);
  rw_h5_enqueue(h, RW_H5_WRITE, slot, tag, b);
  pthread_mutex_unlock(&h->mu);
  return rw_h5_agree(h, 0);
}

static int rw_h5_get(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  rw_h5store *h = st->content;
  int ierr = 0;
  pthread_mutex_lock(&h->mu);
  int hit = h->rslot == slot && h->rstep == tag->step &&
            (h->rstate == RW_H5_PENDING || h->rstate == RW_H5_READY);
  if (hit)
    h->prefetch_hits++;
  else {
    while (h->rstate == RW_H5_PENDING)
      pthread_cond_wait(&h->cv, &h->mu);
    h->rstate = RW_H5_PENDING;
    h->rslot = slot;
    h->rstep = tag->step;
    rw_h5_enqueue(h, RW_H5_READ, slot, tag, -1);
  }
  while (h->rstate == RW_H5_PENDING)
    pthread_cond_wait(&h->cv, &h->mu);
  if (h->rstate == RW_H5_READY) {
    for (int k = 0; k < st->nvec; k++)
      rw_h5_stage(h, h->rbuf, k, rw_vec_data(v[k]), 1);
  } else {
    ierr = RW_ERROR(RW_ERR_IO, "%s", h->rmsg);
  }
  h->rstate = RW_H5_EMPTY;
  pthread_mutex_unlock(&h->mu);
  return rw_h5_agree(h, ierr);
}

static int rw_h5_prefetch(rw_store st, int slot, int64_t step)
{
  rw_h5store *h = st->content;
  pthread_mutex_lock(&h->mu);
  int have = h->rslot == slot && h->rstep == step && h->rstate != RW_H5_EMPTY;
  if (!have && h->rstate != RW_H5_PENDING) {
    rw_snapshot_tag tg = {step, 0.0, 0.0};
    h->rstate = RW_H5_PENDING;
    h->rslot = slot;
    h->rstep = step;
    rw_h5_enqueue(h, RW_H5_READ, slot, &tg, -1);
  }
  pthread_mutex_unlock(&h->mu);
  return 0;
}

static int rw_h5_release(rw_store st, int slot)
{
  rw_h5store *h = st->content;
  rw_snapshot_tag none = {-1, 0.0, 0.0};
  pthread_mutex_lock(&h->mu);
  rw_h5_forget_read(h, slot);
  rw_h5_enqueue(h, RW_H5_FREE, slot, &none, -1);
  pthread_mutex_unlock(&h->mu);
  return rw_h5_agree(h, 0);
}

/* Waits until every queued job is done, then agrees on errors. Collective. */
static int rw_h5_sync(rw_store st)
{
  rw_h5store *h = st->content;
  pthread_mutex_lock(&h->mu);
  while (h->nq > 0 || h->busy)
    pthread_cond_wait(&h->cv, &h->mu);
  st->write_time = h->io_write_time;
  st->read_time = h->io_read_time;
  pthread_mutex_unlock(&h->mu);
  return rw_h5_agree(h, 0);
}

static int rw_h5_inject(rw_store st, const char *kind, long after)
{
  rw_h5store *h = st->content;
  RW_CHECK(!strcmp(kind, "flip") || !strcmp(kind, "truncate") || !strcmp(kind, "fill"), RW_ERR_ARG,
           "fault injection '%s': expected flip, truncate or fill", kind);
  RW_CHECK(after >= 1, RW_ERR_ARG, "fault injection: after = %ld must be >= 1", after);
  pthread_mutex_lock(&h->mu);
  snprintf(h->fault, sizeof h->fault, "%s", kind);
  h->fault_after = h->nwritten + after;
  pthread_mutex_unlock(&h->mu);
  return 0;
}

static void rw_h5_close(rw_h5store *h)
{
  hid_t *ids[] = {&h->snap, &h->step, &h->time, &h->dt};
  for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
    if (*ids[i] >= 0) {
      H5Dclose(*ids[i]);
      *ids[i] = -1;
    }
  if (h->file >= 0) H5Fclose(h->file);
  h->file = -1;
}

static void rw_h5_destroy(rw_store st)
{
  rw_h5store *h = st->content;
  if (!h) return;
  if (h->thread_started) {
    pthread_mutex_lock(&h->mu);
    h->quit = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
  }
  if (h->sync_made) {
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
  }
  rw_hdf5_lock();
  rw_h5_close(h);
  rw_hdf5_unlock();
  if (h->created && !h->keep) unlink(h->path);
  rw_free(&h->wmem);
  rw_free(&st->content);
}

/* Creates this rank's file and datasets (errors are agreed by the caller). */
static int rw_h5_open(rw_store st, const rw_store_hdf5_options *opt)
{
  rw_h5store *h = st->content;
  int ierr = 0;
  hid_t fapl = -1;
  struct stat sb;
  RW_CHECK(stat(opt->dir, &sb) == 0 && S_ISDIR(sb.st_mode), RW_ERR_IO,
           "checkpoint_dir '%s' does not exist or is not a directory; create it or set "
           "checkpoint_dir to a writable directory",
           opt->dir);
  RW_CHECK(access(opt->dir, W_OK) == 0, RW_ERR_IO, "checkpoint_dir '%s' is not writable (%s)",
           opt->dir, strerror(errno));
  RW_CHECK(access(h->path, F_OK) != 0, RW_ERR_IO,
           "checkpoint file '%s' already exists: a run with the same deck and decomposition "
           "stopped early and left it (restart from it with -restart_from %s, or remove it)",
           h->path, opt->dir);
  H5CHK(fapl = H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate failed");
  H5CHK(H5Pset_fapl_sec2(fapl), "H5Pset_fapl_sec2 failed");
  /* Large chunks on 4 KiB boundaries: whole file-system blocks per snapshot. */
  H5CHK(H5Pset_alignment(fapl, 65536, 4096), "H5Pset_alignment failed");
  h->file = H5Fcreate(h->path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  H5CHK(h->file, "cannot create checkpoint file '%s' in checkpoint_dir '%s' (%s)", h->path,
        opt->dir, strerror(errno));
  h->created = 1;
  hsize_t dims[3] = {(hsize_t)st->nslots, (hsize_t)st->nvec, h->nchunk * h->cn},
          chunk[3] = {1, 1, h->cn};
  hsize_t ns = (hsize_t)st->nslots;
  int64_t empty = -1;
  const char *what = "creating the checkpoint datasets failed";
  H5CHK(h->snap = rw_h5_dataset(h->file, "snapshots", H5T_NATIVE_DOUBLE, 3, dims, chunk, NULL),
        "%s", what);
  H5CHK(h->step = rw_h5_dataset(h->file, "step", H5T_NATIVE_INT64, 1, &ns, &ns, &empty), "%s",
        what);
  H5CHK(h->time = rw_h5_dataset(h->file, "time", H5T_NATIVE_DOUBLE, 1, &ns, &ns, NULL), "%s", what);
  H5CHK(h->dt = rw_h5_dataset(h->file, "dt", H5T_NATIVE_DOUBLE, 1, &ns, &ns, NULL), "%s", what);
  long long ll[6] = {1, h->rank, h->nranks, st->nvec, (long long)h->nloc, st->nslots};
  const char *names[6] = {"version", "rank", "nranks", "nvec", "local_length", "slots"};
  for (int i = 0; i < 6; i++)
    H5CHK(rw_h5_attr(h->file, names[i], H5T_NATIVE_LLONG, &ll[i]), "%s", what);
  unsigned long long sb_bytes = st->snapshot_bytes;
  H5CHK(rw_h5_attr(h->file, "snapshot_bytes", H5T_NATIVE_ULLONG, &sb_bytes), "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "format", "rewind-checkpoint"), "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "run_id", opt->run_id), "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "contents", opt->contents ? opt->contents : "state"), "%s", what);
  H5CHK(H5Fflush(h->file, H5F_SCOPE_LOCAL), "%s", what);
cleanup:
  if (fapl >= 0) H5Pclose(fapl);
  return ierr;
}

/* Checks the free space for every rank's slots (see rw_store_create_hdf5). */
static int rw_h5_space(rw_store st, const char *dir)
{
  rw_h5store *h = st->content;
  struct statvfs sv;
  unsigned long fs[2] = {0, 0}, fsr[2];
  double avail = -1.0;
  if (statvfs(dir, &sv) == 0) {
    avail = (double)sv.f_bavail * (double)sv.f_frsize;
    fs[0] = sv.f_fsid;
    fs[1] = ~(unsigned long)sv.f_fsid;
  }
  /* HDF5 adds its metadata and 4 bytes of checksum per chunk: 2 % + 1 MiB is ample. */
  double need = 1.02 * (double)st->nslots * (double)st->snapshot_bytes + 1048576.0, total = need;
  RW_CALL_MPI(MPI_Allreduce(fs, fsr, 2, MPI_UNSIGNED_LONG, MPI_MAX, h->comm));
  RW_CALL_MPI(MPI_Allreduce(&need, &total, 1, MPI_DOUBLE, MPI_SUM, h->comm));
  int shared = fsr[0] == fs[0] && ~fsr[1] == fs[0] && h->nranks > 1;
  double want = shared ? total : need;
  int ierr = 0;
  if (avail >= 0.0 && avail < want)
    ierr = RW_ERROR(RW_ERR_BUDGET,
                    "checkpoint_dir '%s' has %.0f bytes free, but %d disk checkpoint slots of %zu "
                    "bytes%s need about %.0f; lower checkpoint_disk or free space there",
                    dir, avail, st->nslots, st->snapshot_bytes,
                    shared ? " on every rank (one shared file system)" : "", want);
  return ierr;
}

/* Allocates the staging buffers (two for writes, one for reads, 4 KiB aligned, counted by
 * the allocator) and starts the I/O thread. */
static int rw_h5_start(rw_h5store *h)
{
  size_t each = (size_t)h->nvec * h->nchunk * h->stride;
  RW_CALL(rw_calloc(3 * each + 4096, 1, "checkpoint I/O buffers", &h->wmem));
  /* First touch now, not inside the time loop: one write per page maps the buffers. */
  for (size_t i = 0; i < 3 * each + 4096; i += 4096)
    ((volatile char *)h->wmem)[i] = 0;
  char *base = h->wmem + (4096 - (size_t)((uintptr_t)h->wmem % 4096)) % 4096;
  h->wbuf[0] = base;
  h->wbuf[1] = (base + each);
  h->rbuf = (base + 2 * each);
  RW_CHECK(pthread_mutex_init(&h->mu, NULL) == 0, RW_ERR_INTERNAL, "pthread_mutex_init failed");
  if (pthread_cond_init(&h->cv, NULL) != 0) {
    pthread_mutex_destroy(&h->mu);
    return RW_ERROR(RW_ERR_INTERNAL, "pthread_cond_init failed");
  }
  h->sync_made = 1;
  RW_CHECK(pthread_create(&h->thread, NULL, rw_h5_worker, h) == 0, RW_ERR_INTERNAL,
           "cannot start the checkpoint I/O thread");
  h->thread_started = 1;
  return 0;
}

/* Creates the HDF5 store (see rw_store.h). Collective. */
int rw_store_create_hdf5(N_Vector tmpl, int nvec, int slots, const rw_store_hdf5_options *opt,
                         rw_store *out)
{
  static const rw_store_ops ops = {rw_h5_put,      rw_h5_get,  rw_h5_release, rw_h5_inject,
                                   rw_h5_prefetch, rw_h5_sync, rw_h5_destroy};
  int ierr = 0;
  rw_store st = NULL;
  rw_h5store *h = NULL;
  RW_CHECK(tmpl && out && opt && opt->dir && opt->run_id && nvec >= 1 && slots >= 1, RW_ERR_ARG,
           "rw_store_create_hdf5: need a template, options with dir and run_id, nvec >= 1 and "
           "slots >= 1 (got %d, %d)",
           nvec, slots);
  *out = NULL;
  size_t idlen = strlen(opt->run_id);
  RW_CHECK(idlen >= 1 && idlen <= 64 &&
               strspn(opt->run_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789_-") == idlen,
           RW_ERR_ARG, "checkpoint run id '%s': 1 to 64 characters from [0-9a-zA-Z_-]",
           opt->run_id);
  RW_CHECK(strlen(opt->dir) < 4000, RW_ERR_ARG, "checkpoint_dir is too long (%zu characters)",
           strlen(opt->dir));
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  RW_CALL(rw_store_alloc("hdf5", &ops, slots, nvec, (size_t)nvec * rw_vec_bytes(tmpl), &st));
  RW_TRY(rw_calloc(1, sizeof *h, "HDF5 checkpoint store", &h));
  st->content = h;
  h->file = h->snap = h->step = h->time = h->dt = -1;
  h->comm = NV_COMM_P(tmpl);
  h->keep = opt->keep;
  h->nloc = (hsize_t)rw_vec_local_length(tmpl);
  /* Chunks of at most 2^26 values (512 MiB; HDF5 caps a chunk at 4 GiB), all of one size. */
  hsize_t cmax = (hsize_t)1 << 26, nl = h->nloc > 0 ? h->nloc : 1;
  h->nchunk = (nl + cmax - 1) / cmax;
  h->cn = (nl + h->nchunk - 1) / h->nchunk;
  h->stride = ((size_t)h->cn * sizeof(double) + 4 + 4095) / 4096 * 4096;
  MPI_Comm_rank(h->comm, &h->rank);
  MPI_Comm_size(h->comm, &h->nranks);
  snprintf(h->dir, sizeof h->dir, "%s", opt->dir);
  snprintf(h->path, sizeof h->path, "%s/rewind-ckpt-%s.%d-of-%d.h5", opt->dir, opt->run_id, h->rank,
           h->nranks);
  st->path = h->path;
  h->nvec = nvec;
  h->snapshot_bytes = st->snapshot_bytes;
  h->rslot = -1;
  rw_hdf5_lock();
  ierr = rw_h5_open(st, opt);
  rw_hdf5_unlock();
  if (!ierr) ierr = rw_h5_start(h);
  ierr = rw_error_agree(h->comm, ierr);
  if (!ierr) ierr = rw_error_agree(h->comm, rw_h5_space(st, opt->dir));
  if (ierr) goto cleanup;
  *out = st;
  return 0;
cleanup:
  if (h) h->keep = 0; /* a store that never held a snapshot leaves nothing behind */
  rw_store_destroy(&st);
  return ierr;
}
