/* Checkpoint stores: the generic layer (slot bookkeeping, tags, counts) and the RAM store,
 * whose slots x nvec vectors are allocated at creation through the counting allocator, so
 * the bytes held are exact and never exceed the budget they came from. The HDF5 store is
 * in rw_store_hdf5.c. */
#include "../core/rw_device_impl.h"
#include "rewind/rw_device.h"
#include "rw_store_impl.h"

#include <string.h>

/* Slot count for a byte budget (see rw_store.h). Not collective. */
int rw_store_slots_for_budget_named(const char *what, size_t budget_bytes, size_t snapshot_bytes,
                                    int *slots)
{
  RW_CHECK(snapshot_bytes > 0 && slots, RW_ERR_ARG, "snapshot size must be > 0");
  size_t n = budget_bytes / snapshot_bytes;
  RW_CHECK(n >= 1, RW_ERR_BUDGET,
           "the %s budget of %zu bytes is smaller than one snapshot (%zu bytes per "
           "rank); raise it to at least %zu bytes",
           what, budget_bytes, snapshot_bytes, snapshot_bytes);
  *slots = n > 1000000 ? 1000000 : (int)n;
  return 0;
}

/* Slot count for a checkpoint budget (see rw_store.h). Not collective. */
int rw_store_slots_for_budget(size_t budget_bytes, size_t snapshot_bytes, int *slots)
{
  return rw_store_slots_for_budget_named("checkpoint", budget_bytes, snapshot_bytes, slots);
}

