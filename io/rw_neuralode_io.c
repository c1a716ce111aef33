/* Readers and writers of the shared neural-ODE reference files (see rw_neuralode_io.h). */
#define _DEFAULT_SOURCE /* fileno, fsync */
#include "rewind/rw_neuralode_io.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The files are little endian; so is every machine Rewind builds on today (x86-64, aarch64),
 * and the readers refuse to run elsewhere rather than misread. */
static int rw_little_endian(void)
{
  uint32_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

typedef struct {
  FILE *f;
  const char *path;
  long size;
} rw_rfile;

static int rw_ropen(rw_rfile *r, const char *path, const char *what)
{
  RW_CHECK(rw_little_endian(), RW_ERR_IO, "%s '%s': this machine is not little endian", what, path);
  struct stat sb;
  RW_CHECK(path && path[0], RW_ERR_ARG, "%s: no file name given", what);
  RW_CHECK(stat(path, &sb) == 0, RW_ERR_IO, "%s '%s': %s", what, path, strerror(errno));
  RW_CHECK(S_ISREG(sb.st_mode), RW_ERR_IO, "%s '%s': not a regular file", what, path);
  r->f = fopen(path, "rb");
  RW_CHECK(r->f, RW_ERR_IO, "%s '%s': %s", what, path, strerror(errno));
  r->path = path;
  r->size = (long)sb.st_size;
  return 0;
}

static int rw_rbytes(rw_rfile *r, void *dst, size_t n, const char *field)
{
  RW_CHECK(fread(dst, 1, n, r->f) == n, RW_ERR_ARG,
           "'%s': the file ends inside field '%s' (%ld bytes in all): truncated or not this "
           "format",
           r->path, field, r->size);
  return 0;
}

static int rw_ru32(rw_rfile *r, uint32_t *v, const char *field)
{
  return rw_rbytes(r, v, sizeof *v, field);
}

/* The header's magic and version. */
static int rw_rmagic(rw_rfile *r, const char *magic, const char *what)
{
  char m[9] = {0};
  uint32_t version = 0;
  RW_CALL(rw_rbytes(r, m, 8, "magic"));
  RW_CHECK(!memcmp(m, magic, 8), RW_ERR_ARG, "'%s' is not a %s file: magic '%.8s', expected '%s'",
           r->path, what, m, magic);
  RW_CALL(rw_ru32(r, &version, "version"));
  RW_CHECK(version == 1, RW_ERR_ARG, "'%s': %s format version %u; this Rewind reads version 1",
           r->path, what, version);
  return 0;
}

/* The first non-finite value of v (P values in the order of rw_neuralode.h) is refused with
 * its index and its place: W_l[i][j] (row i, column j) or b_l[i], in layer l + 1 of L.
 *   where  the file, quoted, for the message;  what  "weights" or "gradient" */
static int rw_mlp_check_finite(const rw_mlp_arch *a, const double *v, const char *where,
                               const char *what)
{
  long k = 0;
  for (int l = 0; l < a->nlayers; l++) {
    long out = a->widths[l + 1], in = a->widths[l];
    for (long i = 0; i < out * in; i++, k++)
      RW_CHECK(isfinite(v[k]), RW_ERR_ARG,
               "%s: %s value %ld is %g: W_%d[%ld][%ld] (layer %d of %d, a %ld x %ld matrix); "
               "every value must be finite",
               where, what, k, v[k], l, i / in, i % in, l + 1, a->nlayers, out, in);
    for (long i = 0; i < out; i++, k++)
      RW_CHECK(isfinite(v[k]), RW_ERR_ARG,
               "%s: %s value %ld is %g: b_%d[%ld] (layer %d of %d, %ld biases); every value "
               "must be finite",
               where, what, k, v[k], l, i, l + 1, a->nlayers, out);
  }
  return 0;
}

int rw_mlp_file_read(const char *path, int gradient, rw_mlp_arch *arch, double **values, long *P)
{
  int ierr = 0;
  const char *magic = gradient ? "NODEGRD1" : "NODEMLP1";
  const char *what = gradient ? "neural-ODE gradient" : "neural-ODE weights";
  rw_rfile r = {0};
  uint32_t L = 0, w = 0, flags = 0, act = 0;
  uint64_t np = 0;
  *values = NULL;
  memset(arch, 0, sizeof *arch);
  RW_CALL(rw_ropen(&r, path, what));
  RW_TRY(rw_rmagic(&r, magic, what));
  RW_TRY(rw_ru32(&r, &L, "L (number of layers)"));
  RW_CHECK_GOTO(L >= 1 && L <= RW_MLP_MAX_LAYERS, RW_ERR_ARG,
                "'%s': field L (number of layers) = %u; allowed 1 to %d", path, L,
                RW_MLP_MAX_LAYERS);
  arch->nlayers = (int)L;
  for (uint32_t l = 0; l <= L; l++) {
    RW_TRY(rw_ru32(&r, &w, "widths"));
    RW_CHECK_GOTO(w >= 1 && w <= 1000000, RW_ERR_ARG, "'%s': width d_%u = %u; allowed 1 to 1000000",
                  path, l, w);
    arch->widths[l] = (int)w;
  }
  RW_TRY(rw_ru32(&r, &flags, "flags"));
  RW_CHECK_GOTO(flags <= 1, RW_ERR_ARG, "'%s': flags = %u; only bit 0 (time input) is defined",
                path, flags);
  arch->time_input = (int)(flags & 1u);
  RW_TRY(rw_ru32(&r, &act, "activation"));
  RW_CHECK_GOTO(act <= RW_ACT_RELU, RW_ERR_ARG,
                "'%s': activation code %u; allowed 0 (identity), 1 (tanh), 2 (softplus), 3 (relu)",
                path, act);
  arch->activation = (rw_activation)act;
  RW_TRY(rw_rbytes(&r, &arch->damping, sizeof arch->damping, "damping"));
  RW_TRY(rw_rbytes(&r, &np, sizeof np, "P"));
  {
    char where[4200];
    snprintf(where, sizeof where, "'%s'", path);
    RW_TRY(rw_mlp_check(arch, where));
  }
  RW_CHECK_GOTO(np == (uint64_t)rw_mlp_nparams(arch), RW_ERR_ARG,
                "'%s': P = %llu, but the widths give %ld parameters", path, (unsigned long long)np,
                rw_mlp_nparams(arch));
  long want = 40 + 4 * ((long)L + 1) + 8 * (long)np;
  RW_CHECK_GOTO(r.size == want, RW_ERR_ARG,
                "'%s' has %ld bytes; its header (L = %u, P = %llu) says %ld: truncated or with "
                "trailing data",
                path, r.size, L, (unsigned long long)np, want);
  RW_TRY(rw_calloc((size_t)np, sizeof(double), "neural-ODE weights", values));
  RW_TRY(rw_rbytes(&r, *values, (size_t)np * sizeof(double), "values"));
  {
    char where[4200];
    snprintf(where, sizeof where, "'%s'", path);
    RW_TRY(rw_mlp_check_finite(arch, *values, where, gradient ? "gradient" : "weights"));
  }
  *P = (long)np;
cleanup:
  if (r.f) fclose(r.f);
  if (ierr) rw_free(values);
  return ierr;
}

/* A file being written: <path>.partial, renamed to path when complete. err is the errno of
 * the first failed write (0: none), so the message says what went wrong. */
typedef struct {
  FILE *f;
  const char *path;
  char tmp[4200];
  int err;
} rw_wfile;

/* Opens <path>.partial for writing. */
static int rw_wopen(rw_wfile *w, const char *path)
{
  memset(w, 0, sizeof *w);
  RW_CHECK(path && path[0], RW_ERR_ARG, "no file name given for writing");
  w->path = path;
  snprintf(w->tmp, sizeof w->tmp, "%s.partial", path);
  w->f = fopen(w->tmp, "wb");
  RW_CHECK(w->f, RW_ERR_IO, "cannot write '%s': %s", w->tmp, strerror(errno));
  return 0;
}

/* Writes n items of size bytes unless an earlier write failed; keeps the first errno. */
static void rw_wput(rw_wfile *w, const void *p, size_t size, size_t n)
{
  if (w->err) return;
  errno = 0;
  if (fwrite(p, size, n, w->f) != n) w->err = errno ? errno : EIO;
}

/* Flushes, syncs and closes; renames into place when every write reached the file, else
 * removes the partial file and reports the first error (errno's text: "No space left on
 * device", "Permission denied", ...). */
static int rw_wclose(rw_wfile *w)
{
  int err = w->err;
  errno = 0;
  if (fflush(w->f) != 0 && !err) err = errno ? errno : EIO;
  /* a full or failing disk may only say so at the sync (NFS, quotas); EINVAL / EROFS: a file
   * that cannot be synced (a pipe, /dev/null) */
  if (!err && fsync(fileno(w->f)) != 0 && errno != EINVAL && errno != EROFS) err = errno;
  errno = 0;
  if (fclose(w->f) != 0 && !err) err = errno ? errno : EIO;
  w->f = NULL;
  if (err) {
    remove(w->tmp);
    return RW_ERROR(RW_ERR_IO, "writing '%s' failed: %s", w->path, strerror(err));
  }
  if (rename(w->tmp, w->path) != 0) {
    err = errno;
    remove(w->tmp);
    return RW_ERROR(RW_ERR_IO, "cannot rename '%s' to '%s': %s", w->tmp, w->path, strerror(err));
  }
  return 0;
}

int rw_mlp_file_write(const char *path, int gradient, const rw_mlp_arch *arch, const double *values)
{
  rw_wfile w;
  RW_CALL(rw_mlp_check(arch, path));
  RW_CALL(rw_wopen(&w, path));
  uint32_t h[4 + RW_MLP_MAX_LAYERS + 1];
  int n = 0;
  h[n++] = 1;
  h[n++] = (uint32_t)arch->nlayers;
  for (int l = 0; l <= arch->nlayers; l++)
    h[n++] = (uint32_t)arch->widths[l];
  h[n++] = arch->time_input ? 1u : 0u;
  h[n++] = (uint32_t)arch->activation;
  uint64_t np = (uint64_t)rw_mlp_nparams(arch);
  rw_wput(&w, gradient ? "NODEGRD1" : "NODEMLP1", 1, 8);
  rw_wput(&w, h, sizeof *h, (size_t)n);
  rw_wput(&w, &arch->damping, sizeof(double), 1);
  rw_wput(&w, &np, sizeof np, 1);
  rw_wput(&w, values, sizeof(double), (size_t)np);
  return rw_wclose(&w);
}

int rw_node_problem_read(const char *path, rw_node_problem_file *pf)
{
  int ierr = 0;
  rw_rfile r = {0};
  uint32_t B = 0, D = 0, reserved = 0;
  memset(pf, 0, sizeof *pf);
  RW_CALL(rw_ropen(&r, path, "neural-ODE problem"));
  RW_TRY(rw_rmagic(&r, "NODEPRB1", "neural-ODE problem"));
  RW_TRY(rw_ru32(&r, &B, "B"));
  RW_TRY(rw_ru32(&r, &D, "D"));
  RW_TRY(rw_ru32(&r, &reserved, "reserved"));
  RW_TRY(rw_rbytes(&r, &pf->T, sizeof pf->T, "T"));
  RW_CHECK_GOTO(B >= 1 && D >= 1 && (uint64_t)B * D <= (1ULL << 32), RW_ERR_ARG,
                "'%s': B = %u, D = %u (B x D = %llu values); allowed B >= 1, D >= 1 and B x D "
                "<= 4294967296 (2^32)",
                path, B, D, (unsigned long long)B * D);
  RW_CHECK_GOTO(isfinite(pf->T) && pf->T > 0.0, RW_ERR_ARG, "'%s': T = %g; must be finite and > 0",
                path, pf->T);
  long nv = (long)B * (long)D, want = 32 + 16 * nv;
  RW_CHECK_GOTO(r.size == want, RW_ERR_ARG,
                "'%s' has %ld bytes; its header (B = %u, D = %u) says %ld: truncated or with "
                "trailing data",
                path, r.size, B, D, want);
  pf->B = B, pf->D = D;
  RW_TRY(rw_calloc((size_t)nv, sizeof(double), "initial states", &pf->y0));
  RW_TRY(rw_calloc((size_t)nv, sizeof(double), "targets", &pf->targets));
  RW_TRY(rw_rbytes(&r, pf->y0, (size_t)nv * sizeof(double), "y0"));
  RW_TRY(rw_rbytes(&r, pf->targets, (size_t)nv * sizeof(double), "targets"));
  for (int a = 0; a < 2; a++) {
    const double *v = a ? pf->targets : pf->y0;
    for (long i = 0; i < nv; i++)
      RW_CHECK_GOTO(isfinite(v[i]), RW_ERR_ARG,
                    "'%s': %s value %ld is %g (trajectory %ld, component %ld of B = %u x D = %u); "
                    "every value must be finite",
                    path, a ? "targets" : "y0", i, v[i], i / (long)D, i % (long)D, B, D);
  }
cleanup:
  if (r.f) fclose(r.f);
  if (ierr) rw_node_problem_free(pf);
  return ierr;
}

int rw_node_problem_write(const char *path, const rw_node_problem_file *pf)
{
  rw_wfile w;
  RW_CALL(rw_wopen(&w, path));
  uint32_t h[4] = {1, (uint32_t)pf->B, (uint32_t)pf->D, 0};
  size_t nv = (size_t)(pf->B * pf->D);
  rw_wput(&w, "NODEPRB1", 1, 8);
  rw_wput(&w, h, sizeof *h, 4);
  rw_wput(&w, &pf->T, sizeof pf->T, 1);
  rw_wput(&w, pf->y0, sizeof(double), nv);
  rw_wput(&w, pf->targets, sizeof(double), nv);
  return rw_wclose(&w);
}

void rw_node_problem_free(rw_node_problem_file *pf)
{
  rw_free(&pf->y0);
  rw_free(&pf->targets);
}

/* One dataset of doubles (rank 1) of length at most `max` into v; *n its length. */
static int rw_h5_read_vector(hid_t file, const char *path, const char *name, double *v, long max,
                             long *n)
{
  int ierr = 0;
  hid_t d = -1, sp = -1;
  hsize_t len = 0;
  H5E_BEGIN_TRY { d = H5Dopen2(file, name, H5P_DEFAULT); }
  H5E_END_TRY;
  RW_CHECK_GOTO(d >= 0, RW_ERR_ARG, "'%s' has no dataset %s: not a rewind-neuralode result file",
                path, name);
  sp = H5Dget_space(d);
  RW_CHECK_GOTO(sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
                    H5Sget_simple_extent_dims(sp, &len, NULL) == 1 && (long)len <= max,
                RW_ERR_ARG, "'%s': dataset %s is not a vector of at most %ld values", path, name,
                max);
  /* a failed read is the file's fault (its chunks are checksummed: a damaged one fails here),
   * said in one line instead of HDF5's error stack */
  herr_t rd = -1;
  H5E_BEGIN_TRY { rd = H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v); }
  H5E_END_TRY;
  RW_CHECK_GOTO(rd >= 0, RW_ERR_IO,
                "'%s': reading %s failed: the file is damaged (a checksum or its structure does "
                "not hold) or unreadable",
                path, name);
  *n = (long)len;
cleanup:
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  return ierr;
}

