/* Parallel HDF5 result files and their XDMF sidecars (see rw_output.h). Every HDF5 call is
 * checked; HDF5's own error stack printing is switched off and replaced by a message naming
 * the file and dataset. Every public collective call ends by agreeing on failure across ranks
 * (rw_output_agree), so an I/O error on one rank is an error on all of them.
 *
 * The XDMF sidecar is written by rank 0 in rw_output_close from records kept as grid fields
 * are written (path, component names, grid size, origin, spacing, time). Its layout, checked
 * with ParaView 5.11 (both "XDMF Reader" and "Xdmf3ReaderS"):
 *  - every grid is a 3DCoRectMesh with ORIGIN_DXDYDZ geometry, values listed slowest first
 *    (z y x), as the readers expect; a 2-D grid is a single layer "1 ny nx" at z = 0 whose
 *    DataItems read the [ny][nx] datasets as "1 ny nx" (2DCoRectMesh puts the image in the
 *    y-z plane with the axes swapped in both readers);
 *  - snapshots form a temporal collection, one uniform grid per snapshot with its Time;
 *  - static fields registered with xdmf = 1 form one uniform grid per distinct grid geometry,
 *    and are also listed in every snapshot on the same grid: Xdmf3ReaderS shows only the
 *    temporal collection once one exists, so the gradient is visible next to the state. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* flock */
#include "rewind/rw_output.h"

#include "rewind/rw_device.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* One grid field (a static field or a snapshot) to list in the XDMF sidecar. */
typedef struct {
  char *group;    /* absolute HDF5 group holding one dataset per component */
  char **comp;    /* component names (ncomp entries) */
  int ncomp, dim; /* components; 2 or 3 */
  long n[3];      /* nodes per dimension, x first (n[2] = 1 in 2-D) */
  double lo[3], h[3];
  double time;
  int snapshot; /* 1: a step of the time series; 0: a static field */
} rw_xdmf_field;

struct rw_output_s {
  MPI_Comm comm;
  int rank;
  hid_t file;
  char path[4096], partial[4096 + 16];
  char xmf[4096 + 16], xmf_partial[4096 + 32];
  int lockfd;        /* rank 0: the partial file held under an exclusive flock (-1: none) */
  rw_xdmf_field *xf; /* XDMF records, grown by doubling */
  size_t nxf, capxf;
  long nsnap; /* snapshots written so far: the next one is /snapshots/<nsnap> */
};

