/* Private interface of the checkpoint stores: the ops table each implementation fills in
 * and the state the generic layer keeps (tags, counts, timings). */
#ifndef REWIND_CHECKPOINT_RW_STORE_IMPL_H
#define REWIND_CHECKPOINT_RW_STORE_IMPL_H

#include "rewind/rw_store.h"

/* put/get move the data of one slot (the generic layer has checked the slot and its tag);
 * release, inject, prefetch and sync are optional (NULL: nothing to do); destroy frees the
 * content (may be NULL); view (optional, NULL: the store has no slot vectors to lend) gives the
 * slot's own vectors (rw_store_view). */
typedef struct {
  int (*put)(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v);
  int (*get)(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v);
  int (*release)(rw_store st, int slot);
  int (*inject)(rw_store st, const char *kind, long after);
  int (*prefetch)(rw_store st, int slot, int64_t step); /* optional */
  int (*sync)(rw_store st);                             /* optional */
  void (*destroy)(rw_store st);
  int (*view)(rw_store st, int slot, N_Vector *v); /* optional: the slot's own vectors */
} rw_store_ops;

struct rw_store_s {
  const char *kind;
  rw_store_ops ops;
  int nslots, nvec, used, peak;
  rw_snapshot_tag *tag; /* per slot; step -1 when empty */
  size_t snapshot_bytes;
  long writes, reads;
  double write_time, read_time;
  const char *path; /* HDF5: this rank's file */
  void *content;
};

/* Allocates the generic part of a store with every slot empty. */
int rw_store_alloc(const char *kind, const rw_store_ops *ops, int nslots, int nvec,
                   size_t snapshot_bytes, rw_store *out);

/* HDF5 store: the Fletcher32 of `len` bytes (even) computed piece by piece (`piece` bytes,
 * even) and joined, as the store's parallel chunk reads do; equal to
 * rw_checksum_fletcher32(data, len). Exposed for test_store. */
uint32_t rw_checksum_fletcher32_pieces(const void *data, size_t len, size_t piece);

#endif
