/* Checkpoint stores: the RAM and HDF5 stores return exactly what was written (bit for bit,
 * with the tag), refuse misuse, and the HDF5 store detects every injected fault (a flipped
 * byte, a truncated file) on read, refuses a missing or occupied directory, and leaves no
 * file behind unless told to keep it. */
#define _GNU_SOURCE                      /* RTLD_NEXT */
#include "../checkpoint/rw_store_impl.h" /* rw_checksum_fletcher32_pieces */
#include "rewind/rw_store.h"
#include "rw_test.h"

#include <dlfcn.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

TestSuite(store, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

/* The HDF5 lock's discipline, checked call by call: while `h5_watch` is set (from setup() to
 * teardown(), which checks), the HDF5 calls below (those the store makes) are counted in
 * `h5_unlocked` when the calling thread does not hold rw_hdf5_lock; the tests' own HDF5 calls
 * take the lock too. The definitions here take the place of the library's for librewind (the
 * executable's symbols come first) and call it through RTLD_NEXT. */
static atomic_int h5_watch, h5_unlocked;

static void h5_check(void)
{
  if (atomic_load(&h5_watch) && !rw_hdf5_lock_held()) atomic_fetch_add(&h5_unlocked, 1);
}

#define H5_WRAP(ret, name, params, args)                                                           \
  ret name params                                                                                  \
  {                                                                                                \
    static ret(*real) params;                                                                      \
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, #name);                                          \
    h5_check();                                                                                    \
    return real args;                                                                              \
  }

H5_WRAP(herr_t, H5Eset_auto2, (hid_t e, H5E_auto2_t f, void *d), (e, f, d))
H5_WRAP(hid_t, H5Fcreate, (const char *n, unsigned fl, hid_t c, hid_t a), (n, fl, c, a))
H5_WRAP(hid_t, H5Fopen, (const char *n, unsigned fl, hid_t a), (n, fl, a))
H5_WRAP(herr_t, H5Fflush, (hid_t o, H5F_scope_t sc), (o, sc))
H5_WRAP(herr_t, H5Fclose, (hid_t o), (o))
H5_WRAP(hid_t, H5Dget_space, (hid_t d), (d))
H5_WRAP(herr_t, H5Dwrite, (hid_t d, hid_t t, hid_t m, hid_t f, hid_t x, const void *b),
        (d, t, m, f, x, b))
H5_WRAP(herr_t, H5Dread, (hid_t d, hid_t t, hid_t m, hid_t f, hid_t x, void *b), (d, t, m, f, x, b))
H5_WRAP(herr_t, H5Dwrite_chunk,
        (hid_t d, hid_t x, uint32_t fl, const hsize_t *o, size_t n, const void *b),
        (d, x, fl, o, n, b))
H5_WRAP(herr_t, H5Dget_chunk_info_by_coord,
        (hid_t d, const hsize_t *o, unsigned *m, haddr_t *a, hsize_t *n), (d, o, m, a, n))
H5_WRAP(hid_t, H5Dcreate2, (hid_t l, const char *n, hid_t t, hid_t s, hid_t lc, hid_t dc, hid_t da),
        (l, n, t, s, lc, dc, da))
H5_WRAP(hid_t, H5Dopen2, (hid_t l, const char *n, hid_t a), (l, n, a))
H5_WRAP(herr_t, H5Dclose, (hid_t d), (d))
H5_WRAP(hid_t, H5Screate_simple, (int r, const hsize_t *d, const hsize_t *m), (r, d, m))
H5_WRAP(herr_t, H5Sselect_hyperslab,
        (hid_t s, H5S_seloper_t op, const hsize_t *st, const hsize_t *sd, const hsize_t *c,
         const hsize_t *b),
        (s, op, st, sd, c, b))
H5_WRAP(herr_t, H5Sclose, (hid_t s), (s))
H5_WRAP(hid_t, H5Pcreate, (hid_t c), (c))
H5_WRAP(herr_t, H5Pclose, (hid_t p), (p))
H5_WRAP(hid_t, H5Acreate2, (hid_t l, const char *n, hid_t t, hid_t s, hid_t c, hid_t a),
        (l, n, t, s, c, a))
H5_WRAP(hid_t, H5Aopen, (hid_t o, const char *n, hid_t a), (o, n, a))
H5_WRAP(htri_t, H5Aexists, (hid_t o, const char *n), (o, n))
H5_WRAP(herr_t, H5Aread, (hid_t a, hid_t t, void *b), (a, t, b))
H5_WRAP(herr_t, H5Awrite, (hid_t a, hid_t t, const void *b), (a, t, b))
H5_WRAP(herr_t, H5Fget_filesize, (hid_t f, hsize_t *n), (f, n))

typedef struct {
  rw_context ctx;
  N_Vector v[2], w[2];
  char dir[64];
} fixture;

static void setup(fixture *f, long n)
{
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &f->ctx));
  for (int k = 0; k < 2; k++) {
    RW_TEST_OK(rw_vec_create(f->ctx, n, &f->v[k]));
    RW_TEST_OK(rw_vec_create(f->ctx, n, &f->w[k]));
  }
  snprintf(f->dir, sizeof f->dir, "/tmp/rw_store_XXXXXX");
  cr_assert_not_null(mkdtemp(f->dir));
  atomic_store(&h5_unlocked, 0);
  atomic_store(&h5_watch, 1);
}

static void fill(fixture *f, double seed)
{
  for (int k = 0; k < 2; k++) {
    double *d = rw_vec_data(f->v[k]);
    for (long i = 0; i < rw_vec_local_length(f->v[k]); i++)
      d[i] = sin(seed + 0.37 * (double)i + 11.0 * k) * 1e3 + 1.0 / (i + 1.0);
  }
}

static int same(fixture *f)
{
  for (int k = 0; k < 2; k++)
    if (memcmp(rw_vec_data(f->v[k]), rw_vec_data(f->w[k]), rw_vec_bytes(f->v[k])) != 0) return 0;
  return 1;
}

