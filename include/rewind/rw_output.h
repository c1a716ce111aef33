/* HDF5 result files, written collectively with parallel HDF5, and their XDMF sidecars.
 *
 * A result file is written under "<path>.partial" and renamed to <path> only by
 * rw_output_close(..., success = 1) after every dataset is flushed and closed, so a run that
 * fails or is killed never leaves a file that looks complete (the .partial file is removed
 * on a clean failure). Datasets are chunked with the Fletcher32 checksum so corruption is
 * detected on read; attributes make the file self-describing under h5dump.
 *
 * When grid fields were registered for it (rw_output_grid_field with xdmf = 1, and every
 * rw_output_grid_snapshot), closing also writes an XDMF file next to the result, named like
 * it with ".xmf" in place of ".h5" (rw_output_xdmf_path), that ParaView opens: the snapshots
 * as a time series, the static fields (final state, gradient fields) on their grid and in
 * every snapshot on the same grid. It names the HDF5 file relative to itself, so the pair can
 * be moved together.
 *
 * Errors: every function returns RW_ERR_IO with a message naming the file (and dataset) on
 * an I/O failure (directory missing or not writable, disk full, ...), and every collective
 * function returns an error on every rank when it failed on any rank. */
#ifndef REWIND_RW_OUTPUT_H
#define REWIND_RW_OUTPUT_H

#include "rw_grid.h"
#include "rw_vector.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_output_s *rw_output;

/* Creates "<path>.partial" (truncating). A relative path is taken from rank 0's working
 * directory: when the ranks run in different directories, rank 0 makes it absolute and
 * broadcasts it (ranks started elsewhere write the same file) and rw_output_path gives it
 * absolute; otherwise it is used as given. Fails with RW_ERR_IO naming the
 * path and the reason (directory missing or not writable, ...). Collective on comm. */
int rw_output_create(MPI_Comm comm, const char *path, rw_output *out);

/* Checks before any work that a result can be written at `path` (see rw_output.c): not an
 * existing directory, its directory exists and is writable, "<path>.partial" can be created,
 * no directory in the way of the partial files or the sidecar. RW_ERR_IO with one line
 * naming the path and the problem otherwise. Collective on comm (rank 0 checks). */
int rw_output_check_path(MPI_Comm comm, const char *path);

/* Closes the file. success = 1: flush and close; rank 0 writes the XDMF sidecar (if any) as
 * "<xmf>.partial", renames the HDF5 file to its final path, then the sidecar. If any step
 * fails, nothing of this run is left: no partial files, and no result without its sidecar
 * (an earlier sidecar at the same path is removed when this file has no grid fields).
 * success = 0: close and delete the partial file. Accepts NULL; sets *f to NULL. Collective. */
int rw_output_close(rw_output *f, int success);

/* Nonzero once closing a file failed even with the headroom kept for it (rw_output_create
 * sets RW_OUTPUT_RESERVE bytes aside next to the result and removes them before the close):
 * HDF5 1.10 then holds a half-closed file that its clean-up in MPI_Finalize would close again
 * and crash on, so the caller ends the process without MPI_Finalize (rw_app_main does, with
 * its error's exit code, after the message). */
int rw_output_unsafe(void);

/* Creates group `path` (and its parents). Collective. */
int rw_output_group(rw_output f, const char *path);

/* Attributes on the object at `obj` ("/" for the root). Values are the same on every rank.
 * Collective. */
int rw_output_attr_double(rw_output f, const char *obj, const char *name, double v);
int rw_output_attr_long(rw_output f, const char *obj, const char *name, long v);
int rw_output_attr_string(rw_output f, const char *obj, const char *name, const char *v);

/* A replicated array (same values on every rank) as a 1-D dataset. Collective. */
int rw_output_array(rw_output f, const char *path, const double *v, long n);

/* A distributed vector as a global 1-D dataset of its global length (each rank writes its
 * block at its offset). Collective. */
int rw_output_vector(rw_output f, const char *path, N_Vector v);

/* A time series of a distributed vector: rows appended one at a time to a 2-D dataset
 * (rows x global length) that grows, with a companion 1-D dataset "<path>_t" of times.
 * Collective. */
int rw_output_series_append(rw_output f, const char *path, double t, N_Vector v);

/* A grid field: one dataset per component, `<path>/<comp_names[c]>`, shaped like the grid
 * ([n2][n1][n0] in 3-D, [n1][n0] in 2-D; x fastest), each rank writing its block
 * (collective). The datasets carry the grid's origin and spacing as attributes
 * ("origin_xyz", "spacing_xyz", x first), and are listed in the XDMF sidecar (see
 * rw_output_close) when `xdmf` is nonzero. comp_names may be NULL (components "u", or "u0",
 * "u1", ...); a name must be non-empty and free of '/'. `v` must have the grid's layout
 * (RW_ERR_ARG otherwise). */
int rw_output_grid_field(rw_output f, const char *path, rw_grid g, N_Vector v,
                         const char *const *comp_names, int xdmf);

/* One snapshot of a time series of grid fields: written as `/snapshots/<index>/<comp>`
 * (index = 000000, 000001, ... in call order) with the time as attribute "time" on the
 * group; the XDMF sidecar lists every snapshot as a ParaView time series. Collective. */
int rw_output_grid_snapshot(rw_output f, rw_grid g, double t, N_Vector v,
                            const char *const *comp_names);

/* The XDMF sidecar's path for the result `path`: a ".h5" or ".hdf5" suffix replaced by ".xmf"
 * (any other name gets ".xmf" appended); it is written as "<sidecar>.partial" first. */
void rw_output_sidecar_path(const char *path, char *xmf, size_t size);

/* The final path of the result file (as given, or absolute: see rw_output_create). */
const char *rw_output_path(rw_output f);

/* The path of the XDMF sidecar ("<path without .h5 or .hdf5>.xmf"), written by
 * rw_output_close when grid fields were registered for it. */
const char *rw_output_xdmf_path(rw_output f);

/* Snapshots written so far (the index the next rw_output_grid_snapshot gets). */
long rw_output_snapshot_count(rw_output f);

#ifdef __cplusplus
}
#endif
#endif
