/* Result files and XDMF sidecars on one rank: sidecar naming, no sidecar without grid fields
 * (and removal of a stale one), XML escaping of names, many snapshots (the records grow, none
 * is dropped), argument errors, abandoned files, and memory returned on close. The multi-rank
 * checks (values read back, failure cases) are in tests/mpi/output_mpi.c. */
#define _POSIX_C_SOURCE 200809L
#include "rewind/rw_output.h"
#include "rw_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(output, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

typedef struct {
  char dir[64];
  rw_context ctx;
  rw_grid g;
  N_Vector v;
} fixture;

static void setup(fixture *x, int ncomp)
{
  snprintf(x->dir, sizeof x->dir, "/tmp/rw_output_XXXXXX");
  cr_assert(mkdtemp(x->dir), "mkdtemp failed");
  RW_TEST_OK(rw_context_create(MPI_COMM_SELF, &x->ctx));
  rw_grid_config c = {.dim = 2,
                      .n = {8, 6, 1},
                      .lo = {0, 0, 0},
                      .hi = {1, 1, 1},
                      .bc = {RW_BC_PERIODIC, RW_BC_PERIODIC, RW_BC_PERIODIC},
                      .ncomp = ncomp,
                      .ghost = 1};
  RW_TEST_OK(rw_grid_create(x->ctx, &c, &x->g));
  RW_TEST_OK(rw_grid_new_field(x->g, &x->v));
}

static void teardown(fixture *x)
{
  rw_vec_destroy(&x->v);
  rw_grid_destroy(&x->g);
  rw_context_destroy(&x->ctx);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", x->dir);
  cr_assert_eq(system(cmd), 0);
}

static int exists(const char *dir, const char *name)
{
  char p[256];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &sb) == 0;
}

static char *slurp(const char *dir, const char *name)
{
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *fp = fopen(p, "r");
  cr_assert(fp, "cannot open %s", p);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static int count_of(const char *s, const char *needle)
{
  int n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

Test(output, sidecar_names)
{
  fixture x;
  setup(&x, 1);
  const char *in[] = {"a.h5", "b.hdf5", "c.out"}, *want[] = {"a.xmf", "b.xmf", "c.out.xmf"};
  for (int i = 0; i < 3; i++) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", x.dir, in[i]);
    rw_output f = NULL;
    RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &f));
    const char *xmf = strrchr(rw_output_xdmf_path(f), '/') + 1;
    cr_assert_str_eq(xmf, want[i]);
    RW_TEST_OK(rw_output_grid_field(f, "/f", x.g, x.v, NULL, 1));
    RW_TEST_OK(rw_output_close(&f, 1));
    cr_assert_null(f);
    cr_assert(exists(x.dir, in[i]) && exists(x.dir, want[i]), "%s or %s missing", in[i], want[i]);
  }
  teardown(&x);
}

Test(output, no_grid_fields_no_sidecar_and_stale_removed)
{
  fixture x;
  setup(&x, 1);
  char p[128];
  snprintf(p, sizeof p, "%s/r.h5", x.dir);
  rw_output f = NULL;
  RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &f));
  RW_TEST_OK(rw_output_grid_field(f, "/f", x.g, x.v, NULL, 1));
  RW_TEST_OK(rw_output_close(&f, 1));
  cr_assert(exists(x.dir, "r.xmf"));
  /* A second run without grid fields (or with xdmf = 0) must not leave the old sidecar. */
  RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &f));
  RW_TEST_OK(rw_output_grid_field(f, "/f", x.g, x.v, NULL, 0));
  RW_TEST_OK(rw_output_vector(f, "/y", x.v));
  RW_TEST_OK(rw_output_close(&f, 1));
  cr_assert(exists(x.dir, "r.h5"));
  cr_assert(!exists(x.dir, "r.xmf"), "stale sidecar kept");
  cr_assert(!exists(x.dir, "r.xmf.partial") && !exists(x.dir, "r.h5.partial"));
  teardown(&x);
}

Test(output, names_are_escaped)
{
  fixture x;
  setup(&x, 2);
  char p[128];
  snprintf(p, sizeof p, "%s/r.h5", x.dir);
  rw_output f = NULL;
  const char *names[] = {"a<b&c", "\"q\""};
  RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &f));
  RW_TEST_OK(rw_output_grid_field(f, "grad/dJ>d", x.g, x.v, names, 1));
  RW_TEST_OK(rw_output_close(&f, 1));
  const char *s = slurp(x.dir, "r.xmf");
  cr_assert(strstr(s, "Name=\"grad/dJ&gt;d/a&lt;b&amp;c\""), "%s", s);
  cr_assert(strstr(s, "r.h5:/grad/dJ&gt;d/&quot;q&quot;</DataItem>"), "%s", s);
  cr_assert(strstr(s, "Dimensions=\"1 6 8\""), "%s", s);
  cr_assert(!strstr(s, "a<b"), "unescaped name: %s", s);
  teardown(&x);
}

