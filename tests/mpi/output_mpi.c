/* Result files and their XDMF sidecars under mpiexec (1, 2 and 4 ranks).
 *
 * Usage: test_output_mpi OUTDIR. Writes OUTDIR/result.h5 (+ result.xmf) holding a 2-D
 * two-component field, a 3-D field, three snapshots of the 2-D grid, a time series and a
 * parameter gradient, with values that are a known function of the global node indices. Rank
 * 0 then reads every dataset back with the HDF5 C API and checks shapes, values, the origin
 * and spacing attributes and the snapshot times; checks that the sidecar names the right
 * number of time steps and grid dimensions, that every dataset it references exists in the
 * HDF5 file, which it names by a relative path; and that no .partial file remains.
 *
 * Failure cases, each of which must fail on every rank and leave neither the result, nor its
 * sidecar, nor a partial file: a missing directory; a sidecar that cannot be created (a
 * directory in the way of "<xmf>.partial"); a sidecar that cannot be renamed (a non-empty
 * directory at the final .xmf path: the renamed result must be removed again); a result that
 * cannot be renamed; close(..., 0); and, with --disk-full, a full disk simulated with
 * RLIMIT_FSIZE (which binds root too, unlike a read-only directory; see failure_cases). Result
 * files stay in OUTDIR for the plot test. Prints one line per check on rank 0; exits 1 on the first
 * failure. */