/* HDF5 calls return negative on failure. */
#define RW_H5(expr, ...)                                                                           \
  do {                                                                                             \
    if ((expr) < 0) {                                                                              \
      ierr = RW_ERROR(RW_ERR_IO, __VA_ARGS__);                                                     \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

/* Room reserved ahead of every write. Closing an HDF5 file writes its cached metadata, and
 * HDF5 1.10 does not survive that failing: alone, the file is left half closed and its own
 * clean-up in MPI_Finalize closes it again and crashes (SIGSEGV in H5F__close_cb); on several
 * ranks, a rank whose share of the collective flush failed leaves it for another barrier than
 * the others (a hang). A free-space check before each write is not enough when something
 * else fills the disk meanwhile. So rank 0 reserves the space instead: before each dataset
 * (and after the file is created) it allocates the blocks from the file's end for the data
 * about to be written plus RW_OUTPUT_RESERVE bytes (fallocate with FALLOC_FL_KEEP_SIZE: real
 * blocks past the end, the size unchanged), so HDF5's writes land in blocks that are already
 * the file's and cannot fail for want of space; HDF5 cuts the file to its last byte in use when
 * it closes it. In parallel HDF5 dirty metadata is written at a sync point once it passes
 * 256 KiB (the metadata cache's default dirty_bytes_threshold), so 1 MiB covers what a close
 * writes. Where the file system cannot reserve (EOPNOTSUPP), a free-space check stands in. */
#define RW_OUTPUT_RESERVE (1 << 20)

/* HDF5's state after a close that failed anyway: the process must not let HDF5 close its
 * files again (rw_hdf5_mark_broken; the checkpoint store marks it too). */
int rw_output_unsafe(void) { return rw_hdf5_broken(); }

static int rw_output_space(rw_output f, double bytes, const char *what);

/* Rank 0: reserves `bytes` past the end of the partial file (held open as lockfd). 0, or the
 * errno of fallocate (EOPNOTSUPP: this file system cannot, or it is not the file HDF5 writes).
 * Not collective. */
static int rw_output_prealloc(rw_output f, double bytes)
{
  struct stat fs, ps;
  if (f->lockfd < 0 || fstat(f->lockfd, &fs) != 0) return EOPNOTSUPP;
  if (stat(f->partial, &ps) != 0 || ps.st_ino != fs.st_ino || ps.st_dev != fs.st_dev)
    return EOPNOTSUPP; /* not the file HDF5 writes */
  off_t end = fs.st_size;
  hsize_t h5 = 0;
  if (f->file >= 0 && H5Fget_filesize(f->file, &h5) >= 0 && (off_t)h5 > end) end = (off_t)h5;
  return rw_file_reserve(f->lockfd, (int64_t)end, (int64_t)bytes + RW_OUTPUT_RESERVE);
}

/* Agree across ranks on failure: an I/O error on one rank becomes an error on all, so no
 * rank waits in a collective call that the others skipped. */
static int rw_output_agree(rw_output f, int ierr)
{
  int any = ierr != 0, all = 0;
  if (MPI_Allreduce(&any, &all, 1, MPI_INT, MPI_MAX, f->comm) != MPI_SUCCESS)
    return RW_ERROR(RW_ERR_MPI, "MPI_Allreduce failed while writing '%s'", f->path);
  if (all && !ierr) return RW_ERROR(RW_ERR_IO, "writing '%s' failed on another rank", f->path);
  return ierr;
}

void rw_output_sidecar_path(const char *path, char *xmf, size_t size)
{
  size_t len = strlen(path);
  const char *sfx[] = {".h5", ".hdf5"};
  for (int s = 0; s < 2; s++) {
    size_t ls = strlen(sfx[s]);
    if (len > ls && strcmp(path + len - ls, sfx[s]) == 0 && path[len - ls - 1] != '/') {
      len -= ls;
      break;
    }
  }
  snprintf(xmf, size, "%.*s.xmf", (int)len, path);
}

/* Opens (creating it when missing, never truncating) the partial file of the result `path`
 * and takes an exclusive flock on it, so that two jobs given the same output cannot write one
 * partial file and rename each other's data into place: the lock lives as long as the
 * descriptor (the whole write, released by the kernel if the job dies). Returns the
 * descriptor (>= 0), -1 with msg set when it cannot be opened, or -2 with msg set when
 * another process holds the lock. A file system without flock (ENOLCK, EOPNOTSUPP) gives an
 * unlocked descriptor: the check is then skipped, not failed. */
static int rw_output_lock(const char *path, const char *partial, char *msg, size_t len)
{
  int fd = open(partial, O_RDWR | O_CREAT, 0644);
  if (fd < 0) {
    snprintf(msg, len, "output '%s': cannot create '%s': %s", path, partial, strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
    close(fd);
    snprintf(msg, len,
             "output '%s' is being written by another running job (it holds '%s'); give each "
             "run its own output path",
             path, partial);
    return -2;
  }
  return fd;
}

/* What stops a result from being written at `path`, as one line into msg ("" when
 * nothing does). Not collective: rank 0 asks, as it creates and renames the files. */
/* Open MPI 4.1's shared-file-pointer component (sharedfp/lockedfile) copies the name of every
 * file MPI opens, with a suffix, into a 256-byte buffer, and glibc aborts the process when it
 * is longer ("buffer overflow detected", measured from about 242 characters on; fixed upstream
 * in 2025, open-mpi/ompi#13565). The partial file's name must stay below this. */
#define RW_MPI_NAME_MAX 230

/* The message for a name the MPI library cannot open (see RW_MPI_NAME_MAX), or "". */
static void rw_output_name_problem(const char *given, const char *opened, char *msg, size_t len)
{
  msg[0] = '\0';
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
  size_t n = strlen(opened) + strlen(".partial");
  if (n > RW_MPI_NAME_MAX)
    snprintf(msg, len,
             "output '%s': the file MPI opens (%s%s%s.partial) has a name of %zu characters, "
             "longer than %d, on which Open MPI %d.%d aborts the job (a fixed buffer in its "
             "shared-file-pointer component); give a shorter path, e.g. a relative one from a "
             "working directory nearer the output",
             given, strcmp(given, opened) ? "'" : "the output", strcmp(given, opened) ? opened : "",
             strcmp(given, opened) ? "'" : "", n, RW_MPI_NAME_MAX, OMPI_MAJOR_VERSION,
             OMPI_MINOR_VERSION);
#else
  (void)given, (void)opened, (void)len;
#endif
}

static void rw_output_path_problem(const char *path, char *msg, size_t len)
{
  struct stat sb;
  char dir[4096], side[4096 + 16], partial[4096 + 32];
  size_t n = strlen(path);
  msg[0] = '\0';
  if (n == 0) {
    snprintf(msg, len, "output '': the result file name is empty");
    return;
  }
  if (n >= 4000) {
    snprintf(msg, len, "output '%.60s...': the path is too long (%zu characters)", path, n);
    return;
  }
  rw_output_name_problem(path, path, msg, len);
  if (msg[0]) return;
  if (path[n - 1] == '/') {
    snprintf(msg, len, "output '%s' names a directory; give a file name such as '%srewind.h5'",
             path, path);
    return;
  }
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    snprintf(msg, len,
             "output '%s' is an existing directory, so the result cannot be renamed onto it; "
             "give a file name such as '%s/rewind.h5'",
             path, path);
    return;
  }
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
    snprintf(msg, len, "output '%s' exists and is not a regular file", path);
    return;
  }
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    dir[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  if (stat(dir, &sb) != 0) {
    if (errno == ENOENT)
      snprintf(msg, len, "output '%s': directory '%s' does not exist", path, dir);
    else
      snprintf(msg, len, "output '%s': directory '%s' cannot be used: %s", path, dir,
               strerror(errno));
    return;
  }
  if (!S_ISDIR(sb.st_mode)) {
    snprintf(msg, len, "output '%s': '%s' is not a directory", path, dir);
    return;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(msg, len, "output '%s': directory '%s' is not writable (%s)", path, dir,
             strerror(errno));
    return;
  }
  /* The sidecar and both partial files must not be directories either (the run would fail
   * at its very end, renaming them). */
  rw_output_sidecar_path(path, side, sizeof side);
  const char *names[3] = {side, NULL, NULL};
  char side_partial[4096 + 32];
  snprintf(partial, sizeof partial, "%s.partial", path);
  snprintf(side_partial, sizeof side_partial, "%s.partial", side);
  names[1] = partial;
  names[2] = side_partial;
  for (int i = 0; i < 3; i++)
    if (stat(names[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
      snprintf(msg, len, "output '%s': '%s', which the run writes, is an existing directory", path,
               names[i]);
      return;
    }
  /* Create and lock the partial file as the run will (a leftover one is kept as it is: the
   * run truncates it; one another job holds is refused). Permission bits do not stop root,
   * but this does reach a read-only or full file system. */
  int existed = stat(partial, &sb) == 0;
  int fd = rw_output_lock(path, partial, msg, len);
  if (fd < 0) return;
  close(fd);
  if (!existed) unlink(partial);
}

/* Checks, before any work, that a result file can be written at `path`: not an existing
 * directory (or anything but a regular file), its directory exists and is writable, its
 * partial file can be created (and is removed again), and neither it nor the XDMF sidecar
 * and its partial file are in the way as directories. Collective on comm: rank 0 checks and
 * broadcasts its finding, so every rank returns the same code and message.
 *   comm  the ranks that will write the file
 *   path  the result file path
 * Returns 0, or RW_ERR_IO with one line naming the path and what is wrong. */
int rw_output_check_path(MPI_Comm comm, const char *path)
{
  char msg[9000] = "";
  int rank = 0;
  RW_CHECK(path, RW_ERR_ARG, "rw_output_check_path: path is NULL");
  RW_CALL_MPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) rw_output_path_problem(path, msg, sizeof msg);
  RW_CALL_MPI(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, 0, comm));
  RW_CHECK(!msg[0], RW_ERR_IO, "%s", msg);
  return 0;
}

/* The result path every rank opens. When the ranks run in different working directories (an
 * MPMD launch with a --wdir each), a relative `path` is made absolute against rank 0's (a
 * leading "./" dropped) and broadcast, so that they open one file, the one rank 0 checked and
 * locks, instead of each its own in a collective create that never completes. Otherwise the
 * path is kept as given: Open MPI 4.1's shared-file-pointer component copies the file name
 * into a 256-byte buffer and aborts the process on a longer one, which a relative name in a
 * deep scratch directory would become once made absolute. Collective on comm.
 *   abs  out: the path (len bytes, at least 4096) */
static int rw_output_resolve(MPI_Comm comm, const char *path, char *abs, size_t len)
{
  char msg[9000] = "";
  int rank = 0;
  RW_CALL_MPI(MPI_Comm_rank(comm, &rank));
  /* the same working directory on every rank: rank 0's (device, inode) against each rank's */
  struct stat here;
  unsigned long long id[2] = {0, 0}, mine[2] = {0, 0};
  int differs = stat(".", &here) != 0;
  if (!differs)
    mine[0] = (unsigned long long)here.st_dev, mine[1] = (unsigned long long)here.st_ino;
  if (rank == 0) id[0] = mine[0], id[1] = mine[1];
  RW_CALL_MPI(MPI_Bcast(id, 2, MPI_UNSIGNED_LONG_LONG, 0, comm));
  differs = differs || id[0] != mine[0] || id[1] != mine[1];
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &differs, 1, MPI_INT, MPI_LOR, comm));
  if (!differs || path[0] == '/') {
    snprintf(abs, len, "%s", path);
    return 0;
  }
  if (rank == 0) {
    char cwd[4096];
    const char *rel = path;
    while (rel[0] == '.' && rel[1] == '/') {
      rel += 2;
      while (*rel == '/')
        rel++;
    }
    if (path[0] == '/')
      snprintf(abs, len, "%s", path);
    else if (!getcwd(cwd, sizeof cwd))
      snprintf(msg, sizeof msg,
               "output '%s': the working directory of rank 0 cannot be read (%s), so the "
               "relative path cannot be resolved; give an absolute path",
               path, strerror(errno));
    else {
      /* made absolute: too long for abs (or the 4000 characters the check allows) is an error */
      const int n = snprintf(abs, len, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", rel);
      if (n < 0 || (size_t)n >= len || n >= 4000)
        snprintf(msg, sizeof msg,
                 "output '%s': the path is too long once made absolute (%zu characters)", path,
                 strlen(cwd) + strlen(rel) + 1);
      else
        rw_output_name_problem(path, abs, msg, sizeof msg);
    }
  }
  RW_CALL_MPI(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, 0, comm));
  RW_CHECK(!msg[0], RW_ERR_IO, "%s", msg);
  RW_CALL_MPI(MPI_Bcast(abs, (int)len, MPI_CHAR, 0, comm));
  return 0;
}