static void teardown(fixture *f)
{
  for (int k = 0; k < 2; k++) {
    rw_vec_destroy(&f->v[k]);
    rw_vec_destroy(&f->w[k]);
  }
  rw_context_destroy(&f->ctx);
  rmdir(f->dir);
  atomic_store(&h5_watch, 0);
  cr_assert_eq(atomic_load(&h5_unlocked), 0, "%d HDF5 calls made without the HDF5 lock",
               atomic_load(&h5_unlocked));
}

/* Writes slots 0..n-1 with different data, reads them back in another order. */
static void roundtrip(fixture *f, rw_store st)
{
  int n = rw_store_num_slots(st);
  for (int s = 0; s < n; s++) {
    fill(f, s);
    rw_snapshot_tag tg = {.step = 10 * s + 3, .t = 0.5 * s, .h = 0.125};
    RW_TEST_OK(rw_store_put(st, s, &tg, f->v));
  }
  for (int s = n - 1; s >= 0; s--) {
    rw_snapshot_tag tg = {.step = -1, .t = 0, .h = 0};
    RW_TEST_OK(rw_store_get(st, s, &tg, f->w));
    fill(f, s);
    cr_assert(same(f), "slot %d does not hold what was written", s);
    cr_assert_eq(tg.step, 10 * s + 3);
    cr_assert_eq(tg.t, 0.5 * s);
    cr_assert_eq(tg.h, 0.125);
  }
  /* misuse: a full slot, an empty slot */
  rw_snapshot_tag tg = {.step = 1, .t = 0, .h = 0};
  cr_assert_eq(rw_store_put(st, 0, &tg, f->v), RW_ERR_INTERNAL);
  RW_TEST_OK(rw_store_release(st, 0));
  cr_assert_eq(rw_store_get(st, 0, NULL, f->w), RW_ERR_INTERNAL);
  cr_assert_eq(rw_store_release(st, 0), RW_ERR_INTERNAL);
  cr_assert_eq(rw_store_put(st, n, &tg, f->v), RW_ERR_INTERNAL);
  cr_assert_eq(rw_store_peak_used(st), n);
  cr_assert_eq(rw_store_writes(st), n);
  cr_assert_eq(rw_store_reads(st), n);
}

Test(store, ram_roundtrip)
{
  fixture f;
  setup(&f, 1000);
  rw_store st = NULL;
  RW_TEST_OK(rw_store_create_ram(f.v[0], 2, 4, &st));
  cr_assert_str_eq(rw_store_kind(st), "ram");
  cr_assert_eq(rw_store_bytes(st), 4 * 2 * 1000 * sizeof(double));
  roundtrip(&f, st);
  cr_assert_eq(rw_store_inject_fault(st, "flip", 1), RW_ERR_ARG);
  rw_store_destroy(&st);
  cr_assert_null(st);
  teardown(&f);
}

/* The big path of rw_calloc_whole (checkpoint slots from 2 MiB up): a mapping of its own,
 * zeroed, counted and freed exactly, aligned to 2 MiB and advised for huge pages. */
static int vma_flag(const void *p, const char *flag)
{
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int in = 0, found = -1;
  const unsigned long a = (unsigned long)p;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = a >= lo && a < hi;
      continue;
    }
    if (in && strncmp(line, "VmFlags:", 8) == 0) {
      char pat[8];
      snprintf(pat, sizeof pat, " %s", flag);
      found = strstr(line + 8, pat) != NULL;
      break;
    }
  }
  fclose(f);
  return found;
}

Test(store, calloc_whole_big_blocks)
{
  const size_t n = ((size_t)3 << 20) / sizeof(double) + 3; /* past 2 MiB, not a page multiple */
  const size_t before = rw_mem_current();
  double *d = NULL, *small = NULL;
  RW_TEST_OK(rw_calloc_whole(n, sizeof(double), "test block", &d));
  cr_assert_not_null(d);
  cr_assert_eq(rw_mem_current(), before + n * sizeof(double), "counted exactly");
  cr_assert_eq((uintptr_t)d % 64, 0, "payload on a cache line (512-bit loads never split)");
  cr_assert_eq((uintptr_t)d % ((uintptr_t)2 << 20), 64, "its mapping starts on 2 MiB, just below");
  size_t nz = 0; /* zeroed (+0.0, all bits clear), every entry writable */
  while (nz < n && d[nz] == 0.0 && !signbit(d[nz]))
    nz++;
  cr_assert_eq(nz, n, "entry %zu not zero", nz);
  for (size_t i = 0; i < n; i++)
    d[i] = (double)i;
  cr_assert(d[n - 1] == (double)(n - 1));
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0) {
    int hg = vma_flag(d, "hg");
    if (hg < 0)
      cr_log_warn("no VmFlags in /proc/self/smaps: the huge page advice is not checked\n");
    else
      cr_assert_eq(hg, 1, "the block's mapping is not advised for huge pages (VmFlags hg)");
  } else {
    cr_log_warn("kernel without transparent huge pages: the advice is not checked\n");
  }
  RW_TEST_OK(rw_calloc_whole(100, sizeof(double), "small block", &small)); /* calloc's path */
  cr_assert_eq(rw_mem_current(), before + (n + 100) * sizeof(double));
  cr_assert(small[99] == 0.0);
  cr_assert_eq((uintptr_t)small % 64, 0, "a small block's payload on a cache line too");
  for (size_t len = 1; len < 40; len += 7) { /* rw_calloc's, every size */
    char *c = NULL;
    RW_TEST_OK(rw_calloc(len, 1, "tiny block", &c));
    cr_assert_eq((uintptr_t)c % 64, 0, "a %zu-byte block's payload not on a cache line", len);
    cr_assert(c[len - 1] == 0);
    rw_free(&c);
  }
  rw_free(&d);
  cr_assert_null(d);
  rw_free(&small);
  cr_assert_eq(rw_mem_current(), before, "freed exactly");
}

