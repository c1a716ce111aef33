/* Benchmark: the HDF5 checkpoint store's write and read bandwidth against plain sequential
 * POSIX I/O of the same bytes on the same file system (what `dd bs=<snapshot>` does).
 *
 * Each rank writes --count snapshots of --mib MiB (one vector) through rw_store_put, waits
 * for them (rw_store_sync) and fsyncs the file; then reads them back with rw_store_get in
 * reverse order (as a backward sweep does). The peer does the same bytes with write(2) /
 * fsync / pread(2) on a plain file next to it. Times are the largest over ranks, each the
 * median of --repeat runs; the ratios store / dd are the figures to quote (the goal is
 * >= 0.7 for both directions). The reads of both come from the page cache when it holds the
 * files, so "read" measures the store's overhead over a memory copy there; with --evict
 * each file's pages are evicted from the page cache after its fsync (posix_fadvise
 * POSIX_FADV_DONTNEED, no root needed), so both read from the disk; with --drop-caches (root)
 * the kernel's caches are dropped before each read phase.
 *
 * Besides the phases' totals, each snapshot's read is timed on both sides, and the medians
 * per snapshot are compared too. On the VM this was written on, the first large memory pass
 * after the fsync sometimes stalls for 30-50 ms (a plain pread or a plain checksum pass pays
 * it just as a get does), which a total over 8 snapshots cannot separate from the store's
 * own cost; the medians do. --trace prints every read's time. The report says how many CPUs
 * each rank may run on: bound to one core (mpirun's default) the store's I/O thread cannot
 * share the reading and checksumming with the caller, so a read costs the copy plus the
 * checksum pass; with a second CPU the two run side by side.
 *
 *   mpiexec -n 1 tests/bench/bench_disk --dir /scratch --mib 64 --count 8 --repeat 3 */
#define _GNU_SOURCE /* sched_getaffinity, posix_fadvise, pread */
#include "bench_util.h"
#include "rewind/rw_store.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