int rw_output_create(MPI_Comm comm, const char *given, rw_output *out)
{
  int ierr = 0;
  rw_output f = NULL;
  hid_t fapl = -1;
  char path[4096];
  RW_CHECK(given && *given && out, RW_ERR_ARG, "rw_output_create: empty output path");
  *out = NULL;
  RW_CHECK(strlen(given) < 4000, RW_ERR_ARG, "output path is too long (%zu characters)",
           strlen(given));
  RW_CALL(rw_output_resolve(comm, given, path, sizeof path));
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  RW_CALL(rw_calloc(1, sizeof *f, "output file", &f));
  f->comm = comm;
  f->file = -1;
  f->lockfd = -1;
  int locked_out = 0; /* another job holds the partial file: leave it alone */
  MPI_Comm_rank(comm, &f->rank);
  snprintf(f->path, sizeof f->path, "%s", path);
  snprintf(f->partial, sizeof f->partial, "%s.partial", path);
  rw_output_sidecar_path(path, f->xmf, sizeof f->xmf);
  snprintf(f->xmf_partial, sizeof f->xmf_partial, "%s.partial", f->xmf);
  /* Check the directory first so the message says what to fix. */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    dir[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  struct stat sb;
  int dir_ok = 1;
  if (f->rank == 0) {
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      ierr = RW_ERROR(RW_ERR_IO, "output file '%s': directory '%s' does not exist", path, dir);
      dir_ok = 0;
    } else if (access(dir, W_OK) != 0) {
      ierr = RW_ERROR(RW_ERR_IO, "output file '%s': directory '%s' is not writable (%s)", path, dir,
                      strerror(errno));
      dir_ok = 0;
    }
  }
  RW_CHECK_GOTO(MPI_Bcast(&dir_ok, 1, MPI_INT, 0, comm) == MPI_SUCCESS, RW_ERR_MPI,
                "MPI_Bcast failed while creating '%s'", path);
  if (!dir_ok) {
    if (f->rank != 0)
      ierr =
          RW_ERROR(RW_ERR_IO, "output file '%s': its directory is missing or not writable", path);
    goto cleanup;
  }
  if (f->rank == 0) {
    char msg[1024];
    f->lockfd = rw_output_lock(path, f->partial, msg, sizeof msg);
    if (f->lockfd < 0) {
      locked_out = f->lockfd == -2;
      ierr = RW_ERROR(RW_ERR_IO, "%s", msg);
    } else {
      struct statvfs sv; /* the room its close needs (a full disk: before HDF5 writes) */
      double avail = statvfs(dir, &sv) == 0 ? (double)sv.f_bavail * (double)sv.f_frsize : -1.0;
      if (avail >= 0.0 && avail < RW_OUTPUT_RESERVE)
        ierr = RW_ERROR(RW_ERR_IO,
                        "not enough free space for '%s': a result needs at least %d KiB free "
                        "besides its data (kept for closing the file cleanly), %.0f bytes are "
                        "available on its file system",
                        path, RW_OUTPUT_RESERVE >> 10, avail);
    }
  }
  /* one rank's failure is every rank's before the collective create */
  ierr = rw_output_agree(f, ierr);
  if (ierr) goto cleanup;
  RW_H5(fapl = H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate failed");
  RW_H5(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), "H5Pset_fapl_mpio failed");
  RW_H5(f->file = H5Fcreate(f->partial, H5F_ACC_TRUNC, H5P_DEFAULT, fapl),
        "cannot create HDF5 file '%s' (check the path, permissions and free space)", f->partial);
  ierr = rw_output_space(f, 0.0, "its first metadata"); /* the room its close needs */
cleanup:
  if (fapl >= 0) H5Pclose(fapl);
  /* H5Fcreate is collective, but it can fail on some ranks only (a full or read-only file
   * system seen differently by the nodes): every rank must agree before using the file. */
  if (dir_ok) ierr = rw_output_agree(f, ierr);
  if (ierr) {
    if (f->file >= 0 && H5Fclose(f->file) < 0) rw_hdf5_mark_broken();
    if (dir_ok) {
      MPI_Barrier(comm);
      if (f->rank == 0 && !locked_out) remove(f->partial);
    }
    if (f->lockfd >= 0) close(f->lockfd);
    rw_free(&f);
    return ierr;
  }
  *out = f;
  return 0;
}

