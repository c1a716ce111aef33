/* bench_overlap: how much of a memory stream this machine hides behind in-cache work (issue 10).
 *
 * An adjoint step with stored stages does about the work of a forward step and also reads the
 * s stored stage vectors from memory, which the forward step does not (Gray-Scott 512^2, RK4:
 * 16 MiB a step). How close it comes to the forward step depends on how much of that stream the
 * core overlaps with the arithmetic, a property of the machine rather than of the kernel. This
 * program measures it on a loop of the adjoint sweep's shape, with no Rewind code in it: per
 * step, S streams (the stages) of layers of L doubles, stream k read at layer v - k while the
 * front is at v (the wave's lag), each layer fed to a row of in-cache work (a polynomial of 12
 * terms in a cached row's entry and the streamed entry, vectorisable, no reduction). The steps'
 * streams lie in one 2 MiB-aligned mapping advised for transparent huge pages, as Rewind's
 * stored stages do (rw_calloc_whole). Variants, each once a round in turn, best of the rounds:
 *   work alone   the same loop with each stream read from four cached layers (no memory traffic)
 *   stream alone the streams summed in the same order (the traffic with no work)
 *   both         the loop reading the streams from memory, hardware prefetchers only
 *   prefetched   the same with one software prefetch per line consumed, D doubles ahead
 * and hidden = (work + stream - both) / stream: 1 when the stream is wholly hidden, 0 when its
 * time is simply added. Run by hand for numbers (Release build):
 *   build/release/tests/bench/bench_overlap
 * ctest runs a tiny smoke case so the program keeps building and running. */
#define _GNU_SOURCE     /* MAP_ANONYMOUS, MADV_HUGEPAGE */
#include "bench_util.h" /* parse_long, mib (it includes mpi.h: the target links MPI) */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define WORK_TERMS 12 /* the polynomial's terms per entry: a constant, so the row vectorises */