/* An attribute of /model/theta: a double, a long, or a string (buf, len). */
static int rw_h5_read_attr(hid_t file, const char *path, const char *name, hid_t type, void *v,
                           size_t len)
{
  int ierr = 0;
  hid_t a = -1, t = -1;
  H5E_BEGIN_TRY { a = H5Aopen_by_name(file, "/model/theta", name, H5P_DEFAULT, H5P_DEFAULT); }
  H5E_END_TRY;
  RW_CHECK_GOTO(a >= 0, RW_ERR_ARG, "'%s': /model/theta has no attribute '%s'", path, name);
  if (type == H5T_C_S1) {
    t = H5Aget_type(a);
    RW_CHECK_GOTO(
        t >= 0 && H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t) && H5Tget_size(t) < len,
        RW_ERR_ARG, "'%s': attribute '%s' of /model/theta is not a short string", path, name);
    memset(v, 0, len);
    RW_CHECK_GOTO(H5Aread(a, t, v) >= 0, RW_ERR_IO, "'%s': reading attribute '%s' failed", path,
                  name);
  } else {
    RW_CHECK_GOTO(H5Aread(a, type, v) >= 0, RW_ERR_IO, "'%s': reading attribute '%s' failed", path,
                  name);
  }
cleanup:
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
  return ierr;
}

