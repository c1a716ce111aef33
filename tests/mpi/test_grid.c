/* Distributed grid checks, run under mpiexec with 1, 2 and 4 ranks, for 2-D and 3-D grids,
 * every boundary condition, 1 and 2 components, 1 and 2 ghost layers:
 *  - every ghost after the exchange holds the neighbour's value (periodic wrap), the
 *    Dirichlet value, or the Neumann mirror;
 *  - dot-product test of the exchange and its transpose: <E x, g> = <x, E^T g> (Dirichlet
 *    value 0, so E is linear), to 1e-14 relative;
 *  - rw_grid_apply (overlapped) equals exchange-then-kernel bit for bit;
 *  - rw_grid_apply_comb (a stage: the combination formed in the halo copy) equals the
 *    combination formed as a vector, exchanged, then the kernel: out, keep and the ghosted
 *    array bit for bit; so does rw_grid_apply_comb_fused on these CPU vectors (windows of 1, 2,
 *    3 and the default number of layers formed just ahead of the kernel, or its fallback to
 *    rw_grid_apply_comb on a block under 4 ghost layers thick): out and keep;
 *  - a whole explicit RK step as one sweep (rw_grid_erk_wave) equals the stage-by-stage step
 *    bit for bit (RK4, SSPRK3 and Euler, windows of 1-3 layers, in place or not, stages past the
 *    block's edge or not), and runs wherever one rank's block suits it;
 *  - a 3-D wave's rows per tile and a 2-D wave's layers per window, where none are set, chosen
 *    by measurement (a made-up clock): the candidates (3-D: the rule's tiles, none, the tiles
 *    between) timed in turn, the fastest kept, the values the same bits.
 *  - the ghosted layout: a row is whole 64-byte lines, and rw_grid_ghosted_alloc puts every
 *    owned row's first entry on a line (freed by rw_grid_ghosted_free without the grid).
 * Prints one line per configuration on rank 0; exits 1 on the first failure. */
#include "rewind/rw_grid.h"
#include "rw_mpi_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;

static double fval(long i, long j, long k, int c)
{
  return 1000.0 * c + i + 37.0 * j + 1031.0 * k + 0.5;
}

static long wrap(long i, long n) { return ((i % n) + n) % n; }

/* Expected ghost value at local (i,j,k) outside the owned box. */
static double expected(rw_grid g, const long st[3], const long cnt[3], long i, long j, long k,
                       int c)
{
  const rw_grid_config *cf = rw_grid_get_config(g);
  long gl[3] = {st[0] + i, st[1] + j, st[2] + k};
  (void)cnt;
  for (int d = 0; d < cf->dim; d++) {
    long n = cf->n[d];
    if (gl[d] >= 0 && gl[d] < n) continue;
    if (cf->bc[d] == RW_BC_PERIODIC)
      gl[d] = wrap(gl[d], n);
    else if (cf->bc[d] == RW_BC_DIRICHLET)
      return cf->dirichlet[c];
    else
      gl[d] = gl[d] < 0 ? -gl[d] : 2 * (n - 1) - gl[d];
  }
  return fval(gl[0], gl[1], gl[2], c);
}

typedef struct {
  int nc;
  int wide; /* the wave's stencil: radius G and a nonlinear term (below) */
} lap_ctx;

/* 5/7-point Laplacian (unit spacing) of component 0, plus c * u_c for the others; or, `wide`,
 * a stencil of radius G (every offset 1..G along each dimension, so a ghost layer the wave
 * misses is read) plus a nonlinear term, so that the stages differ. Reads gv only. */
static void lap(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                const long hi[3])
{
  const int wide = kc && ((const lap_ctx *)kc)->wide;
  const rw_grid_config *cf = rw_grid_get_config(g);
  long gn[3], st[3], cnt[3];
  rw_grid_ghosted_dims(g, gn);
  rw_grid_local_box(g, st, cnt);
  int G = cf->ghost, D = cf->dim, nc = cf->ncomp;
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++)
      for (long i = lo[0]; i < hi[0]; i++)
        for (int c = 0; c < nc; c++) {
          double u = gv[rw_grid_gidx(gn, G, D, i, j, k, nc, c)], s;
          if (!wide) {
            s = -2.0 * D * u;
            s += gv[rw_grid_gidx(gn, G, D, i - 1, j, k, nc, c)] +
                 gv[rw_grid_gidx(gn, G, D, i + 1, j, k, nc, c)];
            s += gv[rw_grid_gidx(gn, G, D, i, j - 1, k, nc, c)] +
                 gv[rw_grid_gidx(gn, G, D, i, j + 1, k, nc, c)];
            if (D == 3)
              s += gv[rw_grid_gidx(gn, G, D, i, j, k - 1, nc, c)] +
                   gv[rw_grid_gidx(gn, G, D, i, j, k + 1, nc, c)];
            out[((k * cnt[1] + j) * cnt[0] + i) * nc + c] = s;
            continue;
          }
          s = -2.0 * D * G * u;
          for (long m = 1; m <= G; m++) {
            double w = 1.0 / (double)(m * m + c);
            s += w * (gv[rw_grid_gidx(gn, G, D, i - m, j, k, nc, c)] +
                      gv[rw_grid_gidx(gn, G, D, i + m, j, k, nc, c)]);
            s += w * (gv[rw_grid_gidx(gn, G, D, i, j - m, k, nc, c)] -
                      gv[rw_grid_gidx(gn, G, D, i, j + m, k, nc, c)]);
            if (D == 3)
              s += w * (gv[rw_grid_gidx(gn, G, D, i, j, k - m, nc, c)] +
                        0.5 * gv[rw_grid_gidx(gn, G, D, i, j, k + m, nc, c)]);
          }
          out[((k * cnt[1] + j) * cnt[0] + i) * nc + c] = s - 1e-3 * u * u;
        }
}

/* rw_grid_apply_fill's test map: a function of the value and of its owned index, so that a row
 * filled from the wrong place shows. */
static double fill_map(double v, size_t i) { return 3.0 * v - 0.25 * (double)(i % 7); }

typedef struct {
  const double *x;
  size_t filled; /* values written so far */
} fill_ctx;

static void fill_rows(void *fctx, size_t o, double *row, size_t len)
{
  fill_ctx *f = fctx;
  for (size_t m = 0; m < len; m++)
    row[m] = fill_map(f->x[o + m], o + m);
  f->filled += len;
}

/* The side kernel of the wave's extras test: at every node of the box, per component,
 * acc = 0.75 acc + K + Y - Y G below along dimension 0 + Y G above along 1 (+ Y G below and
 * above along 2 in 3-D): the stages' order at a node, each node once per stage, and Y's
 * neighbours G away all show in the bits. */