/* Blocks as a group (rw_calloc_whole_many): 40 blocks of 100 KiB + 8 bytes (4 MiB together)
 * share one mapping advised for huge pages, each zeroed, 64-byte aligned, apart from the others
 * and counted on its own; freed one by one in any order, the count comes back exactly (the
 * mapping goes with the last, which a second group then reuses cleanly). A group under 2 MiB and
 * a single block are blocks of their own; an injected failure leaves nothing. */
Test(store, calloc_whole_many_groups)
{
  enum { NB = 40 };
  const size_t m = 12801, bytes = m * sizeof(double); /* 100 KiB + 8 */
  const size_t before = rw_mem_current();
  for (int round = 0; round < 2; round++) {
    double *p[NB];
    RW_TEST_OK(rw_calloc_whole_many(NB, m, sizeof(double), "test group", (void **)p));
    cr_assert_eq(rw_mem_current(), before + NB * bytes, "counted as %d blocks", NB);
    for (int i = 0; i < NB; i++) {
      cr_assert_not_null(p[i]);
      cr_assert_eq((uintptr_t)p[i] % 64, 0, "block %d aligned to 64 bytes", i);
      cr_assert(p[i][0] == 0.0 && p[i][m - 1] == 0.0 && !signbit(p[i][m / 2]), "block %d zeroed",
                i);
      if (i > 0)
        cr_assert_geq((uintptr_t)p[i], (uintptr_t)(p[i - 1] + m), "block %d overlaps the last", i);
      cr_assert_lt((uintptr_t)p[i] - (uintptr_t)p[0], (uintptr_t)NB * (bytes + 128),
                   "block %d outside the group's mapping", i);
    }
    for (int i = 0; i < NB; i++) /* every entry writable, none shared */
      for (size_t k = 0; k < m; k++)
        p[i][k] = (double)i + 1e-6 * (double)k;
    for (int i = 0; i < NB; i++)
      cr_assert(p[i][0] == (double)i && p[i][m - 1] == (double)i + 1e-6 * (double)(m - 1));
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0) {
      int hg = vma_flag(p[NB / 2], "hg");
      if (hg >= 0) cr_assert_eq(hg, 1, "the group's mapping is not advised for huge pages");
    }
    for (int i = 0; i < NB; i += 2) /* the even blocks first, then the odd ones backwards */
      rw_free(&p[i]);
    cr_assert_eq(rw_mem_current(), before + NB / 2 * bytes);
    for (int i = NB - 1; i > 0; i -= 2) {
      rw_free(&p[i]);
      cr_assert_null(p[i]);
    }
    cr_assert_eq(rw_mem_current(), before, "freed exactly (round %d)", round);
  }
  double *q[3] = {NULL, NULL, NULL}, *one = NULL;
  RW_TEST_OK(rw_calloc_whole_many(3, m, sizeof(double), "small group", (void **)q));
  RW_TEST_OK(rw_calloc_whole_many(1, m, sizeof(double), "one block", (void **)&one));
  cr_assert_eq(rw_mem_current(), before + 4 * bytes);
  rw_free(&q[1]), rw_free(&one), rw_free(&q[0]), rw_free(&q[2]);
  cr_assert_eq(rw_mem_current(), before);
  double *r[NB];
  rw_mem_fail_after(1);
  cr_assert_eq(rw_calloc_whole_many(NB, m, sizeof(double), "failed group", (void **)r), RW_ERR_MEM);
  rw_mem_fail_after(0);
  for (int i = 0; i < NB; i++)
    cr_assert_null(r[i]);
  cr_assert_eq(rw_mem_current(), before, "a failed group leaves nothing");
}

/* RAM store slots past 2 MiB (rw_vec_clone_array_slots): the same bits back, and every byte
 * counted while the store lives and released with it. */
Test(store, ram_roundtrip_big_slots)
{
  fixture f;
  setup(&f, 300001);
  const size_t before = rw_mem_current();
  rw_store st = NULL;
  RW_TEST_OK(rw_store_create_ram(f.v[0], 2, 3, &st));
  cr_assert_geq(rw_mem_current(), before + 3 * 2 * 300001 * sizeof(double));
  roundtrip(&f, st);
  rw_store_destroy(&st);
  cr_assert_eq(rw_mem_current(), before, "the slots are freed with the store");
  teardown(&f);
}

Test(store, budget_names_the_key)
{
  int slots = 0;
  cr_assert_eq(rw_store_slots_for_budget_named("checkpoint_disk", 100, 800, &slots), RW_ERR_BUDGET);
  cr_assert(strstr(rw_error_message(), "checkpoint_disk") && strstr(rw_error_message(), "800"),
            "%s", rw_error_message());
  RW_TEST_OK(rw_store_slots_for_budget_named("checkpoint_disk", 8000, 800, &slots));
  cr_assert_eq(slots, 10);
}

static rw_store_hdf5_options h5opt(fixture *f, const char *id, int keep)
{
  rw_store_hdf5_options o = {.dir = f->dir, .run_id = id, .contents = "state", .keep = keep};
  return o;
}

/* The fixture with n values per vector and an HDF5 store of two vectors in `slots` slots. */
static rw_store h5store(fixture *f, long n, const char *id, int slots)
{
  setup(f, n);
  rw_store st = NULL;
  rw_store_hdf5_options o = h5opt(f, id, 0);
  RW_TEST_OK(rw_store_create_hdf5(f->v[0], 2, slots, &o, &st));
  return st;
}

/* rw_store_view: a RAM slot lent as its own vectors (what was written, the slot's tag, a read
 * counted; the same vectors every time, not copies), an empty or out-of-range slot refused; an
 * HDF5 store lends nothing and leaves v alone. */
