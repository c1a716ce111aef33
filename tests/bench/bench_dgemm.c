/* bench_dgemm: one core's double-precision matrix-product rate with OpenBLAS (issue 9), the
 * floor against which the neural-ODE gradient's speed is judged.
 *
 * Measures, with OpenBLAS restricted to --threads threads (default 1):
 *   - a large square product (--n, default 2000): the machine's practical DGEMM peak;
 *   - each cblas_dgemm of one MLP forward pass and one VJP (in h and theta) with the shapes of
 *     the neural-ODE solver (batch --batch, widths --widths, default 256 and 2,64,64,2), called
 *     exactly as solvers/problems/rw_neuralode.c calls them (row-major, same transposes);
 *   - the mix: one forward + one VJP back to back, flops over time.
 * Each case repeats until --min_time seconds have passed (default 0.2), --repeat times (3), and
 * the best rate is reported. Output: one line per case and one "BENCH_JSON {...}" line with
 * square_gflops, mlp_gflops (the mix), and the flops of one forward and one VJP.
 * Usage: bench_dgemm [--n N] [--batch B] [--widths d0,d1,...] [--threads T] [--min_time S]
 *                    [--repeat R]
 * Exit status 2 on a bad flag. Plain C, no MPI. */
#define _POSIX_C_SOURCE 200809L
#include "rewind/rw_blas.h"

#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern void openblas_set_num_threads(int);
extern char *openblas_get_corename(void);

#define MAXL 16

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_pos(const char *s, double *out)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end != '\0' || !(v > 0.0)) return 1;
  *out = v;
  return 0;
}

static double *alloc_fill(size_t n)
{
  double *a = malloc(n * sizeof *a);
  if (!a) {
    fprintf(stderr, "bench_dgemm: out of memory (%zu doubles)\n", n);
    exit(1);
  }
  for (size_t i = 0; i < n; i++)
    a[i] = 0.5 + 1e-3 * (double)(i % 997);
  return a;
}

typedef struct {
  int L, B, w[MAXL + 1];
  double *x[MAXL + 1]; /* activations, B x w[l] */
  double *W[MAXL];     /* w[l+1] x w[l] */
  double *dW[MAXL];
  double *seed; /* B x w[L]: the cotangent of the output */
  double *g[2]; /* B x max width */
} mlp;

/* the products of one forward pass: x_{l+1} = x_l W_l^T (the app adds the bias with beta = 1;
 * beta = 0 here keeps the values bounded over many calls, at the same flops) */
static void mlp_forward(mlp *m)
{
  for (int l = 0; l < m->L; l++)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m->B, m->w[l + 1], m->w[l], 1.0, m->x[l],
                m->w[l], m->W[l], m->w[l], 0.0, m->x[l + 1], m->w[l + 1]);
}

/* the products of one VJP in h and theta: dW_l += G^T x_l, G <- G W_l */
static void mlp_vjp(mlp *m)
{
  const double *G = m->seed;
  int cur = 0;
  for (int l = m->L - 1; l >= 0; l--) {
    int din = m->w[l], dout = m->w[l + 1];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dout, din, m->B, 1.0, G, dout, m->x[l],
                din, 1.0, m->dW[l], din);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m->B, din, dout, 1.0, G, dout, m->W[l],
                din, 0.0, m->g[cur], din);
    G = m->g[cur];
    cur ^= 1;
  }
}

typedef void (*kernel)(void *);
static void k_fwd(void *m) { mlp_forward(m); }
static void k_vjp(void *m) { mlp_vjp(m); }
static void k_mix(void *m)
{
  mlp_forward(m);
  mlp_vjp(m);
}

typedef struct {
  int n;
  double *a, *b, *c;
} square;
static void k_square(void *p)
{
  square *s = p;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->n, s->n, s->n, 1.0, s->a, s->n, s->b,
              s->n, 0.0, s->c, s->n);
}

/* best GFLOP/s over `repeat` timings of at least min_time seconds each */
static double rate(kernel k, void *arg, double flops, double min_time, int repeat)
{
  k(arg); /* warm up */
  double best = 0.0;
  for (int r = 0; r < repeat; r++) {
    long calls = 0;
    double t0 = now(), t;
    do {
      k(arg);
      calls++;
      t = now() - t0;
    } while (t < min_time);
    double g = flops * (double)calls / t * 1e-9;
    if (g > best) best = g;
  }
  return best;
}