typedef struct {
  lap_ctx l; /* first: lap reads it */
  double *acc;
} side_ctx;

static void side_acc(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                     const long hi[3])
{
  const side_ctx *sc = kc;
  const rw_grid_config *cf = rw_grid_get_config(g);
  long gn[3], st[3], cnt[3];
  rw_grid_ghosted_dims(g, gn);
  rw_grid_local_box(g, st, cnt);
  const int G = cf->ghost, D = cf->dim, nc = cf->ncomp;
  const long v0 = rw_grid_wave_layer0(g); /* the block's layer 0 in the call's coordinates */
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++)
      for (long i = lo[0]; i < hi[0]; i++)
        for (int c = 0; c < nc; c++) {
          const long o = ((k * cnt[1] + j) * cnt[0] + i) * nc + c,
                     oa = o - v0 * (D == 3 ? cnt[1] : 1) * cnt[0] * nc;
          double v = 0.75 * sc->acc[oa] + out[o] + gv[rw_grid_gidx(gn, G, D, i, j, k, nc, c)];
          v -= 0.5 * gv[rw_grid_gidx(gn, G, D, i - G, j, k, nc, c)];
          v += 0.25 * gv[rw_grid_gidx(gn, G, D, i, j + G, k, nc, c)];
          if (D == 3)
            v += 0.125 * gv[rw_grid_gidx(gn, G, D, i, j, k - G, nc, c)] -
                 0.0625 * gv[rw_grid_gidx(gn, G, D, i, j, k + G, nc, c)];
          else
            v += 0.125 * gv[rw_grid_gidx(gn, G, D, i, j - G, k, nc, c)];
          sc->acc[oa] = v;
        }
}

/* 5. A whole explicit RK step as one sweep (rw_grid_erk_wave) against the stage-by-stage step
 * (rw_grid_apply_comb per stage, then N_VLinearCombination): y_out bit for bit, into another
 * vector, in place, in place with the stages kept, and the kept stages alone (no_out), for
 * RK4, a 3-stage method with a full lower triangle (SSPRK3) and
 * forward Euler (one stage: the boundary's ghost layers all read by one kernel window), with
 * windows of 1, 2, 3 layers and the default, with and without stages past the block's edge
 * (ext_ok), and in 3-D also in tiles of s G rows along the middle dimension where its sides
 * are physical. Returns the entries that differ; *runs counts the waves run, *must those that had
 * to run (one rank, layers set, a block thick enough). */
