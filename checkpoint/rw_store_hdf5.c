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
 *   /            attributes format = "rewind-checkpoint", version (of this layout), run_id,
 *                contents, rank, nranks, nvec, local_length, slots, snapshot_bytes, and the
 *                texts deck, decomposition and info (see rw_store_hdf5_options)
 *   /snapshots   double [slots][nvec][nchunk * cn]: each vector in nchunk chunks of cn
 *                values (2^26 at most; the last one zero-padded past local_length), Fletcher32
 *   /step        int64 [slots], -1 for an empty slot, Fletcher32
 *   /time, /dt   double [slots]: time of the state and size of the step starting there
 *   /running_cost double [slots]: the rank's running-cost sum when the state was reached
 *   /stamp       uint64 [slots]: FNV-1a of the step and of the Fletcher32 checksums of the
 *                slot's chunks, written with the tag: a restart trusts a slot only when the
 *                checksums in the file are the ones its tag was written with
 *   /times       double [n], extensible (chunks of 512, Fletcher32): an adaptive run's accepted
 *                times t_0..t_k, written before each snapshot of its first sweep (empty
 *                otherwise): a restart needs those its backward sweep replays
 * The 1-D datasets are chunked by 1024 slots, so a tag update rewrites 8 KiB at most.
 * Snapshot chunks are written directly (H5Dwrite_chunk) and read from the file at the
 * chunk's address (H5Dget_chunk_info_by_coord + pread) with the
 * Fletcher32 checksum computed here, bit for bit what HDF5's filter stores, so every HDF5
 * reader verifies them while the store avoids the filter pipeline's extra copies (HDF5's own
 * Fletcher32 runs at about 100 MB/s here; this one at about 6 GB/s, 40 GB/s with AVX2). A get
 * that was not prefetched reads straight into the vectors on two threads (rw_h5_direct).
 * Every write goes to the
 * file when the call returns (an I/O error shows at the call that caused it), and the file is
 * flushed after each snapshot so that a
 * killed run leaves consistent checkpoints behind. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "../core/rw_device_impl.h"
#include "rewind/rw_device.h"
#include "rw_store_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RW_FLETCHER_AVX2 1
#endif

enum { RW_H5_WRITE = 0, RW_H5_READ = 1, RW_H5_FREE = 2, RW_H5_DIRECT = 3 };
enum { RW_H5_EMPTY = 0, RW_H5_PENDING = 1, RW_H5_READY = 2, RW_H5_FAILED = 3 };
#define RW_H5_QCAP    8
#define RW_H5_VERSION 2 /* of the file layout; version 1 had no running_cost and stamp */

typedef struct {
  int type, slot, buf;
  rw_snapshot_tag tag; /* WRITE: the tag; READ: the expected step; FREE: step -1 */
} rw_h5job;

/* The Fletcher32 sums of a piece of a chunk (see rw_f32_join). */
typedef struct {
  uint32_t s1, s2; /* residues modulo 65535 */
  uint64_t words;
  int nonzero; /* some word is not zero */
} rw_f32sum;

/* One piece of a direct read (see rw_h5_direct): `len` bytes at offset `off` of chunk `chunk`
 * (vector chunk / nchunk, chunk chunk % nchunk); the chunk's values go to the vector, its tail
 * (the zero padding and the 4 checksum bytes) to a scratch buffer. */
typedef struct {
  size_t chunk, off, len;
  int tail;
  rw_f32sum sum; /* of the piece's data, the checksum bytes excluded */
} rw_h5piece;

typedef struct {
  MPI_Comm comm;
  int rank, nranks, nvec;
  size_t snapshot_bytes;
  char path[4200];
  char dir[4096];
  hid_t file, snap, step, time, dt, qsum, stamp;
  hid_t times;    /* the adaptive time record (-1 in files from before it) */
  hsize_t ntimes; /* entries of it known written (put) or verified (get) */
  int rfd;        /* the file, read-only, for the chunk reads (-1 until the first) */
  int wfd;        /* the file, for reserving its blocks (-1 until the first write) */
  int full;       /* a write found no room (I/O thread) */
  hsize_t nloc;   /* local length */
  hsize_t cn;     /* values per chunk; a vector is nchunk chunks (the last one zero-padded) */
  hsize_t nchunk; /* chunks per vector: the dataset's last dimension is nchunk * cn */
  size_t stride;  /* bytes between chunks in a staging buffer: cn * 8 + checksum, aligned */
  int keep, created;
  int keep_final; /* opt->keep: what a restarted store does with its files once finished */
  /* fault injection (I/O thread) */
  char fault[16];
  long fault_after, nwritten;
  long fault_leave;      /* "fill": the bytes left free */
  long kill_after, nput; /* "kill": the put after which rank 0 dies (caller's thread) */
  long fill_after;       /* "fill": the put after which rank 0 fills the disk (caller's) */
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
  char info[4096]; /* restart: the info attribute of the files */
  /* direct reads (rw_h5_direct): pieces, chunk addresses, destinations, all from creation */
  rw_h5piece *piece;
  size_t npiece;
  haddr_t *caddr;
  double **dst;  /* the vectors' data, one per vector */
  char *tailbuf; /* tstride bytes per chunk */
  size_t tstride;
  int share;         /* the I/O thread takes pieces too (the process may run on > 1 CPU) */
  int dready, ddone; /* under mu: lookups done (1) or failed (-1); the I/O thread's share done */
  int64_t dstep;     /* the step the file's tag holds (-2: unread) */
  atomic_size_t dnext;
  atomic_int dfail;
  /* device vectors (rw_device.h): the snapshot passes through this host copy (nvec x nloc
   * values), since neither the staging copies nor the I/O thread may touch device memory */
  double *hostv;
  rw_device device;
  /* with a device staging snapshot (device_staging): the put waiting for its transfer from
   * dstage to hostv (ticket dticket) before its write can be queued (rw_h5_settle) */
  double *dstage;
  int want_dstage;
  long dticket;
  /* a get on a device: hostv's upload to the state vectors (ticket uticket) is queued, the
   * compute stream ordered after it; the host writes hostv again only after waiting for it
   * (rw_h5_hostv_free). A put's transfer into hostv is queued after it on the same queue. */
  long uticket;
  int pend, pend_slot, pend_buf;
  rw_snapshot_tag pend_tag;
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

/* The time record: 1-D, empty, extensible, chunks of 512 values with Fletcher32. */
static hid_t rw_h5_times_dataset(hid_t file)
{
  hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = 512;
  hid_t space = H5Screate_simple(1, &zero, &unlimited), dcpl = H5Pcreate(H5P_DATASET_CREATE),
        d = -1;
  if (space >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0 &&
      H5Pset_fletcher32(dcpl) >= 0 && H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0)
    d = H5Dcreate2(file, "times", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (space >= 0) H5Sclose(space);
  if (dcpl >= 0) H5Pclose(dcpl);
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
 * vectorise, which makes this several times faster than a word-at-a-time loop.
 *
 * Adds `words` big-endian 16-bit words to the running sums (s1, s2), folding after every
 * block of at most 360; the sums may be carried from one call to the next (an even number of
 * bytes per call), which gives the same checksum as one call over all the data (a fold keeps
 * the sums' residues modulo 65535 and shorter blocks keep them further from overflowing; see
 * rw_f32_join for why the residues fix the checksum). */
static void rw_fletcher32_generic(uint32_t *ps1, uint32_t *ps2, const uint8_t *p, size_t words)
{
  uint32_t s1 = *ps1, s2 = *ps2;
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
  *ps1 = s1;
  *ps2 = s2;
}

#ifdef RW_FLETCHER_AVX2
/* The sum of the eight 32-bit lanes, modulo 2^32. */
__attribute__((target("avx2"))) static uint32_t rw_hsum8(__m256i v)
{
  __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
  return (uint32_t)_mm_cvtsi128_si32(x);
}

/* rw_fletcher32_generic with AVX2 (3x the compiler's vectorisation of it here: 44 GB/s from
 * the cache), in blocks of m <= 22 vectors of 16 words (352 words). Word i = 16 j + l (vector
 * j, lane l) of a block of n = 16 m words weighs n - i = 16 (m - 1 - j) + (16 - l) in W, so
 * W = 16 sum_j (m - 1 - j) S_j + sum_j sum_l (16 - l) w_jl with S_j vector j's sum: the first
 * term is the running sum of the running sum (as in the SIMD Adler-32 of Chromium's zlib,
 * adler32_simd.c), the second and S_j one vpmaddwd each. The
 * words are byte-swapped and offset by -32768 to fit vpmaddwd's signed 16 bits (w ^ 0x8000
 * read signed is w - 32768); the offset adds back as 32768 n to S and 32768 n (n + 1) / 2 to
 * W. All sums are modulo 2^32 like the generic loop's, whose S and W it equals exactly. */
__attribute__((target("avx2"))) static void rw_fletcher32_avx2(uint32_t *ps1, uint32_t *ps2,
                                                               const uint8_t *p, size_t words)
{
  const __m256i swap = _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 1, 0,
                                        3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  const __m256i bias = _mm256_set1_epi16((short)0x8000), ones = _mm256_set1_epi16(1);
  const __m256i wts = _mm256_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
  uint32_t s1 = *ps1, s2 = *ps2;
  while (words >= 16) {
    size_t m = words / 16 < 22 ? words / 16 : 22;
    __m256i vs1 = _mm256_setzero_si256(), vps = vs1, vwt = vs1;
    for (size_t j = 0; j < m; j++) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * j));
      v = _mm256_xor_si256(_mm256_shuffle_epi8(v, swap), bias);
      vps = _mm256_add_epi32(vps, vs1);
      vs1 = _mm256_add_epi32(vs1, _mm256_madd_epi16(v, ones));
      vwt = _mm256_add_epi32(vwt, _mm256_madd_epi16(v, wts));
    }
    uint32_t n = 16 * (uint32_t)m, S = rw_hsum8(vs1) + 32768u * n,
             W = 16u * rw_hsum8(vps) + rw_hsum8(vwt) + 32768u * (n * (n + 1) / 2);
    s2 += n * s1 + W;
    s1 += S;
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
    p += 32 * m;
    words -= 16 * m;
  }
  *ps1 = s1;
  *ps2 = s2;
  if (words) rw_fletcher32_generic(ps1, ps2, p, words);
}
#endif