int rw_store_alloc(const char *kind, const rw_store_ops *ops, int nslots, int nvec,
                   size_t snapshot_bytes, rw_store *out)
{
  rw_store st = NULL;
  RW_CALL(rw_calloc(1, sizeof *st, "checkpoint store", &st));
  st->kind = kind;
  st->ops = *ops;
  st->nslots = nslots;
  st->nvec = nvec;
  st->snapshot_bytes = snapshot_bytes;
  int ierr = rw_calloc((size_t)nslots, sizeof *st->tag, "checkpoint slot tags", &st->tag);
  if (ierr) {
    rw_free(&st);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  for (int i = 0; i < nslots; i++)
    st->tag[i].step = -1;
  *out = st;
  return 0;
}

/* --- RAM store ----------------------------------------------------------------------- */

static int rw_store_ram_put(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  (void)tag;
  N_Vector *vecs = st->content;
  for (int k = 0; k < st->nvec; k++)
    rw_vec_copy(v[k], vecs[slot * st->nvec + k]);
  return 0;
}

static int rw_store_ram_get(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  (void)tag;
  N_Vector *vecs = st->content;
  for (int k = 0; k < st->nvec; k++)
    rw_vec_copy(vecs[slot * st->nvec + k], v[k]);
  return 0;
}

static int rw_store_ram_view(rw_store st, int slot, N_Vector *v)
{
  N_Vector *vecs = st->content;
  for (int k = 0; k < st->nvec; k++)
    v[k] = vecs[slot * st->nvec + k];
  return 0;
}

static void rw_store_ram_destroy(rw_store st)
{
  N_Vector *vecs = st->content;
  rw_vec_destroy_array(&vecs, st->nslots * st->nvec);
  st->content = NULL;
}

/* Creates a RAM store with every slot allocated now (see rw_store.h). Not collective. */
int rw_store_create_ram(N_Vector tmpl, int nvec, int slots, rw_store *out)
{
  static const rw_store_ops ops = {rw_store_ram_put,     rw_store_ram_get, NULL, NULL, NULL, NULL,
                                   rw_store_ram_destroy, rw_store_ram_view};
  int ierr = 0;
  rw_store st = NULL;
  RW_CHECK(tmpl && out && nvec >= 1 && slots >= 1, RW_ERR_ARG,
           "rw_store_create_ram: need a template, nvec >= 1 and slots >= 1 (got %d, %d)", nvec,
           slots);
  *out = NULL;
  RW_CALL(rw_store_alloc("ram", &ops, slots, nvec, (size_t)nvec * rw_vec_bytes(tmpl), &st));
  N_Vector *vecs = NULL;
  RW_TRY(rw_vec_clone_array_slots(tmpl, slots * nvec, &vecs));
  st->content = vecs;
  *out = st;
  return 0;
cleanup:
  rw_store_destroy(&st);
  return ierr;
}

/* --- Host store: the middle tier of a device run ------------------------------------ */

/* On a device the copies are asynchronous (rw_device_copy_start) through two device staging
 * snapshots: a put copies the vectors into `out` on the device (fast) and queues the copy of
 * `out` to the slot, so the link's transfer overlaps the steps that follow; a prefetch queues
 * the copy of a slot into `in`, and the get that follows copies `in` to the vectors on the
 * device. The queue runs in order, so a prefetch after a put reads what the put wrote. The
 * waits: a put waits for the previous put's transfer (`out` is then free); a get of a slot
 * that was not prefetched waits for the transfer that filled the slot; a get from `in` orders
 * its device copy after the prefetch on the device (rw_device_copy_order: the host goes on). A put
 * into a slot drops a prefetch of it (the prefetch read the slot's old contents). A get of the slot
 * the last put went to copies `out` on the device, which still holds it (only the next put
 * overwrites `out`, after waiting for its transfer): no round trip through the host for a snapshot
 * restored soon after it was stored. CPU vectors copy directly. */
typedef struct {
  rw_device dev;    /* the vectors' device (NULL: CPU vectors) */
  size_t nloc;      /* doubles per vector on this rank */
  double **slot;    /* [nslots] nvec x nloc doubles each, page-locked on a GPU */
  double *out, *in; /* device: the staging snapshots (nvec x nloc doubles each) */
  long out_ticket;  /* the transfer out of `out` */
  long *filled;     /* [nslots] the transfer that fills the slot */
  long in_ticket;   /* the prefetch into `in`, of slot in_slot at step in_step */
  int in_slot;
  int64_t in_step;
  long hits;        /* gets served by a prefetch */
  long staged_hits; /* gets served by `out` (the slot of the last put) */
} rw_host_slots;

static int rw_store_host_put(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  (void)tag;
  rw_host_slots *h = st->content;
  if (!h->out) {
    for (int k = 0; k < st->nvec; k++)
      RW_CALL(rw_vec_to_host(v[k], h->slot[slot] + (size_t)k * h->nloc));
    return 0;
  }
  size_t vb = h->nloc * sizeof(double);
  RW_CALL(rw_device_copy_wait(h->dev, h->out_ticket)); /* `out` is free */
  for (int k = 0; k < st->nvec; k++)
    RW_CALL(
        rw_device_copy(h->dev, h->out + (size_t)k * h->nloc, rw_vec_data(v[k]), vb, RW_COPY_D2D));
  RW_CALL(rw_device_copy_start(h->dev, h->slot[slot], h->out, (size_t)st->nvec * vb, RW_COPY_D2H,
                               &h->out_ticket));
  h->filled[slot] = h->out_ticket;
  if (h->in_slot == slot) h->in_slot = -1;
  return 0;
}

static int rw_store_host_get(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  rw_host_slots *h = st->content;
  size_t vb = h->nloc * sizeof(double);
  if (h->out && h->out_ticket > 0 && h->filled[slot] == h->out_ticket) {
    for (int k = 0; k < st->nvec; k++)
      RW_CALL(
          rw_device_copy(h->dev, rw_vec_data(v[k]), h->out + (size_t)k * h->nloc, vb, RW_COPY_D2D));
    h->staged_hits++;
    return 0;
  }
  if (h->in && h->in_slot == slot && h->in_step == tag->step) {
    /* the device copies below wait for the prefetch on the device, not the host */
    RW_CALL(rw_device_copy_order(h->dev, h->in_ticket));
    for (int k = 0; k < st->nvec; k++)
      RW_CALL(
          rw_device_copy(h->dev, rw_vec_data(v[k]), h->in + (size_t)k * h->nloc, vb, RW_COPY_D2D));
    h->in_slot = -1;
    h->hits++;
    return 0;
  }
  if (h->filled) RW_CALL(rw_device_copy_wait(h->dev, h->filled[slot]));
  for (int k = 0; k < st->nvec; k++)
    RW_CALL(rw_vec_from_host(v[k], h->slot[slot] + (size_t)k * h->nloc));
  return 0;
}

static int rw_store_host_prefetch(rw_store st, int slot, int64_t step)
{
  rw_host_slots *h = st->content;
  if (!h->in) return 0;
  RW_CALL(rw_device_copy_start(h->dev, h->in, h->slot[slot],
                               (size_t)st->nvec * h->nloc * sizeof(double), RW_COPY_H2D,
                               &h->in_ticket));
  h->in_slot = slot;
  h->in_step = step;
  return 0;
}

static int rw_store_host_sync(rw_store st)
{
  rw_host_slots *h = st->content;
  if (!h->dev) return 0;
  long last = h->out_ticket > h->in_ticket ? h->out_ticket : h->in_ticket;
  RW_CALL(rw_device_copy_wait(h->dev, last));
  return 0;
}

static void rw_store_host_destroy(rw_store st)
{
  rw_host_slots *h = st->content;
  if (!h) return;
  if (h->dev) (void)rw_store_host_sync(st); /* no transfer may outlive its buffers */
  for (int i = 0; h->slot && i < st->nslots; i++) {
    if (h->dev)
      rw_device_host_free(h->dev, &h->slot[i]);
    else
      rw_free(&h->slot[i]);
  }
  size_t bytes = (size_t)st->nvec * h->nloc * sizeof(double);
  if (h->out) rw_device_free(h->dev, &h->out, bytes);
  if (h->in) rw_device_free(h->dev, &h->in, bytes);
  rw_free(&h->filled);
  rw_free(&h->slot);
  rw_free(&st->content);
}

/* Creates a host store with every slot allocated now, its copies asynchronous on a device
 * unless `sync` (see rw_store.h). Not collective. */
static int rw_store_host_make(N_Vector tmpl, int nvec, int slots, int sync, rw_store *out)
{
  static const rw_store_ops ops = {
      rw_store_host_put,  rw_store_host_get,     NULL, NULL, rw_store_host_prefetch,
      rw_store_host_sync, rw_store_host_destroy, NULL};
  int ierr = 0;
  rw_store st = NULL;
  rw_host_slots *h = NULL;
  RW_CHECK(tmpl && out && nvec >= 1 && slots >= 1, RW_ERR_ARG,
           "rw_store_create_host: need a template, nvec >= 1 and slots >= 1 (got %d, %d)", nvec,
           slots);
  *out = NULL;
  RW_CALL(rw_store_alloc("host", &ops, slots, nvec, (size_t)nvec * rw_vec_bytes(tmpl), &st));
  RW_TRY(rw_calloc(1, sizeof *h, "host checkpoint store", &h));
  st->content = h;
  h->dev = rw_vec_device(tmpl);
  h->nloc = (size_t)rw_vec_local_length(tmpl);
  h->in_slot = -1;
  RW_TRY(rw_calloc((size_t)slots, sizeof *h->slot, "host checkpoint store", &h->slot));
  size_t bytes = (size_t)nvec * (h->nloc ? h->nloc : 1) * sizeof(double);
  for (int i = 0; i < slots; i++) {
    if (h->dev)
      RW_TRY(rw_device_host_alloc(h->dev, bytes, &h->slot[i]));
    else
      RW_TRY(rw_calloc_whole(bytes / sizeof(double), sizeof(double), "host checkpoint slot",
                             &h->slot[i]));
  }
  if (h->dev && h->nloc && !sync) {
    RW_TRY(rw_device_alloc(h->dev, bytes, &h->out));
    RW_TRY(rw_device_alloc(h->dev, bytes, &h->in));
    RW_TRY(rw_calloc((size_t)slots, sizeof *h->filled, "host checkpoint store", &h->filled));
  }
  *out = st;
  return 0;
cleanup:
  rw_store_destroy(&st);
  return ierr;
}

int rw_store_create_host(N_Vector tmpl, int nvec, int slots, rw_store *out)
{
  return rw_store_host_make(tmpl, nvec, slots, 0, out);
}

int rw_store_create_host_sync(N_Vector tmpl, int nvec, int slots, rw_store *out)
{
  return rw_store_host_make(tmpl, nvec, slots, 1, out);
}

long rw_store_host_staged_hits(rw_store st)
{
  if (!st || strcmp(st->kind, "host") != 0 || !st->content) return 0;
  return ((rw_host_slots *)st->content)->staged_hits;
}

long rw_store_host_prefetch_hits(rw_store st)
{
  if (!st || strcmp(st->kind, "host") != 0 || !st->content) return 0;
  return ((rw_host_slots *)st->content)->hits;
}

/* --- Generic layer ------------------------------------------------------------------- */

/* Destroys a store (see rw_store.h). Not collective. */
int rw_store_destroy(rw_store *pst)
{
  if (!pst || !*pst) return 0;
  rw_store st = *pst;
  if (st->ops.destroy) st->ops.destroy(st);
  rw_free(&st->tag);
  rw_free(pst);
  return 0;
}

/* Writes a snapshot into an empty slot (see rw_store.h). */
int rw_store_put(rw_store st, int slot, const rw_snapshot_tag *tag, N_Vector *v)
{
  RW_CHECK(st && tag && v, RW_ERR_ARG, "rw_store_put: NULL argument");
  RW_CHECK(slot >= 0 && slot < st->nslots, RW_ERR_INTERNAL,
           "%s checkpoint slot %d out of range [0, %d)", st->kind, slot, st->nslots);
  RW_CHECK(st->tag[slot].step < 0, RW_ERR_INTERNAL,
           "%s checkpoint slot %d is full (step %lld); the schedule must free it first", st->kind,
           slot, (long long)st->tag[slot].step);
  RW_CHECK(tag->step >= 0, RW_ERR_ARG, "rw_store_put: step %lld must be >= 0",
           (long long)tag->step);
  double t0 = rw_wtime();
  RW_CALL(st->ops.put(st, slot, tag, v));
  st->write_time += rw_wtime() - t0;
  st->tag[slot] = *tag;
  st->writes++;
  if (++st->used > st->peak) st->peak = st->used;
  return 0;
}

/* Reads a full slot back (see rw_store.h). */
int rw_store_get(rw_store st, int slot, rw_snapshot_tag *tag, N_Vector *v)
{
  RW_CHECK(st && v, RW_ERR_ARG, "rw_store_get: NULL argument");
  RW_CHECK(slot >= 0 && slot < st->nslots && st->tag[slot].step >= 0, RW_ERR_INTERNAL,
           "%s checkpoint slot %d is empty or out of range", st->kind, slot);
  double t0 = rw_wtime();
  RW_CALL(st->ops.get(st, slot, &st->tag[slot], v));
  st->read_time += rw_wtime() - t0;
  st->reads++;
  if (tag) *tag = st->tag[slot];
  return 0;
}

/* The slot's vectors, lent (see rw_store.h). */
int rw_store_view(rw_store st, int slot, rw_snapshot_tag *tag, N_Vector *v, int *viewed)
{
  RW_CHECK(st && v && viewed, RW_ERR_ARG, "rw_store_view: NULL argument");
  *viewed = 0;
  if (!st->ops.view) return 0;
  RW_CHECK(slot >= 0 && slot < st->nslots && st->tag[slot].step >= 0, RW_ERR_INTERNAL,
           "%s checkpoint slot %d is empty or out of range", st->kind, slot);
  RW_CALL(st->ops.view(st, slot, v));
  st->reads++;
  if (tag) *tag = st->tag[slot];
  *viewed = 1;
  return 0;
}

/* Empties a slot (see rw_store.h). */
int rw_store_release(rw_store st, int slot)
{
  RW_CHECK(st, RW_ERR_ARG, "rw_store_release: NULL store");
  RW_CHECK(slot >= 0 && slot < st->nslots && st->tag[slot].step >= 0, RW_ERR_INTERNAL,
           "freeing %s checkpoint slot %d, which is empty or out of range", st->kind, slot);
  if (st->ops.release) RW_CALL(st->ops.release(st, slot));
  st->tag[slot].step = -1;
  st->used--;
  return 0;
}

/* Starts reading a full slot ahead of its get (see rw_store.h). Not collective. */
int rw_store_prefetch(rw_store st, int slot, int64_t step)
{
  RW_CHECK(st, RW_ERR_ARG, "rw_store_prefetch: NULL store");
  RW_CHECK(slot >= 0 && slot < st->nslots && st->tag[slot].step == step, RW_ERR_INTERNAL,
           "prefetch of %s checkpoint slot %d (step %lld): the slot holds step %lld", st->kind,
           slot, (long long)step,
           slot >= 0 && slot < st->nslots ? (long long)st->tag[slot].step : -1LL);
  if (st->ops.prefetch) RW_CALL(st->ops.prefetch(st, slot, step));
  return 0;
}

/* Waits for the store's I/O in flight (see rw_store.h). */
int rw_store_sync(rw_store st)
{
  if (!st) return 0;
  if (st->ops.sync) RW_CALL(st->ops.sync(st));
  return 0;
}

/* Fault injection for tests (see rw_store.h). Not collective. */
int rw_store_inject_fault(rw_store st, const char *kind, long after)
{
  RW_CHECK(st && kind, RW_ERR_ARG, "rw_store_inject_fault: NULL argument");
  RW_CHECK(st->ops.inject, RW_ERR_ARG, "fault injection needs a disk store, not a %s store",
           st->kind);
  RW_CALL(st->ops.inject(st, kind, after));
  return 0;
}

const char *rw_store_kind(rw_store st) { return st ? st->kind : ""; }
int rw_store_num_slots(rw_store st) { return st ? st->nslots : 0; }
int64_t rw_store_slot_step(rw_store st, int slot)
{
  return st && slot >= 0 && slot < st->nslots ? st->tag[slot].step : -1;
}
size_t rw_store_bytes(rw_store st) { return st ? (size_t)st->nslots * st->snapshot_bytes : 0; }
size_t rw_store_snapshot_bytes(rw_store st) { return st ? st->snapshot_bytes : 0; }
int rw_store_peak_used(rw_store st) { return st ? st->peak : 0; }
long rw_store_writes(rw_store st) { return st ? st->writes : 0; }
long rw_store_reads(rw_store st) { return st ? st->reads : 0; }
double rw_store_write_time(rw_store st) { return st ? st->write_time : 0.0; }
double rw_store_read_time(rw_store st) { return st ? st->read_time : 0.0; }
const char *rw_store_path(rw_store st) { return st ? st->path : NULL; }