Test(store, ram_view_lends_the_slot)
{
  fixture f;
  setup(&f, 1000);
  rw_store st = NULL;
  RW_TEST_OK(rw_store_create_ram(f.v[0], 2, 3, &st));
  for (int s = 0; s < 3; s++) {
    fill(&f, 7.0 * s);
    rw_snapshot_tag tg = {.step = 5 * s + 1, .t = 0.25 * s, .h = 0.5};
    RW_TEST_OK(rw_store_put(st, s, &tg, f.v));
  }
  for (int s = 2; s >= 0; s--) {
    N_Vector lent[2] = {NULL, NULL}, again[2] = {NULL, NULL};
    rw_snapshot_tag tg = {.step = -1};
    int viewed = 0;
    RW_TEST_OK(rw_store_view(st, s, &tg, lent, &viewed));
    cr_assert_eq(viewed, 1);
    cr_assert_eq(tg.step, 5 * s + 1);
    cr_assert_eq(tg.t, 0.25 * s);
    fill(&f, 7.0 * s);
    for (int k = 0; k < 2; k++) {
      cr_assert(lent[k] && lent[k] != f.v[k] && lent[k] != f.w[k]);
      cr_assert(memcmp(rw_vec_data(lent[k]), rw_vec_data(f.v[k]), rw_vec_bytes(f.v[k])) == 0,
                "slot %d, vector %d: not what was written", s, k);
    }
    RW_TEST_OK(rw_store_view(st, s, NULL, again, &viewed));
    cr_assert(again[0] == lent[0] && again[1] == lent[1], "slot %d lent a copy", s);
  }
  cr_assert_eq(rw_store_reads(st), 6);
  RW_TEST_OK(rw_store_release(st, 1));
  N_Vector none[2] = {NULL, NULL};
  int viewed = 1;
  cr_assert_eq(rw_store_view(st, 1, NULL, none, &viewed), RW_ERR_INTERNAL);
  cr_assert_eq(rw_store_view(st, 3, NULL, none, &viewed), RW_ERR_INTERNAL);
  cr_assert_eq(rw_store_view(st, -1, NULL, none, &viewed), RW_ERR_INTERNAL);
  cr_assert_eq(viewed, 0);
  rw_store_destroy(&st);

  rw_store_hdf5_options o = h5opt(&f, "view1", 0);
  RW_TEST_OK(rw_store_create_hdf5(f.v[0], 2, 2, &o, &st));
  fill(&f, 1.0);
  rw_snapshot_tag tg = {.step = 4, .t = 1.0, .h = 0.5};
  RW_TEST_OK(rw_store_put(st, 0, &tg, f.v));
  viewed = 1;
  RW_TEST_OK(rw_store_view(st, 0, NULL, none, &viewed));
  cr_assert_eq(viewed, 0);
  cr_assert(none[0] == NULL && none[1] == NULL, "a store without slot vectors set v");
  cr_assert_eq(rw_store_reads(st), 0);
  rw_store_destroy(&st);
  teardown(&f);
}

Test(store, hdf5_roundtrip_and_file)
{
  fixture f;
  setup(&f, 3000);
  rw_store st = NULL;
  rw_store_hdf5_options o = h5opt(&f, "abc123", 1);
  RW_TEST_OK(rw_store_create_hdf5(f.v[0], 2, 3, &o, &st));
  cr_assert_str_eq(rw_store_kind(st), "hdf5");
  char path[256];
  snprintf(path, sizeof path, "%s", rw_store_path(st));
  cr_assert(strstr(path, "rewind-ckpt-abc123.0-of-1.h5"), "%s", path);
  roundtrip(&f, st);
  /* The same identity in the same directory while the file exists: refused. */
  rw_store st2 = NULL;
  cr_assert_eq(rw_store_create_hdf5(f.v[0], 2, 3, &o, &st2), RW_ERR_IO);
  cr_assert(strstr(rw_error_message(), "already exists") && strstr(rw_error_message(), "restart"),
            "%s", rw_error_message());
  rw_store_destroy(&st);
  /* keep = 1: the file stays and h5dump-style readers find the layout. */
  rw_hdf5_lock();
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert(file >= 0, "kept file %s cannot be opened", path);
  hid_t d = H5Dopen2(file, "snapshots", H5P_DEFAULT);
  cr_assert(d >= 0);
  hid_t sp = H5Dget_space(d);
  hsize_t dims[3];
  cr_assert_eq(H5Sget_simple_extent_dims(sp, dims, NULL), 3);
  cr_assert(dims[0] == 3 && dims[1] == 2 && dims[2] == 3000);
  hid_t dcpl = H5Dget_create_plist(d);
  cr_assert_eq(H5Pget_nfilters(dcpl), 1, "the Fletcher32 filter is missing");
  cr_assert(H5Aexists(file, "run_id") > 0 && H5Aexists(file, "format") > 0);
  /* HDF5's own read path (the Fletcher32 filter) accepts the chunks the store wrote
   * directly, and returns the data of slot 1 (slot 0 was released by roundtrip()). */
  double *row = calloc(3000, sizeof *row);
  hsize_t start[3] = {1, 1, 0}, count[3] = {1, 1, 3000};
  hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &count[2], NULL);
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
  cr_assert(H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, row) >= 0,
            "HDF5 rejects the store's chunk (checksum)");
  fill(&f, 1);
  cr_assert(memcmp(row, rw_vec_data(f.v[1]), 3000 * sizeof *row) == 0);
  H5Sclose(fs);
  H5Sclose(ms);
  free(row);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Dclose(d);
  H5Fclose(file);
  rw_hdf5_unlock();
  cr_assert_eq(unlink(path), 0);
  teardown(&f);
}

/* Changes one byte of a stored chunk of dataset `name` in the file at `path` (the chunk at
 * `coord`, `off` bytes into it, xor `mask`), behind HDF5's back: its checksum no longer
 * matches. */
static void flip_chunk_byte(const char *path, const char *name, const hsize_t *coord, long off,
                            int mask)
{
  rw_hdf5_lock();
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
  hsize_t size = 0;
  haddr_t addr = 0;
  unsigned fmask = 0;
  cr_assert(H5Dget_chunk_info_by_coord(d, coord, &fmask, &addr, &size) >= 0 && size > (hsize_t)off);
  H5Dclose(d);
  H5Fclose(file);
  rw_hdf5_unlock();
  FILE *fp = fopen(path, "r+b");
  cr_assert(fp);
  fseek(fp, (long)addr + off, SEEK_SET);
  int c = fgetc(fp);
  fseek(fp, (long)addr + off, SEEK_SET);
  fputc(c ^ mask, fp);
  fclose(fp);
}