int rw_mlp_h5_read(const char *path, rw_mlp_arch *arch, double **values, long *P)
{
  int ierr = 0;
  hid_t file = -1;
  double w[RW_MLP_MAX_LAYERS + 2];
  long nw = 0, ti = 0, np = 0;
  char act[32];
  *values = NULL;
  memset(arch, 0, sizeof *arch);
  RW_CHECK(path && path[0], RW_ERR_ARG, "neural-ODE weights: no file name given");
  H5E_BEGIN_TRY { file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT); }
  H5E_END_TRY;
  RW_CHECK(file >= 0, RW_ERR_IO, "neural-ODE weights '%s': cannot be opened as an HDF5 file", path);
  RW_TRY(rw_h5_read_vector(file, path, "/model/widths", w, RW_MLP_MAX_LAYERS + 1, &nw));
  RW_CHECK_GOTO(nw >= 2, RW_ERR_ARG, "'%s': /model/widths has %ld entries; at least 2", path, nw);
  arch->nlayers = (int)nw - 1;
  for (long l = 0; l < nw; l++)
    arch->widths[l] = (int)w[l];
  RW_TRY(rw_h5_read_attr(file, path, "activation", H5T_C_S1, act, sizeof act));
  int a = rw_activation_parse(act);
  RW_CHECK_GOTO(a >= 0, RW_ERR_ARG, "'%s': activation '%s'; known: %s", path, act,
                rw_activation_names());
  arch->activation = (rw_activation)a;
  RW_TRY(rw_h5_read_attr(file, path, "time_input", H5T_NATIVE_LONG, &ti, 0));
  arch->time_input = ti != 0;
  RW_TRY(rw_h5_read_attr(file, path, "damping", H5T_NATIVE_DOUBLE, &arch->damping, 0));
  {
    char where[4200];
    snprintf(where, sizeof where, "'%s'", path);
    RW_TRY(rw_mlp_check(arch, where));
  }
  np = rw_mlp_nparams(arch);
  RW_TRY(rw_calloc((size_t)np, sizeof(double), "neural-ODE weights", values));
  long got = 0;
  RW_TRY(rw_h5_read_vector(file, path, "/model/theta", *values, np, &got));
  RW_CHECK_GOTO(got == np, RW_ERR_ARG, "'%s': /model/theta has %ld values, the widths give %ld",
                path, got, np);
  {
    char where[4200];
    snprintf(where, sizeof where, "'%s' (/model/theta)", path);
    RW_TRY(rw_mlp_check_finite(arch, *values, where, "weights"));
  }
  *P = np;
