/* State vectors: SUNDIALS N_Vectors (MPI "parallel" implementation) whose data Rewind
 * allocates through its counting allocator, so every stored state counts against the
 * budget exactly. Steppers use N_Vector operations only; problem kernels use the raw
 * local array from rw_vec_data. */
#ifndef REWIND_RW_VECTOR_H
#define REWIND_RW_VECTOR_H

#include "rw_context.h"

#include <nvector/nvector_parallel.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a zeroed distributed vector with `local_n` entries on this rank. Collective
 * (the global length is summed). */
int rw_vec_create(rw_context ctx, sunindextype local_n, N_Vector *out);

/* Creates a zeroed vector with the layout of `tmpl`. Not collective. */
int rw_vec_clone(N_Vector tmpl, N_Vector *out);

/* Destroys a vector made by rw_vec_create/rw_vec_clone; accepts NULL, sets *v to NULL. */
void rw_vec_destroy(N_Vector *v);

/* Creates/destroys an array of n vectors like `tmpl`. */
int rw_vec_clone_array(N_Vector tmpl, int n, N_Vector **out);
void rw_vec_destroy_array(N_Vector **vs, int n);
/* rw_vec_clone_array for a checkpoint store's slots, each written whole when used: CPU vectors'
 * data from rw_calloc_whole (huge pages from 2 MiB up). Destroyed by rw_vec_destroy_array. */
int rw_vec_clone_array_slots(N_Vector tmpl, int n, N_Vector **out);

/* A view: a vector with the layout of `tmpl` that owns no data; its entries are wherever
 * rw_vec_view_point last pointed it (e.g. one half of a longer vector). Destroy it with
 * rw_vec_view_destroy (the data are not freed). Not collective. */
int rw_vec_view_create(N_Vector tmpl, N_Vector *out);
void rw_vec_view_point(N_Vector view, double *data);
void rw_vec_view_destroy(N_Vector *view);

double *rw_vec_data(N_Vector v);
sunindextype rw_vec_local_length(N_Vector v);
sunindextype rw_vec_global_length(N_Vector v);
/* The communicator the vector is distributed over (CPU and device vectors alike). */
MPI_Comm rw_vec_comm(N_Vector v);
/* Bytes of state data this rank holds for one such vector. */
size_t rw_vec_bytes(N_Vector v);

/* z[i] = sum_j c[j] x[j][i], i < len, in one pass: the arithmetic of the vectors'
 * N_VLinearCombination (SUNDIALS' operations in SUNDIALS' order, so the same bits). z may
 * alias x[0]. Lets a kernel form a combination where it needs it (a halo copy) instead of
 * in a vector of its own. Any n >= 1. */
#define RW_LINCOMB_MAX 64
void rw_lincomb(int n, const double *c, const double *const *x, double *z, long len);

/* Bitwise copy x -> y (same layout). Not collective. */
void rw_vec_copy(N_Vector x, N_Vector y);

#ifdef __cplusplus
}
#endif
#endif