typedef struct {
  long mib, streams, steps, layer, repeat, ahead;
} options;

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* n doubles in a 2 MiB-aligned anonymous mapping advised for huge pages, every page touched. */
static double *huge_array(size_t n)
{
  const size_t align = (size_t)2 << 20, bytes = n * sizeof(double);
  char *m = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  char *p = (char *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
  double *d = (double *)(void *)p;
  for (size_t i = 0; i < n; i++)
    d[i] = 1.0 + (double)(i % 7) * 1e-3;
  return d;
}

/* One row of work: o_i = a polynomial of WORK_TERMS terms in w_i with coefficients (r + 1) y_i,
 * by Horner's rule. With `ahead` > 0 a line of y `ahead` doubles on is prefetched per line.
 * Compiled for AVX-512, AVX2 and plain x86-64, the widest the CPU has running, as Rewind's rows
 * are. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
work_row(const double *restrict y, const double *restrict w, double *restrict o, long n, long ahead)
{
  for (long b = 0; b < n; b += 8) {
    if (ahead > 0) __builtin_prefetch(y + b + ahead, 0, 3);
    const long e = b + 8 < n ? b + 8 : n;
    for (long i = b; i < e; i++) {
      const double a = w[i], c = y[i];
      double s = 0.0;
#pragma GCC unroll 16
      for (int r = 0; r < WORK_TERMS; r++)
        s = s * a + c * (double)(r + 1);
      o[i] = s;
    }
  }
}

enum { V_WORK, V_STREAM, V_BOTH, V_PREFETCHED, NVAR };
static const char *const var_names[NVAR] = {"work alone", "stream alone", "both", "prefetched"};

/* One timed sweep over every step's streams, in reverse step order (as an adjoint reads its
 * stored stages); seconds per step. */
static double sweep(const options *o, int var, const double *st, const double *cached,
                    const double *w, double *out, double *sink)
{
  const long L = o->layer, S = o->streams, NL = o->mib * 131072 / (S * L), V = NL * L;
  double acc = 0.0;
  const double t0 = now();
  for (long k = o->steps - 1; k >= 0; k--) {
    const double *Y = st + (size_t)k * (size_t)S * (size_t)V;
    for (long v = 0; v < NL + S; v++)
      for (long s = 0; s < S; s++) {
        const long l = v - s;
        if (l < 0 || l >= NL) continue;
        const double *y = Y + (size_t)s * (size_t)V + (size_t)l * (size_t)L;
        if (var == V_STREAM) {
          double a = 0.0; /* eight independent sums: bound by the loads, not by an add chain */
          double p[8] = {0};
          for (long i = 0; i + 8 <= L; i += 8)
            for (int q = 0; q < 8; q++)
              p[q] += y[i + q];
          for (int q = 0; q < 8; q++)
            a += p[q];
          acc += a;
          continue;
        }
        if (var == V_WORK) y = cached + (size_t)(l & 3) * (size_t)L;
        /* the prefetch stays within this stream's layers (past its last one: none) */
        const long ahead = var == V_PREFETCHED && l * L + o->ahead < V - L ? o->ahead : 0;
        work_row(y, w + (size_t)s * (size_t)L, out + (size_t)s * (size_t)L, L, ahead);
      }
  }
  const double t = now() - t0;
  *sink += acc + out[0];
  return t / (double)o->steps;
}

static void usage(FILE *f, const char *prog)
{
  fprintf(f,
          "usage: %s [--mib M] [--streams S] [--steps K] [--layer L] [--ahead D] [--repeat N]\n"
          "  --mib M      the stream a step reads, MiB (default 16: Gray-Scott 512^2's 4 stored\n"
          "               RK4 stages)\n"
          "  --streams S  streams a step, read at layers v, v - 1, ... (default 4)\n"
          "  --steps K    steps, each with streams of its own (default 50)\n"
          "  --layer L    doubles a layer (default 1024: a 512-node row of 2 species)\n"
          "  --ahead D    the prefetched variant's distance in doubles (default: one layer)\n"
          "  --repeat N   rounds, each variant once a round (default 5)\n",
          prog);
}

int main(int argc, char **argv)
{
  options o = {16, 4, 50, 1024, 5, -1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long *dst = !strcmp(a, "--mib")       ? &o.mib
                : !strcmp(a, "--streams") ? &o.streams
                : !strcmp(a, "--steps")   ? &o.steps
                : !strcmp(a, "--layer")   ? &o.layer
                : !strcmp(a, "--ahead")   ? &o.ahead
                : !strcmp(a, "--repeat")  ? &o.repeat
                                          : NULL;
    if (!strcmp(a, "--help")) {
      usage(stdout, argv[0]);
      return 0;
    }
    if (!dst) {
      fprintf(stderr, "%s: unknown option '%s'\n", argv[0], a);
      usage(stderr, argv[0]);
      return 2;
    }
    if (i + 1 >= argc || parse_long(argv[i + 1], 1, dst)) {
      fprintf(stderr, "%s: %s needs a positive integer (given: %s)\n", argv[0], a,
              i + 1 < argc ? argv[i + 1] : "nothing");
      return 2;
    }
    i++;
  }
  if (o.ahead < 0) o.ahead = o.layer;
  if (o.mib > 65536 || o.streams > 64 || o.layer > (1L << 24) || o.steps > 100000) {
    fprintf(stderr,
            "%s: at most --mib 65536, --streams 64, --layer %ld and --steps 100000 (--mib %ld, "
            "--streams %ld, --layer %ld, --steps %ld)\n",
            argv[0], 1L << 24, o.mib, o.streams, o.layer, o.steps);
    return 2;
  }
  if (o.layer % 8 != 0 || o.mib * 131072 / (o.streams * o.layer) < 4) {
    fprintf(stderr,
            "%s: --layer must be a multiple of 8, and --mib give each stream at least 4 layers "
            "of --layer doubles (--mib %ld, --streams %ld, --layer %ld)\n",
            argv[0], o.mib, o.streams, o.layer);
    return 2;
  }
  const long NL = o.mib * 131072 / (o.streams * o.layer);
  const size_t per_step = (size_t)o.streams * (size_t)NL * (size_t)o.layer;
  double *st = huge_array(per_step * (size_t)o.steps);
  double *cached = huge_array((size_t)4 * (size_t)o.layer);
  double *w = huge_array((size_t)o.streams * (size_t)o.layer);
  double *out = huge_array((size_t)o.streams * (size_t)o.layer);
  if (!st || !cached || !w || !out) {
    fprintf(stderr, "%s: cannot map %.1f MiB for %ld steps of streams\n", argv[0],
            mib(per_step * (size_t)o.steps * sizeof(double)), o.steps);
    return 1;
  }
  double best[NVAR], sink = 0.0;
  for (int v = 0; v < NVAR; v++)
    best[v] = 1e300;
  for (long r = 0; r < o.repeat; r++)
    for (int v = 0; v < NVAR; v++) {
      const double t = sweep(&o, v, st, cached, w, out, &sink);
      if (t < best[v]) best[v] = t;
    }
  const double hid = (best[V_WORK] + best[V_STREAM] - best[V_BOTH]) / best[V_STREAM],
               hidp = (best[V_WORK] + best[V_STREAM] - best[V_PREFETCHED]) / best[V_STREAM];
  printf("bench_overlap: %ld steps, %ld streams a step of %ld layers x %ld doubles (%.2f MiB a "
         "step), %d terms of work per entry; best of %ld rounds (each variant once a round)\n",
         o.steps, o.streams, NL, o.layer, mib(per_step * sizeof(double)), WORK_TERMS, o.repeat);
  for (int v = 0; v < NVAR; v++)
    printf("  %-12s %8.3f ms per step\n", var_names[v], best[v] * 1e3);
  printf("  stream read alone at %.2f GB/s\n",
         (double)(per_step * sizeof(double)) / best[V_STREAM] * 1e-9);
  printf("hidden share of the stream: hardware prefetchers %.2f, a prefetch per line %ld doubles "
         "ahead %.2f (1: hidden behind the work, 0: its time added, below 0: worse than added)\n",
         hid, o.ahead, hidp);
  printf("BENCH_JSON {\"bench\":\"overlap\",\"steps\":%ld,\"streams\":%ld,\"layer\":%ld,"
         "\"bytes_per_step\":%zu,\"terms\":%d,\"ahead\":%ld,\"t_work\":%.6e,\"t_stream\":%.6e,"
         "\"t_both\":%.6e,\"t_prefetched\":%.6e,\"hidden\":%.4f,\"hidden_prefetched\":%.4f,"
         "\"sink\":%.3g}\n",
         o.steps, o.streams, o.layer, per_step * sizeof(double), WORK_TERMS, o.ahead, best[V_WORK],
         best[V_STREAM], best[V_BOTH], best[V_PREFETCHED], hid, hidp, sink);
  return 0;
}