Test(output, many_snapshots_all_listed)
{
  fixture x;
  setup(&x, 1);
  char p[128];
  snprintf(p, sizeof p, "%s/r.h5", x.dir);
  rw_output f = NULL;
  size_t mem0 = rw_mem_current();
  RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &f));
  for (int s = 0; s < 70; s++)
    RW_TEST_OK(rw_output_grid_snapshot(f, x.g, 0.1 * s, x.v, NULL));
  cr_assert_eq(rw_output_snapshot_count(f), 70);
  RW_TEST_OK(rw_output_close(&f, 1));
  cr_assert_eq(rw_mem_current(), mem0, "memory not returned");
  const char *s = slurp(x.dir, "r.xmf");
  cr_assert_eq(count_of(s, "<Time Value="), 70);
  cr_assert(strstr(s, "r.h5:/snapshots/000069/u<"), "last snapshot missing");
  teardown(&x);
}

Test(output, bad_arguments)
{
  fixture x;
  setup(&x, 1);
  char p[128];
  snprintf(p, sizeof p, "%s/r.h5", x.dir);
  rw_output f = NULL;
  N_Vector w = NULL;
  RW_TEST_OK(rw_vec_create(x.ctx, 5, &w));
  RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &f));
  cr_assert_eq(rw_output_grid_field(f, "/f", x.g, w, NULL, 1), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "5 local entries"), "%s", rw_error_message());
  rw_error_clear();
  const char *bad[] = {"a/b"};
  cr_assert_eq(rw_output_grid_field(f, "/f", x.g, x.v, bad, 1), RW_ERR_ARG);
  rw_error_clear();
  RW_TEST_OK(rw_output_close(&f, 0));
  cr_assert(!exists(x.dir, "r.h5") && !exists(x.dir, "r.h5.partial"));
  cr_assert(!exists(x.dir, "r.xmf") && !exists(x.dir, "r.xmf.partial"));
  rw_vec_destroy(&w);
  teardown(&x);
}

/* Two writers given one output path: the second is refused, at the start-up check and at
 * creation, while the first holds its partial file; the refusal leaves the first's partial
 * file alone, the first still completes, and once it has the path is free again. */
Test(output, one_writer_per_path)
{
  fixture x;
  setup(&x, 1);
  char p[128];
  snprintf(p, sizeof p, "%s/r.h5", x.dir);
  rw_output a = NULL, b = NULL;
  RW_TEST_OK(rw_output_check_path(MPI_COMM_SELF, p));
  RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &a));
  RW_TEST_OK(rw_output_vector(a, "/y", x.v));
  cr_assert_eq(rw_output_check_path(MPI_COMM_SELF, p), RW_ERR_IO);
  cr_assert(strstr(rw_error_message(), "being written by another running job"), "%s",
            rw_error_message());
  rw_error_clear();
  cr_assert_eq(rw_output_create(MPI_COMM_SELF, p, &b), RW_ERR_IO);
  cr_assert(strstr(rw_error_message(), "being written by another running job"), "%s",
            rw_error_message());
  rw_error_clear();
  cr_assert_null(b);
  cr_assert(exists(x.dir, "r.h5.partial"), "the refused writer removed the first one's file");
  RW_TEST_OK(rw_output_close(&a, 1));
  cr_assert(exists(x.dir, "r.h5") && !exists(x.dir, "r.h5.partial"));
  RW_TEST_OK(rw_output_check_path(MPI_COMM_SELF, p));
  RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &b));
  RW_TEST_OK(rw_output_close(&b, 0));
  cr_assert(exists(x.dir, "r.h5"), "abandoning the second run removed the first one's result");
  teardown(&x);
}

/* The sidecar cannot be written (here: its partial name is taken by a directory made after
 * the start-up check): the HDF5 result is complete and is kept, the error says so, and no
 * partial file is left. */
Test(output, result_kept_when_sidecar_fails)
{
  fixture x;
  setup(&x, 1);
  char p[128], d[160];
  snprintf(p, sizeof p, "%s/r.h5", x.dir);
  rw_output f = NULL;
  RW_TEST_OK(rw_output_create(MPI_COMM_SELF, p, &f));
  RW_TEST_OK(rw_output_grid_field(f, "/f", x.g, x.v, NULL, 1));
  snprintf(d, sizeof d, "%s/r.xmf.partial", x.dir);
  cr_assert_eq(mkdir(d, 0755), 0);
  cr_assert_eq(rw_output_close(&f, 1), RW_ERR_IO);
  cr_assert(strstr(rw_error_message(), "is complete and kept"), "%s", rw_error_message());
  rw_error_clear();
  cr_assert(exists(x.dir, "r.h5") && !exists(x.dir, "r.h5.partial"), "result not kept");
  cr_assert(!exists(x.dir, "r.xmf") && !exists(x.dir, "r.xmf.partial"));
  teardown(&x);
}
