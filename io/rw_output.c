/* Parallel HDF5 result files (see rw_output.h). Every HDF5 call is checked; HDF5's own error
 * stack printing is switched off and replaced by a message naming the file and dataset. */
#define _POSIX_C_SOURCE 200809L
#include "rewind/rw_output.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct rw_output_s {
  MPI_Comm comm;
  int rank;
  hid_t file;
  char path[4096], partial[4096 + 16];
};

/* HDF5 calls return negative on failure. */
#define RW_H5(expr, ...)                                                                           \
  do {                                                                                             \
    if ((expr) < 0) {                                                                              \
      ierr = RW_ERROR(RW_ERR_IO, __VA_ARGS__);                                                     \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

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

int rw_output_create(MPI_Comm comm, const char *path, rw_output *out)
{
  int ierr = 0;
  rw_output f = NULL;
  hid_t fapl = -1;
  RW_CHECK(path && *path && out, RW_ERR_ARG, "rw_output_create: empty output path");
  *out = NULL;
  RW_CHECK(strlen(path) < 4000, RW_ERR_ARG, "output path is too long (%zu characters)",
           strlen(path));
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  RW_CALL(rw_calloc(1, sizeof *f, "output file", &f));
  f->comm = comm;
  f->file = -1;
  MPI_Comm_rank(comm, &f->rank);
  snprintf(f->path, sizeof f->path, "%s", path);
  snprintf(f->partial, sizeof f->partial, "%s.partial", path);
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
  MPI_Bcast(&dir_ok, 1, MPI_INT, 0, comm);
  if (!dir_ok) {
    if (f->rank != 0)
      ierr =
          RW_ERROR(RW_ERR_IO, "output file '%s': its directory is missing or not writable", path);
    goto cleanup;
  }
  RW_H5(fapl = H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate failed");
  RW_H5(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), "H5Pset_fapl_mpio failed");
  RW_H5(f->file = H5Fcreate(f->partial, H5F_ACC_TRUNC, H5P_DEFAULT, fapl),
        "cannot create HDF5 file '%s' (check the path, permissions and free space)", f->partial);
  H5Pclose(fapl);
  *out = f;
  return 0;
cleanup:
  if (fapl >= 0) H5Pclose(fapl);
  rw_free(&f);
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
    if (H5Fclose(f->file) < 0 && !ierr)
      ierr = RW_ERROR(RW_ERR_IO, "closing '%s' failed (disk full?)", f->partial);
    f->file = -1;
  }
  if (success) ierr = rw_output_agree(f, ierr);
  MPI_Barrier(f->comm);
  if (f->rank == 0) {
    if (success && !ierr) {
      if (rename(f->partial, f->path) != 0)
        ierr = RW_ERROR(RW_ERR_IO, "renaming '%s' to '%s' failed: %s", f->partial, f->path,
                        strerror(errno));
    } else {
      remove(f->partial);
    }
  }
  int e = ierr;
  MPI_Bcast(&e, 1, MPI_INT, 0, f->comm);
  if (e && !ierr) ierr = RW_ERROR(e, "finishing '%s' failed on rank 0", f->path);
  rw_free(pf);
  return ierr;
}

const char *rw_output_path(rw_output f) { return f->path; }

int rw_output_group(rw_output f, const char *path)
{
  int ierr = 0;
  hid_t lcpl = -1, g = -1;
  htri_t exists = H5Lexists(f->file, path, H5P_DEFAULT);
  if (exists > 0) return 0;
  RW_H5(lcpl = H5Pcreate(H5P_LINK_CREATE), "H5Pcreate failed");
  RW_H5(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group failed");
  RW_H5(g = H5Gcreate2(f->file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT),
        "cannot create group '%s' in '%s'", path, f->partial);
cleanup:
  if (g >= 0) H5Gclose(g);
  if (lcpl >= 0) H5Pclose(lcpl);
  return ierr;
}

static int rw_output_attr(rw_output f, const char *obj, const char *name, hid_t type, const void *v)
{
  int ierr = 0;
  hid_t space = -1, attr = -1;
  RW_H5(space = H5Screate(H5S_SCALAR), "H5Screate failed");
  if (H5Aexists_by_name(f->file, obj, name, H5P_DEFAULT) > 0)
    H5Adelete_by_name(f->file, obj, name, H5P_DEFAULT);
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
  RW_CALL(rw_output_attr(f, obj, name, H5T_NATIVE_DOUBLE, &v));
  return 0;
}

int rw_output_attr_long(rw_output f, const char *obj, const char *name, long v)
{
  RW_CALL(rw_output_attr(f, obj, name, H5T_NATIVE_LONG, &v));
  return 0;
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
  return ierr;
}

/* Creates a chunked, checksummed dataset of `rank` dims (maxdims may be unlimited). */
static int rw_output_dataset(rw_output f, const char *path, int rank, const hsize_t *dims,
                             const hsize_t *maxdims, const hsize_t *chunk, hid_t *out)
{
  int ierr = 0;
  hid_t space = -1, dcpl = -1, lcpl = -1;
  *out = -1;
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
  if (d >= 0) H5Dclose(d);
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
  RW_TRY(rw_vector_offset(f, v, &off));
  RW_TRY(rw_output_dataset(f, path, 1, &dims, NULL, &chunk, &d));
  RW_TRY(rw_output_write_block(f, d, -1, off, (hsize_t)rw_vec_local_length(v), rw_vec_data(v)));
cleanup:
  if (d >= 0) H5Dclose(d);
  return rw_output_agree(f, ierr);
}

int rw_output_series_append(rw_output f, const char *path, double t, N_Vector v)
{
  int ierr = 0;
  hid_t d = -1, dt = -1, sp = -1;
  char tpath[4200];
  snprintf(tpath, sizeof tpath, "%s_t", path);
  hsize_t n = (hsize_t)rw_vec_global_length(v), off = 0, rows = 0;
  RW_TRY(rw_vector_offset(f, v, &off));
  if (H5Lexists(f->file, path, H5P_DEFAULT) > 0) {
    RW_H5(d = H5Dopen2(f->file, path, H5P_DEFAULT), "cannot open '%s'", path);
    RW_H5(dt = H5Dopen2(f->file, tpath, H5P_DEFAULT), "cannot open '%s'", tpath);
    hsize_t dims[2];
    RW_H5(sp = H5Dget_space(d), "H5Dget_space failed");
    RW_H5(H5Sget_simple_extent_dims(sp, dims, NULL), "H5Sget_simple_extent_dims failed");
    rows = dims[0];
  } else {
    hsize_t dims[2] = {0, n}, maxd[2] = {H5S_UNLIMITED, n};
    hsize_t chunk[2] = {1, rw_chunk_len(n)}, d1 = 0, m1 = H5S_UNLIMITED, c1 = 256;
    RW_TRY(rw_output_dataset(f, path, 2, dims, maxd, chunk, &d));
    RW_TRY(rw_output_dataset(f, tpath, 1, &d1, &m1, &c1, &dt));
  }
  hsize_t nd[2] = {rows + 1, n}, nt = rows + 1;
  RW_H5(H5Dset_extent(d, nd), "extending '%s' failed", path);
  RW_H5(H5Dset_extent(dt, &nt), "extending '%s' failed", tpath);
  RW_TRY(rw_output_write_block(f, d, (long)rows, off, (hsize_t)rw_vec_local_length(v),
                               rw_vec_data(v)));
  RW_TRY(rw_output_write_block(f, dt, -1, rows, f->rank == 0 ? 1 : 0, &t));
cleanup:
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  if (dt >= 0) H5Dclose(dt);
  return rw_output_agree(f, ierr);
}

/* Writes component c of a grid field into a dataset shaped like the grid. */
static int rw_output_grid_component(rw_output f, const char *path, rw_grid g, N_Vector v, int c)
{
  int ierr = 0;
  hid_t d = -1, fspace = -1, mspace = -1, dxpl = -1;
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
  double *buf = NULL;
  size_t nloc = (size_t)cnt[0] * (size_t)cnt[1] * (size_t)cnt[2];
  RW_TRY(rw_calloc(nloc + 1, sizeof(double), "field output buffer", &buf));
  const double *src = rw_vec_data(v);
  for (size_t m = 0; m < nloc; m++)
    buf[m] = src[m * (size_t)nc + (size_t)c];
  RW_TRY(rw_output_dataset(f, path, D, dims, NULL, chunk, &d));
  RW_H5(fspace = H5Dget_space(d), "H5Dget_space failed");
  RW_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL),
        "H5Sselect_hyperslab failed");
  RW_H5(mspace = H5Screate_simple(D, count, NULL), "H5Screate_simple failed");
  RW_H5(dxpl = H5Pcreate(H5P_DATASET_XFER), "H5Pcreate failed");
  RW_H5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio failed");
  RW_H5(H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf),
        "writing field '%s' of '%s' failed (disk full?)", path, f->partial);
  double h[3];
  rw_grid_spacing(g, h);
  hid_t as = -1, at = -1;
  hsize_t three = 3;
  RW_H5(as = H5Screate_simple(1, &three, NULL), "H5Screate_simple failed");
  RW_H5(at = H5Acreate2(d, "origin_xyz", H5T_NATIVE_DOUBLE, as, H5P_DEFAULT, H5P_DEFAULT),
        "cannot create attribute on '%s'", path);
  H5Awrite(at, H5T_NATIVE_DOUBLE, cf->lo);
  H5Aclose(at);
  RW_H5(at = H5Acreate2(d, "spacing_xyz", H5T_NATIVE_DOUBLE, as, H5P_DEFAULT, H5P_DEFAULT),
        "cannot create attribute on '%s'", path);
  H5Awrite(at, H5T_NATIVE_DOUBLE, h);
  H5Aclose(at);
  H5Sclose(as);