static void rw_output_free_records(rw_output f)
{
  for (size_t i = 0; i < f->nxf; i++) {
    rw_xdmf_field *x = &f->xf[i];
    for (int c = 0; c < x->ncomp; c++)
      rw_free(&x->comp[c]);
    rw_free(&x->comp);
    rw_free(&x->group);
  }
  rw_free(&f->xf);
  f->nxf = f->capxf = 0;
}

static int rw_xdmf_write(rw_output f, const char *file);

/* Rank 0, after every rank closed the HDF5 file: writes the sidecar as "<xmf>.partial",
 * renames the HDF5 file, then the sidecar. The HDF5 file is the result and is complete here,
 * so it is kept even when its sidecar (a ParaView index of it) cannot be written or renamed:
 * that is reported as an error saying so, the partial sidecar is removed, and so is a sidecar
 * left by an earlier run at the same path (it would describe another file). A failed rename
 * of the HDF5 file removes both partial files. Without grid fields no sidecar is written, and
 * one left by an earlier run is removed (it would describe datasets this file lacks). */
static int rw_output_finish(rw_output f)
{
  int ierr = 0, have_xmf = f->nxf > 0, xerr = 0;
  char xmsg[8400] = "";
  if (have_xmf) {
    xerr = rw_xdmf_write(f, f->xmf_partial);
    if (xerr) {
      snprintf(xmsg, sizeof xmsg, "%s", rw_error_message());
      rw_error_clear();
      remove(f->xmf_partial);
    }
  }
  if (rename(f->partial, f->path) != 0) {
    ierr = RW_ERROR(RW_ERR_IO, "renaming '%s' to '%s' failed: %s", f->partial, f->path,
                    strerror(errno));
    remove(f->partial);
    if (have_xmf) remove(f->xmf_partial);
    return ierr;
  }
  if (have_xmf && !xerr && rename(f->xmf_partial, f->xmf) != 0) {
    xerr = RW_ERR_IO;
    snprintf(xmsg, sizeof xmsg, "renaming '%s' to '%s' failed: %s", f->xmf_partial, f->xmf,
             strerror(errno));
    remove(f->xmf_partial);
  }
  if (xerr) {
    if (unlink(f->xmf) != 0 && errno != ENOENT) {
      /* an earlier run's sidecar stays beside a new result: say so */
      return RW_ERROR(xerr,
                      "the result '%s' is complete and kept, but its XDMF sidecar '%s' "
                      "could not be written (%s), and the earlier sidecar there could not be "
                      "removed (%s): it does not describe this result",
                      f->path, f->xmf, xmsg, strerror(errno));
    }
    return RW_ERROR(xerr,
                    "the result '%s' is complete and kept, but its XDMF sidecar '%s' "
                    "for ParaView could not be written: %s",
                    f->path, f->xmf, xmsg);
  }
  if (!have_xmf && unlink(f->xmf) != 0 && errno != ENOENT) {
    ierr = RW_ERROR(RW_ERR_IO,
                    "cannot remove the stale XDMF file '%s' left by an earlier run: %s (the "
                    "result '%s' was removed)",
                    f->xmf, strerror(errno), f->path);
    remove(f->path);
  }
  return ierr;
}

int rw_output_close(rw_output *pf, int success)
{
  int ierr = 0;
  if (!pf || !*pf) return 0;
  rw_output f = *pf;
  if (f->file >= 0) {
    if (success && H5Fflush(f->file, H5F_SCOPE_GLOBAL) < 0)
      ierr = RW_ERROR(RW_ERR_IO, "flushing '%s' failed (disk full?)", f->partial);
    if (H5Fclose(f->file) < 0) {
      rw_hdf5_mark_broken();
      if (!ierr) ierr = RW_ERROR(RW_ERR_IO, "closing '%s' failed (disk full?)", f->partial);
    }
    f->file = -1;
  }
  if (success) ierr = rw_output_agree(f, ierr);
  MPI_Barrier(f->comm);
  if (f->rank == 0) {
    if (success && !ierr) {
      ierr = rw_output_finish(f);
    } else {
      remove(f->partial);
      remove(f->xmf_partial);
    }
    if (f->lockfd >= 0) close(f->lockfd); /* after the rename: releases the lock */
    f->lockfd = -1;
  }
  int e = ierr;
  if (MPI_Bcast(&e, 1, MPI_INT, 0, f->comm) != MPI_SUCCESS && !ierr)
    ierr = RW_ERROR(RW_ERR_MPI, "MPI_Bcast failed while finishing '%s'", f->path);
  if (e && !ierr) ierr = RW_ERROR(e, "finishing '%s' failed on rank 0", f->path);
  rw_output_free_records(f);
  rw_free(pf);
  return ierr;
}

const char *rw_output_path(rw_output f) { return f->path; }

const char *rw_output_xdmf_path(rw_output f) { return f->xmf; }

long rw_output_snapshot_count(rw_output f) { return f->nsnap; }