cleanup:
  if (file >= 0) H5Fclose(file);
  if (ierr) rw_free(values);
  return ierr;
}

/* ---- collective loading: rank 0 reads, every rank gets the contents or the error ---------- */

/* Broadcasts n doubles from rank 0 in pieces that fit MPI's int counts. */
static int rw_bcast_doubles(MPI_Comm comm, double *v, long n)
{
  const long chunk = 1L << 26;
  for (long off = 0; off < n; off += chunk) {
    long c = n - off < chunk ? n - off : chunk;
    RW_CALL_MPI(MPI_Bcast(v + off, (int)c, MPI_DOUBLE, 0, comm));
  }
  return 0;
}

/* Weights or a gradient: rank 0 reads (for weights, an HDF5 result of rewind-neuralode by its
 * signature, else the reference format), then the error or the contents go to every rank.
 * Collective on comm. */
int rw_mlp_load(MPI_Comm comm, const char *path, int gradient, rw_mlp_arch *arch, double **values,
                long *P)
{
  int rank = 0, ierr = 0;
  *values = NULL;
  *P = 0;
  memset(arch, 0, sizeof *arch);
  RW_CALL_MPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    htri_t h5 = 0;
    if (!gradient && path && path[0]) {
      H5E_BEGIN_TRY { h5 = H5Fis_hdf5(path); }
      H5E_END_TRY;
    }
    ierr = h5 > 0 ? rw_mlp_h5_read(path, arch, values, P)
                  : rw_mlp_file_read(path, gradient, arch, values, P);
  }
  RW_CALL(rw_error_agree(comm, ierr));
  RW_CALL_MPI(MPI_Bcast(arch, (int)sizeof *arch, MPI_BYTE, 0, comm));
  RW_CALL_MPI(MPI_Bcast(P, 1, MPI_LONG, 0, comm));
  if (rank != 0) ierr = rw_calloc((size_t)*P, sizeof(double), "neural-ODE weights", values);
  ierr = rw_error_agree(comm, ierr);
  if (!ierr) ierr = rw_bcast_doubles(comm, *values, *P);
  if (ierr) {
    rw_free(values);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  return 0;
}