/* The adaptive time record (/times): written in pieces across its 512-value chunks, read back
 * after a restart's reopen exactly; a read past what was written, and a read through a chunk
 * whose stored data no longer match its checksum, say not ok; a cut to n keeps t[0..n] and
 * the writes go on from there; a file whose run wrote no record reads as none. */
Test(store, hdf5_time_record)
{
  fixture f;
  setup(&f, 16);
  enum { NT = 1300 };
  double t[NT], got[NT];
  for (int i = 0; i < NT; i++)
    t[i] = 0.001 * i + 1e-9 * (i % 7);
  rw_store st = NULL;
  rw_store_hdf5_options o = h5opt(&f, "tr1", 1);
  RW_TEST_OK(rw_store_create_hdf5(f.v[0], 2, 2, &o, &st));
  RW_TEST_OK(rw_store_hdf5_put_times(st, t, 3));
  RW_TEST_OK(rw_store_hdf5_put_times(st, t, 3)); /* nothing new */
  RW_TEST_OK(rw_store_hdf5_put_times(st, t, 700));
  RW_TEST_OK(rw_store_hdf5_put_times(st, t, NT - 1));
  char path[256];
  snprintf(path, sizeof path, "%s", rw_store_path(st));
  rw_store_destroy(&st);
  rw_store_hdf5_options r = o;
  r.restart = 1;
  RW_TEST_OK(rw_store_create_hdf5(f.w[0], 2, 0, &r, &st));
  int ok = 0;
  memset(got, 0, sizeof got);
  RW_TEST_OK(rw_store_hdf5_get_times(st, NT - 1, got, &ok));
  cr_assert(ok && memcmp(got, t, sizeof t) == 0, "the record does not read back");
  RW_TEST_OK(rw_store_hdf5_get_times(st, NT, got, &ok));
  cr_assert(!ok, "a read past the record passes");
  /* cut to t[0..600], then written on to 900 with other values past 600 */
  RW_TEST_OK(rw_store_hdf5_trim_times(st, 600));
  RW_TEST_OK(rw_store_hdf5_get_times(st, 601, got, &ok));
  cr_assert(!ok, "the cut record still holds t[601]");
  double u[NT];
  memcpy(u, t, sizeof u);
  for (int i = 601; i < NT; i++)
    u[i] = -t[i];
  RW_TEST_OK(rw_store_hdf5_put_times(st, u, 900));
  RW_TEST_OK(rw_store_hdf5_get_times(st, 900, got, &ok));
  cr_assert(ok && memcmp(got, u, 901 * sizeof *u) == 0, "the record written on after a cut");
  rw_store_destroy(&st);
  /* one byte of the second chunk (t[512..1023]) flipped on disk */
  hsize_t coord = 512;
  flip_chunk_byte(path, "times", &coord, 8, 0x21);
  RW_TEST_OK(rw_store_create_hdf5(f.w[0], 2, 0, &r, &st));
  RW_TEST_OK(rw_store_hdf5_get_times(st, 511, got, &ok));
  cr_assert(ok && memcmp(got, t, 512 * sizeof *t) == 0, "the intact first chunk");
  RW_TEST_OK(rw_store_hdf5_get_times(st, 600, got, &ok));
  cr_assert(!ok, "a read through the damaged chunk passes");
  /* cut to nothing (a restart from step 0): written again from t[0] */
  RW_TEST_OK(rw_store_hdf5_trim_times(st, -1));
  RW_TEST_OK(rw_store_hdf5_put_times(st, t, 700));
  RW_TEST_OK(rw_store_hdf5_get_times(st, 700, got, &ok));
  cr_assert(ok && memcmp(got, t, 701 * sizeof *t) == 0,
            "the record written again after a cut to none");
  rw_store_destroy(&st);
  cr_assert_eq(unlink(path), 0);
  /* a run that wrote no record */
  rw_store_hdf5_options n = h5opt(&f, "tr2", 1);
  RW_TEST_OK(rw_store_create_hdf5(f.v[0], 2, 2, &n, &st));
  snprintf(path, sizeof path, "%s", rw_store_path(st));
  rw_store_destroy(&st);
  r = n;
  r.restart = 1;
  RW_TEST_OK(rw_store_create_hdf5(f.w[0], 2, 0, &r, &st));
  RW_TEST_OK(rw_store_hdf5_get_times(st, 0, got, &ok));
  cr_assert(!ok, "an empty record reads as holding t[0]");
  rw_store_destroy(&st);
  cr_assert_eq(unlink(path), 0);
  teardown(&f);
}

/* A second store made (here: refused, its file being taken) while the first store's I/O
 * thread is still marking released slots free. The library HDF5 is not thread-safe: every
 * HDF5 call of the creating thread must hold the HDF5 lock the I/O thread holds, or the
 * two threads' calls interleave inside HDF5 (a crash in H5CX_pop found by CI, from an
 * unlocked H5Eset_auto2). Every HDF5 call the stores make meanwhile, from either thread, is
 * checked to hold the lock (deterministic); each release (a queued job) is followed at once
 * by the second store's creation, so the two threads overlap in many rounds too (the crash
 * itself showed in about one run in ten of this test without the lock). */