int rw_output_group(rw_output f, const char *path)
{
  int ierr = 0;
  hid_t lcpl = -1, g = -1;
  /* H5Lexists fails (negative) when a parent is missing: then the group is created too. */
  if (H5Lexists(f->file, path, H5P_DEFAULT) > 0) return rw_output_agree(f, 0);
  RW_H5(lcpl = H5Pcreate(H5P_LINK_CREATE), "H5Pcreate failed");
  RW_H5(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group failed");
  RW_H5(g = H5Gcreate2(f->file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT),
        "cannot create group '%s' in '%s'", path, f->partial);
cleanup:
  if (g >= 0) H5Gclose(g);
  if (lcpl >= 0) H5Pclose(lcpl);
  return rw_output_agree(f, ierr);
}

static int rw_output_attr(rw_output f, const char *obj, const char *name, hid_t type, const void *v)
{
  int ierr = 0;
  hid_t space = -1, attr = -1;
  RW_H5(space = H5Screate(H5S_SCALAR), "H5Screate failed");
  htri_t exists = H5Aexists_by_name(f->file, obj, name, H5P_DEFAULT);
  RW_CHECK_GOTO(exists >= 0, RW_ERR_IO, "no object '%s' in '%s' to hold attribute '%s'", obj,
                f->partial, name);
  if (exists > 0)
    RW_H5(H5Adelete_by_name(f->file, obj, name, H5P_DEFAULT),
          "cannot replace attribute '%s' on '%s' in '%s'", name, obj, f->partial);
  RW_H5(attr = H5Acreate_by_name(f->file, obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT,
                                 H5P_DEFAULT),
        "cannot create attribute '%s' on '%s' in '%s'", name, obj, f->partial);
  RW_H5(H5Awrite(attr, type, v), "cannot write attribute '%s' in '%s'", name, f->partial);
cleanup:
  if (attr >= 0) H5Aclose(attr);
  if (space >= 0) H5Sclose(space);
  return ierr;
}

int rw_output_attr_double(rw_output f, const char *obj, const char *name, double v)
{
  return rw_output_agree(f, rw_output_attr(f, obj, name, H5T_NATIVE_DOUBLE, &v));
}

int rw_output_attr_long(rw_output f, const char *obj, const char *name, long v)
{
  return rw_output_agree(f, rw_output_attr(f, obj, name, H5T_NATIVE_LONG, &v));
}

int rw_output_attr_string(rw_output f, const char *obj, const char *name, const char *v)
{
  int ierr = 0;
  hid_t type = -1;
  RW_H5(type = H5Tcopy(H5T_C_S1), "H5Tcopy failed");
  RW_H5(H5Tset_size(type, strlen(v) + 1), "H5Tset_size failed");
  RW_TRY(rw_output_attr(f, obj, name, type, v));
cleanup:
  if (type >= 0) H5Tclose(type);
  return rw_output_agree(f, ierr);
}

/* Before HDF5 writes `bytes` more: reserves them (plus 5 % for chunk checksums and metadata, and
 * RW_OUTPUT_RESERVE for the close) past the file's end, so that no write HDF5 makes can find
 * the disk full (see RW_OUTPUT_RESERVE); where the file system cannot reserve, checks its free
 * space instead. Out of space: RW_ERR_IO with a message naming the file, before the write.
 * Collective (rank 0 reserves, everyone agrees). */
static int rw_output_space(rw_output f, double bytes, const char *what)
{
  double st[2] = {0.0, -1.0}; /* fallocate's errno, the free bytes */
  if (f->rank == 0) {
    st[0] = (double)rw_output_prealloc(f, 1.05 * bytes);
    struct statvfs sv;
    if (st[0] != 0.0 && statvfs(f->partial, &sv) == 0)
      st[1] = (double)sv.f_bavail * (double)sv.f_frsize;
  }
  RW_CALL_MPI(MPI_Bcast(st, 2, MPI_DOUBLE, 0, f->comm));
  const int e = (int)st[0];
  const double need = 1.05 * bytes + RW_OUTPUT_RESERVE, avail = st[1];
  if (e == 0) return 0; /* reserved */
  /* out of space: refused; any other failure (a file system that cannot reserve, whatever
   * errno it says it with): the free-space check stands in */
  const int full = e == ENOSPC || e == EDQUOT || e == EFBIG;
  RW_CHECK(!full && (avail < 0.0 || avail >= need), RW_ERR_IO,
           "not enough free space for '%s': writing %s needs about %.0f bytes (%d KiB of them "
           "kept free for closing the file cleanly), %.0f are available on its file system",
           f->path, what, need, RW_OUTPUT_RESERVE >> 10, avail);
  return 0;
}

/* Creates a chunked, checksummed dataset of `rank` dims (maxdims may be unlimited). */
static int rw_output_dataset(rw_output f, const char *path, int rank, const hsize_t *dims,
                             const hsize_t *maxdims, const hsize_t *chunk, hid_t *out)
{
  int ierr = 0;
  hid_t space = -1, dcpl = -1, lcpl = -1;
  *out = -1;
  double bytes = 8.0;
  for (int e = 0; e < rank; e++)
    bytes *= (double)(dims[e] > 0 ? dims[e] : chunk[e]);
  RW_CALL(rw_output_space(f, bytes, path));
  RW_H5(space = H5Screate_simple(rank, dims, maxdims), "H5Screate_simple failed");
  RW_H5(dcpl = H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate failed");
  RW_H5(H5Pset_chunk(dcpl, rank, chunk), "H5Pset_chunk failed");
  RW_H5(H5Pset_fletcher32(dcpl), "H5Pset_fletcher32 failed");
  RW_H5(lcpl = H5Pcreate(H5P_LINK_CREATE), "H5Pcreate failed");
  RW_H5(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group failed");
  RW_H5(*out = H5Dcreate2(f->file, path, H5T_NATIVE_DOUBLE, space, lcpl, dcpl, H5P_DEFAULT),
        "cannot create dataset '%s' in '%s'", path, f->partial);
cleanup:
  if (lcpl >= 0) H5Pclose(lcpl);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  return ierr;
}

/* Collective write of `count` values at `offset` of row `row` (row < 0: 1-D dataset). */
static int rw_output_write_block(rw_output f, hid_t dset, long row, hsize_t offset, hsize_t count,
                                 const double *v)
{
  int ierr = 0;
  hid_t fspace = -1, mspace = -1, dxpl = -1;
  int nd = row < 0 ? 1 : 2;
  hsize_t start[2], cnt[2];
  if (nd == 1) {
    start[0] = offset, cnt[0] = count;
  } else {
    start[0] = (hsize_t)row, start[1] = offset, cnt[0] = 1, cnt[1] = count;
  }
  RW_H5(fspace = H5Dget_space(dset), "H5Dget_space failed");
  if (count > 0) {
    RW_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, cnt, NULL),
          "H5Sselect_hyperslab failed");
  } else {
    RW_H5(H5Sselect_none(fspace), "H5Sselect_none failed");
  }
  hsize_t mc = count;
  RW_H5(mspace = H5Screate_simple(1, &mc, NULL), "H5Screate_simple failed");
  if (count == 0) RW_H5(H5Sselect_none(mspace), "H5Sselect_none failed");
  RW_H5(dxpl = H5Pcreate(H5P_DATASET_XFER), "H5Pcreate failed");
  RW_H5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio failed");
  RW_H5(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, v),
        "writing a dataset of '%s' failed (disk full?)", f->partial);
cleanup:
  if (dxpl >= 0) H5Pclose(dxpl);
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
  return ierr;
}

static hsize_t rw_chunk_len(hsize_t n)
{
  hsize_t c = n < 65536 ? n : 65536;
  return c ? c : 1;
}

int rw_output_array(rw_output f, const char *path, const double *v, long n)
{
  int ierr = 0;
  hid_t d = -1;
  hsize_t dims = (hsize_t)n, chunk = rw_chunk_len(dims);
  RW_TRY(rw_output_dataset(f, path, 1, &dims, NULL, &chunk, &d));
  /* Every rank holds the values; rank 0 writes them, the others join the collective call. */
  RW_TRY(rw_output_write_block(f, d, -1, 0, f->rank == 0 ? dims : 0, v));
cleanup:
  if (d >= 0 && H5Dclose(d) < 0 && !ierr)
    ierr =
        RW_ERROR(RW_ERR_IO, "closing dataset '%s' of '%s' failed (disk full?)", path, f->partial);
  return rw_output_agree(f, ierr);
}