/* Evicts a file's (clean, fsync'ed) pages from the page cache. */
static void evict(const char *path)
{
  int fd = open(path, O_RDONLY);
  if (fd < 0) return;
  fsync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

static void drop_caches(void)
{
  sync();
  FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
  if (f) {
    fputs("3\n", f);
    fclose(f);
  }
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, ierr = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long mibs = 64, count = 8, repeat = 3, drop = 0, evict_pages = 0, trace = 0;
  const char *dir = ".";
  for (int i = 1; i < argc; i++) {
    int bad = i + 1 >= argc && strcmp(argv[i], "--drop-caches") != 0 &&
              strcmp(argv[i], "--evict") != 0 && strcmp(argv[i], "--trace") != 0;
    if (!bad && !strcmp(argv[i], "--mib"))
      bad = parse_long(argv[++i], 1, &mibs);
    else if (!bad && !strcmp(argv[i], "--count"))
      bad = parse_long(argv[++i], 1, &count);
    else if (!bad && !strcmp(argv[i], "--repeat"))
      bad = parse_long(argv[++i], 1, &repeat);
    else if (!bad && !strcmp(argv[i], "--dir"))
      dir = argv[++i];
    else if (!strcmp(argv[i], "--drop-caches"))
      drop = 1;
    else if (!strcmp(argv[i], "--trace"))
      trace = 1;
    else if (!strcmp(argv[i], "--evict"))
      evict_pages = 1;
    else
      bad = 1;
    if (bad) {
      if (rank == 0)
        fprintf(stderr,
                "bench_disk: bad argument '%s'; usage: bench_disk [--dir D] [--mib M] "
                "[--count K] [--repeat R] [--evict] [--drop-caches] [--trace]\n",
                argv[i]);
      MPI_Finalize();
      return 2;
    }
  }
  rw_context ctx = NULL;
  N_Vector v = NULL, w = NULL;
  long n = mibs * 1048576L / 8;
  if (rw_context_create(MPI_COMM_WORLD, &ctx) || rw_vec_create(ctx, n, &v) ||
      rw_vec_create(ctx, n, &w)) {
    fprintf(stderr, "bench_disk: %s\n", rw_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double *d = rw_vec_data(v);
  for (long i = 0; i < n; i++)
    d[i] = 1.0 + 1e-3 * (double)(i % 1000) + rank;
  size_t bytes = (size_t)n * 8;
  /* Both read into w: map its pages now, so that neither pays w's first-touch page faults
   * (otherwise the store, which reads first, paid them in the first repeat). */
  memset(rw_vec_data(w), 0, bytes);
  double *tw = calloc((size_t)repeat, sizeof *tw), *tr = calloc((size_t)repeat, sizeof *tr);
  double *dw = calloc((size_t)repeat, sizeof *dw), *dr = calloc((size_t)repeat, sizeof *dr);
  double *gs = calloc((size_t)(repeat * count), sizeof *gs), /* each snapshot's read */
      *gd = calloc((size_t)(repeat * count), sizeof *gd);
  int ok = 1;
  for (long r = 0; r < repeat && !ierr; r++) {
    /* the store */
    rw_store st = NULL;
    char id[32];
    snprintf(id, sizeof id, "bench%ld", r);
    rw_store_hdf5_options o = {.dir = dir, .run_id = id, .contents = "state"};
    ierr = rw_store_create_hdf5(v, 1, (int)count, &o, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long k = 0; k < count && !ierr; k++) {
      rw_snapshot_tag tg = {.step = k};
      ierr = rw_store_put(st, (int)k, &tg, &v);
    }
    if (!ierr) ierr = rw_store_sync(st);
    if (!ierr) {
      int fd = open(rw_store_path(st), O_RDONLY);
      if (fd >= 0) {
        fsync(fd);
        close(fd);
      }
    }
    double t1 = MPI_Wtime();
    if (evict_pages && !ierr) evict(rw_store_path(st));
    if (drop && rank == 0) drop_caches();
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    for (long k = count - 1; k >= 0 && !ierr; k--) {
      double g0 = MPI_Wtime();
      ierr = rw_store_get(st, (int)k, NULL, &w);
      gs[r * count + k] = MPI_Wtime() - g0;
      if (trace)
        printf("  rank %d repeat %ld: get %ld %.2f ms\n", rank, r, k, 1e3 * gs[r * count + k]);
    }
    double t3 = MPI_Wtime();
    if (!ierr && memcmp(rw_vec_data(w), d, bytes) != 0) ok = 0;
    rw_store_destroy(&st);
    tw[r] = t1 - t0;
    tr[r] = t3 - t2;
    /* the dd-style peer */
    char path[4200];
    snprintf(path, sizeof path, "%s/bench_disk_dd.%d.bin", dir, rank);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      fprintf(stderr, "bench_disk: cannot create %s\n", path);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long k = 0; k < count; k++)
      if (write(fd, d, bytes) != (ssize_t)bytes) ok = 0;
    fsync(fd);
    t1 = MPI_Wtime();
    if (evict_pages) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (drop && rank == 0) drop_caches();
    MPI_Barrier(MPI_COMM_WORLD);
    t2 = MPI_Wtime();
    for (long k = count - 1; k >= 0; k--) {
      double g0 = MPI_Wtime();
      if (pread(fd, rw_vec_data(w), bytes, (off_t)k * (off_t)bytes) != (ssize_t)bytes) ok = 0;
      gd[r * count + k] = MPI_Wtime() - g0;
      if (trace)
        printf("  rank %d repeat %ld: pread %ld %.2f ms\n", rank, r, k, 1e3 * gd[r * count + k]);
    }
    t3 = MPI_Wtime();
    close(fd);
    unlink(path);
    dw[r] = t1 - t0;
    dr[r] = t3 - t2;
    if (trace)
      printf("  rank %d repeat %ld: store read %.2f ms, dd read %.2f ms\n", rank, r, 1e3 * tr[r],
             1e3 * dr[r]);
  }
  if (ierr) {
    fprintf(stderr, "bench_disk: rank %d: %s\n", rank, rw_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double t[6] = {median(tw, (int)repeat),           median(tr, (int)repeat),
                 median(dw, (int)repeat),           median(dr, (int)repeat),
                 median(gs, (int)(repeat * count)), median(gd, (int)(repeat * count))};
  MPI_Allreduce(MPI_IN_PLACE, t, 6, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  MPI_Allreduce(MPI_IN_PLACE, &cpus, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  double total = (double)bytes * (double)count * size / 1048576.0; /* MiB over all ranks */
  if (rank == 0) {
    printf("bench_disk: each rank may run on %d CPU(s)%s\n", cpus,
           cpus == 1 ? " (bound: the store's I/O thread shares that core)" : "");
    printf("bench_disk: %d ranks x %ld snapshots of %ld MiB in %s (median of %ld)%s\n", size, count,
           mibs, dir, repeat,
           evict_pages ? "; pages evicted before reading (reads from the disk)" : "");
    printf("  %-22s %10s %10s\n", "", "write", "read");
    printf("  %-22s %7.0f MiB/s %7.0f MiB/s\n", "HDF5 store", total / t[0], total / t[1]);
    printf("  %-22s %7.0f MiB/s %7.0f MiB/s\n", "dd-style POSIX I/O", total / t[2], total / t[3]);
    printf("  %-22s %10.2f %10.2f   (goal >= 0.7)\n", "store / dd", t[2] / t[0], t[3] / t[1]);
    printf("  one snapshot's read, median: store %.2f ms, dd %.2f ms, store / dd %.2f\n",
           1e3 * t[4], 1e3 * t[5], t[5] / t[4]);
    printf("  data read back %s\n", ok ? "bit for bit" : "DIFFERENT");
    printf("BENCH_JSON {\"ranks\":%d,\"mib\":%ld,\"count\":%ld,\"store_write_mibs\":%.1f,"
           "\"store_read_mibs\":%.1f,\"dd_write_mibs\":%.1f,\"dd_read_mibs\":%.1f,"
           "\"write_ratio\":%.3f,\"read_ratio\":%.3f,\"read_ratio_median\":%.3f,"
           "\"cpus\":%d,\"bitwise\":%s}\n",
           size, mibs, count, total / t[0], total / t[1], total / t[2], total / t[3], t[2] / t[0],
           t[3] / t[1], t[5] / t[4], cpus, ok ? "true" : "false");
  }
  free(tw);
  free(tr);
  free(dw);
  free(dr);
  free(gs);
  free(gd);
  rw_vec_destroy(&v);
  rw_vec_destroy(&w);
  rw_context_destroy(&ctx);
  MPI_Finalize();
  return ok ? 0 : 1;
}