/* A problem file: rank 0 reads, then the error or the contents go to every rank. Collective
 * on comm. */
int rw_node_problem_load(MPI_Comm comm, const char *path, rw_node_problem_file *pf)
{
  int rank = 0, ierr = 0;
  memset(pf, 0, sizeof *pf);
  RW_CALL_MPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) ierr = rw_node_problem_read(path, pf);
  RW_CALL(rw_error_agree(comm, ierr));
  long bd[2] = {pf->B, pf->D};
  RW_CALL_MPI(MPI_Bcast(bd, 2, MPI_LONG, 0, comm));
  RW_CALL_MPI(MPI_Bcast(&pf->T, 1, MPI_DOUBLE, 0, comm));
  pf->B = bd[0], pf->D = bd[1];
  long nv = bd[0] * bd[1];
  if (rank != 0) {
    ierr = rw_calloc((size_t)nv, sizeof(double), "initial states", &pf->y0);
    if (!ierr) ierr = rw_calloc((size_t)nv, sizeof(double), "targets", &pf->targets);
  }
  ierr = rw_error_agree(comm, ierr);
  if (!ierr) ierr = rw_bcast_doubles(comm, pf->y0, nv);
  if (!ierr) ierr = rw_bcast_doubles(comm, pf->targets, nv);
  if (ierr) {
    rw_node_problem_free(pf);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  return 0;
}
