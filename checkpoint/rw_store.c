/* RAM checkpoint store: slots x nvec vectors allocated at creation through the counting
 * allocator, so the bytes held are exact and never exceed the budget they came from. */
#include "rewind/rw_store.h"

typedef struct {
  int (*put)(rw_store st, int slot, N_Vector *v);
  int (*get)(rw_store st, int slot, N_Vector *v);
  void (*destroy)(rw_store st);
} rw_store_ops;

struct rw_store_s {
  rw_store_ops ops;
  int nslots, nvec, used, peak;
  int64_t *step; /* tag per slot, -1 when empty */
  size_t snapshot_bytes;
  N_Vector *vecs; /* RAM: nslots * nvec vectors */
};

int rw_store_slots_for_budget(size_t budget_bytes, size_t snapshot_bytes, int *slots)
{
  RW_CHECK(snapshot_bytes > 0, RW_ERR_ARG, "snapshot size must be > 0");
  size_t n = budget_bytes / snapshot_bytes;
  RW_CHECK(n >= 1, RW_ERR_BUDGET,
           "the checkpoint budget of %zu bytes is smaller than one snapshot (%zu bytes per "
           "rank); raise it to at least %zu bytes",
           budget_bytes, snapshot_bytes, snapshot_bytes);
  *slots = n > 1000000 ? 1000000 : (int)n;
  return 0;
}

static int rw_store_ram_put(rw_store st, int slot, N_Vector *v)
{
  for (int k = 0; k < st->nvec; k++)
    rw_vec_copy(v[k], st->vecs[slot * st->nvec + k]);
  return 0;
}

static int rw_store_ram_get(rw_store st, int slot, N_Vector *v)
{
  for (int k = 0; k < st->nvec; k++)
    rw_vec_copy(st->vecs[slot * st->nvec + k], v[k]);
  return 0;
}

static void rw_store_ram_destroy(rw_store st)
{
  rw_vec_destroy_array(&st->vecs, st->nslots * st->nvec);
}

int rw_store_create_ram(N_Vector tmpl, int nvec, int slots, rw_store *out)
{
  int ierr = 0;
  rw_store st = NULL;
  RW_CHECK(tmpl && out && nvec >= 1 && slots >= 1, RW_ERR_ARG,
           "rw_store_create_ram: need a template, nvec >= 1 and slots >= 1 (got %d, %d)", nvec,
           slots);
  *out = NULL;
  RW_CALL(rw_calloc(1, sizeof *st, "checkpoint store", &st));
  st->ops.put = rw_store_ram_put;
  st->ops.get = rw_store_ram_get;
  st->ops.destroy = rw_store_ram_destroy;
  st->nslots = slots;
  st->nvec = nvec;
  st->snapshot_bytes = (size_t)nvec * rw_vec_bytes(tmpl);
  RW_TRY(rw_calloc((size_t)slots, sizeof *st->step, "checkpoint slot tags", &st->step));
  for (int i = 0; i < slots; i++)
    st->step[i] = -1;
  RW_TRY(rw_vec_clone_array(tmpl, slots * nvec, &st->vecs));
  *out = st;
  return 0;
cleanup:
  rw_store_destroy(&st);
  return ierr;
}

int rw_store_destroy(rw_store *pst)
{
  if (!pst || !*pst) return 0;
  rw_store st = *pst;
  if (st->ops.destroy) st->ops.destroy(st);
  rw_free(&st->step);
  rw_free(pst);
  return 0;
}

int rw_store_put(rw_store st, int slot, int64_t step, N_Vector *v)
{
  RW_CHECK(slot >= 0 && slot < st->nslots, RW_ERR_INTERNAL,
           "checkpoint slot %d out of range [0, %d)", slot, st->nslots);
  RW_CHECK(st->step[slot] < 0, RW_ERR_INTERNAL,
           "checkpoint slot %d is full (step %lld); the schedule must free it first", slot,
           (long long)st->step[slot]);
  RW_CALL(st->ops.put(st, slot, v));
  st->step[slot] = step;
  if (++st->used > st->peak) st->peak = st->used;
  return 0;
}

int rw_store_get(rw_store st, int slot, int64_t *step, N_Vector *v)
{
  RW_CHECK(slot >= 0 && slot < st->nslots && st->step[slot] >= 0, RW_ERR_INTERNAL,
           "checkpoint slot %d is empty or out of range", slot);
  RW_CALL(st->ops.get(st, slot, v));
  if (step) *step = st->step[slot];
  return 0;
}

int rw_store_release(rw_store st, int slot)
{
  RW_CHECK(slot >= 0 && slot < st->nslots && st->step[slot] >= 0, RW_ERR_INTERNAL,
           "freeing checkpoint slot %d, which is empty or out of range", slot);
  st->step[slot] = -1;
  st->used--;
  return 0;
}

int rw_store_num_slots(rw_store st) { return st->nslots; }
size_t rw_store_bytes(rw_store st) { return (size_t)st->nslots * st->snapshot_bytes; }
size_t rw_store_snapshot_bytes(rw_store st) { return st->snapshot_bytes; }
int rw_store_peak_used(rw_store st) { return st->peak; }
