/* Helpers shared by the benchmarks: strict number parsing, medians, per-rank maxima. */
#ifndef REWIND_BENCH_UTIL_H
#define REWIND_BENCH_UTIL_H

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static inline int parse_long(const char *s, long lo, long *out)
{
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end != '\0' || v < lo) return 1;
  *out = v;
  return 0;
}

static inline int parse_double(const char *s, double *out)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end != '\0' || !isfinite(v) || v <= 0.0) return 1;
  *out = v;
  return 0;
}

static inline int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static inline double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline size_t max_bytes(MPI_Comm comm, size_t b)
{
  unsigned long long v = b;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  return (size_t)v;
}

static inline double mib(size_t b) { return (double)b / (1024.0 * 1024.0); }

static inline int parse_bytes(const char *s, size_t *out)
{
  static const struct {
    const char *suffix;
    double mult;
  } units[] = {{"", 1.0},
               {"B", 1.0},
               {"K", 1024.0},
               {"KiB", 1024.0},
               {"M", 1048576.0},
               {"MiB", 1048576.0},
               {"G", 1073741824.0},
               {"GiB", 1073741824.0},
               {"T", 1099511627776.0},
               {"TiB", 1099511627776.0}};
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !isfinite(v) || v < 0.0) return 1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].suffix) == 0) {
      double b = v * units[i].mult;
      if (b >= 9.2e18) return 1;
      *out = (size_t)b;
      return 0;
    }
  return 1;
}

static inline size_t sum_bytes(MPI_Comm comm, size_t b)
{
  unsigned long long v = b;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  return (size_t)v;
}

static inline double gib(size_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

#endif
