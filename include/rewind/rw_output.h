/* HDF5 result files, written collectively with parallel HDF5.
 *
 * A result file is written under "<path>.partial" and renamed to <path> only by
 * rw_output_close(..., success = 1) after every dataset is flushed and closed, so a run that
 * fails or is killed never leaves a file that looks complete (the .partial file is removed
 * on a clean failure). Datasets are chunked with the Fletcher32 checksum so corruption is
 * detected on read; attributes make the file self-describing under h5dump. */
#ifndef REWIND_RW_OUTPUT_H
#define REWIND_RW_OUTPUT_H

#include "rw_grid.h"
#include "rw_vector.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_output_s *rw_output;

/* Creates "<path>.partial" (truncating). Fails with RW_ERR_IO naming the path and the reason
 * (directory missing or not writable, ...). Collective on comm. */
int rw_output_create(MPI_Comm comm, const char *path, rw_output *out);

/* Closes the file. success = 1: flush, close and rename to the final path; success = 0:
 * close and delete the partial file. Accepts NULL. Collective. */
int rw_output_close(rw_output *f, int success);

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
 * (collective). The datasets carry the grid's origin and spacing as attributes, and are
 * listed in the XDMF sidecar (see rw_output_close) when `xdmf` is nonzero. */
int rw_output_grid_field(rw_output f, const char *path, rw_grid g, N_Vector v,
                         const char *const *comp_names, int xdmf);

/* One snapshot of a time series of grid fields: written as `/snapshots/<index>/<comp>` with
 * the time as attribute; the XDMF sidecar lists every snapshot as a ParaView time series.
 * Collective. */
int rw_output_grid_snapshot(rw_output f, rw_grid g, double t, N_Vector v,
                            const char *const *comp_names);

/* The final and partial paths. */
const char *rw_output_path(rw_output f);

#ifdef __cplusplus
}
#endif
#endif