static int wave_test(rw_grid g, N_Vector x, int dim, int G, int nranks, long *runs, long *must,
                     long *tried)
{
  const rw_grid_config *cf = rw_grid_get_config(g);
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  const long N = cnt[dim - 1];
  const int periodic = cf->bc[dim - 1] == RW_BC_PERIODIC;
  double *gv = calloc(rw_grid_ghosted_length(g), sizeof(double));
  N_Vector K[4], Yr[4], Yk[4], ref, out;
  for (int i = 0; i < 4; i++) {
    CHECK(rw_grid_new_field(g, &K[i]));
    CHECK(rw_grid_new_field(g, &Yr[i]));
    CHECK(rw_grid_new_field(g, &Yk[i]));
  }
  CHECK(rw_grid_new_field(g, &ref));
  CHECK(rw_grid_new_field(g, &out));
  const double h = 0.01;
  lap_ctx wide = {cf->ncomp, 1};
  int nbad = 0;
  for (int meth = 0; meth < 3; meth++) {
    rw_stage_plan P;
    memset(&P, 0, sizeof P);
    /* a[i][j] and b of RK4 and of SSPRK3 (Shu & Osher 1988); Euler: one stage, b = 1 */
    const double a4[4][3] = {{0}, {0.5}, {0, 0.5}, {0, 0, 1.0}},
                 b4[4] = {1. / 6, 1. / 3, 1. / 3, 1. / 6};
    const double a3[4][3] = {{0}, {1.0}, {0.25, 0.25}, {0}}, b3[4] = {1. / 6, 1. / 6, 2. / 3, 0};
    P.s = meth == 0 ? 4 : meth == 1 ? 3 : 1;
    for (int i = 0; i < P.s; i++) {
      int n = 0;
      P.c[i][n] = 1.0, P.x[i][n++] = -1;
      for (int j = 0; j < i; j++) {
        double a = meth == 0 ? a4[i][j] : a3[i][j];
        if (a != 0.0) P.c[i][n] = h * a, P.x[i][n++] = j;
      }
      P.n[i] = n;
    }
    P.cb[0] = 1.0, P.xb[0] = -1, P.nb = 1;
    for (int i = 0; i < P.s; i++)
      P.cb[P.nb] = h * (meth == 0 ? b4[i] : meth == 1 ? b3[i] : 1.0), P.xb[P.nb++] = i;
    /* the reference: stage by stage */
    N_Vector X[5];
    for (int i = 0; i < P.s; i++) {
      for (int m = 0; m < P.n[i]; m++)
        X[m] = P.x[i][m] < 0 ? x : K[P.x[i][m]];
      CHECK(rw_grid_apply_comb(g, P.n[i], P.c[i], X, Yr[i], gv, K[i], lap, &wide));
    }
    for (int m = 0; m < P.nb; m++)
      X[m] = P.xb[m] < 0 ? x : K[P.xb[m]];
    CHECK(N_VLinearCombination(P.nb, P.cb, X, ref));
    const long wl[4] = {1, 2, 3, 0};
    for (int iw = 0; iw < 4; iw++)
      for (int ext_ok = 0; ext_ok < 2; ext_ok++)
        for (long rows = 0; rows < (dim == 3 ? 2 : 1); rows++)
          /* 0: into another vector; 1: in place; 2: in place, the stages kept; 3: the
           * stages kept alone (no_out, y_out NULL: an adjoint's recomputation) */
          for (int mode = 0; mode < 4; mode++) {
            const int inplace = mode == 1 || mode == 2, kept = mode >= 2;
            void *kc[4] = {&wide, &wide, &wide, &wide};
            int done = 0;
            rw_grid_set_wave(g, wl[iw]);
            rw_grid_set_wave_rows(g, rows); /* 1: tiles of s G rows where J allows them */
            for (int i = 0; i < 4; i++) {
              P.keep[i] = kept && i < P.s ? Yk[i] : NULL;
              N_VConst(-5.0, Yk[i]);
            }
            P.no_out = mode == 3;
            N_Vector yin = x;
            if (inplace) {
              N_VScale(1.0, x, out);
              yin = out;
            } else {
              N_VConst(-3.0, out);
            }
            CHECK(rw_grid_erk_wave(g, &P, yin, mode == 3 ? NULL : out, ext_ok, lap, kc, &done));
            (*tried)++;
            int bad = 0;
            if (done) {
              (*runs)++;
              if (mode < 3 && memcmp(rw_vec_data(out), rw_vec_data(ref), rw_vec_bytes(ref)) != 0) {
                bad = 1;
                long m = 0;
                while (rw_vec_data(out)[m] == rw_vec_data(ref)[m])
                  m++;
                printf("  %d stages, %ld layers, %s, ext_ok %d, mode %d: entry %ld of %ld "
                       "differs (%.17g, stage by stage %.17g)\n",
                       P.s, wl[iw], rows ? "tiles of s G rows" : "default tiles", ext_ok, mode, m,
                       (long)rw_vec_local_length(out), rw_vec_data(out)[m], rw_vec_data(ref)[m]);
              }
              for (int i = 0; kept && i < P.s; i++)
                if (memcmp(rw_vec_data(Yk[i]), rw_vec_data(Yr[i]), rw_vec_bytes(Yr[i])) != 0) {
                  bad = 1;
                  printf("  %d stages, %ld layers, %s, ext_ok %d, mode %d: kept Y_%d differs\n",
                         P.s, wl[iw], rows ? "tiles of s G rows" : "default tiles", ext_ok, mode,
                         i);
                }
            } else if (inplace) {
              bad = memcmp(rw_vec_data(out), rw_vec_data(x), rw_vec_bytes(x)) != 0;
            }
            nbad += bad;
            const int need = nranks == 1 && wl[iw] > 0 && N >= 2 * G &&
                             (!periodic || (ext_ok && N >= (long)P.s * G));
            *must += need;
            nbad += need && !done;
          }
    for (int i = 0; i < 4; i++)
      P.keep[i] = NULL;
    P.no_out = 0;
    /* The extras (what an adjoint step as a wave uses): injections into K_i (at the first,
     * a middle and the last global node, the middle one twice) and a side kernel, against the
     * stage-by-stage step that adds the owned injections to K_i and calls the same side kernel
     * on the whole block after each stage: y_out and the side's sums bit for bit, for every
     * window and, in 3-D, tiles of s G rows, with and without stages past the block (ext_ok;
     * the wave is then also given the injections of the layers it reaches past the block: the
     * neighbour's, or on a periodic D this block's own far ones). It must run where one rank's
     * block suits it. */
    {
      const long nl = (long)rw_vec_local_length(x), H = (long)P.s * G, nD = cf->n[dim - 1];
      const int nc = cf->ncomp, lowN = st[dim - 1] > 0 || periodic,
                highN = st[dim - 1] + N < nD || periodic;
      const long gpos[4][3] = {{0, 0, 0},
                               {cf->n[0] / 2, cf->n[1] / 2, dim == 3 ? cf->n[2] / 2 : 0},
                               {cf->n[0] - 1, cf->n[1] - 1, dim == 3 ? cf->n[2] - 1 : 0},
                               {cf->n[0] / 2, cf->n[1] / 2, dim == 3 ? cf->n[2] / 2 : 0}};
      const int gcomp[4] = {0, nc - 1, 0, nc - 1};
      long inj[12], own[12];
      int src[12], ni = 0;
      for (int m = 0; m < 4; m++)
        for (int sh = -1; sh <= 1; sh++) {
          if (sh != 0 && !periodic) continue;
          long q[3] = {gpos[m][0], gpos[m][1], gpos[m][2]};
          q[dim - 1] += sh * nD;
          long l[3];
          int in = 1;
          for (int d = 0; d < dim; d++)
            l[d] = q[d] - st[d], in = in && (d == dim - 1 || (l[d] >= 0 && l[d] < cnt[d]));
          const long lD = l[dim - 1];
          const int owned = lD >= 0 && lD < N,
                    past = (lD < 0 && lD >= -H && lowN) || (lD >= N && lD < N + H && highN);
          if (!in || !(owned || past)) continue;
          inj[ni] =
              ((dim == 3 ? (l[2] * cnt[1] + l[1]) * cnt[0] : l[1] * cnt[0]) + l[0]) * nc + gcomp[m];
          own[ni] = owned, src[ni++] = m;
        }
      double val[16], injv[4 * 12];
      for (int i = 0; i < 16; i++)
        val[i] = 0.01 * (double)(i / 4 + 1) * (double)(i % 4 + 1) - 0.003 * (double)(i % 4);
      for (int i = 0; i < 4; i++)
        for (int e = 0; e < ni; e++)
          injv[i * ni + e] = val[i * 4 + src[e]];
      double *acc_r = calloc((size_t)nl + 1, sizeof(double)),
             *acc_w = calloc((size_t)nl + 1, sizeof(double));
      side_ctx sr = {{cf->ncomp, 1}, acc_r}, sw = {{cf->ncomp, 1}, acc_w};
      const long lo0[3] = {0, 0, 0};
      N_Vector Xs[5];
      for (int i = 0; i < P.s; i++) {
        for (int m = 0; m < P.n[i]; m++)
          Xs[m] = P.x[i][m] < 0 ? x : K[P.x[i][m]];
        CHECK(rw_grid_apply_comb(g, P.n[i], P.c[i], Xs, NULL, gv, K[i], lap, &wide));
        for (int e = 0; e < ni; e++)
          if (own[e]) rw_vec_data(K[i])[inj[e]] += injv[i * ni + e];
        side_acc(&sr, g, gv, rw_vec_data(K[i]), lo0, cnt);
      }
      for (int m = 0; m < P.nb; m++)
        Xs[m] = P.xb[m] < 0 ? x : K[P.xb[m]];
      CHECK(N_VLinearCombination(P.nb, P.cb, Xs, ref));
      P.ninj = ni, P.inj = inj, P.injv = injv, P.side = side_acc;
      void *kc[4] = {&sw, &sw, &sw, &sw};
      for (int ext_ok = 0; ext_ok < 2; ext_ok++)
        for (int iw = 0; iw < 4; iw++)
          for (long rows = 0; rows < (dim == 3 ? 2 : 1); rows++) {
            rw_grid_set_wave(g, wl[iw]);
            rw_grid_set_wave_rows(g, rows);
            memset(acc_w, 0, (size_t)nl * sizeof(double));
            N_VConst(-3.0, out);
            int done = 0;
            CHECK(rw_grid_erk_wave(g, &P, x, out, ext_ok, lap, kc, &done));
            (*tried)++;
            const int need = nranks == 1 && wl[iw] > 0 && N >= 2 * G &&
                             (!periodic || (ext_ok && N >= (long)P.s * G));
            *must += need;
            *runs += done;
            int bad =
                (need && !done) ||
                (done && (memcmp(rw_vec_data(out), rw_vec_data(ref), rw_vec_bytes(ref)) != 0 ||
                          memcmp(acc_w, acc_r, (size_t)nl * sizeof(double)) != 0));
            if (bad)
              printf("  extras: %d stages, %ld layers, %s, ext_ok %d: %s\n", P.s, wl[iw],
                     rows ? "tiles of s G rows" : "default tiles", ext_ok,
                     done ? "DIFFERENT" : "not run");
            nbad += bad;
          }
      P.ninj = 0, P.inj = NULL, P.injv = NULL, P.side = NULL;
      free(acc_r);
      free(acc_w);
    }
  }
  rw_grid_set_wave(g, 0);
  rw_grid_set_wave_rows(g, 0);
  for (int i = 0; i < 4; i++) {
    rw_vec_destroy(&K[i]);
    rw_vec_destroy(&Yr[i]);
    rw_vec_destroy(&Yk[i]);
  }
  rw_vec_destroy(&ref);
  rw_vec_destroy(&out);
  free(gv);
  return nbad;
}

