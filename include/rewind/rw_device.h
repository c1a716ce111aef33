/* Devices and device vectors (issue 11).
 *
 * A device owns memory that host code must not touch: state vectors whose entries live
 * there, operated on only through their N_Vector operations (kernels on the device), the
 * problem's ops (which get the device pointer from rw_vec_data) and explicit copies
 * (rw_vec_to_host / rw_vec_from_host). Steppers, schedules, stores and drivers are unchanged:
 * they see N_Vectors.
 *
 * Two kinds:
 *  - RW_DEVICE_CUDA: a CUDA GPU, one per rank (the node-local rank modulo the devices this
 *    process sees). Only when the build has CUDA (rw_cuda_built) and a device is present.
 *  - RW_DEVICE_EMULATED: the same vector implementation run on the CPU, with the same
 *    element formulas and the same fixed reduction order as the GPU kernels (rw_kernels.h),
 *    so its results are the GPU's bit for bit. The addresses it hands out are mapped
 *    inaccessible (PROT_NONE) except inside host scopes, and its operations work on a second
 *    view of the same memory, so any host code that reads or writes device data outside a
 *    vector op, a problem op or an explicit copy faults at once: the test that a code path
 *    is ready for a GPU, on a machine without one.
 *
 * A context given a device (rw_context_set_device) makes every vector it creates a device
 * vector; clones of a device vector are device vectors of the same device. Device vector
 * operations are deterministic: element-wise ops give the CPU vectors' bits, reductions
 * (dot, norms, min) follow the fixed tree of rw_kernels.h on each rank and then one
 * MPI_Allreduce, so a device run repeats bit for bit. */
#ifndef REWIND_RW_DEVICE_H
#define REWIND_RW_DEVICE_H

#include "rw_vector.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RW_DEVICE_EMULATED = 1, RW_DEVICE_CUDA = 2 } rw_device_kind;

typedef struct rw_device_s *rw_device;

/* Opens a device of `kind` for this rank. CUDA: picks the node-local rank modulo the visible
 * devices (collective over ctx's communicator); RW_ERR_NOT_IMPLEMENTED when the build has no
 * CUDA, RW_ERR_NO_DEVICE (with the runtime's reason) when there is no device. */
int rw_device_create(rw_context ctx, rw_device_kind kind, rw_device *out);
/* Accepts NULL; every vector of the device must be destroyed first. */
void rw_device_destroy(rw_device *dev);

rw_device_kind rw_device_get_kind(rw_device dev);
/* "emulated" or the GPU's name with its ordinal ("NVIDIA H100 80GB HBM3 (device 0)"). */
const char *rw_device_name(rw_device dev);
/* Bytes of device memory held now and at most so far by this device's vectors. */
size_t rw_device_bytes(rw_device dev);
size_t rw_device_peak_bytes(rw_device dev);
/* Waits until every operation queued on the device has finished (a no-op when emulated). */
int rw_device_sync(rw_device dev);

/* How the halo messages of a device's vectors reach MPI (rw_grid.h's exchanges):
 *  - RW_DEVICE_MPI_STAGED: faces packed on the device, copied to page-locked host buffers,
 *    sent, received into page-locked buffers and copied back (any MPI library);
 *  - RW_DEVICE_MPI_DIRECT: the device's face buffers are handed to MPI (a CUDA-aware library:
 *    no host copies; NVLink or GPUDirect where the library has them). The device is
 *    synchronised after packing, since MPI does not order itself after queued kernels. On the
 *    emulated device MPI is given its buffers inside a host scope: the check of this path's
 *    buffer handling on a machine without a GPU;
 *  - RW_DEVICE_MPI_AUTO: direct on a CUDA device when every rank's MPI library reports CUDA
 *    support (rw_mpi_cuda_support), staged otherwise and on the emulated device.
 * rw_device_create applies AUTO. */
typedef enum {
  RW_DEVICE_MPI_AUTO = 0,
  RW_DEVICE_MPI_STAGED = 1,
  RW_DEVICE_MPI_DIRECT = 2
} rw_device_mpi;

/* What this rank's MPI library reports about CUDA device buffers: 1 it takes them, 0 it does
 * not, -1 it cannot say (no Open MPI CUDA extension, MPIX_Query_cuda_support). Not collective. */
int rw_mpi_cuda_support(void);
/* Sets how dev's halos reach MPI (collective over comm, which every rank of dev's vectors
 * belongs to). DIRECT on a CUDA device whose MPI library does not report CUDA support on
 * every rank is refused (RW_ERR_ARG, saying which rank and what its library reported), as
 * the library would read device addresses as host memory. */
int rw_device_set_mpi(rw_device dev, MPI_Comm comm, rw_device_mpi mode);
/* 1 when dev's halos go to MPI from device memory (RW_DEVICE_MPI_DIRECT in effect). */
int rw_device_mpi_direct(rw_device dev);
/* One line on the mode in effect and why ("staged through page-locked host buffers: the MPI
 * library does not report CUDA support"). */
const char *rw_device_mpi_mode(rw_device dev);

/* Makes every vector ctx creates from now on a vector of `dev` (NULL: CPU vectors again).
 * The context does not own the device. */
void rw_context_set_device(rw_context ctx, rw_device dev);
rw_device rw_context_device(rw_context ctx);

/* The device of a device vector; NULL for a CPU vector. */
rw_device rw_vec_device(N_Vector v);

/* Copies this rank's entries of v to / from host memory (rw_vec_local_length doubles). For a
 * CPU vector, a memcpy. Not collective. */
int rw_vec_to_host(N_Vector v, double *host);
int rw_vec_from_host(N_Vector v, const double *host);

/* Host-readable values of v's local entries: *data is v's own array for a CPU vector; for a
 * device vector a copy is made into *tmp (rw_calloc'ed, release with rw_free; NULL for a CPU
 * vector) and *data points to it. Not collective. */
int rw_vec_host_read(N_Vector v, const double **data, double **tmp);

/* This rank's part of <x, y> (no communication), in the vector's own order. */
double rw_vec_dot_local(N_Vector x, N_Vector y);

/* Host access to device memory for code that is not yet ported to the device: between
 * begin and end, the emulated device's memory is readable and writable from the host (the
 * problem dispatchers of rw_problem.h open such a scope around each problem op, whose
 * kernels a GPU problem runs on the device). Nests; a no-op for a CUDA device and for NULL. */
void rw_device_host_begin(rw_device dev);
void rw_device_host_end(rw_device dev);

#ifdef __cplusplus
}
#endif
#endif