Test(store, hdf5_create_while_releasing)
{
  fixture f;
  setup(&f, 64);
  enum { slots = 96 };
  rw_store st = NULL, st2 = NULL;
  rw_store_hdf5_options o = h5opt(&f, "busy", 0);
  RW_TEST_OK(rw_store_create_hdf5(f.v[0], 2, slots, &o, &st));
  for (int round = 0; round < 2; round++) {
    for (int s = 0; s < slots; s++) {
      fill(&f, s);
      rw_snapshot_tag tg = {.step = s, .t = s, .h = 1.0};
      RW_TEST_OK(rw_store_put(st, s, &tg, f.v));
    }
    RW_TEST_OK(rw_store_sync(st));
    for (int s = slots - 1; s >= 0; s--) { /* read back, half of them read ahead */
      if (s % 2) RW_TEST_OK(rw_store_prefetch(st, s, s));
      rw_snapshot_tag tg = {.step = -1};
      RW_TEST_OK(rw_store_get(st, s, &tg, f.w));
      fill(&f, s);
      cr_assert(same(&f) && tg.step == s, "slot %d does not hold what was written", s);
    }
    for (int s = 0; s < slots; s++) {
      RW_TEST_OK(rw_store_release(st, s));
      cr_assert_eq(rw_store_create_hdf5(f.v[0], 2, 2, &o, &st2), RW_ERR_IO);
      cr_assert(strstr(rw_error_message(), "already exists"), "%s", rw_error_message());
    }
  }
  RW_TEST_OK(rw_store_sync(st));
  rw_store_destroy(&st);
  teardown(&f); /* counts the HDF5 calls made without the lock */
}

Test(store, hdf5_removes_its_file)
{
  fixture f;
  setup(&f, 100);
  rw_store st = NULL;
  rw_store_hdf5_options o = h5opt(&f, "gone", 0);
  RW_TEST_OK(rw_store_create_hdf5(f.v[0], 1, 2, &o, &st));
  char path[256];
  snprintf(path, sizeof path, "%s", rw_store_path(st));
  cr_assert_eq(access(path, F_OK), 0);
  rw_store_destroy(&st);
  cr_assert_neq(access(path, F_OK), 0, "%s left behind", path);
  teardown(&f);
}

Test(store, hdf5_bad_directories)
{
  fixture f;
  setup(&f, 100);
  rw_store st = NULL;
  rw_store_hdf5_options o = h5opt(&f, "x", 0);
  o.dir = "/nonexistent/rewind/ckpt";
  cr_assert_eq(rw_store_create_hdf5(f.v[0], 1, 2, &o, &st), RW_ERR_IO);
  cr_assert(strstr(rw_error_message(), "checkpoint_dir '/nonexistent/rewind/ckpt'"), "%s",
            rw_error_message());
  char file[128];
  snprintf(file, sizeof file, "%s/plain", f.dir);
  FILE *fp = fopen(file, "w");
  cr_assert_not_null(fp);
  fclose(fp);
  o.dir = file;
  cr_assert_eq(rw_store_create_hdf5(f.v[0], 1, 2, &o, &st), RW_ERR_IO);
  cr_assert(strstr(rw_error_message(), "not a directory"), "%s", rw_error_message());
  unlink(file);
  o = h5opt(&f, "bad/id", 0);
  cr_assert_eq(rw_store_create_hdf5(f.v[0], 1, 2, &o, &st), RW_ERR_ARG);
  teardown(&f);
}

Test(store, hdf5_budget_above_free_space)
{
  fixture f;
  setup(&f, 1 << 20); /* 8 MiB snapshots */
  struct statvfs sv;
  cr_assert_eq(statvfs(f.dir, &sv), 0);
  double avail = (double)sv.f_bavail * (double)sv.f_frsize;
  int slots = (int)(2.0 * avail / (8.0 * 1048576.0)) + 2;
  rw_store st = NULL;
  rw_store_hdf5_options o = h5opt(&f, "huge", 0);
  cr_assert_eq(rw_store_create_hdf5(f.v[0], 1, slots, &o, &st), RW_ERR_BUDGET,
               "%d slots of 8 MiB accepted with %.0f bytes free", slots, avail);
  cr_assert(strstr(rw_error_message(), "bytes free") && strstr(rw_error_message(), f.dir), "%s",
            rw_error_message());
  cr_assert_null(st);
  char left[256];
  snprintf(left, sizeof left, "%s/rewind-ckpt-huge.0-of-1.h5", f.dir);
  cr_assert_neq(access(left, F_OK), 0, "a refused store left %s", left);
  teardown(&f);
}

/* A fault injected after the k-th write is found when that snapshot is read back; n values
 * per vector (more than a read piece of 1 MiB: the fault is in a piece the I/O thread or the
 * caller may read, and the checksum is joined from the pieces' sums). */
static void fault_case(const char *kind, long n)
{
  fixture f;
  rw_store st = h5store(&f, n, kind, 3);
  RW_TEST_OK(rw_store_inject_fault(st, kind, 2));
  for (int s = 0; s < 3; s++) {
    fill(&f, s);
    rw_snapshot_tag tg = {.step = s, .t = 0, .h = 0};
    RW_TEST_OK(rw_store_put(st, s, &tg, f.v));
  }
  RW_TEST_OK(rw_store_get(st, 0, NULL, f.w)); /* written before the fault */
  fill(&f, 0);
  cr_assert(same(&f));
  int ierr = rw_store_get(st, 1, NULL, f.w);
  cr_assert_eq(ierr, RW_ERR_IO, "a %s snapshot was read back without an error", kind);
  cr_assert(strstr(rw_error_message(), "is damaged") && strstr(rw_error_message(), "step 1"), "%s",
            rw_error_message());
  rw_store_destroy(&st);
  teardown(&f);
}

/* A write that fails (here the file may not grow: RLIMIT_FSIZE, as a quota or a full disk) is
 * reported as that write's failure by the next call, also when the call is a get of the slot
 * the write left unreadable: the get's own error ("damaged") was reported instead, and the
 * app then removed the checkpoint files a restart needed. */