/* The AVX2 loop where the CPU has it (asked at each call: a few nanoseconds per piece). */
static void rw_fletcher32_update(uint32_t *ps1, uint32_t *ps2, const uint8_t *p, size_t words)
{
#ifdef RW_FLETCHER_AVX2
  if (__builtin_cpu_supports("avx2")) {
    rw_fletcher32_avx2(ps1, ps2, p, words);
    return;
  }
#endif
  rw_fletcher32_generic(ps1, ps2, p, words);
}

static uint32_t rw_fletcher32_final(uint32_t s1, uint32_t s2)
{
  s1 = (s1 & 0xffff) + (s1 >> 16);
  s2 = (s2 & 0xffff) + (s2 >> 16);
  return (s2 << 16) | s1;
}

uint32_t rw_checksum_fletcher32(const void *data, size_t len)
{
  const uint8_t *p = data;
  uint32_t s1 = 0, s2 = 0;
  rw_fletcher32_update(&s1, &s2, p, len / 2);
  if (len % 2) {
    s1 += (uint32_t)p[len - 1] << 8;
    s2 += s1;
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
  }
  return rw_fletcher32_final(s1, s2);
}

/* Fletcher32 of a chunk read in pieces by two threads at once: each piece's sums are computed
 * from zero (rw_f32_piece) and joined in file order (rw_f32_join). Over the words of a piece B
 * (m words) after those of A, s1(AB) = s1(A) + s1(B) and s2(AB) = s2(A) + s2(B) + m s1(A)
 * (Fletcher 1982; the sums of a concatenation), modulo 65535 since every fold keeps the sums'
 * residues. What HDF5 stores is then fixed by the residues: its folds keep a sum at zero
 * exactly when every word so far was zero and otherwise leave it in [1, 65535] (a fold maps a
 * positive value to a positive one, and the last two fold anything below 2^32 under 2^16), so
 * a residue 0 is stored as 65535 unless all the data are zero. Shorter blocks than HDF5's 360
 * words only keep the 32-bit sums further from overflowing, so the pieces may end anywhere
 * (on a word). test_store checks this against rw_checksum_fletcher32 on the folding's edges. */
static void rw_f32_piece(const void *data, size_t bytes, rw_f32sum *out)
{
  uint32_t s1 = 0, s2 = 0;
  rw_fletcher32_update(&s1, &s2, data, bytes / 2);
  out->s1 = s1 % 65535;
  out->s2 = s2 % 65535;
  out->words = bytes / 2;
  out->nonzero = s1 != 0;
}

static void rw_f32_join(rw_f32sum *a, const rw_f32sum *b)
{
  a->s2 = (uint32_t)(((uint64_t)a->s2 + b->s2 + (b->words % 65535) * a->s1) % 65535);
  a->s1 = (a->s1 + b->s1) % 65535;
  a->words += b->words;
  a->nonzero |= b->nonzero;
}

static uint32_t rw_f32_value(const rw_f32sum *a)
{
  if (!a->nonzero) return 0;
  uint32_t s1 = a->s1 ? a->s1 : 65535, s2 = a->s2 ? a->s2 : 65535;
  return (s2 << 16) | s1;
}

uint32_t rw_checksum_fletcher32_pieces(const void *data, size_t len, size_t piece)
{
  const uint8_t *p = data;
  rw_f32sum all = {0, 0, 0, 0}, one;
  piece = piece < 2 ? 2 : piece & ~(size_t)1;
  for (size_t at = 0; at < len; at += piece) {
    rw_f32_piece(p + at, len - at < piece ? len - at : piece, &one);
    rw_f32_join(&all, &one);
  }
  return rw_f32_value(&all);
}

/* Writes (read = 0) or reads chunk c of vector k of a slot directly, bypassing HDF5's filter
 * pipeline: the chunk is the cn values followed by their Fletcher32 checksum (4 bytes, little
 * endian), exactly what the filter would have stored, so h5dump and any HDF5 reader verify
 * it. A read checks the checksum here. */
static int rw_h5_chunk(rw_h5store *h, int slot, int k, hsize_t c, char *buf, int read,
                       uint32_t *sum)
{
  hsize_t off[3] = {(hsize_t)slot, (hsize_t)k, c * h->cn};
  size_t nb = (size_t)h->cn * sizeof(double);
  if (!read) {
    uint32_t f = rw_checksum_fletcher32(buf, nb);
    *sum = f;
    for (int i = 0; i < 4; i++)
      buf[nb + (size_t)i] = (char)((f >> (8 * i)) & 0xff);
    return H5Dwrite_chunk(h->snap, H5P_DEFAULT, 0, off, nb + 4, buf) < 0 ? -1 : 0;
  }
  /* The chunk's bytes straight from the file (the sec2 driver keeps no raw data of its own
   * and every write is flushed), in pieces of 4 MiB: the checksum of one piece is computed
   * while the kernel's read-ahead fetches the next, so a read from the disk costs about the
   * larger of the two instead of their sum. */
  unsigned mask = 0;
  haddr_t addr = 0;
  hsize_t stored = 0;
  if (H5Dget_chunk_info_by_coord(h->snap, off, &mask, &addr, &stored) < 0 || mask != 0 ||
      stored != nb + 4 || addr == HADDR_UNDEF)
    return -1;
  if (h->rfd < 0 && (h->rfd = open(h->path, O_RDONLY)) < 0) return -1;
  const size_t piece = (size_t)4 << 20;
  uint32_t s1 = 0, s2 = 0;
  size_t done = 0, summed = 0;
  while (done < nb + 4) {
    size_t want = nb + 4 - done < piece ? nb + 4 - done : piece;
    ssize_t got = pread(h->rfd, buf + done, want, (off_t)(addr + done));
    if (got <= 0) return -1; /* truncated or unreadable */
    done += (size_t)got;
    size_t upto = (done < nb ? done : nb) & ~(size_t)1;
    rw_fletcher32_update(&s1, &s2, (const uint8_t *)buf + summed, (upto - summed) / 2);
    summed = upto;
  }
  uint32_t f = 0;
  for (int i = 0; i < 4; i++)
    f |= (uint32_t)(unsigned char)buf[nb + (size_t)i] << (8 * i);
  *sum = f;
  return f == rw_fletcher32_final(s1, s2) ? 0 : -1;
}

/* Reads or writes every chunk of a snapshot from or into a staging buffer; *stamp receives
 * the FNV-1a of `step` and of the chunks' checksums. */
static int rw_h5_snapshot(rw_h5store *h, int slot, int64_t step, char *buf, int read,
                          uint64_t *stamp)
{
  *stamp = rw_fnv1a(RW_FNV1A_INIT, &step, sizeof step);
  if (h->nloc == 0) return 0;
  for (int k = 0; k < h->nvec; k++)
    for (hsize_t c = 0; c < h->nchunk; c++) {
      uint32_t f = 0;
      if (rw_h5_chunk(h, slot, k, c, buf + ((size_t)k * h->nchunk + c) * h->stride, read, &f))
        return -1;
      *stamp = rw_fnv1a(*stamp, &f, sizeof f);
    }
  return 0;
}

/* "fill": fills the file system of the checkpoint directory with rewind-fault-fill, leaving
 * fault_leave bytes free. Rank 0, caller's thread (see rw_h5_queue_write). */
static int rw_h5_fill(rw_h5store *h)
{
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
  off_t end = lseek(fd, 0, SEEK_END), left = (off_t)h->fault_leave;
  int ok = left == 0 || end < 0 || ftruncate(fd, end > left ? end - left : 0) == 0;
  close(fd);
  RW_CHECK(ok, RW_ERR_IO, "fault injection: cannot shorten '%s'", fill);
  return 0;
}

/* Damages what the last write put on disk (see rw_store_inject_fault). I/O thread. */
static int rw_h5_fault(rw_h5store *h, int slot)
{
  int ierr = 0;
  if (!strcmp(h->fault, "term")) { /* every rank, as a batch system ends a job */
    raise(SIGTERM);
    return 0;
  }
  if (!strcmp(h->fault, "torn") && h->rank != 0) return 0;
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
  if (!ierr && !strcmp(h->fault, "torn")) raise(SIGKILL); /* a crash in the middle of a write */
  return ierr;
}

/* Room reserved ahead of every write, past what the write itself needs. HDF5 1.10 does not
 * survive a failed write of its metadata: a write, flush or close that runs out of space
 * halfway leaves the file's tables unreadable (a restart then finds the step table failing
 * its checksum) and the file half closed (MPI_Finalize then crashes in HDF5's clean-up). So
 * before each snapshot the I/O thread reserves real blocks past the file's end for the
 * snapshot when its slot was never written (with its checksums and alignment), and this much
 * more (fallocate, as the result file does, see rw_output.c): HDF5's writes land in blocks
 * that are the file's already, and when the disk is full the reservation fails before HDF5
 * has written anything, with room kept for the flushes of the next frees and the close. Every
 * flush writes a few KiB at most (the tag tables' chunks and the chunk index); rw_h5_space
 * counts 1 MiB per rank over the slots. */
#define RW_H5_RESERVE ((int64_t)256 << 10)

static int rw_h5_reserve_bytes(rw_h5store *h, int64_t need);

/* Reserves the room for writing `slot` (see RW_H5_RESERVE); where the file system cannot
 * reserve, the free space is checked instead. An error when there is no room (h->full set).
 * I/O thread (under the HDF5 lock). */