#define _POSIX_C_SOURCE 200809L
#include "rewind/rw_output.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK(expr)                                                                                \
  do {                                                                                             \
    if ((expr) != 0) {                                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, rw_error_message());    \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

/* A failed expectation on rank 0 (the checker) stops the test. */
#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

static int rank, size, disk_full;
static char outdir[2048];

/* The value of global node (i, j, k), component c, in snapshot s (s = -1: static field):
 * integers and quarters, exact in double. */
static double fval(long i, long j, long k, int c, int s)
{
  return 1000.0 * c + i + 100.0 * j + 10000.0 * k + 0.25 + (s >= 0 ? 1.0e6 * (s + 1) : 0.0);
}

static void fill(rw_grid g, N_Vector v, int s)
{
  const rw_grid_config *cf = rw_grid_get_config(g);
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  double *a = rw_vec_data(v);
  for (long k = 0; k < cnt[2]; k++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        for (int c = 0; c < cf->ncomp; c++)
          a[((k * cnt[1] + j) * cnt[0] + i) * cf->ncomp + c] =
              fval(st[0] + i, st[1] + j, st[2] + k, c, s);
}

static int exists(const char *p)
{
  struct stat sb;
  return stat(p, &sb) == 0;
}

static void path_in(char *buf, size_t n, const char *name)
{
  snprintf(buf, n, "%s/%s", outdir, name);
}

/* Rank 0: the dataset `path` has rank `D`, dims (slowest first) `dims`, and values fval. */
static void check_grid_dataset(hid_t file, const char *path, int D, const long n[3], int c, int s,
                               const double lo[3], const double h[3])
{
  hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
  EXPECT(d >= 0, "dataset %s missing", path);
  hid_t sp = H5Dget_space(d);
  hsize_t dims[3] = {0, 0, 0};
  EXPECT(H5Sget_simple_extent_ndims(sp) == D, "%s: rank %d, expected %d", path,
         H5Sget_simple_extent_ndims(sp), D);
  H5Sget_simple_extent_dims(sp, dims, NULL);
  for (int e = 0; e < D; e++)
    EXPECT(dims[e] == (hsize_t)n[D - 1 - e], "%s: dimension %d is %llu, expected %ld", path, e,
           (unsigned long long)dims[e], n[D - 1 - e]);
  size_t total = (size_t)n[0] * (size_t)n[1] * (size_t)(D == 3 ? n[2] : 1);
  double *buf = malloc(total * sizeof *buf);
  EXPECT(buf && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0,
         "%s: read failed (checksum?)", path);
  long nk = D == 3 ? n[2] : 1;
  for (long k = 0; k < nk; k++)
    for (long j = 0; j < n[1]; j++)
      for (long i = 0; i < n[0]; i++) {
        double got = buf[(k * n[1] + j) * n[0] + i], want = fval(i, j, k, c, s);
        EXPECT(got == want, "%s(%ld,%ld,%ld) = %.17g, expected %.17g", path, i, j, k, got, want);
      }
  free(buf);
  double a[3];
  hid_t at = H5Aopen(d, "origin_xyz", H5P_DEFAULT);
  EXPECT(at >= 0 && H5Aread(at, H5T_NATIVE_DOUBLE, a) >= 0, "%s: no origin_xyz", path);
  H5Aclose(at);
  for (int e = 0; e < D; e++)
    EXPECT(a[e] == lo[e], "%s: origin[%d] = %g, expected %g", path, e, a[e], lo[e]);
  at = H5Aopen(d, "spacing_xyz", H5P_DEFAULT);
  EXPECT(at >= 0 && H5Aread(at, H5T_NATIVE_DOUBLE, a) >= 0, "%s: no spacing_xyz", path);
  H5Aclose(at);
  for (int e = 0; e < D; e++)
    EXPECT(fabs(a[e] - h[e]) <= 1e-15 * fabs(h[e]), "%s: spacing[%d] = %.17g, expected %.17g", path,
           e, a[e], h[e]);
  H5Sclose(sp);
  H5Dclose(d);
}

static char *slurp(const char *p)
{
  FILE *fp = fopen(p, "r");
  EXPECT(fp, "cannot open %s: %s", p, strerror(errno));
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  EXPECT(s && fread(s, 1, (size_t)n, fp) == (size_t)n, "cannot read %s", p);
  s[n] = '\0';
  fclose(fp);
  return s;
}

static int count_of(const char *s, const char *needle)
{
  int n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

/* Rank 0: the sidecar's structure, and every HDF5 reference it holds. */
static void check_xmf(hid_t file, const char *xmf, const long n2[3], const long n3[3])
{
  char *s = slurp(xmf);
  EXPECT(strstr(s, "<Xdmf Version=") && strstr(s, "</Xdmf>"), "%s: not an XDMF document", xmf);
  EXPECT(count_of(s, "CollectionType=\"Temporal\"") == 1, "%s: expected one temporal collection",
         xmf);
  EXPECT(count_of(s, "<Time Value=") == 3, "%s: %d time steps, expected 3", xmf,
         count_of(s, "<Time Value="));
  for (int t = 0; t < 3; t++) {
    char want[64];
    snprintf(want, sizeof want, "<Time Value=\"%.17g\"/>", 0.5 * (t + 1));
    EXPECT(strstr(s, want), "%s: no %s", xmf, want);
  }
  /* 3 snapshot grids + 2 static grids (the 2-D and the 3-D one) = 5 uniform grids. */
  EXPECT(count_of(s, "GridType=\"Uniform\"") == 5, "%s: %d uniform grids, expected 5", xmf,
         count_of(s, "GridType=\"Uniform\""));
  char d2[64], d3[64];
  snprintf(d2, sizeof d2, "Dimensions=\"1 %ld %ld\"", n2[1], n2[0]);
  snprintf(d3, sizeof d3, "Dimensions=\"%ld %ld %ld\"", n3[2], n3[1], n3[0]);
  /* 2-D: 4 topologies (3 snapshots + static) and 2 + 2 (snapshot u, v and the static u, v
   * listed in each snapshot) = 4 attributes per snapshot and 2 static: 4 + 12 + 2 = 18. */
  EXPECT(count_of(s, d2) == 18, "%s: %d x %s, expected 18", xmf, count_of(s, d2), d2);
  EXPECT(count_of(s, d3) == 2, "%s: %d x %s, expected 2", xmf, count_of(s, d3), d3);
  EXPECT(count_of(s, "TopologyType=\"3DCoRectMesh\"") == 5, "%s: expected 5 topologies", xmf);
  int refs = 0;
  for (const char *p = strstr(s, "Format=\"HDF\">"); p; p = strstr(p + 1, "Format=\"HDF\">")) {
    const char *b = p + strlen("Format=\"HDF\">"), *e = strchr(b, '<');
    char ref[1024];
    EXPECT(e && e - b < (long)sizeof ref, "%s: malformed DataItem", xmf);
    snprintf(ref, sizeof ref, "%.*s", (int)(e - b), b);
    char *colon = strchr(ref, ':');
    EXPECT(colon, "%s: reference '%s' has no ':'", xmf, ref);
    *colon = '\0';
    EXPECT(strcmp(ref, "result.h5") == 0, "%s: references file '%s', expected 'result.h5'", xmf,
           ref);
    EXPECT(H5Lexists(file, colon + 1, H5P_DEFAULT) > 0, "%s: dataset '%s' not in the file", xmf,
           colon + 1);
    refs++;
  }
  EXPECT(refs == 3 * 4 + 2 + 1, "%s: %d HDF references, expected 15", xmf, refs);
  free(s);
}

/* Writes the full result; every rank. */
static void write_result(rw_context ctx, rw_grid g2, rw_grid g3, const char *path)
{
  rw_output f = NULL;
  N_Vector v2 = NULL, v3 = NULL, y = NULL;
  const char *names2[] = {"u", "v"}, *names3[] = {"kappa"};
  CHECK(rw_grid_new_field(g2, &v2));
  CHECK(rw_grid_new_field(g3, &v3));
  CHECK(rw_vec_create(ctx, 3, &y));
  CHECK(rw_output_create(MPI_COMM_WORLD, path, &f));
  CHECK(rw_output_attr_string(f, "/", "app", "test_output_mpi"));
  for (int s = 0; s < 3; s++) {
    fill(g2, v2, s);
    CHECK(rw_output_grid_snapshot(f, g2, 0.5 * (s + 1), v2, names2));
    for (int m = 0; m < 3; m++)
      rw_vec_data(y)[m] = sin(0.5 * (s + 1) + rank + m);
    CHECK(rw_output_series_append(f, "/trajectory/y", 0.5 * (s + 1), y));
  }
  EXPECT(rw_output_snapshot_count(f) == 3, "snapshot count %ld", rw_output_snapshot_count(f));
  fill(g2, v2, -1);
  fill(g3, v3, -1);
  CHECK(rw_output_grid_field(f, "/state/final", g2, v2, names2, 1));
  CHECK(rw_output_grid_field(f, "gradient/dJdkappa/", g3, v3, names3, 1));
  const double dJdp[3] = {1.5, -2.0, 0.25};
  CHECK(rw_output_array(f, "/gradient/dJdp", dJdp, 3));
  CHECK(rw_output_attr_string(f, "/gradient/dJdp", "names", "a,b,c"));
  CHECK(rw_output_close(&f, 1));
  rw_vec_destroy(&v2);
  rw_vec_destroy(&v3);
  rw_vec_destroy(&y);
}

/* A run that must fail on every rank and leave nothing named `base`(.h5|.xmf)(.partial). */
static void expect_failed(const char *what, int ierr, const char *base, const char *needle)
{
  int bad = ierr == 0, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    EXPECT(!any, "%s: succeeded on some rank", what);
    EXPECT(ierr == RW_ERR_IO, "%s: error %d, expected RW_ERR_IO", what, ierr);
    EXPECT(!needle || strstr(rw_error_message(), needle), "%s: message lacks '%s': %s", what,
           needle, rw_error_message());
    const char *sfx[] = {".h5", ".h5.partial", ".xmf", ".xmf.partial"};
    for (int i = 0; i < 4; i++) {
      char p[2200];
      snprintf(p, sizeof p, "%s/%s%s", outdir, base, sfx[i]);
      struct stat sb;
      EXPECT(stat(p, &sb) != 0 || S_ISDIR(sb.st_mode), "%s: left '%s' behind", what, p);
    }
    printf("ok   %s: fails on every rank, leaves nothing (%s)\n", what, rw_error_message());
  }
  rw_error_clear();
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A run whose result is complete but whose XDMF sidecar failed: an error on every rank that
 * says the result is kept, `base`.h5 there (and removed here), and no partial file or
 * sidecar file left. */
static void expect_kept(const char *what, int ierr, const char *base)
{
  int bad = ierr == 0, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    EXPECT(!any, "%s: succeeded on some rank", what);
    EXPECT(ierr == RW_ERR_IO, "%s: error %d, expected RW_ERR_IO", what, ierr);
    EXPECT(strstr(rw_error_message(), "is complete and kept"), "%s: message: %s", what,
           rw_error_message());
    const char *sfx[] = {".h5", ".h5.partial", ".xmf", ".xmf.partial"};
    for (int i = 0; i < 4; i++) {
      char p[2200];
      snprintf(p, sizeof p, "%s/%s%s", outdir, base, sfx[i]);
      struct stat sb;
      int there = stat(p, &sb) == 0 && !S_ISDIR(sb.st_mode);
      EXPECT(there == (i == 0), "%s: '%s' %s", what, p, i == 0 ? "missing" : "left behind");
      if (i == 0) remove(p);
    }
    printf("ok   %s: fails on every rank, keeps the result (%s)\n", what, rw_error_message());
  }
  rw_error_clear();
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Writes one grid field to `base`.h5 and closes it; returns the first error. */
static int try_write(rw_grid g, const char *base, int success)
{
  char p[2200];
  snprintf(p, sizeof p, "%s/%s.h5", outdir, base);
  rw_output f = NULL;
  N_Vector v = NULL;
  CHECK(rw_grid_new_field(g, &v));
  fill(g, v, -1);
  int ierr = rw_output_create(MPI_COMM_WORLD, p, &f);
  if (!ierr) ierr = rw_output_grid_field(f, "/field", g, v, NULL, 1);
  if (!ierr) ierr = rw_output_grid_snapshot(f, g, 1.0, v, NULL);
  if (f) {
    int e = rw_output_close(&f, ierr ? 0 : success);
    if (!ierr) ierr = e;
  }
  rw_vec_destroy(&v);
  return ierr;
}

static void rank0_mkdir(const char *name)
{
  if (rank == 0) {
    char p[2200];
    path_in(p, sizeof p, name);
    EXPECT(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void rank0_rmdir(const char *name)
{
  if (rank == 0) {
    char p[2200];
    path_in(p, sizeof p, name);
    rmdir(p);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void failure_cases(rw_context ctx)
{
  (void)ctx;
  rw_grid g = NULL, big = NULL;
  struct rlimit old, lim;
  rw_grid_config c = {.dim = 2,
                      .n = {12, 8, 1},
                      .lo = {0, 0, 0},
                      .hi = {1, 1, 1},
                      .bc = {RW_BC_NEUMANN, RW_BC_NEUMANN, RW_BC_NEUMANN},
                      .ncomp = 1,
                      .ghost = 1};
  CHECK(rw_grid_create(ctx, &c, &g));

  char p[2200];
  snprintf(p, sizeof p, "%s/no-such-dir/x.h5", outdir);
  rw_output f = NULL;
  int ierr = rw_output_create(MPI_COMM_WORLD, p, &f);
  expect_failed("missing directory", ierr, "no-such-dir/x", "no-such-dir");

  rank0_mkdir("blocked_xmf.xmf.partial");
  expect_kept("sidecar cannot be created", try_write(g, "blocked_xmf", 1), "blocked_xmf");
  rank0_rmdir("blocked_xmf.xmf.partial");

  rank0_mkdir("blocked_ren.xmf");
  rank0_mkdir("blocked_ren.xmf/keep");
  expect_kept("sidecar cannot be renamed", try_write(g, "blocked_ren", 1), "blocked_ren");
  rank0_rmdir("blocked_ren.xmf/keep");
  rank0_rmdir("blocked_ren.xmf");

  rank0_mkdir("blocked_h5.h5");
  rank0_mkdir("blocked_h5.h5/keep");
  expect_failed("result cannot be renamed", try_write(g, "blocked_h5", 1), "blocked_h5",
                "blocked_h5.h5");
  rank0_rmdir("blocked_h5.h5/keep");
  rank0_rmdir("blocked_h5.h5");

  /* A full disk: files may not grow past 64 KiB while the field needs 40^3 doubles. Opt-in
   * (argument --disk-full): with HDF5 1.10.8 over OpenMPI's OMPIO the failure surfaces in
   * H5Fclose (MPI_File_set_size), and is reported on every rank, but the failed close leaves
   * the file ID registered and HDF5 crashes closing it again at MPI_Finalize. */
  if (!disk_full) goto abandoned;
  rw_grid_config cb = {.dim = 3,
                       .n = {40, 40, 40},
                       .lo = {0, 0, 0},
                       .hi = {1, 1, 1},
                       .bc = {RW_BC_PERIODIC, RW_BC_PERIODIC, RW_BC_PERIODIC},
                       .ncomp = 1,
                       .ghost = 1};
  CHECK(rw_grid_create(ctx, &cb, &big));
  CHECK(getrlimit(RLIMIT_FSIZE, &old));
  lim = old;
  lim.rlim_cur = 64 * 1024;
  signal(SIGXFSZ, SIG_IGN); /* write() then fails with EFBIG instead of killing us */
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(setrlimit(RLIMIT_FSIZE, &lim));
  ierr = try_write(big, "disk_full", 1);
  CHECK(setrlimit(RLIMIT_FSIZE, &old));
  expect_failed("disk full (RLIMIT_FSIZE)", ierr, "disk_full", "disk_full.h5");

abandoned:
  /* close(..., 0): an abandoned result leaves nothing. */
  ierr = try_write(g, "abandoned", 0);
  int bad = ierr != 0;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT(!bad, "close(0) returned an error: %s", rw_error_message());
  expect_failed("close(..., 0)", RW_ERR_IO, "abandoned", NULL);

  rw_grid_destroy(&big);
  rw_grid_destroy(&g);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  snprintf(outdir, sizeof outdir, "%s", argv[1]);
  disk_full = argc > 2 && strcmp(argv[2], "--disk-full") == 0;
  if (rank == 0) mkdir(outdir, 0755);
  MPI_Barrier(MPI_COMM_WORLD);
  rw_context ctx;
  CHECK(rw_context_create(MPI_COMM_WORLD, &ctx));
  size_t mem0 = rw_mem_current();
  rw_grid g2 = NULL, g3 = NULL;
  rw_grid_config c2 = {.dim = 2,
                       .n = {13, 10, 1},
                       .lo = {0.5, -1.0, 0},
                       .hi = {3.1, 1.0, 0},
                       .bc = {RW_BC_PERIODIC, RW_BC_NEUMANN, RW_BC_NEUMANN},
                       .ncomp = 2,
                       .ghost = 1};
  rw_grid_config c3 = {.dim = 3,
                       .n = {6, 5, 4},
                       .lo = {0, 1, 2},
                       .hi = {1, 2, 3},
                       .bc = {RW_BC_DIRICHLET, RW_BC_DIRICHLET, RW_BC_DIRICHLET},
                       .ncomp = 1,
                       .ghost = 1};
  CHECK(rw_grid_create(ctx, &c2, &g2));
  CHECK(rw_grid_create(ctx, &c3, &g3));
  char path[2200], xmf[2200], part[2300];
  path_in(path, sizeof path, "result.h5");
  path_in(xmf, sizeof xmf, "result.xmf");
  write_result(ctx, g2, g3, path);

  if (rank == 0) {
    snprintf(part, sizeof part, "%s.partial", path);
    EXPECT(!exists(part), "%s left behind", part);
    snprintf(part, sizeof part, "%s.partial", xmf);
    EXPECT(!exists(part), "%s left behind", part);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    EXPECT(file >= 0, "cannot open %s", path);
    double h2[3], h3[3];
    rw_grid_spacing(g2, h2);
    rw_grid_spacing(g3, h3);
    EXPECT(fabs(h2[0] - 2.6 / 13) < 1e-15 && fabs(h2[1] - 2.0 / 9) < 1e-15, "2-D spacing");
    for (int s = 0; s < 3; s++)
      for (int c = 0; c < 2; c++) {
        char p[64];
        snprintf(p, sizeof p, "/snapshots/%06d/%s", s, c ? "v" : "u");
        check_grid_dataset(file, p, 2, c2.n, c, s, c2.lo, h2);
        snprintf(p, sizeof p, "/snapshots/%06d", s);
        double t = -1;
        hid_t a = H5Aopen_by_name(file, p, "time", H5P_DEFAULT, H5P_DEFAULT);
        EXPECT(a >= 0 && H5Aread(a, H5T_NATIVE_DOUBLE, &t) >= 0 && t == 0.5 * (s + 1),
               "%s: time %g", p, t);
        H5Aclose(a);
      }
    check_grid_dataset(file, "/state/final/u", 2, c2.n, 0, -1, c2.lo, h2);
    check_grid_dataset(file, "/state/final/v", 2, c2.n, 1, -1, c2.lo, h2);
    check_grid_dataset(file, "/gradient/dJdkappa/kappa", 3, c3.n, 0, -1, c3.lo, h3);
    printf("ok   %d ranks: every value, shape, origin, spacing and snapshot time read back\n",
           size);
    check_xmf(file, xmf, c2.n, c3.n);
    printf("ok   %d ranks: %s: 3 time steps, dimensions, references exist, no partials\n", size,
           xmf);
    H5Fclose(file);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  failure_cases(ctx);
  rw_grid_destroy(&g2);
  rw_grid_destroy(&g3);
  size_t mem1 = rw_mem_current();
  EXPECT(mem1 == mem0, "memory not returned: %zu bytes before, %zu after", mem0, mem1);
  rw_context_destroy(&ctx);
  MPI_Finalize();
  return 0;
}