static void run(rw_context ctx, int dim, rw_bc bc0, rw_bc bc1, int nc, int G)
{
  int rank = rw_context_rank(ctx);
  rw_grid_config cf = {.dim = dim,
                       .n = {13, 11, 9},
                       .lo = {0, 0, 0},
                       .hi = {1, 1, 1},
                       .bc = {bc0, bc1, bc0},
                       .ncomp = nc,
                       .ghost = G,
                       .dirichlet = {0.25, -0.5}};
  rw_grid g;
  CHECK(rw_grid_create(ctx, &cf, &g));
  long st[3], cnt[3], gn[3];
  rw_grid_local_box(g, st, cnt);
  rw_grid_ghosted_dims(g, gn);
  size_t glen = rw_grid_ghosted_length(g);
  { /* the layout: rows of whole 64-byte lines, and from rw_grid_ghosted_alloc every owned
     * row's first entry on a line */
    double *al = NULL;
    CHECK(rw_grid_ghosted_alloc(g, glen, "test ghosted array", &al));
    int lbad = (gn[0] * nc) % 8 != 0 || gn[0] < cnt[0] + 2 * G || al[glen - 1] != 0.0;
    for (long k = 0; k < cnt[2]; k++)
      for (long j = 0; j < cnt[1]; j++)
        lbad += (uintptr_t)(al + rw_grid_gidx(gn, G, dim, 0, j, k, nc, 0)) % 64 != 0;
    rw_grid_ghosted_free(&al);
    lbad += al != NULL;
    if (lbad) {
      printf("rank %d: %dD ncomp %d ghost %d: gn[0] = %ld for %ld owned, %d rows off a line\n",
             rank, dim, nc, G, gn[0], cnt[0], lbad);
      fails++;
    }
  }
  N_Vector x, y, z;
  CHECK(rw_grid_new_field(g, &x));
  CHECK(rw_grid_new_field(g, &y));
  CHECK(rw_grid_new_field(g, &z));
  double *gv = calloc(glen, sizeof(double)), *ga = calloc(glen, sizeof(double));
  double *xd = rw_vec_data(x);
  for (long k = 0; k < cnt[2]; k++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        for (int c = 0; c < nc; c++)
          xd[((k * cnt[1] + j) * cnt[0] + i) * nc + c] = fval(st[0] + i, st[1] + j, st[2] + k, c);
  /* 1. ghost values (faces only) */
  CHECK(rw_grid_exchange_begin(g, x, gv));
  CHECK(rw_grid_exchange_end(g, gv));
  int bad = 0;
  for (int d = 0; d < dim; d++)
    for (int s = 0; s < 2; s++)
      for (long m = 1; m <= G; m++) {
        long lo[3] = {0, 0, 0}, hi[3] = {cnt[0], cnt[1], cnt[2]};
        lo[d] = s == 0 ? -m : cnt[d] - 1 + m;
        hi[d] = lo[d] + 1;
        for (long k = lo[2]; k < hi[2]; k++)
          for (long j = lo[1]; j < hi[1]; j++)
            for (long i = lo[0]; i < hi[0]; i++)
              for (int c = 0; c < nc; c++)
                if (gv[rw_grid_gidx(gn, G, dim, i, j, k, nc, c)] !=
                    expected(g, st, cnt, i, j, k, c))
                  bad++;
      }
  /* 2. dot-product test with Dirichlet value 0 */
  rw_grid cf0g;
  rw_grid_config cf0 = cf;
  cf0.dirichlet[0] = cf0.dirichlet[1] = 0.0;
  CHECK(rw_grid_create(ctx, &cf0, &cf0g));
  unsigned seed = 12345u + (unsigned)rank * 7919u;
  for (sunindextype i = 0; i < rw_vec_local_length(y); i++) {
    seed = seed * 1103515245u + 12345u;
    rw_vec_data(y)[i] = (double)(seed >> 8) / 16777216.0 - 0.5;
  }
  for (size_t i = 0; i < glen; i++) {
    seed = seed * 1103515245u + 12345u;
    ga[i] = (double)(seed >> 8) / 16777216.0 - 0.5;
  }
  CHECK(rw_grid_exchange_begin(cf0g, y, gv));
  CHECK(rw_grid_exchange_end(cf0g, gv));
  double lhs = 0.0;
  for (size_t i = 0; i < glen; i++)
    lhs += gv[i] * ga[i];
  MPI_Allreduce(MPI_IN_PLACE, &lhs, 1, MPI_DOUBLE, MPI_SUM, rw_context_comm(ctx));
  N_VConst(0.0, z);
  CHECK(rw_grid_exchange_adjoint(cf0g, ga, z));
  double rhs = N_VDotProd(y, z);
  double rel = fabs(lhs - rhs) / fmax(fabs(lhs), 1e-300);
  /* 3. overlapped apply == exchange then kernel on everything */
  lap_ctx lc = {nc, 0};
  CHECK(rw_grid_apply(g, x, gv, y, lap, &lc));
  CHECK(rw_grid_exchange_begin(g, x, gv));
  CHECK(rw_grid_exchange_end(g, gv));
  long zlo[3] = {0, 0, 0};
  lap(&lc, g, gv, rw_vec_data(z), zlo, cnt);
  int same = memcmp(rw_vec_data(y), rw_vec_data(z), rw_vec_bytes(y)) == 0;
  /* 3b. apply with the owned values written by a fill function (rw_grid_apply_fill: a map of
   * x, every node's own value, written row by row) == apply on a vector that holds them: out
   * and the whole ghosted array bit for bit; the fill's rows must tile the owned layout */
  {
    N_Vector fx, o2;
    double *gf = calloc(glen, sizeof(double));
    CHECK(rw_grid_new_field(g, &fx));
    CHECK(rw_grid_new_field(g, &o2));
    const double *xo = rw_vec_data(x);
    for (sunindextype i = 0; i < rw_vec_local_length(fx); i++)
      rw_vec_data(fx)[i] = fill_map(xo[i], (size_t)i);
    CHECK(rw_grid_apply(g, fx, gf, z, lap, &lc));
    fill_ctx fc = {xo, 0};
    N_VConst(-7.0, o2);
    CHECK(rw_grid_apply_fill(g, fill_rows, &fc, gv, o2, lap, &lc));
    const size_t ln = (size_t)rw_vec_local_length(fx);
    int eq = memcmp(rw_vec_data(o2), rw_vec_data(z), rw_vec_bytes(z)) == 0 &&
             memcmp(gv, gf, glen * sizeof(double)) == 0 && fc.filled == ln;
    if (!eq) {
      printf("rank %d: %dD ncomp %d ghost %d: apply_fill differs from apply on the filled "
             "vector (%zu of %zu owned values filled)\n",
             rank, dim, nc, G, fc.filled, ln);
      same = 0;
    }
    /* the fused form (windows of 1, 2 and 3 layers, then the default), in place: the kernel
     * overwrites the vector the fill reads, so a row filled after the kernel wrote it shows;
     * where the block is 4 ghost layers thick in every dimension the windows must have run */
    int thick_f = 1;
    for (int d = 0; d < dim; d++)
      thick_f = thick_f && cnt[d] >= 4 * G;
    const long wlf[4] = {1, 2, 3, 0};
    for (int iw = 0; iw < 4; iw++) {
      rw_grid_set_window(g, wlf[iw]);
      long runs = rw_grid_windows(g);
      N_VScale(1.0, x, o2);
      fill_ctx fi = {rw_vec_data(o2), 0};
      CHECK(rw_grid_apply_fill_fused(g, fill_rows, &fi, gv, o2, lap, &lc));
      runs = rw_grid_windows(g) - runs;
      /* rows of the shell can be filled twice (its slabs overlap, and a window's layer is
       * filled whole), never less than once */
      int ok = memcmp(rw_vec_data(o2), rw_vec_data(z), rw_vec_bytes(z)) == 0 && fi.filled >= ln &&
               (wlf[iw] == 0 || (thick_f ? runs >= (cnt[dim - 1] - 2 * G) / wlf[iw] : runs == 0));
      if (!ok) {
        printf("rank %d: %dD ncomp %d ghost %d window %ld: apply_fill_fused in place differs "
               "(%zu of %zu values filled, %ld windows run)\n",
               rank, dim, nc, G, wlf[iw], fi.filled, ln, runs);
        same = 0;
      }
    }
    free(gf);
    rw_vec_destroy(&fx);
    rw_vec_destroy(&o2);
  }
  /* 4. apply on a combination (a stage) == the combination formed as a vector, exchanged,
   * then the kernel on everything: out, keep and the whole ghosted array bit for bit */
  {
    N_Vector w, kp, o1, ref, X[3] = {x, y, z};
    double cw[3] = {0.75, -1.0 / 3.0, 2.5}, *gw = calloc(glen, sizeof(double));
    CHECK(rw_grid_new_field(g, &w));
    CHECK(rw_grid_new_field(g, &kp));
    CHECK(rw_grid_new_field(g, &o1));
    CHECK(rw_grid_new_field(g, &ref));
    CHECK(N_VLinearCombination(3, cw, X, w));
    CHECK(rw_grid_apply_comb(g, 3, cw, X, kp, gv, o1, lap, &lc));
    CHECK(rw_grid_exchange_begin(g, w, gw));
    CHECK(rw_grid_exchange_end(g, gw));
    lap(&lc, g, gw, rw_vec_data(ref), zlo, cnt);
    int eq_out = memcmp(rw_vec_data(o1), rw_vec_data(ref), rw_vec_bytes(ref)) == 0;
    int eq_keep = memcmp(rw_vec_data(kp), rw_vec_data(w), rw_vec_bytes(w)) == 0;
    int eq_gv = memcmp(gv, gw, glen * sizeof(double)) == 0;
    /* the fused stage on CPU vectors (windows of rows or planes formed just ahead of the
     * kernel): out and keep, twice over the same work arrays, with windows of 1, 2 and 3 layers
     * and the default (which picks the two-pass stage for blocks under four windows of 256 KiB,
     * as these are); where the block is at least 4 ghost layers thick in every dimension the
     * set windows must have run (one per `layers` of the interior), else it falls back to the
     * two-pass stage */
    int thick = 1;
    for (int d = 0; d < dim; d++)
      thick = thick && cnt[d] >= 4 * G;
    const long wl[4] = {1, 2, 3, 0};
    for (int iw = 0; iw < 4; iw++)
      for (int rep = 0; rep < 2; rep++) {
        rw_grid_set_window(g, wl[iw]);
        long runs = rw_grid_windows(g);
        N_VConst(-7.0, o1);
        N_VConst(-7.0, kp);
        CHECK(rw_grid_apply_comb_fused(g, 3, cw, X, kp, gv, o1, lap, &lc));
        runs = rw_grid_windows(g) - runs;
        int fo = memcmp(rw_vec_data(o1), rw_vec_data(ref), rw_vec_bytes(ref)) == 0;
        int fk = memcmp(rw_vec_data(kp), rw_vec_data(w), rw_vec_bytes(w)) == 0;
        int fw = wl[iw] == 0 /* default: the two-pass stage on blocks this small, bits only */
                 || (thick ? runs >= (cnt[dim - 1] - 2 * G) / wl[iw] : runs == 0);
        if (!(fo && fk && fw))
          printf("rank %d: %dD ncomp %d ghost %d window %ld: fused stage differs (out %s, keep "
                 "%s, %ld windows run)\n",
                 rank, dim, nc, G, wl[iw], fo ? "equal" : "DIFFERENT", fk ? "equal" : "DIFFERENT",
                 runs);
        eq_out = eq_out && fo && fw, eq_keep = eq_keep && fk;
      }
    if (!(eq_out && eq_keep && eq_gv)) {
      printf("rank %d: %dD ncomp %d ghost %d: apply_comb differs from the formed combination "
             "(out %s, keep %s, ghosted array %s)\n",
             rank, dim, nc, G, eq_out ? "equal" : "DIFFERENT", eq_keep ? "equal" : "DIFFERENT",
             eq_gv ? "equal" : "DIFFERENT");
      same = 0;
    }
    free(gw);
    rw_vec_destroy(&w);
    rw_vec_destroy(&kp);
    rw_vec_destroy(&o1);
    rw_vec_destroy(&ref);
  }
  long wruns = 0, wmust = 0, wtried = 0;
  int wbad = wave_test(g, x, dim, G, rw_context_size(ctx), &wruns, &wmust, &wtried), allwbad = 0;
  MPI_Allreduce(&wbad, &allwbad, 1, MPI_INT, MPI_SUM, rw_context_comm(ctx));
  int allbad = 0, allsame = 0;
  MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, rw_context_comm(ctx));
  MPI_Allreduce(&same, &allsame, 1, MPI_INT, MPI_MIN, rw_context_comm(ctx));
  const char *bn[] = {"periodic", "dirichlet", "neumann"};
  if (rank == 0)
    printf("%dD %s/%s ncomp %d ghost %d on %d ranks: wrong ghosts %d, dot-product rel %.2e, "
           "overlapped apply %s; whole RK steps as one sweep: %ld of %ld run on rank 0 (%ld "
           "required), %d differ from stage by stage\n",
           dim, bn[bc0], bn[bc1], nc, G, rw_context_size(ctx), allbad, rel,
           allsame ? "bitwise equal" : "DIFFERENT", wruns, wtried, wmust, allwbad);
  if (allbad || !(rel < 1e-14) || !allsame || allwbad) fails++;
  free(gv);
  free(ga);
  rw_vec_destroy(&x);
  rw_vec_destroy(&y);
  rw_vec_destroy(&z);
  rw_grid_destroy(&g);
  rw_grid_destroy(&cf0g);
}