cleanup:
  if (dxpl >= 0) H5Pclose(dxpl);
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
  if (d >= 0) H5Dclose(d);
  rw_free(&buf);
  return ierr;
}

int rw_output_grid_field(rw_output f, const char *path, rw_grid g, N_Vector v,
                         const char *const *comp_names, int xdmf)
{
  int ierr = 0;
  (void)xdmf; /* the XDMF sidecar is written by a later change */
  const rw_grid_config *cf = rw_grid_get_config(g);
  for (int c = 0; c < cf->ncomp; c++) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", path, comp_names && comp_names[c] ? comp_names[c] : "u");
    ierr = rw_output_grid_component(f, p, g, v, c);
    if (ierr) break;
  }
  return rw_output_agree(f, ierr);
}

int rw_output_grid_snapshot(rw_output f, rw_grid g, double t, N_Vector v,
                            const char *const *comp_names)
{
  char p[64];
  long idx = 0;
  while (1) {
    snprintf(p, sizeof p, "/snapshots/%06ld", idx);
    if (H5Lexists(f->file, "/snapshots", H5P_DEFAULT) <= 0 ||
        H5Lexists(f->file, p, H5P_DEFAULT) <= 0)
      break;
    idx++;
  }
  RW_CALL(rw_output_grid_field(f, p, g, v, comp_names, 1));
  RW_CALL(rw_output_attr_double(f, p, "time", t));
  return 0;
}
