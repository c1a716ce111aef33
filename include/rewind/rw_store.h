/* Checkpoint stores: slots that hold snapshots (a fixed number of N_Vectors each, plus the
 * step index), preallocated from a byte budget so nothing is allocated inside the time loop.
 * A store knows nothing of solvers or schedules; the driver decides what a snapshot holds
 * (the state, or the stages too). Implementations share one ops table: RAM now, HDF5 files
 * later. Every rank holds its own part of each snapshot; all functions are "Not collective"
 * for the RAM store. */
#ifndef REWIND_RW_STORE_H
#define REWIND_RW_STORE_H

#include "rw_vector.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_store_s *rw_store;

/* Slots that fit in `budget_bytes` for snapshots of `snapshot_bytes` each. A budget smaller
 * than one snapshot is RW_ERR_BUDGET with a message naming both sizes. Not collective. */
int rw_store_slots_for_budget(size_t budget_bytes, size_t snapshot_bytes, int *slots);

/* A RAM store with `slots` slots of `nvec` vectors shaped like `tmpl`, all allocated now.
 * Not collective. */
int rw_store_create_ram(N_Vector tmpl, int nvec, int slots, rw_store *out);
int rw_store_destroy(rw_store *st);

/* Copies v[0..nvec-1] into empty slot `slot`, tagged with `step`. Writing a full slot is
 * RW_ERR_INTERNAL (the schedule must free it first). */
int rw_store_put(rw_store st, int slot, int64_t step, N_Vector *v);
/* Copies full slot `slot` into v[0..nvec-1]; *step (may be NULL) receives its tag. Reading
 * an empty slot is RW_ERR_INTERNAL. */
int rw_store_get(rw_store st, int slot, int64_t *step, N_Vector *v);
/* Empties the slot. */
int rw_store_release(rw_store st, int slot);

int rw_store_num_slots(rw_store st);
/* Bytes this rank holds for snapshots (all slots, allocated at creation). */
size_t rw_store_bytes(rw_store st);
size_t rw_store_snapshot_bytes(rw_store st);
/* Most slots full at once since creation. */
int rw_store_peak_used(rw_store st);

#ifdef __cplusplus
}
#endif
#endif
