/* Files of the shared neural-ODE reference format (all little endian, no padding):
 *
 * Weights and gradients, magic "NODEMLP1" (weights) or "NODEGRD1" (a gradient dL/dtheta):
 *   char[8] magic, u32 version = 1, u32 L, u32 widths[L + 1], u32 flags (bit 0: time input),
 *   u32 activation (0 identity, 1 tanh, 2 softplus, 3 relu; the reference defines 1),
 *   f64 damping c, u64 P, f64 values[P] in the order of rw_neuralode.h.
 * Problems, magic "NODEPRB1":
 *   char[8] magic, u32 version = 1, u32 B, u32 D, u32 reserved = 0, f64 T,
 *   f64 y0[B D] (trajectory-major), f64 targets[B D].
 *
 * Readers check every field, the exact file length and that every value is finite, and name
 * the file and the field (for weights the layer and entry, for a problem the array) in their
 * messages (RW_ERR_IO for a file that cannot be read, RW_ERR_ARG for its contents). The
 * readers are not collective; an app loads through rw_mlp_load / rw_node_problem_load, which
 * read on rank 0 only and broadcast the contents, or the error, to every rank (so a file that
 * one rank cannot see fails the same way everywhere instead of stopping that rank alone).
 * Writers write <path>.partial, sync it and rename it when complete, so a crash never leaves
 * a file that looks whole; a failed write removes the partial file and reports errno's text. */
#ifndef REWIND_RW_NEURALODE_IO_H
#define REWIND_RW_NEURALODE_IO_H

#include "rw_neuralode.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads a weights (gradient = 0) or gradient (gradient = 1) file: the architecture and P
 * values in *values (allocated with rw_calloc; the caller frees with rw_free). */
int rw_mlp_file_read(const char *path, int gradient, rw_mlp_arch *arch, double **values, long *P);
/* Reads the weights of a rewind-neuralode result file (HDF5: /model/theta, /model/widths and
 * the attributes activation, time_input and damping of /model/theta). */
int rw_mlp_h5_read(const char *path, rw_mlp_arch *arch, double **values, long *P);
/* Rank 0 reads the weights (gradient = 0: an HDF5 result of rewind-neuralode, recognised by
 * its signature, or a NODEMLP1 file) or a gradient file (gradient = 1, NODEGRD1) and
 * broadcasts the architecture and the P values to every rank of comm. On failure every rank
 * returns the same code, the others with rank 0's message. Collective on comm. */
int rw_mlp_load(MPI_Comm comm, const char *path, int gradient, rw_mlp_arch *arch, double **values,
                long *P);
/* Writes one. Not collective (call it on one rank). */
int rw_mlp_file_write(const char *path, int gradient, const rw_mlp_arch *arch,
                      const double *values);

typedef struct {
  long B, D;
  double T;
  double *y0, *targets; /* B x D each (rw_calloc'd; rw_node_problem_free releases them) */
} rw_node_problem_file;

int rw_node_problem_read(const char *path, rw_node_problem_file *pf);
/* rw_node_problem_read on rank 0, the contents (or the error) broadcast to every rank of comm.
 * Collective on comm. */
int rw_node_problem_load(MPI_Comm comm, const char *path, rw_node_problem_file *pf);
/* Writes one. Not collective. */
int rw_node_problem_write(const char *path, const rw_node_problem_file *pf);
void rw_node_problem_free(rw_node_problem_file *pf);

#ifdef __cplusplus
}
#endif
#endif