static int rw_h5_reserve(rw_h5store *h, int slot)
{
  /* A slot written before is written again in place (its chunks keep their size and
   * address): only the metadata's room is reserved then, so a full set of slots (the budget
   * rw_h5_space checked) needs no snapshot's worth of space beyond it. */
  size_t chunks = (size_t)h->nvec * h->nchunk;
  hsize_t at[3] = {(hsize_t)slot, 0, 0}, stored = 0;
  haddr_t addr = HADDR_UNDEF;
  unsigned mask = 0;
  int64_t need = RW_H5_RESERVE;
  if (H5Dget_chunk_info_by_coord(h->snap, at, &mask, &addr, &stored) < 0 || addr == HADDR_UNDEF) {
    need += (int64_t)(chunks * ((size_t)h->cn * sizeof(double) + 4));
    if (h->cn * sizeof(double) >= 65536) need += (int64_t)chunks * 4096; /* H5Pset_alignment */
  }
  return rw_h5_reserve_bytes(h, need);
}

/* Reserves `need` bytes past the file's end (see RW_H5_RESERVE). Under the HDF5 lock. */
static int rw_h5_reserve_bytes(rw_h5store *h, int64_t need)
{
  int e = EOPNOTSUPP;
  struct stat fs;
  if (h->wfd < 0) h->wfd = open(h->path, O_WRONLY);
  if (h->wfd >= 0 && fstat(h->wfd, &fs) == 0) {
    hsize_t eof = 0;
    int64_t end = (int64_t)fs.st_size;
    if (H5Fget_filesize(h->file, &eof) >= 0 && (int64_t)eof > end) end = (int64_t)eof;
    e = rw_file_reserve(h->wfd, end, need);
  }
  if (e == 0) return 0;
  double avail = rw_free_bytes(h->dir);
  h->full = e == ENOSPC || e == EDQUOT || e == EFBIG || (avail >= 0.0 && avail < (double)need);
  RW_CHECK(!h->full, RW_ERR_IO, "no room for %lld bytes (%s)", (long long)need, strerror(e));
  return 0;
}

/* Writes one snapshot from a staging buffer (nvec vectors of nloc values, one after the
 * other), its tag, and flushes. I/O thread (under the HDF5 lock). */
static int rw_h5_write_slot(rw_h5store *h, int slot, const rw_snapshot_tag *tag, char *buf)
{
  int ierr = 0;
  int64_t step = tag->step;
  double t = tag->t, dt = tag->h, q = tag->q;
  uint64_t stamp = 0;
  RW_TRY(rw_h5_reserve(h, slot));
  H5CHK(rw_h5_snapshot(h, slot, step, buf, 0, &stamp), "write failed");
  H5CHK(rw_h5_elem(h->step, H5T_NATIVE_INT64, slot, &step, 0), "write failed");
  H5CHK(rw_h5_elem(h->time, H5T_NATIVE_DOUBLE, slot, &t, 0), "write failed");
  H5CHK(rw_h5_elem(h->dt, H5T_NATIVE_DOUBLE, slot, &dt, 0), "write failed");
  H5CHK(rw_h5_elem(h->qsum, H5T_NATIVE_DOUBLE, slot, &q, 0), "write failed");
  H5CHK(rw_h5_elem(h->stamp, H5T_NATIVE_UINT64, slot, &stamp, 0), "write failed");
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
                    h->full || (avail >= 0.0 && avail < (double)h->snapshot_bytes + 65536.0)
                        ? ": the file system is full"
                        : "",
                    h->dir);
  }
  return ierr;
}

/* The error of a snapshot that fails its checksum (`bad`) or holds another step. */
static int rw_h5_damaged(const rw_h5store *h, int slot, int64_t expect, int bad)
{
  return RW_ERROR(RW_ERR_IO,
                  "checkpoint file '%s' is damaged: slot %d (step %lld) %s; the file was "
                  "modified or truncated after it was written, or the disk is failing. No "
                  "gradient is computed from it",
                  h->path, slot, (long long)expect,
                  bad ? "failed its Fletcher32 checksum or could not be read"
                      : "holds another step");
}

/* Reads one snapshot into a buffer and checks its tag. I/O thread (under the HDF5 lock). */
static int rw_h5_read_slot(rw_h5store *h, int slot, int64_t expect, char *buf)
{
  int ierr = 0;
  int64_t step = -2;
  uint64_t stamp = 0;
  H5CHK(rw_h5_snapshot(h, slot, expect, buf, 1, &stamp), "read failed");
  H5CHK(rw_h5_elem(h->step, H5T_NATIVE_INT64, slot, &step, 1), "read failed");
  RW_CHECK_GOTO(step == expect, RW_ERR_IO, "tag mismatch");
cleanup:
  if (ierr) {
    rw_error_clear();
    ierr = rw_h5_damaged(h, slot, expect, step == -2);
  }
  return ierr;
}

/* --- Direct reads ----------------------------------------------------------------------------
 * A get that was not prefetched reads the chunks straight into the vectors' memory (no
 * staging copy), and the calling thread and the I/O thread share the work: the I/O thread finds
 * the chunks in the file (every HDF5 call stays on that thread, after the jobs queued before),
 * then both take pieces of RW_H5_PIECE bytes in turn from an atomic counter, pread each into
 * its place and sum it while it is still in the core's cache (rw_f32_piece). The caller joins
 * the sums chunk by chunk and compares them with the checksums stored in the file. Reads and
 * checksums of different pieces run on both cores, and the data cross the memory bus once, as
 * dd's do. When the process may run on one CPU only (mpirun binds a rank to a core by default),
 * the I/O thread leaves the pieces to the caller: on one core the two threads would only take
 * turns. The vectors hold the snapshot only when every checksum and the step tag match;
 * otherwise the get fails with the error of a staged read, and no gradient is computed. */
#define RW_H5_PIECE ((size_t)1 << 20) /* measured: best of 256 KiB to 16 MiB here */

/* The pieces of a snapshot in file order: each chunk's values, then its tail (padding and
 * checksum). Returns the count; fills `piece` when it is not NULL. */
static size_t rw_h5_plan(const rw_h5store *h, rw_h5piece *piece)
{
  size_t n = 0, nb = (size_t)h->cn * sizeof(double);
  if (h->nloc == 0) return 0;
  for (size_t ch = 0; ch < (size_t)h->nvec * h->nchunk; ch++) {
    hsize_t first = (ch % h->nchunk) * h->cn;
    size_t db = (size_t)(h->nloc - first < h->cn ? h->nloc - first : h->cn) * sizeof(double);
    for (size_t off = 0; off < db; off += RW_H5_PIECE, n++)
      if (piece)
        piece[n] = (rw_h5piece){
            .chunk = ch, .off = off, .len = db - off < RW_H5_PIECE ? db - off : RW_H5_PIECE};
    if (piece) piece[n] = (rw_h5piece){.chunk = ch, .off = db, .len = nb + 4 - db, .tail = 1};
    n++;
  }
  return n;
}

/* Reads one piece into its place and sums it (either thread); -1 when the file is short or
 * unreadable. */