static int rw_vector_offset(rw_output f, N_Vector v, hsize_t *offset)
{
  long long loc = (long long)rw_vec_local_length(v), off = 0;
  RW_CALL_MPI(MPI_Exscan(&loc, &off, 1, MPI_LONG_LONG, MPI_SUM, f->comm));
  *offset = f->rank == 0 ? 0 : (hsize_t)off;
  return 0;
}

int rw_output_vector(rw_output f, const char *path, N_Vector v)
{
  int ierr = 0;
  hid_t d = -1;
  hsize_t dims = (hsize_t)rw_vec_global_length(v), chunk = rw_chunk_len(dims), off = 0;
  const double *src = NULL;
  double *tmp = NULL; /* a device vector's host copy */
  RW_TRY(rw_vec_host_read(v, &src, &tmp));
  RW_TRY(rw_vector_offset(f, v, &off));
  RW_TRY(rw_output_dataset(f, path, 1, &dims, NULL, &chunk, &d));
  RW_TRY(rw_output_write_block(f, d, -1, off, (hsize_t)rw_vec_local_length(v), src));
cleanup:
  rw_free(&tmp);
  if (d >= 0 && H5Dclose(d) < 0 && !ierr)
    ierr =
        RW_ERROR(RW_ERR_IO, "closing dataset '%s' of '%s' failed (disk full?)", path, f->partial);
  return rw_output_agree(f, ierr);
}

int rw_output_series_append(rw_output f, const char *path, double t, N_Vector v)
{
  int ierr = 0;
  hid_t d = -1, dt = -1, sp = -1;
  char tpath[4200];
  snprintf(tpath, sizeof tpath, "%s_t", path);
  hsize_t n = (hsize_t)rw_vec_global_length(v), off = 0, rows = 0;
  const double *src = NULL;
  double *tmp = NULL; /* a device vector's host copy */
  RW_TRY(rw_vec_host_read(v, &src, &tmp));
  RW_TRY(rw_vector_offset(f, v, &off));
  if (H5Lexists(f->file, path, H5P_DEFAULT) > 0) {
    RW_H5(d = H5Dopen2(f->file, path, H5P_DEFAULT), "cannot open '%s'", path);
    RW_H5(dt = H5Dopen2(f->file, tpath, H5P_DEFAULT), "cannot open '%s'", tpath);
    hsize_t dims[2];
    RW_H5(sp = H5Dget_space(d), "H5Dget_space failed");
    RW_H5(H5Sget_simple_extent_dims(sp, dims, NULL), "H5Sget_simple_extent_dims failed");
    rows = dims[0];
    RW_TRY(rw_output_space(f, 8.0 * (double)(n + 1), path));
  } else {
    hsize_t dims[2] = {0, n}, maxd[2] = {H5S_UNLIMITED, n};
    hsize_t chunk[2] = {1, rw_chunk_len(n)}, d1 = 0, m1 = H5S_UNLIMITED, c1 = 256;
    RW_TRY(rw_output_dataset(f, path, 2, dims, maxd, chunk, &d));
    RW_TRY(rw_output_dataset(f, tpath, 1, &d1, &m1, &c1, &dt));
  }
  hsize_t nd[2] = {rows + 1, n}, nt = rows + 1;
  RW_H5(H5Dset_extent(d, nd), "extending '%s' failed", path);
  RW_H5(H5Dset_extent(dt, &nt), "extending '%s' failed", tpath);
  RW_TRY(rw_output_write_block(f, d, (long)rows, off, (hsize_t)rw_vec_local_length(v), src));
  RW_TRY(rw_output_write_block(f, dt, -1, rows, f->rank == 0 ? 1 : 0, &t));
cleanup:
  rw_free(&tmp);
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0 && H5Dclose(d) < 0 && !ierr)
    ierr =
        RW_ERROR(RW_ERR_IO, "closing dataset '%s' of '%s' failed (disk full?)", path, f->partial);
  if (dt >= 0 && H5Dclose(dt) < 0 && !ierr)
    ierr =
        RW_ERROR(RW_ERR_IO, "closing dataset '%s' of '%s' failed (disk full?)", tpath, f->partial);
  return rw_output_agree(f, ierr);
}

/* Writes component c of a grid field into a dataset shaped like the grid. */
static int rw_output_grid_component(rw_output f, const char *path, rw_grid g, N_Vector v, int c)
{
  int ierr = 0;
  hid_t d = -1, fspace = -1, mspace = -1, dxpl = -1, as = -1, at = -1;
  const rw_grid_config *cf = rw_grid_get_config(g);
  int D = cf->dim, nc = cf->ncomp;
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  hsize_t dims[3], start[3], count[3], chunk[3];
  for (int e = 0; e < D; e++) { /* HDF5 order: slowest first (z, y, x) */
    dims[e] = (hsize_t)cf->n[D - 1 - e];
    start[e] = (hsize_t)st[D - 1 - e];
    count[e] = (hsize_t)cnt[D - 1 - e];
    chunk[e] = dims[e] < 64 ? dims[e] : 64;
  }
  double *buf = NULL, *tmp = NULL, h[3];
  size_t nloc = (size_t)cnt[0] * (size_t)cnt[1] * (size_t)cnt[2];
  RW_TRY(rw_calloc(nloc + 1, sizeof(double), "field output buffer", &buf));
  const double *src = NULL;
  RW_TRY(rw_vec_host_read(v, &src, &tmp)); /* a device vector's host copy */
  for (size_t m = 0; m < nloc; m++)
    buf[m] = src[m * (size_t)nc + (size_t)c];
  rw_free(&tmp);
  RW_TRY(rw_output_dataset(f, path, D, dims, NULL, chunk, &d));
  RW_H5(fspace = H5Dget_space(d), "H5Dget_space failed");
  RW_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL),
        "H5Sselect_hyperslab failed");
  RW_H5(mspace = H5Screate_simple(D, count, NULL), "H5Screate_simple failed");
  RW_H5(dxpl = H5Pcreate(H5P_DATASET_XFER), "H5Pcreate failed");
  RW_H5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio failed");
  RW_H5(H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf),
        "writing field '%s' of '%s' failed (disk full?)", path, f->partial);
  rw_grid_spacing(g, h);
  hsize_t three = 3;
  RW_H5(as = H5Screate_simple(1, &three, NULL), "H5Screate_simple failed");
  RW_H5(at = H5Acreate2(d, "origin_xyz", H5T_NATIVE_DOUBLE, as, H5P_DEFAULT, H5P_DEFAULT),
        "cannot create attribute origin_xyz on '%s' in '%s'", path, f->partial);
  RW_H5(H5Awrite(at, H5T_NATIVE_DOUBLE, cf->lo), "cannot write attribute origin_xyz on '%s'", path);
  RW_H5(H5Aclose(at), "H5Aclose failed");
  RW_H5(at = H5Acreate2(d, "spacing_xyz", H5T_NATIVE_DOUBLE, as, H5P_DEFAULT, H5P_DEFAULT),
        "cannot create attribute spacing_xyz on '%s' in '%s'", path, f->partial);
  RW_H5(H5Awrite(at, H5T_NATIVE_DOUBLE, h), "cannot write attribute spacing_xyz on '%s'", path);