Test(store, hdf5_failed_write_reported_before_its_slot_is_read)
{
  fixture f;
  rw_store st = h5store(&f, 5000, "fsize", 3);
  fill(&f, 0);
  rw_snapshot_tag t0 = {.step = 0}, t1 = {.step = 1};
  RW_TEST_OK(rw_store_put(st, 0, &t0, f.v));
  RW_TEST_OK(rw_store_sync(st));
  struct stat sb;
  cr_assert_eq(stat(rw_store_path(st), &sb), 0);
  struct rlimit old, lim;
  cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
  lim = old;
  lim.rlim_cur = (rlim_t)sb.st_size;
  cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  fill(&f, 1);
  int ierr = rw_store_put(st, 1, &t1, f.v); /* the write is queued: its error comes later */
  if (!ierr) ierr = rw_store_get(st, 1, &t1, f.w);
  char msg[4096];
  snprintf(msg, sizeof msg, "%s", rw_error_message());
  cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, was);
  cr_assert_eq(ierr, RW_ERR_IO, "the failed write went unreported");
  cr_assert(strstr(msg, "writing checkpoint step 1") && !strstr(msg, "damaged"),
            "not the write's failure: %s", msg);
  rw_store_destroy(&st);
  teardown(&f);
}

Test(store, hdf5_detects_flipped_byte) { fault_case("flip", 5000); }
Test(store, hdf5_detects_truncation) { fault_case("truncate", 5000); }
Test(store, hdf5_detects_flipped_byte_in_pieces) { fault_case("flip", 300001); }
Test(store, hdf5_detects_truncation_in_pieces) { fault_case("truncate", 300001); }

/* Read-ahead returns what a plain read returns; a slot rewritten after its prefetch gives the
 * new data (the stale read is dropped), and sync reports no error. */
Test(store, hdf5_prefetch)
{
  fixture f;
  rw_store st = h5store(&f, 4000, "pre", 2);
  for (int s = 0; s < 2; s++) {
    fill(&f, s);
    rw_snapshot_tag tg = {.step = s, .t = 0, .h = 0};
    RW_TEST_OK(rw_store_put(st, s, &tg, f.v));
  }
  RW_TEST_OK(rw_store_prefetch(st, 1, 1));
  RW_TEST_OK(rw_store_get(st, 1, NULL, f.w));
  fill(&f, 1);
  cr_assert(same(&f));
  cr_assert_eq(rw_store_prefetch(st, 0, 7), RW_ERR_INTERNAL); /* slot 0 holds step 0 */
  RW_TEST_OK(rw_store_prefetch(st, 0, 0));
  RW_TEST_OK(rw_store_release(st, 0));
  fill(&f, 9);
  rw_snapshot_tag tg = {.step = 9, .t = 0, .h = 0};
  RW_TEST_OK(rw_store_put(st, 0, &tg, f.v));
  RW_TEST_OK(rw_store_get(st, 0, NULL, f.w));
  cr_assert(same(&f), "a stale read-ahead was returned");
  RW_TEST_OK(rw_store_sync(st));
  rw_store_destroy(&st);
  teardown(&f);
}

/* rw_checksum_fletcher32 is the checksum HDF5's own Fletcher32 filter stores: written through
 * the filter, read back raw, for even and odd lengths and all-0xff data (the folding's edge). */