/* The split a grid takes (rw_grid_slabs_suit): slabs, every rank along the slowest dimension,
 * where the wave runs on each slab (its rule: four windows of the per-stage rule, or on a 2-D
 * slab four of the wave's own for two stages and 384 KiB) and each is 32 ghost depths thick
 * (Gray-Scott 512^2 and heat 128^3 at 2 and 4 ranks; 1024 x 160 at 4 ranks by the wave's own
 * window), MPI_Dims_create's split slowest dimension first otherwise (the small grids: 2 x 2
 * and 1 x 2 x 2 at 4 ranks). On the slabs taken at 4 ranks the wave must be ready for 2, 3, 4
 * and 7 stages; the slab rule judged for 16 stages instead of 2 fails 512 x 400 (slabs taken,
 * and the wave not ready for two stages there). */
static void split_tests(rw_context ctx)
{
  const int size = rw_context_size(ctx);
  const struct {
    int dim, nc;
    long n, nd;                           /* nodes per dimension, and along the slowest (0: n) */
    int dims4[3];                         /* the split expected at 4 ranks */
  } cases[] = {{2, 2, 512, 0, {1, 4, 1}}, /* 128 layers of 8 KiB: W = 29, 4 W <= 128 */
               {2, 2, 32, 0, {2, 2, 1}},  /* windows of hundreds of layers: too thin */
               /* 40 layers of 16 KiB: W = 13, 4 W > 40, but the wave's own window for two
                * stages is 5 layers and a slab 656 KB: slabs (the per-stage rule alone: 2 x 2) */
               {2, 2, 1024, 160, {1, 4, 1}},
               {2, 2, 1024, 120, {2, 2, 1}}, /* 30 layers: under 32 */
               {2, 1, 512, 160, {2, 2, 1}},  /* 40 layers of 4 KiB: 164 KB, under 384 KiB */
               /* 100 layers of 4 KiB (416 KB): the wave's own window for two stages is 28
                * layers, 4 x 28 > 100, so no slabs (judged for more stages, they would be) */
               {2, 1, 512, 400, {2, 2, 1}},
               {3, 1, 128, 0, {1, 1, 4}}, /* 32 layers of 132 KiB: W = 1, 32 G layers */
               {3, 1, 96, 0, {1, 2, 2}}}; /* 24 layers: under 32 */
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const long n = cases[c].n, nd = cases[c].nd ? cases[c].nd : n;
    rw_grid_config cf = {.dim = cases[c].dim,
                         .n = {n, cases[c].dim == 3 ? n : nd, cases[c].dim == 3 ? nd : 1},
                         .lo = {0, 0, 0},
                         .hi = {1, 1, 1},
                         .bc = {RW_BC_DIRICHLET, RW_BC_DIRICHLET, RW_BC_DIRICHLET},
                         .ncomp = cases[c].nc,
                         .ghost = 1};
    rw_grid g;
    CHECK(rw_grid_create(ctx, &cf, &g));
    int dims[3], coords[3], want[3] = {1, 1, 1};
    rw_grid_topology(g, dims, coords);
    if (size == 4)
      for (int d = 0; d < 3; d++)
        want[d] = cases[c].dims4[d];
    if (size == 2) want[cases[c].dim - 1] = 2; /* the slowest dimension either way */
    if (size != 1 && size != 2 && size != 4) rw_grid_topology(g, want, coords); /* unchecked */
    const int ok = dims[0] == want[0] && dims[1] == want[1] && dims[2] == want[2];
    if (rw_context_rank(ctx) == 0)
      printf("split: %d-D %ld x %ld x %ld, %d components on %d ranks: process grid %d x %d x %d "
             "(expected %d x %d x %d) %s\n",
             cases[c].dim, cf.n[0], cf.n[1], cf.n[2], cases[c].nc, size, dims[0], dims[1], dims[2],
             want[0], want[1], want[2], ok ? "ok" : "WRONG");
    if (!ok) fails++;
    /* slabs are taken for the wave: on them it runs for two stages and for more (the wave's
     * own window shrinks as s grows). At 4 ranks (at 2, and at a prime count, slabs are
     * MPI_Dims_create's own split, taken whether the wave runs or not) */
    if (size == 4 && dims[cases[c].dim - 1] == size) {
      const int ss[] = {2, 3, 4, 7};
      int runs = 1;
      for (size_t k = 0; k < sizeof ss / sizeof *ss; k++)
        runs = runs && rw_grid_wave_ready(g, ss[k], 1);
      if (rw_context_rank(ctx) == 0)
        printf("split: the wave on those slabs for 2, 3, 4 and 7 stages: %s\n",
               runs ? "ready, ok" : "NOT READY");
      if (!runs) fails++;
    }
    rw_grid_destroy(&g);
  }
  /* a split the caller gives (procs): taken as given, x split here (what the grid's own
   * choice never does); one whose product is not the rank count is refused */
  rw_grid_config cf = {.dim = 2,
                       .n = {32, 32, 1},
                       .lo = {0, 0, 0},
                       .hi = {1, 1, 1},
                       .bc = {RW_BC_PERIODIC, RW_BC_DIRICHLET, RW_BC_PERIODIC},
                       .ncomp = 1,
                       .ghost = 1,
                       .procs = {size, 1, 0}};
  rw_grid g = NULL;
  int dims[3] = {0, 0, 0}, coords[3];
  CHECK(rw_grid_create(ctx, &cf, &g));
  rw_grid_topology(g, dims, coords);
  rw_grid_destroy(&g);
  cf.procs[1] = 2; /* size x 2 ranks: too many */
  const int rc = rw_grid_create(ctx, &cf, &g);
  const int ok = dims[0] == size && dims[1] == 1 && rc != 0 && g == NULL;
  if (rw_context_rank(ctx) == 0)
    printf("split: procs %d x 1 taken as %d x %d; %d x 2 on %d ranks %s: %s\n", size, dims[0],
           dims[1], size, size, rc ? "refused" : "TAKEN", ok ? "ok" : "WRONG");
  if (!ok) fails++;
  rw_grid_destroy(&g);
}