cleanup:
  if (at >= 0) H5Aclose(at);
  if (as >= 0) H5Sclose(as);
  if (dxpl >= 0) H5Pclose(dxpl);
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
  if (d >= 0 && H5Dclose(d) < 0 && !ierr)
    ierr = RW_ERROR(RW_ERR_IO, "closing field '%s' of '%s' failed (disk full?)", path, f->partial);
  rw_free(&buf);
  return ierr;
}

/* Name of component c: the caller's, or "u" (one component) / "u<c>" (several). */
static void rw_comp_name(const char *const *comp_names, int ncomp, int c, char *buf, size_t size)
{
  if (comp_names && comp_names[c])
    snprintf(buf, size, "%s", comp_names[c]);
  else if (ncomp == 1)
    snprintf(buf, size, "u");
  else
    snprintf(buf, size, "u%d", c);
}

static int rw_strdup(const char *s, const char *what, char **out)
{
  size_t n = strlen(s) + 1;
  RW_CALL(rw_calloc(n, 1, what, out));
  memcpy(*out, s, n);
  return 0;
}

/* Records a grid field for the XDMF sidecar (group made absolute, trailing '/' dropped). */
static int rw_xdmf_record(rw_output f, const char *group, rw_grid g, const char *const *comp_names,
                          double t, int snapshot)
{
  int ierr = 0;
  const rw_grid_config *cf = rw_grid_get_config(g);
  if (f->nxf == f->capxf) {
    size_t cap = f->capxf ? 2 * f->capxf : 16;
    rw_xdmf_field *nx = NULL;
    RW_CALL(rw_calloc(cap, sizeof *nx, "XDMF field records", &nx));
    if (f->nxf) memcpy(nx, f->xf, f->nxf * sizeof *nx);
    rw_free(&f->xf);
    f->xf = nx;
    f->capxf = cap;
  }
  rw_xdmf_field *x = &f->xf[f->nxf];
  memset(x, 0, sizeof *x);
  char name[4200];
  size_t len = strlen(group);
  while (len > 1 && group[len - 1] == '/')
    len--;
  snprintf(name, sizeof name, "%s%.*s", group[0] == '/' ? "" : "/", (int)len, group);
  RW_TRY(rw_strdup(name, "XDMF field path", &x->group));
  RW_TRY(rw_calloc((size_t)cf->ncomp, sizeof(char *), "XDMF component names", &x->comp));
  x->ncomp = cf->ncomp;
  for (int c = 0; c < cf->ncomp; c++) {
    rw_comp_name(comp_names, cf->ncomp, c, name, sizeof name);
    RW_TRY(rw_strdup(name, "XDMF component name", &x->comp[c]));
  }
  x->dim = cf->dim;
  rw_grid_spacing(g, x->h);
  for (int e = 0; e < 3; e++) {
    x->n[e] = e < cf->dim ? cf->n[e] : 1;
    x->lo[e] = e < cf->dim ? cf->lo[e] : 0.0;
    if (e >= cf->dim) x->h[e] = 1.0;
  }
  x->time = t;
  x->snapshot = snapshot;
  f->nxf++;
  return 0;
cleanup:
  if (x->comp)
    for (int c = 0; c < x->ncomp; c++)
      rw_free(&x->comp[c]);
  rw_free(&x->comp);
  rw_free(&x->group);
  memset(x, 0, sizeof *x);
  return ierr;
}

/* Writes every component of a grid field (not agreed: callers do). */
static int rw_output_grid_write(rw_output f, const char *path, rw_grid g, N_Vector v,
                                const char *const *comp_names)
{
  const rw_grid_config *cf = rw_grid_get_config(g);
  RW_CHECK(path && *path, RW_ERR_ARG, "grid field: empty dataset path in '%s'", f->path);
  RW_CHECK(v && rw_vec_local_length(v) == rw_grid_local_length(g), RW_ERR_ARG,
           "grid field '%s': the vector holds %ld local entries, the grid %ld", path,
           v ? (long)rw_vec_local_length(v) : -1L, (long)rw_grid_local_length(g));
  for (int c = 0; c < cf->ncomp; c++) {
    char name[256], p[4400];
    if (comp_names && comp_names[c])
      RW_CHECK(*comp_names[c] && !strchr(comp_names[c], '/') && strlen(comp_names[c]) < 200,
               RW_ERR_ARG, "grid field '%s': component name '%s' is empty, too long or has '/'",
               path, comp_names[c]);
    rw_comp_name(comp_names, cf->ncomp, c, name, sizeof name);
    snprintf(p, sizeof p, "%s/%s", path, name);
    RW_CALL(rw_output_grid_component(f, p, g, v, c));
  }
  return 0;
}

int rw_output_grid_field(rw_output f, const char *path, rw_grid g, N_Vector v,
                         const char *const *comp_names, int xdmf)
{
  int ierr = rw_output_grid_write(f, path, g, v, comp_names);
  if (!ierr && xdmf) ierr = rw_xdmf_record(f, path, g, comp_names, 0.0, 0);
  return rw_output_agree(f, ierr);
}

int rw_output_grid_snapshot(rw_output f, rw_grid g, double t, N_Vector v,
                            const char *const *comp_names)
{
  char p[64];
  snprintf(p, sizeof p, "/snapshots/%06ld", f->nsnap);
  int ierr = rw_output_grid_write(f, p, g, v, comp_names);
  ierr = rw_output_agree(f, ierr);
  if (!ierr) ierr = rw_output_attr_double(f, p, "time", t);
  if (!ierr) ierr = rw_output_agree(f, rw_xdmf_record(f, p, g, comp_names, t, 1));
  if (!ierr) f->nsnap++;
  return ierr;
}