int main(int argc, char **argv)
{
  double n = 2000, batch = 256, threads = 1, min_time = 0.2, repeat = 3;
  const char *widths = "2,64,64,2";
  for (int i = 1; i < argc; i++) {
    double *num = NULL;
    if (!strcmp(argv[i], "--n"))
      num = &n;
    else if (!strcmp(argv[i], "--batch"))
      num = &batch;
    else if (!strcmp(argv[i], "--threads"))
      num = &threads;
    else if (!strcmp(argv[i], "--min_time"))
      num = &min_time;
    else if (!strcmp(argv[i], "--repeat"))
      num = &repeat;
    else if (!strcmp(argv[i], "--widths") && i + 1 < argc) {
      widths = argv[++i];
      continue;
    } else {
      fprintf(stderr,
              "bench_dgemm: unknown flag '%s'\n"
              "usage: bench_dgemm [--n N] [--batch B] [--widths d0,d1,...] [--threads T] "
              "[--min_time S] [--repeat R]\n",
              argv[i]);
      return 2;
    }
    if (i + 1 >= argc || parse_pos(argv[++i], num)) {
      fprintf(stderr, "bench_dgemm: %s needs a positive number\n", argv[i - 1]);
      return 2;
    }
  }
  mlp m = {.B = (int)batch};
  {
    const char *s = widths;
    int k = 0;
    while (*s) {
      char *end = NULL;
      long v = strtol(s, &end, 10);
      if (end == s || v < 1 || v > 100000 || k > MAXL || (*end && *end != ',')) {
        fprintf(stderr, "bench_dgemm: bad --widths '%s' (e.g. 2,64,64,2)\n", widths);
        return 2;
      }
      m.w[k++] = (int)v;
      s = *end ? end + 1 : end;
    }
    if (k < 2) {
      fprintf(stderr, "bench_dgemm: --widths needs at least two numbers\n");
      return 2;
    }
    m.L = k - 1;
  }
  openblas_set_num_threads((int)threads);
  int wmax = 0;
  double sumdd = 0.0;
  for (int l = 0; l <= m.L; l++) {
    m.x[l] = alloc_fill((size_t)m.B * m.w[l]);
    if (m.w[l] > wmax) wmax = m.w[l];
    if (l < m.L) {
      m.W[l] = alloc_fill((size_t)m.w[l] * m.w[l + 1]);
      m.dW[l] = alloc_fill((size_t)m.w[l] * m.w[l + 1]);
      sumdd += (double)m.w[l] * m.w[l + 1];
    }
  }
  m.seed = alloc_fill((size_t)m.B * m.w[m.L]);
  m.g[0] = alloc_fill((size_t)m.B * wmax);
  m.g[1] = alloc_fill((size_t)m.B * wmax);
  double ffwd = 2.0 * m.B * sumdd, fvjp = 2.0 * ffwd;

  square sq = {.n = (int)n};
  size_t nn = (size_t)sq.n * sq.n;
  sq.a = alloc_fill(nn);
  sq.b = alloc_fill(nn);
  sq.c = alloc_fill(nn);
  double fsq = 2.0 * n * n * n;

  int rep = (int)repeat;
  double gsq = rate(k_square, &sq, fsq, min_time, rep);
  double gf = rate(k_fwd, &m, ffwd, min_time, rep);
  double gv = rate(k_vjp, &m, fvjp, min_time, rep);
  double gm = rate(k_mix, &m, ffwd + fvjp, min_time, rep);
  printf("bench_dgemm: OpenBLAS (%s kernels), %d thread(s), best of %d runs of >= %.2g s each\n",
         openblas_get_corename(), (int)threads, rep, min_time);
  const char *advice = rw_blas_advice();
  if (advice) printf("  warning: %s\n", advice);
  printf("  square %dx%dx%d                     %8.2f GFLOP/s\n", sq.n, sq.n, sq.n, gsq);
  printf("  MLP %s, batch %d: forward (%.4g MFLOP) %8.2f GFLOP/s\n", widths, m.B, ffwd * 1e-6, gf);
  printf("  MLP %s, batch %d: VJP     (%.4g MFLOP) %8.2f GFLOP/s\n", widths, m.B, fvjp * 1e-6, gv);
  printf("  MLP %s, batch %d: forward+VJP            %8.2f GFLOP/s\n", widths, m.B, gm);
  printf("BENCH_JSON {\"threads\":%d,\"square_n\":%d,\"square_gflops\":%.4f,\"mlp_forward_gflops\":"
         "%.4f,\"mlp_vjp_gflops\":%.4f,\"mlp_gflops\":%.4f,\"forward_flops\":%.0f,\"vjp_flops\":"
         "%.0f}\n",
         (int)threads, sq.n, gsq, gf, gv, gm, ffwd, fvjp);
  for (int l = 0; l <= m.L; l++) {
    free(m.x[l]);
    if (l < m.L) {
      free(m.W[l]);
      free(m.dW[l]);
    }
  }
  free(m.seed);
  free(m.g[0]);
  free(m.g[1]);
  free(sq.a);
  free(sq.b);
  free(sq.c);
  return (gsq > 0.0 && gm > 0.0) ? 0 : 1;
}