/* The clock the wave's tile measurement reads, made up: each wave (two readings) takes d[0]
 * when it is the measurement's first candidate (the rule's tiles) and d[1] when the second
 * (none); they alternate while it measures. */
typedef struct {
  double t, d[3];
  int nc; /* the candidates, timed in turn: wave w takes d[w % nc] */
  long calls;
} fake_clock;

static double fake_clock_read(void *ctx)
{
  fake_clock *c = ctx;
  const long k = c->calls++;
  if (k & 1) c->t += c->d[(k / 2) % c->nc];
  return c->t;
}

/* A made-up clock that times a wave by the candidate it runs (the rows per tile or layers per
 * window in use when the wave reads it) and by the plan class the test runs (cls): class 0
 * finds the largest candidate fastest, class 1 the smallest. */
typedef struct {
  rw_grid g;
  int dim, cls;
  double t;
  long calls;
} class_clock;

static double class_clock_read(void *ctx)
{
  class_clock *c = ctx;
  if (c->calls++ & 1) {
    const long used = c->dim == 3 ? rw_grid_wave_rows_used(c->g) : rw_grid_wave_layers_used(c->g);
    c->t += c->cls ? (double)used : 1000.0 - (double)used;
  }
  return c->t;
}

/* 6. What a wave measures where it chooses (no rows or layers set): in 3-D its rows per tile
 * where the rule tiles (the rule's tiles, none, or the tiles between: 7, 16 or 8 of 16 rows),
 * in 2-D its layers per window (as many as keep its live layers within 768 KiB or within 1.5
 * MiB). The first 4 waves of each candidate take turns, the rule's first, then the one with the
 * lowest best time stays: the one a made-up clock has faster; TUNE_AGAIN waves after a choice
 * (the default 1000 set lower here) they are measured again; rows or layers set (5) are used as
 * set and nothing is timed. Every wave's y_out is the same bits whatever its tiles or windows.
 * RK4, 8 components (a row of 2 KiB: the rule's tiles are 7 rows; a 2-D layer of 8 KiB: 5 or 13
 * layers), split along the slowest dimension only. */