Test(store, fletcher32_matches_hdf5)
{
  char path[] = "/tmp/rw_fletcher_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  size_t lens[] = {1, 2, 3, 719, 720, 721, 1000, 65537, 400000};
  for (int pat = 0; pat < 2; pat++)
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
      size_t n = lens[i];
      unsigned char *buf = malloc(n + 4), *raw = malloc(n + 4);
      for (size_t j = 0; j < n; j++)
        buf[j] = pat ? 0xff : (unsigned char)((j * 2654435761u) >> 13);
      hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      hsize_t dims = n;
      hid_t sp = H5Screate_simple(1, &dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
      H5Pset_chunk(dcpl, 1, &dims);
      H5Pset_fletcher32(dcpl);
      hid_t d = H5Dcreate2(file, "x", H5T_NATIVE_UCHAR, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      cr_assert(H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
      H5Dflush(d);
      hsize_t off = 0;
      uint32_t mask = 1;
      cr_assert(H5Dread_chunk(d, H5P_DEFAULT, &off, &mask, raw) >= 0 && mask == 0);
      uint32_t stored = 0;
      for (int b = 0; b < 4; b++)
        stored |= (uint32_t)raw[n + (size_t)b] << (8 * b);
      cr_assert_eq(rw_checksum_fletcher32(buf, n), stored, "n = %zu, pattern %d: %08x vs %08x", n,
                   pat, rw_checksum_fletcher32(buf, n), stored);
      H5Dclose(d);
      H5Pclose(dcpl);
      H5Sclose(sp);
      H5Fclose(file);
      free(buf);
      free(raw);
    }
  unlink(path);
}

/* The checksum of a chunk read in pieces by two threads, each piece summed from zero and the
 * sums joined, is rw_checksum_fletcher32's (HDF5's, above) for pieces ending anywhere on a word,
 * on the folding's edges: all 0xff (sums that are multiples of 65535), all zero, zeros then
 * 0xff and the reverse, and mixed data. */
Test(store, fletcher32_in_pieces)
{
  size_t lens[] = {2, 718, 720, 722, 1440, 65536, 400002, 3u << 20};
  size_t pieces[] = {2, 4, 358, 360, 718, 720, 722, 4096, 65534, 1u << 20};
  for (int pat = 0; pat < 5; pat++)
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
      size_t n = lens[i];
      unsigned char *buf = malloc(n);
      for (size_t j = 0; j < n; j++) {
        unsigned char mixed = (unsigned char)((j * 2654435761u) >> 13);
        buf[j] = pat == 0   ? 0xff
                 : pat == 1 ? 0
                 : pat == 2 ? (j < n / 2 ? 0 : 0xff)
                 : pat == 3 ? (j < n / 2 ? 0xff : 0)
                            : mixed;
      }
      uint32_t want = rw_checksum_fletcher32(buf, n);
      for (size_t p = 0; p < sizeof pieces / sizeof *pieces; p++) {
        if (pieces[p] > n || (pieces[p] < 64 && n > 65536)) continue;
        uint32_t got = rw_checksum_fletcher32_pieces(buf, n, pieces[p]);
        cr_assert_eq(got, want, "n = %zu, piece %zu, pattern %d: %08x vs %08x", n, pieces[p], pat,
                     got, want);
      }
      free(buf);
    }
}

/* Restart: a kept file is reopened with its slot count, tags (step, time, step size, running
 * cost) and info; rw_store_hdf5_check_slot passes complete slots, fails a tag that does not
 * match, and with `full` fails a slot whose data were changed behind its checksums (a torn
 * write) that the cheap check cannot see; files of another format version or another deck
 * are refused naming what differs, and a refused restart leaves the files alone. */
Test(store, hdf5_restart_reopen_check_and_refuse)
{
  fixture f;
  setup(&f, 700);
  rw_store st = NULL;
  rw_store_hdf5_options o = h5opt(&f, "rs1", 1);
  o.deck = "N: 16\ndt: 0.2\n";
  o.decomposition = "1 ranks, local lengths 700";
  o.info = "record 42";
  RW_TEST_OK(rw_store_create_hdf5(f.v[0], 2, 4, &o, &st));
  for (int s = 0; s < 3; s++) {
    fill(&f, s);
    rw_snapshot_tag tg = {.step = 10 * s, .t = 0.5 * s, .h = 0.25, .q = 1.5 + s};
    RW_TEST_OK(rw_store_put(st, s, &tg, f.v));
  }
  RW_TEST_OK(rw_store_sync(st));
  char path[256];
  snprintf(path, sizeof path, "%s", rw_store_path(st));
  rw_store_destroy(&st);

  rw_store_hdf5_options r = o;
  r.restart = 1;
  RW_TEST_OK(rw_store_create_hdf5(f.w[0], 2, 0, &r, &st));
  cr_assert_eq(rw_store_num_slots(st), 4);
  cr_assert_str_eq(rw_store_hdf5_info(st), "record 42");
  for (int s = 0; s < 3; s++)
    cr_assert_eq(rw_store_slot_step(st, s), 10 * s);
  cr_assert_eq(rw_store_slot_step(st, 3), -1);
  int ok = 0;
  RW_TEST_OK(rw_store_hdf5_check_slot(st, 1, 10, 1, &ok));
  cr_assert(ok, "a complete slot fails the check");
  RW_TEST_OK(rw_store_hdf5_check_slot(st, 1, 20, 0, &ok));
  cr_assert(!ok, "a slot passes for a step it does not hold");
  rw_snapshot_tag tg;
  RW_TEST_OK(rw_store_get(st, 2, &tg, f.w));
  fill(&f, 2);
  cr_assert(same(&f) && tg.step == 20 && tg.t == 1.0 && tg.h == 0.25 && tg.q == 3.5,
            "restart read back step %lld t %g h %g q %g", (long long)tg.step, tg.t, tg.h, tg.q);
  rw_store_destroy(&st);

  /* A torn write: one data byte of slot 1 changed on disk, its stored checksum not. */
  hsize_t coord[3] = {1, 0, 0};
  flip_chunk_byte(path, "snapshots", coord, 16, 0x5a);
  RW_TEST_OK(rw_store_create_hdf5(f.w[0], 2, 0, &r, &st));
  RW_TEST_OK(rw_store_hdf5_check_slot(st, 1, 10, 0, &ok));
  cr_assert(ok, "the cheap check reads only the stored checksums");
  RW_TEST_OK(rw_store_hdf5_check_slot(st, 1, 10, 1, &ok));
  cr_assert(!ok, "the full check misses a torn slot");
  RW_TEST_OK(rw_store_hdf5_check_slot(st, 0, 0, 1, &ok));
  cr_assert(ok);
  rw_store_destroy(&st);

  /* Another deck: refused, naming the key and both values; the file stays. */
  rw_store_hdf5_options other = r;
  other.run_id = "rs2";
  other.deck = "N: 16\ndt: 0.25\n";
  cr_assert_eq(rw_store_create_hdf5(f.w[0], 2, 0, &other, &st), RW_ERR_DECK);
  cr_assert(strstr(rw_error_message(), "dt: 0.2 there, dt: 0.25 here"), "%s", rw_error_message());
  cr_assert_eq(access(path, F_OK), 0, "a refused restart removed the files");
  /* Another format version: refused, saying so. */
  rw_hdf5_lock();
  hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t a = H5Aopen(file, "version", H5P_DEFAULT);
  long long v = 99;
  cr_assert(H5Awrite(a, H5T_NATIVE_LLONG, &v) >= 0);
  H5Aclose(a);
  H5Fclose(file);
  rw_hdf5_unlock();
  cr_assert_eq(rw_store_create_hdf5(f.w[0], 2, 0, &r, &st), RW_ERR_DECK);
  cr_assert(strstr(rw_error_message(), "format version 99"), "%s", rw_error_message());
  /* No file of this run and none of another: says where to restart from. */
  cr_assert_eq(unlink(path), 0);
  cr_assert_eq(rw_store_create_hdf5(f.w[0], 2, 0, &r, &st), RW_ERR_IO);
  cr_assert(strstr(rw_error_message(), "no checkpoint files"), "%s", rw_error_message());
  cr_assert_null(st);
  rw_error_clear();
  teardown(&f);
}

/* rw_mem_check_available: a request beyond the node's memory is refused with the sizes, the
 * name and the fix; a small one passes. */
Test(store, memory_check_refuses_what_does_not_fit)
{
  if (rw_mem_available() == 0) cr_skip_test("the available memory is unknown here");
  RW_TEST_OK(rw_mem_check_available(MPI_COMM_WORLD, (size_t)1 << 20, "a small store", "fix"));
  int e = rw_mem_check_available(MPI_COMM_WORLD, (size_t)1 << 60, "a huge store", "do less");
  cr_assert_eq(e, RW_ERR_BUDGET, "got %d: %s", e, rw_error_message());
  cr_expect(strstr(rw_error_message(), "not enough memory for a huge store: 1073741824.00 GiB on "
                                       "this rank") &&
                strstr(rw_error_message(), "available; do less"),
            "%s", rw_error_message());
  rw_error_clear();
}