static int rw_h5_piece_read(rw_h5store *h, rw_h5piece *p)
{
  size_t k = p->chunk / h->nchunk, c = p->chunk % h->nchunk;
  char *to =
      p->tail ? h->tailbuf + p->chunk * h->tstride : (char *)(h->dst[k] + c * h->cn) + p->off;
  off_t at = (off_t)(h->caddr[p->chunk] + p->off);
  for (size_t done = 0; done < p->len;) {
    ssize_t got = pread(h->rfd, to + done, p->len - done, at + (off_t)done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1; /* truncated or unreadable */
    done += (size_t)got;
  }
  rw_f32_piece(to, p->tail ? p->len - 4 : p->len, &p->sum);
  return 0;
}

/* The CPUs this process may run on (mpirun binds a rank to one core by default; then the
 * I/O thread would only take turns with the caller on that core). */
static int rw_h5_cpus(void)
{
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 2;
  return CPU_COUNT(&set);
}

/* Takes pieces until none is left or one failed (both threads). */
static void rw_h5_take_pieces(rw_h5store *h)
{
  while (!atomic_load_explicit(&h->dfail, memory_order_relaxed)) {
    size_t i = atomic_fetch_add_explicit(&h->dnext, 1, memory_order_relaxed);
    if (i >= h->npiece) return;
    if (rw_h5_piece_read(h, &h->piece[i])) atomic_store(&h->dfail, 1);
  }
}

/* The I/O thread's part of a direct read: finds the chunks and the step tag (under the HDF5
 * lock), lets the caller start, and takes pieces with it. */
static void rw_h5_direct_job(rw_h5store *h, int slot)
{
  size_t nb = (size_t)h->cn * sizeof(double);
  int64_t step = -2;
  int ok = 1;
  rw_hdf5_lock();
  for (size_t ch = 0; ok && h->npiece > 0 && ch < (size_t)h->nvec * h->nchunk; ch++) {
    hsize_t off[3] = {(hsize_t)slot, ch / h->nchunk, (ch % h->nchunk) * h->cn}, stored = 0;
    unsigned mask = 0;
    ok = H5Dget_chunk_info_by_coord(h->snap, off, &mask, &h->caddr[ch], &stored) >= 0 &&
         mask == 0 && stored == nb + 4 && h->caddr[ch] != HADDR_UNDEF;
  }
  if (ok && h->npiece > 0 && h->rfd < 0) ok = (h->rfd = open(h->path, O_RDONLY)) >= 0;
  if (rw_h5_elem(h->step, H5T_NATIVE_INT64, slot, &step, 1) < 0) step = -2;
  rw_hdf5_unlock();
  pthread_mutex_lock(&h->mu);
  h->dstep = step;
  h->dready = ok ? 1 : -1;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
  if (ok && h->share) rw_h5_take_pieces(h);
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
    double t0 = rw_wtime();
    if (job.type == RW_H5_DIRECT) {
      rw_h5_direct_job(h, job.slot); /* takes the HDF5 lock for its lookups only */
    } else {
      rw_hdf5_lock();
      if (job.type == RW_H5_WRITE)
        e = rw_h5_write_slot(h, job.slot, &job.tag, h->wbuf[job.buf]);
      else if (job.type == RW_H5_READ)
        e = rw_h5_read_slot(h, job.slot, job.tag.step, h->rbuf);
      else if (rw_h5_elem(h->step, H5T_NATIVE_INT64, job.slot, &job.tag.step, 0) < 0 ||
               H5Fflush(h->file, H5F_SCOPE_LOCAL) < 0)
        e = RW_ERROR(RW_ERR_IO, "marking checkpoint slot %d of '%s' free failed", job.slot,
                     h->path);
      rw_hdf5_unlock();
    }
    double dt = rw_wtime() - t0;
    pthread_mutex_lock(&h->mu);
    h->busy = 0;
    if (job.type == RW_H5_DIRECT) {
      h->io_read_time += dt;
      h->ddone = 1;
    } else if (job.type == RW_H5_WRITE) {
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

/* This rank's error, agreed across ranks. Caller does not hold h->mu. A failure the I/O
 * thread kept (a write queued earlier) comes first: it is the cause of what the caller met
 * since. A get of a slot whose write failed on a full disk finds the slot unreadable, and the
 * message must say "the file system is full" and keep the files, not "damaged". */
static int rw_h5_agree(rw_h5store *h, int ierr)
{
  pthread_mutex_lock(&h->mu);
  if (h->err) {
    rw_error_clear();
    ierr = RW_ERROR(h->err, "%s", h->errmsg);
  }
  pthread_mutex_unlock(&h->mu);
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

/* Queues the write of staging buffer b into `slot`. Holds h->mu. */
static void rw_h5_queue_write(rw_h5store *h, int slot, const rw_snapshot_tag *tag, int b)
{
  rw_h5_enqueue(h, RW_H5_WRITE, slot, tag, b);
  ++h->nput;
  if ((h->kill_after > 0 && h->nput == h->kill_after) ||
      (h->fill_after > 0 && h->nput == h->fill_after)) {
    /* "kill": once this snapshot is on disk on every rank, rank 0 dies (puts are collective,
     * so every rank is here); the others block in their next collective until the launcher
     * ends them. "fill": once it is on disk on every rank, rank 0 fills the disk, and every
     * rank goes on when it is full. Waiting makes the tests deterministic: "resumed from this
     * step", and the room left when each rank's next write comes (filled by every rank's
     * I/O thread when it got there, the ranks raced, and one rank's first write could fail). */
    while (h->nq > 0 || h->busy)
      pthread_cond_wait(&h->cv, &h->mu);
    const int kill = h->kill_after > 0 && h->nput == h->kill_after;
    pthread_mutex_unlock(&h->mu);
    MPI_Barrier(h->comm);
    if (kill && h->rank == 0) raise(SIGKILL);
    int e = 0;
    if (!kill) {
      e = h->rank == 0 ? rw_h5_fill(h) : 0;
      MPI_Barrier(h->comm);
    }
    pthread_mutex_lock(&h->mu);
    if (e) rw_h5_keep_error(h, e);
  }
}

/* Gives back reserved staging buffer b (nothing was queued from it). */
static void rw_h5_unreserve(rw_h5store *h, int b)
{
  pthread_mutex_lock(&h->mu);
  h->wbusy[b] = 0;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

/* hostv may be written by the host: a get's upload from it (if any) has completed. */
static int rw_h5_hostv_free(rw_h5store *h)
{
  if (h->uticket <= 0) return 0;
  long t = h->uticket;
  h->uticket = 0;
  return rw_device_copy_wait(h->device, t);
}

/* A device get's last step: hostv's vectors are copied into v on the device's copy queue and
 * every later device operation is ordered after them (rw_device_copy_order), so the host goes
 * on without waiting for the transfer. */
static int rw_h5_upload(rw_h5store *h, N_Vector *v)
{
  size_t vb = (size_t)h->nloc * sizeof(double);
  long t = 0;
  for (int k = 0; k < h->nvec; k++)
    RW_CALL(rw_device_copy_start(h->device, rw_vec_data(v[k]), h->hostv + (size_t)k * h->nloc, vb,
                                 RW_COPY_H2D, &t));
  RW_CALL(rw_device_copy_order(h->device, t));
  h->uticket = t;
  return 0;
}

/* The pending put of a device staging store (if any): waits for its transfer to hostv, stages
 * hostv into its write buffer and queues the write. Every operation of the store calls it
 * first, since the direct reads use hostv and a read must find the write queued before it.
 * Returns this rank's error (not agreed). */
static int rw_h5_settle(rw_h5store *h)
{
  if (!h->pend) return 0;
  h->pend = 0;
  int ierr = rw_device_copy_wait(h->device, h->dticket);
  for (int k = 0; k < h->nvec && !ierr; k++)
    rw_h5_stage(h, h->wbuf[h->pend_buf], k, h->hostv + (size_t)k * h->nloc, 0);
  if (ierr) {
    rw_h5_unreserve(h, h->pend_buf);
    return ierr;
  }
  pthread_mutex_lock(&h->mu);
  rw_h5_queue_write(h, h->pend_slot, &h->pend_tag, h->pend_buf);
  pthread_mutex_unlock(&h->mu);
  return 0;
}

static int rw_h5_put(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  rw_h5store *h = st->content;
  int ierr = rw_h5_settle(h); /* the previous put's write is queued before this one's */
  if (ierr) return rw_h5_agree(h, ierr);
  pthread_mutex_lock(&h->mu);
  rw_h5_forget_read(h, slot);
  while (h->wbusy[0] && h->wbusy[1])
    pthread_cond_wait(&h->cv, &h->mu);
  int b = h->wbusy[0] ? 1 : 0;
  h->wbusy[b] = 1; /* reserved: the worker does not touch it until it is queued */
  pthread_mutex_unlock(&h->mu);
  if (h->dstage) { /* copied on the device, then its transfer queued: settled later */
    size_t vb = (size_t)h->nloc * sizeof(double);
    for (int k = 0; k < st->nvec && !ierr; k++)
      ierr = rw_device_copy(h->device, h->dstage + (size_t)k * h->nloc, rw_vec_data(v[k]), vb,
                            RW_COPY_D2D);
    if (!ierr)
      ierr = rw_device_copy_start(h->device, h->hostv, h->dstage, (size_t)st->nvec * vb,
                                  RW_COPY_D2H, &h->dticket);
    if (ierr) {
      rw_h5_unreserve(h, b);
      return rw_h5_agree(h, ierr);
    }
    h->pend = 1, h->pend_slot = slot, h->pend_buf = b, h->pend_tag = *tag;
    /* a "kill" waits for this snapshot to be on disk: settled now */
    if (h->kill_after > 0 || h->fill_after > 0) ierr = rw_h5_settle(h);
    return rw_h5_agree(h, ierr);
  }
  if (h->hostv) ierr = rw_h5_hostv_free(h); /* hostv is written below */
  for (int k = 0; k < st->nvec && !ierr; k++) {
    double *src = rw_vec_data(v[k]);
    if (h->hostv) {
      src = h->hostv + (size_t)k * h->nloc;
      ierr = rw_vec_to_host(v[k], src);
    }
    if (!ierr) rw_h5_stage(h, h->wbuf[b], k, src, 0);
  }
  if (ierr) { /* nothing queued: give the buffer back */
    rw_h5_unreserve(h, b);
    return rw_h5_agree(h, ierr);
  }
  pthread_mutex_lock(&h->mu);
  rw_h5_queue_write(h, slot, tag, b);
  pthread_mutex_unlock(&h->mu);
  return rw_h5_agree(h, 0);
}

/* The caller's part of a direct read of `slot` into v (see rw_h5_direct_job). Holds h->mu on
 * entry and on return; the I/O thread is done with the vectors when it returns. */
static int rw_h5_direct(rw_h5store *h, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  for (int k = 0; k < h->nvec; k++)
    h->dst[k] = h->hostv ? h->hostv + (size_t)k * h->nloc : rw_vec_data(v[k]);
  h->dready = h->ddone = 0;
  h->dstep = -2;
  atomic_store(&h->dnext, 0);
  atomic_store(&h->dfail, 0);
  rw_h5_enqueue(h, RW_H5_DIRECT, slot, tag, -1);
  while (!h->dready)
    pthread_cond_wait(&h->cv, &h->mu);
  int ok = h->dready > 0;
  if (ok) {
    pthread_mutex_unlock(&h->mu);
    rw_h5_take_pieces(h);
    pthread_mutex_lock(&h->mu);
  }
  while (!h->ddone)
    pthread_cond_wait(&h->cv, &h->mu);
  ok = ok && !atomic_load(&h->dfail);
  /* the pieces' sums joined chunk by chunk, against the checksums stored after the chunks */
  rw_f32sum sum = {0, 0, 0, 0};
  for (size_t i = 0; ok && i < h->npiece; i++) {
    const rw_h5piece *p = &h->piece[i];
    if (p->off == 0)
      sum = p->sum;
    else
      rw_f32_join(&sum, &p->sum);
    if (p->tail) {
      const unsigned char *b =
          (const unsigned char *)h->tailbuf + p->chunk * h->tstride + p->len - 4;
      uint32_t f =
          (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
      ok = f == rw_f32_value(&sum);
    }
  }
  if (ok && h->dstep == tag->step) {
    if (h->hostv) RW_CALL(rw_h5_upload(h, v));
    return 0;
  }
  return rw_h5_damaged(h, slot, tag->step, !ok || h->dstep == -2);
}

/* A prefetched snapshot is copied from the read buffer (the read is done, or waited for);
 * any other is read straight into the vectors (rw_h5_direct). */
static int rw_h5_get(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  rw_h5store *h = st->content;
  int ierr = rw_h5_settle(h);
  if (!ierr) ierr = rw_h5_hostv_free(h); /* both paths below write hostv */
  if (ierr) return rw_h5_agree(h, ierr);
  pthread_mutex_lock(&h->mu);
  int hit = h->rslot == slot && h->rstep == tag->step &&
            (h->rstate == RW_H5_PENDING || h->rstate == RW_H5_READY);
  if (hit) {
    h->prefetch_hits++;
    while (h->rstate == RW_H5_PENDING)
      pthread_cond_wait(&h->cv, &h->mu);
    if (h->rstate == RW_H5_READY) {
      for (int k = 0; k < st->nvec; k++)
        rw_h5_stage(h, h->rbuf, k, h->hostv ? h->hostv + (size_t)k * h->nloc : rw_vec_data(v[k]),
                    1);
      if (h->hostv) ierr = rw_h5_upload(h, v);
    } else {
      ierr = RW_ERROR(RW_ERR_IO, "%s", h->rmsg);
    }
    h->rstate = RW_H5_EMPTY;
  } else {
    ierr = rw_h5_direct(h, slot, tag, v);
  }
  pthread_mutex_unlock(&h->mu);
  return rw_h5_agree(h, ierr);
}

static int rw_h5_prefetch(rw_store st, int slot, int64_t step)
{
  rw_h5store *h = st->content;
  /* a write to this slot is queued before the read; a prefetch is not collective, so a
   * failure is kept for the next agreed operation to report on every rank */
  int ierr = rw_h5_settle(h);
  pthread_mutex_lock(&h->mu);
  if (ierr) {
    rw_h5_keep_error(h, ierr);
    pthread_mutex_unlock(&h->mu);
    return 0;
  }
  int have = h->rslot == slot && h->rstep == step && h->rstate != RW_H5_EMPTY;
  if (!have && h->rstate != RW_H5_PENDING) {
    rw_snapshot_tag tg = {.step = step};
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
  rw_snapshot_tag none = {.step = -1};
  int ierr = rw_h5_settle(h);
  if (ierr) return rw_h5_agree(h, ierr);
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
  int ierr = rw_h5_settle(h);
  pthread_mutex_lock(&h->mu);
  while (h->nq > 0 || h->busy)
    pthread_cond_wait(&h->cv, &h->mu);
  st->write_time = h->io_write_time;
  st->read_time = h->io_read_time;
  pthread_mutex_unlock(&h->mu);
  return rw_h5_agree(h, ierr);
}

static int rw_h5_inject(rw_store st, const char *kind, long after)
{
  rw_h5store *h = st->content;
  long leave = 0;
  char tail = 0;
  if (!strncmp(kind, "fill:", 5)) {
    RW_CHECK(sscanf(kind + 5, "%ld%c", &leave, &tail) == 1 && leave >= 0, RW_ERR_ARG,
             "fault injection '%s': expected fill:BYTES, the bytes to leave free", kind);
    kind = "fill";
  }
  RW_CHECK(!strcmp(kind, "flip") || !strcmp(kind, "truncate") || !strcmp(kind, "fill") ||
               !strcmp(kind, "kill") || !strcmp(kind, "term") || !strcmp(kind, "torn"),
           RW_ERR_ARG, "fault injection '%s': expected flip, truncate, fill, kill, term or torn",
           kind);
  RW_CHECK(after >= 1, RW_ERR_ARG, "fault injection: after = %ld must be >= 1", after);
  pthread_mutex_lock(&h->mu);
  if (!strcmp(kind, "kill")) {
    h->kill_after = h->nput + after;
  } else if (!strcmp(kind, "fill")) {
    h->fill_after = h->nput + after;
    h->fault_leave = leave;
  } else {
    snprintf(h->fault, sizeof h->fault, "%s", kind);
    h->fault_after = h->nwritten + after;
  }
  pthread_mutex_unlock(&h->mu);
  return 0;
}

static void rw_h5_close(rw_h5store *h)
{
  hid_t *ids[] = {&h->snap, &h->step, &h->time, &h->dt, &h->qsum, &h->stamp, &h->times};
  for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
    if (*ids[i] >= 0) {
      H5Dclose(*ids[i]);
      *ids[i] = -1;
    }
  /* a close that fails (it could not write the metadata) leaves HDF5 unsafe to finish */
  if (h->file >= 0 && H5Fclose(h->file) < 0) rw_hdf5_mark_broken();
  h->file = -1;
  if (h->rfd >= 0) close(h->rfd);
  h->rfd = -1;
  if (h->wfd >= 0) close(h->wfd);
  h->wfd = -1;
}

static void rw_h5_destroy(rw_store st)
{
  rw_h5store *h = st->content;
  if (!h) return;
  if (h->pend) (void)rw_h5_settle(h); /* its write is queued, and done before the thread ends */
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
  rw_free(&h->piece);
  rw_free(&h->caddr);
  rw_free(&h->dst);
  rw_free(&h->tailbuf);
  (void)rw_h5_hostv_free(h); /* a get's upload from it has completed */
  rw_device_host_free(h->device, &h->hostv);
  if (h->dstage)
    rw_device_free(h->device, &h->dstage,
                   (size_t)h->nvec * (h->nloc ? h->nloc : 1) * sizeof(double));
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
  /* The disk-cost probe's file (contents "probe", a name of its own) holds nothing a restart
   * can use: one left by a run killed while it measured is replaced, not taken for a stopped
   * run's checkpoints (the message below told to restart from it, and the restart found no
   * checkpoint files). */
  if (opt->contents && !strcmp(opt->contents, "probe") && access(h->path, F_OK) == 0)
    RW_CHECK(unlink(h->path) == 0, RW_ERR_IO,
             "cannot remove the disk-cost probe file '%s' a stopped run left (%s)", h->path,
             strerror(errno));
  RW_CHECK(access(h->path, F_OK) != 0, RW_ERR_IO,
           "checkpoint file '%s' already exists: a run with the same deck and decomposition "
           "stopped early and left it (restart from it with -restart_from %s, or remove it), "
           "or one is running in this checkpoint_dir now (give this run a checkpoint_dir of "
           "its own)",
           h->path, opt->dir);
  H5CHK(fapl = H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate failed");
  H5CHK(H5Pset_fapl_sec2(fapl), "H5Pset_fapl_sec2 failed");
  /* Large chunks on 4 KiB boundaries: whole file-system blocks per snapshot. */
  H5CHK(H5Pset_alignment(fapl, 65536, 4096), "H5Pset_alignment failed");
  h->file = H5Fcreate(h->path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  if (h->file < 0) {
    /* Not there just above, so an empty file there now is this call's (the file system filled
     * before HDF5 wrote anything): removed, or the next run would take it for a stopped run's
     * checkpoints and refuse to start. */
    const int e = errno;
    if (stat(h->path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0) unlink(h->path);
    errno = e;
  }
  H5CHK(h->file, "cannot create checkpoint file '%s' in checkpoint_dir '%s' (%s)", h->path,
        opt->dir, strerror(errno));
  h->created = 1;
  hsize_t dims[3] = {(hsize_t)st->nslots, (hsize_t)st->nvec, h->nchunk * h->cn},
          chunk[3] = {1, 1, h->cn};
  hsize_t ns = (hsize_t)st->nslots, nc = ns < 1024 ? ns : 1024;
  int64_t empty = -1;
  uint64_t zero = 0;
  const char *what = "creating the checkpoint datasets failed";
  H5CHK(h->snap = rw_h5_dataset(h->file, "snapshots", H5T_NATIVE_DOUBLE, 3, dims, chunk, NULL),
        "%s", what);
  H5CHK(h->step = rw_h5_dataset(h->file, "step", H5T_NATIVE_INT64, 1, &ns, &nc, &empty), "%s",
        what);
  H5CHK(h->time = rw_h5_dataset(h->file, "time", H5T_NATIVE_DOUBLE, 1, &ns, &nc, NULL), "%s", what);
  H5CHK(h->dt = rw_h5_dataset(h->file, "dt", H5T_NATIVE_DOUBLE, 1, &ns, &nc, NULL), "%s", what);
  H5CHK(h->qsum = rw_h5_dataset(h->file, "running_cost", H5T_NATIVE_DOUBLE, 1, &ns, &nc, NULL),
        "%s", what);
  H5CHK(h->stamp = rw_h5_dataset(h->file, "stamp", H5T_NATIVE_UINT64, 1, &ns, &nc, &zero), "%s",
        what);
  H5CHK(h->times = rw_h5_times_dataset(h->file), "%s", what);
  long long ll[6] = {RW_H5_VERSION, h->rank, h->nranks, st->nvec, (long long)h->nloc, st->nslots};
  const char *names[6] = {"version", "rank", "nranks", "nvec", "local_length", "slots"};
  for (int i = 0; i < 6; i++)
    H5CHK(rw_h5_attr(h->file, names[i], H5T_NATIVE_LLONG, &ll[i]), "%s", what);
  unsigned long long sb_bytes = st->snapshot_bytes;
  H5CHK(rw_h5_attr(h->file, "snapshot_bytes", H5T_NATIVE_ULLONG, &sb_bytes), "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "format", "rewind-checkpoint"), "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "run_id", opt->run_id), "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "contents", opt->contents ? opt->contents : "state"), "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "deck", opt->deck ? opt->deck : ""), "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "decomposition", opt->decomposition ? opt->decomposition : ""),
        "%s", what);
  H5CHK(rw_h5_attr_str(h->file, "info", opt->info ? opt->info : ""), "%s", what);
  H5CHK(H5Fflush(h->file, H5F_SCOPE_LOCAL), "%s", what);
cleanup:
  if (fapl >= 0) H5Pclose(fapl);
  return ierr;
}

/* --- Restart ------------------------------------------------------------------------------
 * A restarted run opens the files its killed predecessor left (same run_id, so same deck
 * and decomposition) and continues in them. What it finds there is checked, never assumed:
 * the layout version, the identity, the shapes; the driver then asks rw_store_hdf5_check_slot
 * which slots hold complete snapshots. Files of another run are refused with what differs. */

/* Reads a fixed-length string attribute into buf (len bytes); -1 when missing or too long. */
static int rw_h5_get_str(hid_t obj, const char *name, char *buf, size_t len)
{
  int r = -1;
  if (H5Aexists(obj, name) <= 0) return -1;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT), t = -1, mt = -1;
  if (a >= 0) t = H5Aget_type(a);
  if (t >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0) {
    size_t n = H5Tget_size(t);
    mt = H5Tcopy(H5T_C_S1);
    if (n < len && mt >= 0 && H5Tset_size(mt, n) >= 0 && H5Aread(a, mt, buf) >= 0) {
      buf[n] = '\0';
      r = 0;
    }
  }
  if (mt >= 0) H5Tclose(mt);
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
  return r;
}

static int rw_h5_get_ll(hid_t obj, const char *name, long long *v)
{
  if (H5Aexists(obj, name) <= 0) return -1;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  int r = a >= 0 && H5Aread(a, H5T_NATIVE_LLONG, v) >= 0 ? 0 : -1;
  if (a >= 0) H5Aclose(a);
  return r;
}

/* The line of `text` with the key of line p (kn characters), or NULL; *mn its length. */
static const char *rw_h5_deck_line(const char *text, const char *p, size_t kn, size_t *mn)
{
  for (const char *q = text; *q;) {
    const char *qe = strchr(q, '\n');
    size_t qn = qe ? (size_t)(qe - q) : strlen(q);
    if (qn > kn && !strncmp(q, p, kn) && q[kn] == ':') {
      *mn = qn;
      return q;
    }
    q += qn + (qe ? 1 : 0);
  }
  return NULL;
}

/* Appends to out the deck lines ("key: value") that differ between `there` and `here`: the
 * keys on both sides with other values first, then the keys of one side only (another app's
 * deck has most of its keys there only, and this one's here only: both are shown), at most 4
 * of each kind, and how many more differ. */
static void rw_h5_deck_diff(const char *there, const char *here, char *out, size_t len)
{
  size_t used = strlen(out);
  int shown = 0, more = 0;
  for (int kind = 0; kind < 3; kind++) { /* other value, there only, here only */
    const char *p = kind == 2 ? here : there, *other = kind == 2 ? there : here;
    int of_kind = 0;
    while (*p) {
      const char *e = strchr(p, '\n');
      size_t n = e ? (size_t)(e - p) : strlen(p);
      const char *colon = memchr(p, ':', n);
      size_t kn = colon ? (size_t)(colon - p) : n, mn = 0;
      const char *match = rw_h5_deck_line(other, p, kn, &mn);
      int differs = match ? (kind == 0 && (mn != n || strncmp(match, p, n))) : kind > 0;
      if (differs && (of_kind >= 4 || used + 1 >= len))
        more++;
      else if (differs) {
        if (match)
          snprintf(out + used, len - used, "%s%.*s there, %.*s here", shown ? "; " : "", (int)n, p,
                   (int)mn, match);
        else
          snprintf(out + used, len - used, "%s%.*s %s only", shown ? "; " : "", (int)n, p,
                   kind == 1 ? "there" : "here");
        used = strlen(out);
        shown++;
        of_kind++;
      }
      p += n + (e ? 1 : 0);
    }
  }
  if (more && used + 1 < len) snprintf(out + used, len - used, "; and %d more", more);
  if (!shown) snprintf(out + used, len - used, "the app or the deck's defaults differ");
}

/* The error for a restart directory that holds no files of this run: names what differs from
 * the files of the run it does hold. The disk-cost probe's files (`<id>-probe-<hash>`, earlier
 * `<id>-probe`) that a run killed while it measured leaves are no run's checkpoints: with only
 * those, there are none. Takes the HDF5 lock's caller's context. */
static int rw_h5_refuse(const rw_h5store *h, const rw_store_hdf5_options *opt)
{
  DIR *d = opendir(opt->dir);
  char other[4600] = "";
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      size_t n = strlen(e->d_name);
      if (!strncmp(e->d_name, "rewind-ckpt-", 12) && n > 3 && !strcmp(e->d_name + n - 3, ".h5") &&
          !strstr(e->d_name, "-probe.") && !strstr(e->d_name, "-probe-") &&
          (!other[0] || strstr(e->d_name, "-of-") != NULL)) {
        snprintf(other, sizeof other, "%s/%s", opt->dir, e->d_name);
        break;
      }
    }
    closedir(d);
  }
  if (!other[0])
    return RW_ERROR(RW_ERR_IO,
                    "restart_from '%s': no checkpoint files of a Rewind run there (expected '%s'); "
                    "restart from the checkpoint_dir of the run that stopped",
                    opt->dir, h->path);
  int ierr = 0;
  char *there = NULL, *why = NULL;
  long long version = 0, nranks = 0;
  /* read-only and without HDF5's file lock: the rank that owns `other` may hold it open */
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f = -1;
#if H5_VERSION_GE(1, 10, 7)
  if (fapl >= 0) H5Pset_file_locking(fapl, 0, 1);
#endif
  f = H5Fopen(other, H5F_ACC_RDONLY, fapl >= 0 ? fapl : H5P_DEFAULT);
  if (fapl >= 0) H5Pclose(fapl);
  RW_TRY(rw_calloc(2, 65536, "restart check", &there));
  why = there + 65536;
  if (f >= 0 && opt->run_id && rw_h5_get_str(f, "run_id", there, 65536) == 0 &&
      !strcmp(there, opt->run_id)) {
    ierr = RW_ERROR(RW_ERR_IO,
                    "restart_from '%s': this run's checkpoint file for rank %d, '%s', is missing "
                    "(the other ranks' files of the same run, such as '%s', are there): it was "
                    "removed or the directory was copied incompletely, so the run cannot be "
                    "continued from it",
                    opt->dir, h->rank, h->path, other);
    goto cleanup;
  }
  if (f < 0 || rw_h5_get_ll(f, "version", &version) < 0) {
    ierr = RW_ERROR(RW_ERR_IO,
                    "restart_from '%s': '%s' is not a readable Rewind checkpoint file, and this "
                    "run's file '%s' is not there",
                    opt->dir, other, h->path);
    goto cleanup;
  }
  if (version != RW_H5_VERSION) {
    snprintf(why, 65536,
             "'%s' has checkpoint format version %lld and this Rewind (" REWIND_VERSION_STRING
             ") reads version %d: it was written by another version of Rewind",
             other, version, RW_H5_VERSION);
  } else if (opt->deck && rw_h5_get_str(f, "deck", there, 65536) == 0 && strcmp(there, opt->deck)) {
    snprintf(why, 65536, "the deck differs from that of '%s': ", other);
    rw_h5_deck_diff(there, opt->deck, why, 65536);
  } else if (rw_h5_get_ll(f, "nranks", &nranks) == 0 && nranks != h->nranks) {
    snprintf(why, 65536,
             "the decomposition differs: they were written by %lld ranks, this run has %d "
             "('%s' is one of them)",
             nranks, h->nranks, other);
  } else if (rw_h5_get_str(f, "decomposition", there, 65536) == 0 && opt->decomposition &&
             strcmp(there, opt->decomposition)) {
    snprintf(why, 65536, "the decomposition differs: %s there ('%s'), %s here", there, other,
             opt->decomposition);
  } else {
    snprintf(why, 65536, "'%s' belongs to another run (another run id)", other);
  }
  ierr = RW_ERROR(RW_ERR_DECK,
                  "restart_from '%s': the checkpoints there belong to another run and cannot be "
                  "continued by this one: %s",
                  opt->dir, why);
cleanup:
  if (f >= 0) H5Fclose(f);
  rw_free(&there);
  return ierr;
}

/* Opens one dataset of an existing file without a chunk cache. */
static hid_t rw_h5_open_dataset(hid_t file, const char *name)
{
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS), d = -1;
  if (dapl >= 0 && H5Pset_chunk_cache(dapl, 0, 0, 1.0) >= 0) d = H5Dopen2(file, name, dapl);
  if (dapl >= 0) H5Pclose(dapl);
  return d;
}

/* Opens this rank's existing file for a restart and takes the tags of its slots. */
static int rw_h5_reopen(rw_store st, const rw_store_hdf5_options *opt)
{
  rw_h5store *h = st->content;
  int ierr = 0;
  hid_t fapl = -1;
  int64_t *steps = NULL;
  double *tq = NULL;
  if (access(h->path, F_OK) != 0) return rw_h5_refuse(h, opt);
  struct stat sb;
  RW_CHECK(stat(h->path, &sb) != 0 || sb.st_size > 0, RW_ERR_IO,
           "restart_from '%s': checkpoint file '%s' is empty (0 bytes): the run that made it "
           "stopped before writing anything there (a full disk?), so there is nothing to restart "
           "from; remove this run's rewind-ckpt-* files there and run again without restart_from",
           opt->dir, h->path);
  H5CHK(fapl = H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate failed");
  H5CHK(H5Pset_fapl_sec2(fapl), "H5Pset_fapl_sec2 failed");
  { /* the system's reason when the file cannot be opened at all; HDF5 leaves errno stale */
    int fd = open(h->path, O_RDWR);
    if (fd < 0) {
      ierr = RW_ERROR(RW_ERR_IO, "cannot open checkpoint file '%s' for the restart: %s", h->path,
                      strerror(errno));
      goto cleanup;
    }
    close(fd);
  }
  /* Read only until every check has passed: opened for writing, HDF5 marks the superblock,
   * and a refused restart must leave the files as they were. */
  h->file = H5Fopen(h->path, H5F_ACC_RDONLY, fapl);
  H5CHK(h->file,
        "cannot open checkpoint file '%s' for the restart: it is damaged or not an HDF5 file "
        "(HDF5 cannot read its superblock)",
        h->path);
  char str[256];
  long long v[6];
  const char *names[6] = {"version", "rank", "nranks", "nvec", "local_length", "slots"};
  long long want[6] = {RW_H5_VERSION, h->rank, h->nranks, st->nvec, (long long)h->nloc, st->nslots};
  RW_CHECK_GOTO(rw_h5_get_str(h->file, "format", str, sizeof str) == 0 &&
                    !strcmp(str, "rewind-checkpoint"),
                RW_ERR_IO,
                "restart_from '%s': '%s' holds no Rewind checkpoint (no format attribute): the "
                "run that created it stopped before it was set up (a full disk?), or it is "
                "another file; remove it and run again without restart_from",
                opt->dir, h->path);
  for (int i = 0; i < 6; i++) {
    RW_CHECK_GOTO(rw_h5_get_ll(h->file, names[i], &v[i]) == 0, RW_ERR_IO,
                  "checkpoint file '%s' has no attribute '%s'", h->path, names[i]);
    if (i == 0)
      RW_CHECK_GOTO(v[0] == want[0], RW_ERR_DECK,
                    "restart_from '%s': '%s' has checkpoint format version %lld and this Rewind "
                    "(" REWIND_VERSION_STRING ") reads version %d: it was written by another "
                    "version of Rewind",
                    opt->dir, h->path, v[0], RW_H5_VERSION);
    else
      RW_CHECK_GOTO(v[i] == want[i] || (i == 5 && want[i] == 0), RW_ERR_DECK,
                    "restart_from '%s': '%s' has %s = %lld, this run needs %lld", opt->dir, h->path,
                    names[i], v[i], want[i]);
  }
  RW_CHECK_GOTO(rw_h5_get_str(h->file, "run_id", str, sizeof str) == 0 && !strcmp(str, opt->run_id),
                RW_ERR_DECK, "restart_from '%s': '%s' belongs to run '%s', not '%s'", opt->dir,
                h->path, str, opt->run_id);
  const char *contents = opt->contents ? opt->contents : "state";
  RW_CHECK_GOTO(rw_h5_get_str(h->file, "contents", str, sizeof str) == 0 && !strcmp(str, contents),
                RW_ERR_DECK,
                "restart_from '%s': '%s' holds snapshots of '%s', this run stores '%s'", opt->dir,
                h->path, str, contents);
  if (rw_h5_get_str(h->file, "info", h->info, sizeof h->info) != 0) h->info[0] = '\0';
  const char *what = "the checkpoint file is damaged: cannot open its datasets";
  H5CHK(h->snap = rw_h5_open_dataset(h->file, "snapshots"), "%s ('%s')", what, h->path);
  H5CHK(h->step = rw_h5_open_dataset(h->file, "step"), "%s ('%s')", what, h->path);
  H5CHK(h->time = rw_h5_open_dataset(h->file, "time"), "%s ('%s')", what, h->path);
  H5CHK(h->dt = rw_h5_open_dataset(h->file, "dt"), "%s ('%s')", what, h->path);
  H5CHK(h->qsum = rw_h5_open_dataset(h->file, "running_cost"), "%s ('%s')", what, h->path);
  H5CHK(h->stamp = rw_h5_open_dataset(h->file, "stamp"), "%s ('%s')", what, h->path);
  RW_TRY(rw_calloc((size_t)st->nslots, sizeof *steps, "restart tags", &steps));
  RW_TRY(rw_calloc(3 * (size_t)st->nslots, sizeof *tq, "restart tags", &tq));
  H5CHK(H5Dread(h->step, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps),
        "checkpoint file '%s' is damaged: its step table fails its checksum", h->path);
  hid_t dd[3] = {h->time, h->dt, h->qsum};
  for (int i = 0; i < 3; i++)
    H5CHK(H5Dread(dd[i], H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, tq + i * st->nslots),
          "checkpoint file '%s' is damaged: its tag tables fail their checksums", h->path);
  st->used = 0;
  for (int i = 0; i < st->nslots; i++) {
    rw_snapshot_tag tg = {steps[i] >= 0 ? steps[i] : -1, tq[i], tq[st->nslots + i],
                          tq[2 * st->nslots + i]};
    st->tag[i] = tg;
    if (tg.step >= 0) st->used++;
  }
  st->peak = st->used;
  /* The stamps too: read later one by one (rw_store_hdf5_check_slot), a damaged stamp table
   * would make every slot look incomplete, and the restart would then start again from y0,
   * release the good slots and fail on its first write into the table. Refused here, with the
   * files left as they are. The steps' buffer is free again. */
  H5CHK(H5Dread(h->stamp, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps),
        "checkpoint file '%s' is damaged: its stamp table fails its checksum", h->path);
  { /* checked: now for writing */
    hid_t *ds[6] = {&h->snap, &h->step, &h->time, &h->dt, &h->qsum, &h->stamp};
    const char *dn[6] = {"snapshots", "step", "time", "dt", "running_cost", "stamp"};
    for (int i = 0; i < 6; i++)
      H5Dclose(*ds[i]), *ds[i] = -1;
    H5Fclose(h->file);
    H5CHK(h->file = H5Fopen(h->path, H5F_ACC_RDWR, fapl),
          "cannot open checkpoint file '%s' for writing the restart's checkpoints", h->path);
    for (int i = 0; i < 6; i++)
      H5CHK(*ds[i] = rw_h5_open_dataset(h->file, dn[i]), "%s ('%s')", what, h->path);
    /* the time record (files of runs before it have none: an adaptive restart then finds
     * no resume point) */
    if (H5Lexists(h->file, "times", H5P_DEFAULT) > 0)
      h->times = H5Dopen2(h->file, "times", H5P_DEFAULT);
    h->ntimes = 0;
  }
  h->created = 1;
cleanup:
  if (fapl >= 0) H5Pclose(fapl);
  rw_free(&steps);
  rw_free(&tq);
  return ierr;
}

/* The slot count of this rank's file (restart), before the store is allocated; 0 when the
 * file is not there or does not say (rw_h5_reopen then reports why). */
static int rw_h5_file_slots(const char *path)
{
  long long n = 0;
  if (access(path, F_OK) != 0) return 0;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return 0;
  if (rw_h5_get_ll(f, "slots", &n) != 0 || n < 1 || n > 1000000) n = 0;
  H5Fclose(f);
  return (int)n;
}

const char *rw_store_hdf5_info(rw_store st)
{
  if (!st || strcmp(st->kind, "hdf5")) return "";
  return ((rw_h5store *)st->content)->info;
}

/* The adaptive time record (see rw_store.h). Writes entries ntimes..n, growing the dataset. */
int rw_store_hdf5_put_times(rw_store st, const double *t, int64_t n)
{
  RW_CHECK(st && t && n >= 0 && !strcmp(st->kind, "hdf5"), RW_ERR_ARG,
           "rw_store_hdf5_put_times: needs an HDF5 store and times t[0..n], n >= 0");
  rw_h5store *h = st->content;
  int ierr = rw_h5_settle(h);
  hsize_t want = (hsize_t)n + 1;
  if (!ierr && want > h->ntimes) {
    rw_hdf5_lock();
    hsize_t from = h->ntimes, cnt = want - from, have = 0;
    hid_t fs = -1, ms = -1;
    /* the record's new chunks (512 values and a checksum each) and the metadata's room */
    int ok = h->times >= 0 &&
             rw_h5_reserve_bytes(h, RW_H5_RESERVE + (int64_t)(cnt / 512 + 2) * 4100) == 0;
    rw_error_clear();
    if (ok) {
      fs = H5Dget_space(h->times);
      ok = fs >= 0 && H5Sget_simple_extent_dims(fs, &have, NULL) >= 0;
      if (fs >= 0) H5Sclose(fs), fs = -1;
    }
    if (ok && have < want) ok = H5Dset_extent(h->times, &want) >= 0;
    if (ok) {
      fs = H5Dget_space(h->times);
      ms = H5Screate_simple(1, &cnt, NULL);
      ok = fs >= 0 && ms >= 0 &&
           H5Sselect_hyperslab(fs, H5S_SELECT_SET, &from, NULL, &cnt, NULL) >= 0 &&
           H5Dwrite(h->times, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, t + from) >= 0 &&
           H5Fflush(h->file, H5F_SCOPE_LOCAL) >= 0;
    }
    if (fs >= 0) H5Sclose(fs);
    if (ms >= 0) H5Sclose(ms);
    rw_hdf5_unlock();
    if (ok)
      h->ntimes = want;
    else {
      double avail = rw_free_bytes(h->dir);
      ierr = RW_ERROR(RW_ERR_IO,
                      "writing the adaptive time record (%lld times) to checkpoint file '%s' "
                      "failed%s; free space in checkpoint_dir '%s' or lower checkpoint_disk",
                      (long long)want, h->path,
                      h->full || (avail >= 0.0 && avail < (double)RW_H5_RESERVE)
                          ? ": the file system is full"
                          : "",
                      h->dir);
    }
  }
  return rw_h5_agree(h, ierr);
}

int rw_store_hdf5_has_times(rw_store st)
{
  return st && !strcmp(st->kind, "hdf5") && ((rw_h5store *)st->content)->times >= 0;
}

int rw_store_hdf5_trim_times(rw_store st, int64_t n)
{
  RW_CHECK(st && n >= -1 && !strcmp(st->kind, "hdf5"), RW_ERR_ARG,
           "rw_store_hdf5_trim_times: needs an HDF5 store and n >= -1");
  rw_h5store *h = st->content;
  int ierr = 0;
  hsize_t keep = (hsize_t)(n + 1), have = 0;
  if (h->times >= 0) {
    rw_hdf5_lock();
    hid_t fs = H5Dget_space(h->times);
    int ok = fs >= 0 && H5Sget_simple_extent_dims(fs, &have, NULL) >= 0;
    if (fs >= 0) H5Sclose(fs);
    if (ok && have > keep)
      ok = H5Dset_extent(h->times, &keep) >= 0 && H5Fflush(h->file, H5F_SCOPE_LOCAL) >= 0;
    rw_hdf5_unlock();
    if (!ok)
      ierr = RW_ERROR(RW_ERR_IO,
                      "cutting the adaptive time record of checkpoint file '%s' to %lld "
                      "times failed",
                      h->path, (long long)keep);
    h->ntimes = keep;
  }
  return rw_h5_agree(h, ierr);
}

int rw_store_hdf5_get_times(rw_store st, int64_t n, double *t, int *ok)
{
  RW_CHECK(st && t && ok && n >= 0 && !strcmp(st->kind, "hdf5"), RW_ERR_ARG,
           "rw_store_hdf5_get_times: needs an HDF5 store and room for times t[0..n], n >= 0");
  rw_h5store *h = st->content;
  *ok = 0;
  if (h->times < 0) return 0;
  rw_hdf5_lock();
  hsize_t want = (hsize_t)n + 1, have = 0, zero = 0;
  hid_t fs = H5Dget_space(h->times), ms = H5Screate_simple(1, &want, NULL);
  int good = fs >= 0 && ms >= 0 && H5Sget_simple_extent_dims(fs, &have, NULL) >= 0 &&
             have >= want &&
             H5Sselect_hyperslab(fs, H5S_SELECT_SET, &zero, NULL, &want, NULL) >= 0 &&
             H5Dread(h->times, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, t) >= 0;
  if (fs >= 0) H5Sclose(fs);
  if (ms >= 0) H5Sclose(ms);
  rw_hdf5_unlock();
  rw_error_clear();
  if (good) h->ntimes = want;
  *ok = good;
  return 0;
}

/* Whether a slot holds a complete snapshot of `step` (see rw_store.h). The chunks' checksums
 * are read from the file (the last 4 bytes of each chunk) and folded as the write did; with
 * `full` every chunk is read and its data checked against its checksum too (a write torn by a
 * crash may have reached the data and not the checksum). */
int rw_store_hdf5_check_slot(rw_store st, int slot, int64_t step, int full, int *ok)
{
  RW_CHECK(st && ok && !strcmp(st->kind, "hdf5"), RW_ERR_ARG,
           "rw_store_hdf5_check_slot: needs an HDF5 store");
  *ok = 0;
  if (slot < 0 || slot >= st->nslots || step < 0 || st->tag[slot].step != step) return 0;
  rw_h5store *h = st->content;
  RW_CALL(rw_h5_settle(h));
  uint64_t want = 0, got = rw_fnv1a(RW_FNV1A_INIT, &step, sizeof step);
  rw_hdf5_lock();
  int fd = open(h->path, O_RDONLY);
  int good = fd >= 0 && rw_h5_elem(h->stamp, H5T_NATIVE_UINT64, slot, &want, 1) >= 0;
  size_t nb = (size_t)h->cn * sizeof(double);
  for (int k = 0; good && h->nloc > 0 && k < h->nvec; k++)
    for (hsize_t c = 0; good && c < h->nchunk; c++) {
      hsize_t off[3] = {(hsize_t)slot, (hsize_t)k, c * h->cn}, size = 0;
      unsigned mask = 0;
      haddr_t addr = 0;
      unsigned char b[4] = {0, 0, 0, 0};
      good = H5Dget_chunk_info_by_coord(h->snap, off, &mask, &addr, &size) >= 0 && size == nb + 4 &&
             addr != HADDR_UNDEF && pread(fd, b, 4, (off_t)(addr + size - 4)) == 4;
      uint32_t f =
          (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
      if (good) got = rw_fnv1a(got, &f, sizeof f);
    }
  if (fd >= 0) close(fd);
  if (good && got == want && full) {
    /* the staging read buffer is free: nothing is prefetched while a restart is set up */
    uint64_t again = 0;
    good = rw_h5_snapshot(h, slot, step, h->rbuf, 1, &again) == 0 && again == want;
  }
  rw_hdf5_unlock();
  rw_error_clear();
  *ok = good && got == want;
  return 0;
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
  /* one slot is the least a disk tier holds: then fewer slots cannot help */
  if (avail >= 0.0 && avail < want)
    ierr = RW_ERROR(RW_ERR_BUDGET,
                    "checkpoint_dir '%s' has %.0f bytes free, but %d disk checkpoint slot%s of %zu "
                    "bytes%s need about %.0f (with about 1 MiB of each rank's file's own); %s",
                    dir, avail, st->nslots, st->nslots == 1 ? "" : "s", st->snapshot_bytes,
                    shared ? " on every rank (one shared file system)" : "", want,
                    st->nslots > 1 ? "lower checkpoint_disk or free space there"
                                   : "one slot is the least a disk tier holds: free space "
                                     "there, or give another checkpoint_dir");
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
  /* the direct reads' pieces, chunk addresses, destinations and chunk tails */
  size_t nch = (size_t)h->nvec * h->nchunk;
  h->tstride = ((size_t)h->nchunk * sizeof(double) + 4 + 7) / 8 * 8; /* padding < nchunk values */
  h->npiece = rw_h5_plan(h, NULL);
  h->share = rw_h5_cpus() > 1;
  RW_CALL(
      rw_calloc(h->npiece ? h->npiece : 1, sizeof *h->piece, "checkpoint read pieces", &h->piece));
  rw_h5_plan(h, h->piece);
  RW_CALL(rw_calloc(nch, sizeof *h->caddr, "checkpoint read pieces", &h->caddr));
  RW_CALL(rw_calloc((size_t)h->nvec, sizeof *h->dst, "checkpoint read pieces", &h->dst));
  if (h->device) /* page-locked on a GPU */
    RW_CALL(rw_device_host_alloc(
        h->device, (size_t)h->nvec * (h->nloc ? h->nloc : 1) * sizeof(double), &h->hostv));
  if (h->device && h->want_dstage)
    RW_CALL(rw_device_alloc(h->device, (size_t)h->nvec * (h->nloc ? h->nloc : 1) * sizeof(double),
                            &h->dstage));
  RW_CALL(rw_calloc(nch, h->tstride, "checkpoint read pieces", &h->tailbuf));
  atomic_init(&h->dnext, 0);
  atomic_init(&h->dfail, 0);
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
                                   rw_h5_prefetch, rw_h5_sync, rw_h5_destroy, NULL};
  int ierr = 0, rank = 0, nranks = 1;
  rw_store st = NULL;
  rw_h5store *h = NULL;
  char path[4200];
  RW_CHECK(tmpl && out && opt && opt->dir && opt->run_id && nvec >= 1 &&
               (slots >= 1 || (opt->restart && slots == 0)),
           RW_ERR_ARG,
           "rw_store_create_hdf5: need a template, options with dir and run_id, nvec >= 1 and "
           "slots >= 1 (0 on restart: from the files) (got %d, %d)",
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
  /* Under the lock, as every HDF5 call here: another store's I/O thread may be in HDF5 now. */
  rw_hdf5_lock();
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  rw_hdf5_unlock();
  MPI_Comm comm = rw_vec_comm(tmpl);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  snprintf(path, sizeof path, "%s/rewind-ckpt-%s.%d-of-%d.h5", opt->dir, opt->run_id, rank, nranks);
  if (opt->restart && slots == 0) {
    /* the earlier run's slot count, from its files (every rank's should agree; a file that
     * is missing or says otherwise is reported when it is opened) */
    rw_hdf5_lock();
    slots = rw_h5_file_slots(path);
    rw_hdf5_unlock();
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &slots, 1, MPI_INT, MPI_MAX, comm));
    if (slots < 1) slots = 1;
  }
  RW_CALL(rw_store_alloc("hdf5", &ops, slots, nvec, (size_t)nvec * rw_vec_bytes(tmpl), &st));
  RW_TRY(rw_calloc(1, sizeof *h, "HDF5 checkpoint store", &h));
  st->content = h;
  h->file = h->snap = h->step = h->time = h->dt = h->qsum = h->stamp = h->times = -1;
  h->rfd = -1;
  h->wfd = -1;
  h->comm = comm;
  h->keep = opt->keep;
  h->nloc = (hsize_t)rw_vec_local_length(tmpl);
  h->device = rw_vec_device(tmpl);
  h->want_dstage = opt->device_staging;
  /* Chunks of at most 2^26 values (512 MiB; HDF5 caps a chunk at 4 GiB), all of one size. */
  hsize_t cmax = (hsize_t)1 << 26, nl = h->nloc > 0 ? h->nloc : 1;
  h->nchunk = (nl + cmax - 1) / cmax;
  h->cn = (nl + h->nchunk - 1) / h->nchunk;
  h->stride = ((size_t)h->cn * sizeof(double) + 4 + 4095) / 4096 * 4096;
  h->rank = rank;
  h->nranks = nranks;
  snprintf(h->dir, sizeof h->dir, "%s", opt->dir);
  snprintf(h->path, sizeof h->path, "%s", path);
  st->path = h->path;
  h->nvec = nvec;
  h->snapshot_bytes = st->snapshot_bytes;
  h->rslot = -1;
  rw_hdf5_lock();
  ierr = opt->restart ? rw_h5_reopen(st, opt) : rw_h5_open(st, opt);
  rw_hdf5_unlock();
  if (!ierr) ierr = rw_h5_start(h);
  ierr = rw_error_agree(h->comm, ierr);
  if (!ierr && !opt->restart) ierr = rw_error_agree(h->comm, rw_h5_space(st, opt->dir));
  if (ierr) goto cleanup;
  /* a restart holds the earlier run's files: kept on any failure until the run finishes */
  h->keep_final = opt->keep;
  if (opt->restart) h->keep = 1;
  *out = st;
  return 0;
cleanup:
  /* A new store that never held a snapshot leaves nothing behind; the files a failed restart
   * was given stay as they were. */
  if (h) h->keep = opt->restart ? 1 : 0;
  rw_store_destroy(&st);
  return ierr;
}

void rw_store_hdf5_keep(rw_store st)
{
  if (!st || strcmp(rw_store_kind(st), "hdf5") != 0) return;
  rw_h5store *h = st->content;
  h->keep = h->keep_final = 1;
}

void rw_store_hdf5_finished(rw_store st)
{
  if (!st || strcmp(rw_store_kind(st), "hdf5") != 0) return;
  rw_h5store *h = st->content;
  h->keep = h->keep_final;
}