/* --- XDMF sidecar ------------------------------------------------------------------- */

/* Writes `s` with the XML special characters escaped. */
static void rw_xml_put(FILE *fp, const char *s)
{
  for (; *s; s++) {
    switch (*s) {
    case '&':
      fputs("&amp;", fp);
      break;
    case '<':
      fputs("&lt;", fp);
      break;
    case '>':
      fputs("&gt;", fp);
      break;
    case '"':
      fputs("&quot;", fp);
      break;
    case '\'':
      fputs("&apos;", fp);
      break;
    default:
      fputc(*s, fp);
    }
  }
}

static int rw_same_grid(const rw_xdmf_field *a, const rw_xdmf_field *b)
{
  for (int e = 0; e < 3; e++)
    if (a->n[e] != b->n[e] || a->lo[e] != b->lo[e] || a->h[e] != b->h[e]) return 0;
  return a->dim == b->dim;
}

/* Topology and geometry of a grid: 3DCoRectMesh, values slowest first (z y x). */
static void rw_xdmf_geometry(FILE *fp, const rw_xdmf_field *x, const char *ind)
{
  fprintf(fp, "%s<Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"%ld %ld %ld\"/>\n", ind,
          x->n[2], x->n[1], x->n[0]);
  fprintf(fp, "%s<Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n", ind);
  fprintf(fp,
          "%s  <DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" "
          "Format=\"XML\">%.17g %.17g %.17g</DataItem>\n",
          ind, x->lo[2], x->lo[1], x->lo[0]);
  fprintf(fp,
          "%s  <DataItem Name=\"Spacing\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" "
          "Format=\"XML\">%.17g %.17g %.17g</DataItem>\n",
          ind, x->h[2], x->h[1], x->h[0]);
  fprintf(fp, "%s</Geometry>\n", ind);
}

/* One node-centred scalar attribute per component of x. Snapshot components are named by
 * the component ("u"); static ones by their HDF5 path without the leading '/'
 * ("gradient/dJdy0/u") so that they stay distinct. */
static void rw_xdmf_attributes(FILE *fp, const rw_xdmf_field *x, const char *h5name,
                               const char *ind)
{
  for (int c = 0; c < x->ncomp; c++) {
    fprintf(fp, "%s<Attribute Name=\"", ind);
    if (!x->snapshot) {
      rw_xml_put(fp, x->group + 1);
      fputc('/', fp);
    }
    rw_xml_put(fp, x->comp[c]);
    fprintf(fp, "\" AttributeType=\"Scalar\" Center=\"Node\">\n");
    fprintf(fp,
            "%s  <DataItem Dimensions=\"%ld %ld %ld\" NumberType=\"Float\" Precision=\"8\" "
            "Format=\"HDF\">",
            ind, x->n[2], x->n[1], x->n[0]);
    rw_xml_put(fp, h5name);
    fputc(':', fp);
    rw_xml_put(fp, x->group);
    fputc('/', fp);
    rw_xml_put(fp, x->comp[c]);
    fprintf(fp, "</DataItem>\n%s</Attribute>\n", ind);
  }
}

/* Writes the XDMF description of every recorded field to `file` (rank 0 only). The HDF5
 * file is named relative to the sidecar (same directory), so the pair can be moved. */
static int rw_xdmf_write(rw_output f, const char *file)
{
  const char *h5name = strrchr(f->path, '/');
  h5name = h5name ? h5name + 1 : f->path;
  FILE *fp = fopen(file, "w");
  RW_CHECK(fp, RW_ERR_IO, "cannot create the XDMF file '%s': %s", file, strerror(errno));
  fprintf(fp, "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n");
  fprintf(fp, "<!-- Written by Rewind: open in ParaView (XDMF Reader or Xdmf3ReaderS) -->\n");
  fprintf(fp, "<Xdmf Version=\"3.0\">\n <Domain>\n");
  if (f->nsnap > 0) {
    fprintf(fp,
            "  <Grid Name=\"snapshots\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
    for (size_t i = 0; i < f->nxf; i++) {
      const rw_xdmf_field *x = &f->xf[i];
      if (!x->snapshot) continue;
      fprintf(fp, "   <Grid Name=\"");
      rw_xml_put(fp, x->group + 1);
      fprintf(fp, "\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\"/>\n", x->time);
      rw_xdmf_geometry(fp, x, "    ");
      rw_xdmf_attributes(fp, x, h5name, "    ");
      for (size_t j = 0; j < f->nxf; j++) /* static fields on the same grid */
        if (!f->xf[j].snapshot && rw_same_grid(&f->xf[j], x))
          rw_xdmf_attributes(fp, &f->xf[j], h5name, "    ");
      fprintf(fp, "   </Grid>\n");
    }
    fprintf(fp, "  </Grid>\n");
  }
  /* Static fields: one uniform grid per distinct grid (the first field of each lists it). */
  int ngrid = 0;
  for (size_t i = 0; i < f->nxf; i++) {
    const rw_xdmf_field *x = &f->xf[i];
    if (x->snapshot) continue;
    size_t first = i;
    for (size_t j = 0; j < i; j++)
      if (!f->xf[j].snapshot && rw_same_grid(&f->xf[j], x)) {
        first = j;
        break;
      }
    if (first != i) continue;
    if (ngrid == 0)
      fprintf(fp, "  <Grid Name=\"fields\" GridType=\"Uniform\">\n");
    else
      fprintf(fp, "  <Grid Name=\"fields_%d\" GridType=\"Uniform\">\n", ngrid);
    ngrid++;
    rw_xdmf_geometry(fp, x, "   ");
    for (size_t j = i; j < f->nxf; j++)
      if (!f->xf[j].snapshot && rw_same_grid(&f->xf[j], x))
        rw_xdmf_attributes(fp, &f->xf[j], h5name, "   ");
    fprintf(fp, "  </Grid>\n");
  }
  fprintf(fp, " </Domain>\n</Xdmf>\n");
  /* Write errors (a full disk) surface at the latest in fflush, fsync or fclose. */
  int bad = ferror(fp) || fflush(fp) != 0 || fsync(fileno(fp)) != 0;
  int err = errno;
  if (fclose(fp) != 0 && !bad) {
    bad = 1;
    err = errno;
  }
  RW_CHECK(!bad, RW_ERR_IO, "writing the XDMF file '%s' failed: %s", file,
           err ? strerror(err) : "write error");
  return 0;
}