#define TUNE_AGAIN 40 /* the waves after a choice before it is measured again (1000 by default) */
static void tune_tests(rw_context ctx, int dim)
{
  const int size = rw_context_size(ctx);
  rw_grid_config cf = {.dim = dim,
                       .n = {32, 16, 16},
                       .lo = {0, 0, 0},
                       .hi = {1, 1, 1},
                       .bc = {RW_BC_DIRICHLET, RW_BC_NEUMANN, RW_BC_DIRICHLET},
                       .ncomp = 8,
                       .ghost = 1,
                       .dirichlet = {0.25, -0.5, 0, 0, 0, 0, 0, 0},
                       .procs = {1, 1, size}};
  if (dim == 2) /* 4 windows of the 256 KiB rule's 29 layers on every rank */
    cf.n[0] = 126, cf.n[1] = 120 * size, cf.n[2] = 1, cf.procs[1] = size, cf.procs[2] = 0;
  rw_grid g;
  CHECK(rw_grid_create(ctx, &cf, &g));
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  N_Vector x, out, first;
  CHECK(rw_grid_new_field(g, &x));
  CHECK(rw_grid_new_field(g, &out));
  CHECK(rw_grid_new_field(g, &first));
  double *xd = rw_vec_data(x);
  for (long k = 0; k < cnt[2]; k++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        for (int c = 0; c < cf.ncomp; c++)
          xd[((k * cnt[1] + j) * cnt[0] + i) * cf.ncomp + c] =
              1e-3 * fval(st[0] + i, st[1] + j, st[2] + k, c);
  rw_stage_plan P;
  memset(&P, 0, sizeof P);
  const double h = 0.01, a[4] = {0, 0.5, 0.5, 1.0}, b[4] = {1. / 6, 1. / 3, 1. / 3, 1. / 6};
  P.s = 4, P.cb[0] = 1.0, P.xb[0] = -1, P.nb = 1;
  for (int i = 0; i < 4; i++) {
    P.c[i][0] = 1.0, P.x[i][0] = -1, P.n[i] = 1;
    if (i > 0) P.c[i][1] = h * a[i], P.x[i][1] = i - 1, P.n[i] = 2;
    P.cb[P.nb] = h * b[i], P.xb[P.nb++] = i;
  }
  lap_ctx wide = {cf.ncomp, 1};
  void *kc[4] = {&wide, &wide, &wide, &wide};
  const char *what = dim == 3 ? "rows per tile" : "layers per window";
  if (dim == 3) rw_grid_set_wave(g, 1);
  /* faster: 0 the rule's, 1 none (3-D) or twice the layers (2-D), 3 the tiles between (3-D);
   * 2: rows or layers set (5), nothing timed */
  const int nc = dim == 3 ? 3 : 2, nw = 4 * nc + 4; /* candidates; waves: 4 each, then 4 more */
  for (int faster = 0; faster < (dim == 3 ? 4 : 3); faster++) {
    const int fk = faster == 3 ? 2 : faster; /* the faster candidate's place */
    fake_clock fc = {0.0, {fk == 0 ? 1.0 : 2.0, fk == 1 ? 1.0 : 2.0, fk == 2 ? 1.0 : 2.0}, nc, 0};
    rw_grid_set_wave_clock(g, fake_clock_read, &fc, TUNE_AGAIN);
    if (dim == 3)
      rw_grid_set_wave_rows(g, faster == 2 ? 5 : 0);
    else
      rw_grid_set_wave(g, faster == 2 ? 5 : 0);
    long used[16];
    int bad = 0, done = 0;
    for (int w = 0; w < nw; w++) {
      CHECK(rw_grid_erk_wave(g, &P, x, out, 1, lap, kc, &done));
      used[w] = dim == 3 ? rw_grid_wave_rows_used(g) : rw_grid_wave_layers_used(g);
      bad += !done;
      if (faster == 0 && w == 0) N_VScale(1.0, out, first);
      bad += memcmp(rw_vec_data(out), rw_vec_data(first), rw_vec_bytes(out)) != 0;
    }
    /* what must happen: the rule's choice (used[0]), the other (used[1]) and in 3-D the tiles
     * between (used[2]) differ, the first 4 nc waves take turns, the fastest is kept; or, set,
     * those and no reading */
    const long other = used[1];
    int ok = !bad && done;
    if (faster != 2) {
      ok = ok && used[0] != other && fc.calls == 2 * nw &&
           (dim == 3 ? used[0] < used[2] && used[2] < cnt[1] && other == cnt[1] : used[0] < other);
      for (int w = 0; w < nw; w++)
        ok = ok && used[w] == (w < 4 * nc ? used[w % nc] : used[fk]);
    } else {
      for (int w = 0; w < nw; w++)
        ok = ok && used[w] == 5;
      ok = ok && fc.calls == 0;
    }
    long again[2] = {0, 0}; /* the other kept: after TUNE_AGAIN more waves measured again */
    if (faster == 1) {
      const int m = 4 * nc; /* the waves measured */
      for (int w = nw; w < m + TUNE_AGAIN + 2; w++) {
        CHECK(rw_grid_erk_wave(g, &P, x, out, 1, lap, kc, &done));
        if (w >= m + TUNE_AGAIN)
          again[w - m - TUNE_AGAIN] =
              dim == 3 ? rw_grid_wave_rows_used(g) : rw_grid_wave_layers_used(g);
      }
      ok = ok && again[0] == used[0] && again[1] == other;
      bad += memcmp(rw_vec_data(out), rw_vec_data(first), rw_vec_bytes(out)) != 0;
    }
    int allok = 0;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, rw_context_comm(ctx));
    if (rw_context_rank(ctx) == 0 && faster == 1)
      printf("%d-D wave %s by measurement: waves %d and %d (measured again) %ld %ld\n", dim, what,
             4 * nc + TUNE_AGAIN, 4 * nc + 1 + TUNE_AGAIN, again[0], again[1]);
    if (rw_context_rank(ctx) == 0) {
      char seq[256];
      int at = 0;
      for (int w = 0; w < nw && at < (int)sizeof seq - 24; w++)
        at += snprintf(seq + at, sizeof seq - (size_t)at, "%s%ld",
                       w == 4 * nc ? " | "
                       : w         ? " "
                                   : "",
                       used[w]);
      printf("%d-D wave %s by measurement (%s) on %d ranks: per wave %s, %ld clock readings, %d "
             "waves not run or differing: %s\n",
             dim, what,
             faster == 0   ? "the rule's made faster"
             : faster == 1 ? "the other made faster"
             : faster == 3 ? "the tiles between made faster"
                           : "5 set",
             size, seq, fc.calls, bad, allok ? "ok" : "WRONG");
    }
    if (!allok) fails++;
  }
  { /* two plans of different work (tune_class 0 and 1, the same stages) run in turn, as the
     * stage bench's adjoint steps with every gradient and with dJ/dy0 only: each is measured on
     * its own waves, and keeps its own fastest candidate (class 0 the largest, 1 the smallest;
     * a tuner shared by both would choose one candidate for both) */
    class_clock cc = {g, dim, 0, 0.0, 0};
    rw_grid_set_wave_clock(g, class_clock_read, &cc, TUNE_AGAIN);
    if (dim == 3)
      rw_grid_set_wave_rows(g, 0);
    else
      rw_grid_set_wave(g, 0);
    rw_stage_plan P1 = P;
    P1.tune_class = 1;
    long lo = -1, hi = -1, got[2] = {-1, -1};
    int bad = 0, done = 0, ok = 1;
    for (int w = 0; w < 2 * (4 * nc + 3); w++) {
      cc.cls = w & 1;
      CHECK(rw_grid_erk_wave(g, cc.cls ? &P1 : &P, x, out, 1, lap, kc, &done));
      const long used = dim == 3 ? rw_grid_wave_rows_used(g) : rw_grid_wave_layers_used(g);
      bad += !done || memcmp(rw_vec_data(out), rw_vec_data(first), rw_vec_bytes(out)) != 0;
      if (w < 2 * 4 * nc) { /* measuring: each class's candidates in turn */
        lo = lo < 0 || used < lo ? used : lo, hi = used > hi ? used : hi;
      } else {
        ok = ok && (got[cc.cls] < 0 || got[cc.cls] == used);
        got[cc.cls] = used;
      }
    }
    ok = ok && !bad && lo < hi && got[0] == hi && got[1] == lo && cc.calls == 2 * 2 * (4 * nc + 3);
    int allok = 0;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, rw_context_comm(ctx));
    if (rw_context_rank(ctx) == 0)
      printf("%d-D wave %s by measurement, two plan classes in turn on %d ranks: class 0 keeps "
             "%ld (fastest for it: %ld), class 1 keeps %ld (fastest: %ld), %d waves not run or "
             "differing: %s\n",
             dim, what, size, got[0], hi, got[1], lo, bad, allok ? "ok" : "WRONG");
    if (!allok) fails++;
  }
  rw_grid_set_wave_clock(g, NULL, NULL, 0);
  rw_vec_destroy(&x);
  rw_vec_destroy(&out);
  rw_vec_destroy(&first);
  rw_grid_destroy(&g);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  rw_context ctx;
  CHECK(rw_context_create(MPI_COMM_WORLD, &ctx));
  split_tests(ctx);
  tune_tests(ctx, 3);
  tune_tests(ctx, 2);
  for (int dim = 2; dim <= 3; dim++)
    for (int b0 = 0; b0 < 3; b0++)
      for (int b1 = 0; b1 < 3; b1++)
        for (int nc = 1; nc <= 2; nc++)
          for (int G = 1; G <= 2; G++)
            run(ctx, dim, (rw_bc)b0, (rw_bc)b1, nc, G);
  rw_context_destroy(&ctx);
  MPI_Finalize();
  return fails ? 1 : 0;
}
