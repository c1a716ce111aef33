/* Gray-Scott problem checks, run under mpiexec with 1, 2 and 4 ranks (2-D and 3-D grids):
 *
 *  1. Dot-product tests of the operators on random fields (state: a smooth random field;
 *     directions: random values hashed from the global node index), with the PETSc ex5adj
 *     parameters and with a diffusion-dominated set (D / h^2 of order one, so an error in
 *     the transposed stencil is not hidden under the reaction terms):
 *       <w, (df/dy) v> = <(df/dy)^T w, v>   against the JVP (1e-13) and against a central
 *                                            difference of rhs (1e-7), errors relative to
 *                                            |w| |Jv| (random directions cancel in <w, Jv>);
 *       <w, df/dp_k>   = (df/dp)^T w [k]    for each parameter, the same two ways.
 *  2. Taylor remainder of the full discrete adjoint (RK4, 12 steps, both objectives):
 *     |J(x + s d) - J(x) - s dJ.d| decays at second order (observed order in [1.8, 2.2]) over
 *     5 halvings of s, in each parameter and in the initial fields.
 *  3. Rank-count invariance: the gradient on the full communicator against the one computed
 *     on MPI_COMM_SELF by rank 0. y(T) and the point objective's J are bitwise equal (the
 *     forward kernels do the same operations per node whatever the decomposition); J (u2)
 *     and dJ/dp are sums whose grouping follows the ranks: 1e-12 relative. dJ/dy0 is NOT
 *     bitwise equal: the transposed stencil scatters into ghost entries that
 *     rw_grid_exchange_adjoint adds to the owner after the owner's own contributions, so at
 *     nodes next to a rank boundary the five terms of each vjp_y are summed in another
 *     order (rounding differences, carried through the backward sweep). Asserted:
 *     max |difference| <= 1e-14 max |dJ/dy0| (measured: a few 1e-16).
 *  4. Checkpointing (binomial, 2 and 4 slots) gives the store-everything J, dJ/dp and dJ/dy0
 *     bit for bit.
 * Prints one line per check on rank 0; exits 1 if any check failed. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_grayscott.h"
#include "rw_mpi_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails, rank, size;

static void report(int ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void report(int ok, const char *fmt, ...)
{
  if (!ok) fails++;
  if (rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  printf("%s ", ok ? "ok  " : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

/* Fills a field from global node coordinates (so every decomposition sees the same field):
 * smooth = 1: base[c] + amp[c] * a sum of six random periodic modes (wave numbers 1..3);
 * smooth = 0: base[c] + amp[c] * hash(seed, global index). */
static void fill(rw_problem prob, N_Vector f, uint64_t seed, int smooth, const double base[2],
                 const double amp[2])
{
  rw_grid g = rw_gs_grid(prob);
  const rw_grid_config *cf = rw_grid_get_config(g);
  long st[3], cnt[3];
  rw_grid_local_box(g, st, cnt);
  double h[3], L = cf->hi[0] - cf->lo[0], *d = rw_vec_data(f);
  rw_grid_spacing(g, h);
  double kw[2][6][3], ph[2][6], a[2][6];
  for (int c = 0; c < 2; c++)
    for (int m = 0; m < 6; m++) {
      for (int e = 0; e < 3; e++)
        kw[c][m][e] =
            e < cf->dim ? floor(2.0 + 1.999 * rw_test_hash01(seed, 100u * c + 10u * m + e)) : 0;
      ph[c][m] = 3.14159 * rw_test_hash01(seed + 1, 10u * c + m);
      a[c][m] = rw_test_hash01(seed + 2, 10u * c + m) / 6.0;
    }
  for (long k = 0; k < cnt[2]; k++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        for (int c = 0; c < 2; c++) {
          long gi = st[0] + i, gj = st[1] + j, gk = st[2] + k;
          double val;
          if (smooth) {
            double x[3] = {gi * h[0], gj * h[1], gk * h[2]};
            val = 0.0;
            for (int m = 0; m < 6; m++) {
              double arg = ph[c][m];
              for (int e = 0; e < cf->dim; e++)
                arg += 2.0 * 3.14159265358979323846 * kw[c][m][e] * x[e] / L;
              val += a[c][m] * sin(arg);
            }
          } else {
            uint64_t gidx = (uint64_t)((gk * cf->n[1] + gj) * cf->n[0] + gi);
            val = rw_test_hash01(seed, 2u * gidx + (uint64_t)c);
          }
          d[((k * cnt[1] + j) * cnt[0] + i) * 2 + c] = base[c] + amp[c] * val;
        }
}

static rw_problem make(rw_context ctx, int dim, long n, rw_gs_objective obj, int strong)
{
  rw_gs_config cfg;
  rw_problem prob;
  rw_gs_config_default(&cfg);
  cfg.dim = dim;
  cfg.n = n;
  cfg.objective = obj;
  CHECK(rw_gs_problem_create(ctx, &cfg, &prob));
  if (strong) {
    /* D / h^2 = 0.3 and 0.2: diffusion as strong as the reaction, RK4 stable at dt 0.5. */
    double h = 2.5 / (double)n, *p = rw_problem_params(prob);
    p[0] = 0.3 * h * h, p[1] = 0.2 * h * h;
  }
  return prob;
}

static double relerr(double a, double b)
{
  double s = fmax(fabs(a), fabs(b));
  return s == 0.0 ? 0.0 : fabs(a - b) / s;
}

/* An RK4 step keeping its stages (y -> f[0] / f[1]) and an adjoint step (w -> l[0] / l[1];
 * from those stages when `stored`, else recomputing them), first stage by stage and then with
 * the wave's window win (0: the default): the entries that differ between the two (y_{n+1},
 * every stage, lambda, dJ/dp) summed over the ranks; *runs: the sweeps on this rank. */
static int wave_pair(MPI_Comm comm, rw_stepper st, rw_grid g, double t, long win, int stored,
                     N_Vector y, N_Vector w, N_Vector f[2], N_Vector l[2], long *runs)
{
  const int ns = rw_stepper_num_stage_vectors(st);
  N_Vector *sv[2] = {NULL, NULL};
  CHECK(rw_vec_clone_array(y, ns, &sv[0]));
  CHECK(rw_vec_clone_array(y, ns, &sv[1]));
  double pq[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
  *runs = 0;
  for (int on = 0; on < 2; on++) {
    rw_grid_set_wave(g, on ? win : -1);
    const long r0 = rw_grid_waves(g);
    CHECK(rw_stepper_step(st, t, 0.5, y, f[on], sv[on], NULL));
    rw_vec_copy(w, l[on]);
    CHECK(rw_stepper_adjoint_step(st, t, 0.5, y, stored ? sv[on] : NULL, l[on], pq[on]));
    *runs += on ? rw_grid_waves(g) - r0 : 0;
  }
  rw_grid_set_wave(g, 0);
  int nbad = memcmp(rw_vec_data(f[0]), rw_vec_data(f[1]), rw_vec_bytes(y)) != 0 ||
             memcmp(rw_vec_data(l[0]), rw_vec_data(l[1]), rw_vec_bytes(y)) != 0 ||
             memcmp(pq[0], pq[1], sizeof pq[0]) != 0 || pq[0][0] == 0.0;
  for (int i = 0; i < ns; i++)
    nbad += memcmp(rw_vec_data(sv[0][i]), rw_vec_data(sv[1][i]), rw_vec_bytes(y)) != 0;
  rw_vec_destroy_array(&sv[0], ns);
  rw_vec_destroy_array(&sv[1], ns);
  int allbad = 0;
  MPI_Allreduce(&nbad, &allbad, 1, MPI_INT, MPI_SUM, comm);
  return allbad;
}

/* A step in place from f[0] and f[1] (equal on entry), nothing kept, with the wave off and then
 * with the window win (0: the default): the ranks on which the two differ; *runs gains the
 * sweeps this rank ran. */
static int step_in_place_pair(MPI_Comm comm, rw_stepper st, rw_grid g, long win, N_Vector f[2],
                              long *runs)
{
  for (int on = 0; on < 2; on++) {
    rw_grid_set_wave(g, on ? win : -1);
    const long r0 = rw_grid_waves(g);
    CHECK(rw_stepper_step(st, 0.7, 0.5, f[on], f[on], NULL, NULL));
    *runs += on ? rw_grid_waves(g) - r0 : 0;
  }
  rw_grid_set_wave(g, 0);
  int nbad = memcmp(rw_vec_data(f[0]), rw_vec_data(f[1]), rw_vec_bytes(f[0])) != 0;
  MPI_Allreduce(MPI_IN_PLACE, &nbad, 1, MPI_INT, MPI_SUM, comm);
  return nbad;
}

/* 1. Dot-product tests. */
static void dot_tests(rw_context ctx, int dim, long n, int strong)
{
  rw_problem prob = make(ctx, dim, n, RW_GS_POINT, strong);
  N_Vector y, v, w, jv, vt, fp, fm, yp, zero;
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_vec_clone(y, &v));
  CHECK(rw_vec_clone(y, &w));
  CHECK(rw_vec_clone(y, &jv));
  CHECK(rw_vec_clone(y, &vt));
  CHECK(rw_vec_clone(y, &fp));
  CHECK(rw_vec_clone(y, &fm));
  CHECK(rw_vec_clone(y, &yp));
  CHECK(rw_vec_clone(y, &zero));
  const double by[2] = {0.6, 0.25}, ay[2] = {0.3, 0.2}, b0[2] = {0, 0}, a1[2] = {1, 1};
  fill(prob, y, 11, 1, by, ay);
  fill(prob, v, 12, 0, b0, a1);
  fill(prob, w, 13, 0, b0, a1);
  double *p = rw_problem_params(prob), p0[4];
  memcpy(p0, p, sizeof p0);
  const double t = 0.7;
  const char *set = strong ? "diffusion-dominated" : "ex5adj parameters";

  /* state: JVP and central difference against the VJP */
  CHECK(rw_problem_jvp(prob, t, y, v, NULL, jv));
  N_VConst(0.0, vt);
  CHECK(rw_problem_vjp_y(prob, t, y, w, vt));
  double lhs = N_VDotProd(w, jv), rhs = N_VDotProd(vt, v);
  /* Scaled by |w| |Jv| (and |J^T w| |v|), the size of the rounding error of a dot product:
   * random directions make <w, Jv> itself small by cancellation. */
  double scale = fmax(sqrt(N_VDotProd(w, w) * N_VDotProd(jv, jv)),
                      sqrt(N_VDotProd(vt, vt) * N_VDotProd(v, v)));
  double e_jvp = fabs(lhs - rhs) / scale;
  double eps = 1e-5;
  N_VLinearSum(1.0, y, eps, v, yp);
  CHECK(rw_problem_rhs(prob, t, yp, fp));
  N_VLinearSum(1.0, y, -eps, v, yp);
  CHECK(rw_problem_rhs(prob, t, yp, fm));
  N_VLinearSum(1.0, fp, -1.0, fm, jv);
  double e_fd = fabs(N_VDotProd(w, jv) / (2.0 * eps) - rhs) / scale;
  report(e_jvp < 1e-13 && e_fd < 1e-7,
         "dot vjp_y %dD N=%ld %s on %d ranks: <w,Jv>=%.15e vs <J^T w,v>=%.15e: error / (|w| "
         "|Jv|) %.2e (JVP), %.2e (central difference)",
         dim, n, set, size, lhs, rhs, e_jvp, e_fd);

  /* parameters, one at a time: <w, df/dp_k> against (df/dp)^T w [k] */
  double pbar[4] = {0, 0, 0, 0};
  CHECK(rw_problem_vjp_p(prob, t, y, w, pbar));
  MPI_Allreduce(MPI_IN_PLACE, pbar, 4, MPI_DOUBLE, MPI_SUM, rw_context_comm(ctx));
  double worst_jvp = 0.0, worst_fd = 0.0;
  for (int k = 0; k < 4; k++) {
    double dp[4] = {0, 0, 0, 0};
    dp[k] = 1.0;
    CHECK(rw_problem_jvp(prob, t, y, zero, dp, jv));
    double l = N_VDotProd(w, jv);
    double ek = 1e-4 * fabs(p0[k]);
    p[k] = p0[k] + ek;
    CHECK(rw_problem_rhs(prob, t, y, fp));
    p[k] = p0[k] - ek;
    CHECK(rw_problem_rhs(prob, t, y, fm));
    p[k] = p0[k];
    N_VLinearSum(1.0, fp, -1.0, fm, jv);
    double lfd = N_VDotProd(w, jv) / (2.0 * ek);
    double a = relerr(l, pbar[k]), b = relerr(lfd, pbar[k]);
    worst_jvp = fmax(worst_jvp, a);
    worst_fd = fmax(worst_fd, b);
    report(a < 1e-13 && b < 1e-7,
           "dot vjp_p %dD N=%ld %s on %d ranks: dJ/d%s: <w,df/dp>=%.15e vs %.15e: rel %.2e "
           "(JVP), %.2e (central difference)",
           dim, n, set, size, rw_problem_param_name(prob, k), l, pbar[k], a, b);
  }

  /* The fused ops (the combination formed in the halo copy, or on CPU vectors in windows of
   * 2 and 3 layers formed just ahead of the stencil, or the default: the two-pass stage on
   * blocks this small) against the plain path: a work vector holding the combination, then
   * rhs / zero + vjp_y + vjp_p. Bit for bit; the set windows must have run. */
  for (long win = 0; win <= 3; win += win ? 1 : 2) {
    N_Vector X[3] = {y, v, w}, keep = fp, work = yp;
    double cs[3][3] = {{1.0, 0.0, 0.0}, {1.0, 0.35, 0.0}, {1.0, -0.2, 0.7}};
    int nbad = 0;
    rw_grid g = rw_gs_grid(prob);
    rw_grid_set_window(g, win);
    long runs = rw_grid_windows(g), st[3], cnt[3];
    rw_grid_local_box(g, st, cnt);
    for (int nv = 1; nv <= 3; nv++) {
      const double *cc = cs[nv - 1];
      CHECK(rw_problem_rhs_comb(prob, t, nv, cc, X, keep, work, jv)); /* fused, Y kept */
      CHECK(N_VLinearCombination(nv, (double *)cc, X, work));
      CHECK(rw_problem_rhs(prob, t, work, vt));
      for (sunindextype m = 0; m < rw_vec_local_length(y); m++)
        nbad += rw_vec_data(jv)[m] != rw_vec_data(vt)[m] ||
                rw_vec_data(keep)[m] != rw_vec_data(work)[m];
      double pa[4] = {0, 0, 0, 0}, pb[4] = {0, 0, 0, 0};
      N_VConst(12345.0, jv); /* overwritten, never read */
      CHECK(rw_problem_vjp_comb(prob, t, y, nv, cc, X, fm, jv, pa));
      N_VConst(0.0, vt);
      CHECK(rw_problem_vjp_y(prob, t, y, work, vt));
      CHECK(rw_problem_vjp_p(prob, t, y, work, pb));
      for (sunindextype m = 0; m < rw_vec_local_length(y); m++)
        nbad += rw_vec_data(jv)[m] != rw_vec_data(vt)[m];
      for (int k = 0; k < 4; k++)
        nbad += pa[k] != pb[k];
    }
    runs = rw_grid_windows(g) - runs; /* 6 fused calls, at least (count - 2G) / win each */
    int wok = win == 0 || runs >= 6 * ((cnt[dim - 1] - 2) / win), all_wok = 0;
    MPI_Allreduce(&wok, &all_wok, 1, MPI_INT, MPI_MIN, rw_context_comm(ctx));
    report(nbad == 0 && all_wok,
           "fused rhs_comb / vjp_comb %dD N=%ld %s on %d ranks, window %ld layers (0: default) "
           "equal the plain ops bit for bit (%d entries differ; %ld windows run on rank 0)",
           dim, n, set, size, win, nbad, runs);
    rw_grid_set_window(g, 0);
  }

  /* A whole RK4 step as one sweep (rw_grid_erk_wave; 1, 2 and 3 layers per window; the stages
   * past the block's edge on a periodic side or a neighbour's layers) against the
   * stage-by-stage step (the wave off): y_{n+1} bit for bit, in place. It must run on one rank. */
  {
    rw_stepper st = NULL;
    rw_grid g = rw_gs_grid(prob);
    CHECK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
    for (long win = 1; win <= 3; win++) {
      rw_grid_set_wave(g, -1);
      rw_vec_copy(y, fp);
      CHECK(rw_stepper_step(st, t, 0.5, fp, fp, NULL, NULL));
      rw_grid_set_wave(g, win);
      long runs = rw_grid_waves(g);
      rw_vec_copy(y, fm);
      CHECK(rw_stepper_step(st, t, 0.5, fm, fm, NULL, NULL));
      runs = rw_grid_waves(g) - runs;
      rw_grid_set_wave(g, 0);
      int nbad = memcmp(rw_vec_data(fp), rw_vec_data(fm), rw_vec_bytes(fp)) != 0, allbad = 0;
      MPI_Allreduce(&nbad, &allbad, 1, MPI_INT, MPI_SUM, rw_context_comm(ctx));
      report(allbad == 0 && (size > 1 || runs == 1),
             "RK4 step as one sweep %dD N=%ld %s on %d ranks, %ld layers per window: %s the "
             "stage-by-stage step (%ld sweeps on rank 0)",
             dim, n, set, size, win, allbad ? "DIFFERS from" : "bit for bit", runs);
    }
    /* the same with the stages kept (store mode), and the adjoint step that recomputes its
     * stage inputs (no_out) and runs the adjoint over them in the same sweep (rw_problem_ops'
     * backward_wave: rw_grid_erk_wave_pair, two waves): lambda and dJ/dp bit for bit; on one
     * rank all three are sweeps */
    {
      N_Vector f[2] = {fp, fm}, l[2] = {vt, jv};
      long runs = 0, pairs = rw_grid_wave_pairs(g);
      const int allbad = wave_pair(rw_context_comm(ctx), st, g, t, 2, 0, y, w, f, l, &runs);
      pairs = rw_grid_wave_pairs(g) - pairs;
      report(allbad == 0 && (size > 1 || (runs == 3 && pairs == 1)),
             "RK4 step keeping its stages and adjoint step recomputing them, as sweeps %dD N=%ld "
             "%s on %d ranks: %s the stage-by-stage steps (%ld sweeps, %ld of them a pair, on "
             "rank 0)",
             dim, n, set, size, allbad ? "DIFFER from" : "bit for bit", runs, 2 * pairs);
    }
    /* The adjoint step from stored stages as one sweep (the stored stage states read layer by
     * layer, past the block's edge from the neighbour's or the periodic wrap's copies) against
     * stage by stage: lambda and dJ/dp bit for bit, for windows of 1 to 3 layers, with the
     * parameters differentiated and frozen (dJ/dy0 only, what ex5adj_mf computes). It must
     * run on one rank. */
    {
      const int ns = rw_stepper_num_stage_vectors(st);
      N_Vector *sa = NULL;
      CHECK(rw_vec_clone_array(y, ns, &sa));
      CHECK(rw_stepper_step(st, t, 0.5, y, fp, sa, NULL));
      int nbad = 0;
      long runs = 0;
      for (int cs = 0; cs < 6; cs++) {
        const long win = cs % 3 + 1;
        const int act = cs / 3;
        double pq[2][4];
        rw_problem_set_active(prob, act, 1);
        for (int on = 0; on < 2; on++) {
          rw_grid_set_wave(g, on ? win : -1);
          for (int c = 0; c < 4; c++)
            pq[on][c] = 0.125 * (double)(c + 1);
          rw_vec_copy(w, on ? jv : vt);
          long r0 = rw_grid_waves(g);
          CHECK(rw_stepper_adjoint_step(st, t, 0.5, y, sa, on ? jv : vt, pq[on]));
          runs += on ? rw_grid_waves(g) - r0 : 0;
        }
        rw_grid_set_wave(g, 0);
        nbad += memcmp(rw_vec_data(vt), rw_vec_data(jv), rw_vec_bytes(vt)) != 0 ||
                memcmp(pq[0], pq[1], sizeof pq[0]) != 0 || (act && pq[0][0] == 0.125);
      }
      rw_problem_set_active(prob, 1, 1);
      int allbad = 0;
      MPI_Allreduce(&nbad, &allbad, 1, MPI_INT, MPI_SUM, rw_context_comm(ctx));
      report(allbad == 0 && (size > 1 || runs == 6),
             "RK4 adjoint step from stored stages as one sweep %dD N=%ld %s on %d ranks, 1-3 "
             "layers per window, parameters differentiated and frozen: %s stage by stage (%ld "
             "sweeps on rank 0)",
             dim, n, set, size, allbad ? "DIFFERS from" : "bit for bit", runs);
      rw_vec_destroy_array(&sa, ns);
    }
    rw_stepper_destroy(&st);
  }
  rw_vec_destroy(&y);
  rw_vec_destroy(&v);
  rw_vec_destroy(&w);
  rw_vec_destroy(&jv);
  rw_vec_destroy(&vt);
  rw_vec_destroy(&fp);
  rw_vec_destroy(&fm);
  rw_vec_destroy(&yp);
  rw_vec_destroy(&zero);
  rw_problem_destroy(&prob);
}

/* A smooth state y (seed) and five more vectors: v[0] a random adjoint w (seed + 1), v[1..4]
 * for y_{n+1} and lambda with the wave off and on. */
static void wave_vectors(rw_problem prob, uint64_t seed, N_Vector *y, N_Vector **v)
{
  const double by[2] = {0.6, 0.25}, ay[2] = {0.3, 0.2}, b0[2] = {0, 0}, a1[2] = {1, 1};
  CHECK(rw_problem_new_state(prob, y));
  CHECK(rw_vec_clone_array(*y, 5, v));
  fill(prob, *y, seed, 1, by, ay);
  fill(prob, (*v)[0], seed + 1, 0, b0, a1);
}

/* 1b. The wave with its default window on a block large enough for the window rule to size
 * it (rw_grid_wave_layers: at 256^2 on one rank the live layers of four stages bound the window
 * to about 12 layers, a width the 1-3 layer cases above do not cover): an RK4 step, and the
 * adjoint step from its stored stages (every parameter differentiated), against the
 * stage-by-stage steps bit for bit. On up to `must` ranks all three must run as sweeps; on more
 * the blocks are too thin for the wave and the check is the same equality. 160^2 on one rank and
 * 256^2 on two (128 layers a rank) are under four windows of the per-stage rule (about 100 and 60
 * layers) but hold four of the wave's own and a ghosted vector of at least 384 KiB: they must
 * sweep too (rw_grid_wave_layers_in's thinner 2-D blocks). */
static void wave_default_tests(rw_context ctx, long n, int must)
{
  rw_problem prob = make(ctx, 2, n, RW_GS_POINT, 0);
  rw_grid g = rw_gs_grid(prob);
  rw_stepper st = NULL;
  N_Vector y, *v = NULL; /* w, then y_{n+1} and lambda with the wave off and on */
  wave_vectors(prob, 21, &y, &v);
  CHECK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
  N_Vector f[2] = {v[1], v[2]}, l[2] = {v[3], v[4]};
  long runs = 0;
  int allbad = wave_pair(rw_context_comm(ctx), st, g, 0.7, 0, 1, y, v[0], f, l, &runs);
  allbad += step_in_place_pair(rw_context_comm(ctx), st, g, 0, f, &runs);
  report(allbad == 0 && (size > must || runs == 3),
         "RK4 steps and the adjoint step from stored stages with the wave's default window, 2D "
         "N=%ld on %d ranks: %s the stage-by-stage steps (%ld sweeps on rank 0)",
         n, size, allbad ? "DIFFER from" : "bit for bit", runs);
  { /* The stepper's stage workspace (3 s + 1 = 13 state vectors for RK4) is allocated by its
     * first step that goes stage by stage, not at creation: a new stepper's step and adjoint
     * step (recomputing, no stored stages: a pair of sweeps) taken as sweeps allocate less than
     * one state, and its first stage-by-stage step then allocates at least the stage inputs and
     * slopes (2 s states). The same steps on the first stepper first, so that the grid's sweep
     * buffers exist before the count. Up to `must` ranks must sweep; elsewhere judged where it did.
     */
    rw_grid_set_wave(g, 2);
    CHECK(rw_stepper_step(st, 0.7, 0.5, y, f[0], NULL, NULL));
    rw_vec_copy(v[0], l[0]);
    CHECK(rw_stepper_adjoint_step(st, 0.7, 0.5, y, NULL, l[0], NULL));
    rw_stepper_destroy(&st);
    const size_t vb = rw_vec_bytes(y), m0 = rw_mem_current();
    const long r0 = rw_grid_waves(g);
    CHECK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
    CHECK(rw_stepper_step(st, 0.7, 0.5, y, f[0], NULL, NULL));
    rw_vec_copy(v[0], l[0]);
    CHECK(rw_stepper_adjoint_step(st, 0.7, 0.5, y, NULL, l[0], NULL));
    const size_t m1 = rw_mem_current();
    const long swept = rw_grid_waves(g) - r0; /* the step's wave and the pair's two */
    rw_grid_set_wave(g, -1);
    CHECK(rw_stepper_step(st, 0.7, 0.5, y, f[1], NULL, NULL));
    rw_grid_set_wave(g, 0);
    const size_t m2 = rw_mem_current();
    int bad = swept == 3 ? m1 - m0 >= vb || m2 - m1 < 8 * vb : size <= must || m2 - m0 < 8 * vb;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, rw_context_comm(ctx));
    report(bad == 0,
           "RK4 stepper's stage workspace allocated on first use, 2D N=%ld on %d ranks: %.2f "
           "states by its %ld sweeps, %.2f by its first stage-by-stage step (rank 0)",
           n, size, (double)(m1 - m0) / (double)vb, swept, (double)(m2 - m1) / (double)vb);
  }
  rw_stepper_destroy(&st);
  rw_vec_destroy_array(&v, 5);
  rw_vec_destroy(&y);
  rw_problem_destroy(&prob);
}

/* 1c. The sweeps with every other tableau (the waves take any explicit method's plan; the cases
 * above are RK4's, whose adjoint stages combine at most two terms): for euler, heun, ssprk3,
 * rk38 (adjoint stages of up to four terms) and dopri5 (six stages as a fixed-step method, its
 * FSAL stage dropped; b_2 = 0), a step keeping its stages and the adjoint step from them, a step
 * keeping its stages and the adjoint step recomputing them, and a step in place, with windows of
 * 1 and 2 layers, against the stage-by-stage steps bit for bit (y_{n+1}, every stage, lambda and
 * dJ/dp). On one rank every step must sweep (each of these methods has an adjoint plan: every
 * stage reaches y_{n+1}), the recomputing adjoint step as a pair of sweeps where the block
 * holds the pair's reach ((2 s - 1) G layers, rw_grid_pair_suits; else as two sweeps); on more
 * ranks the blocks may be too thin for the wave and the check is the same equality. */
static void wave_tableau_tests(rw_context ctx, int dim, long n)
{
  static const char *const names[] = {"euler", "heun", "ssprk3", "rk38", "dopri5"};
  rw_problem prob = make(ctx, dim, n, RW_GS_POINT, 1);
  rw_grid g = rw_gs_grid(prob);
  N_Vector y, *v = NULL; /* w, then y_{n+1} and lambda with the wave off and on */
  wave_vectors(prob, 31, &y, &v);
  N_Vector f[2] = {v[1], v[2]}, l[2] = {v[3], v[4]};
  for (size_t m = 0; m < sizeof names / sizeof names[0]; m++) {
    const rw_tableau *tab = rw_tableau_find(names[m]);
    rw_stepper st = NULL;
    CHECK(rw_stepper_create_erk(prob, tab, &st));
    int se = tab->stages; /* the stages a fixed step evaluates */
    while (se > 1 && tab->b[se - 1] == 0.0)
      se--;
    const int pair = 2 * se - 1 <= n; /* on one rank (periodic: its own neighbour), G = 1 */
    for (long win = 1; win <= 2; win++) {
      long rs = 0, rr = 0, ri = 0, pairs = rw_grid_wave_pairs(g);
      int bad = wave_pair(rw_context_comm(ctx), st, g, 0.7, win, 1, y, v[0], f, l, &rs);
      bad += wave_pair(rw_context_comm(ctx), st, g, 0.7, win, 0, y, v[0], f, l, &rr);
      pairs = rw_grid_wave_pairs(g) - pairs;
      bad += step_in_place_pair(rw_context_comm(ctx), st, g, win, f, &ri);
      /* on one rank: stored 1 + 1, recomputing 1 + 2 (a pair, or the two apart), in place 1 */
      const int swept = size > 1 || (rs == 2 && rr == 3 && ri == 1 && pairs == pair);
      report(bad == 0 && swept,
             "%s (%d stages) steps and adjoint steps as sweeps %dD N=%ld on %d ranks, %ld layers "
             "per window: %s the stage-by-stage steps (sweeps on rank 0: %ld keeping the stages "
             "and from them, %ld keeping them and recomputing them (%ld pair), %ld in place)",
             names[m], se, dim, n, size, win, bad ? "DIFFER from" : "bit for bit", rs, rr, pairs,
             ri);
    }
    rw_stepper_destroy(&st);
  }
  rw_vec_destroy_array(&v, 5);
  rw_vec_destroy(&y);
  rw_problem_destroy(&prob);
}

/* J after `steps` RK4 steps of 0.5 from y0 + s dy (dy may be NULL) with parameters p. */
static double forward_J(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector y0,
                        N_Vector dy, double s, N_Vector work)
{
  double J;
  if (dy)
    N_VLinearSum(1.0, y0, s, dy, work);
  else
    N_VScale(1.0, y0, work);
  CHECK(rw_forward_solve(prob, st, opt, work, &J, NULL));
  return J;
}

/* 2. Taylor remainder test of the full adjoint. */
static void taylor_tests(rw_context ctx, int dim, long n, rw_gs_objective obj, int strong)
{
  rw_problem prob = make(ctx, dim, n, obj, strong);
  rw_stepper st;
  N_Vector y0, y, gy, dy;
  CHECK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
  CHECK(rw_problem_new_state(prob, &y0));
  CHECK(rw_vec_clone(y0, &y));
  CHECK(rw_vec_clone(y0, &gy));
  CHECK(rw_vec_clone(y0, &dy));
  const double by[2] = {0.6, 0.25}, ay[2] = {0.3, 0.2}, b0[2] = {0, 0}, a1[2] = {1, 1};
  fill(prob, y0, 21, 1, by, ay);
  fill(prob, dy, 22, 1, b0, a1);
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.t0 = 0.0, opt.tf = 6.0, opt.dt = 0.5;
  double J0, g[4], *p = rw_problem_params(prob), p0[4];
  memcpy(p0, p, sizeof p0);
  N_VScale(1.0, y0, y);
  CHECK(rw_adjoint_solve(prob, st, &opt, y, &J0, g, gy, NULL));
  const char *on = obj == RW_GS_POINT ? "point" : "u2";
  for (int dir = 0; dir < 5; dir++) { /* 0..3: parameter k; 4: initial fields */
    double gd = dir < 4 ? g[dir] * p0[dir] : N_VDotProd(gy, dy);
    double s0 = dir < 4 ? 0.0625 : 0.02, prev = 0.0, omin = 1e9, omax = -1e9, rem = 0.0;
    char orders[128] = "";
    for (int i = 0; i <= 5; i++) {
      double s = s0 * pow(0.5, i), J;
      if (dir < 4) {
        p[dir] = p0[dir] * (1.0 + s);
        J = forward_J(prob, st, &opt, y0, NULL, 0.0, y);
        p[dir] = p0[dir];
      } else {
        J = forward_J(prob, st, &opt, y0, dy, s, y);
      }
      rem = fabs(J - J0 - s * gd);
      if (i > 0) {
        double o = log2(prev / rem);
        omin = rw_test_min(omin, o), omax = rw_test_max(omax, o);
        size_t l = strlen(orders);
        snprintf(orders + l, sizeof orders - l, "%s%.3f", i > 1 ? " " : "", o);
      }
      prev = rem;
    }
    report(omin > 1.8 && omax < 2.2,
           "taylor %dD N=%ld %s objective %s on %d ranks, direction %s: orders %s (last "
           "remainder %.2e)",
           dim, n, strong ? "diffusion-dominated" : "ex5adj", on, size,
           dir < 4 ? rw_problem_param_name(prob, dir) : "y0", orders, rem);
  }
  rw_vec_destroy(&y0);
  rw_vec_destroy(&y);
  rw_vec_destroy(&gy);
  rw_vec_destroy(&dy);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
}

typedef struct {
  double J, g[4];
  double *y, *gy; /* global fields on rank 0 of the communicator (NULL elsewhere) */
  long n;
} result;

/* The distributed field gathered in global order on rank 0 of comm (other entries are added
 * as zeros, which is exact). */
static double *gather(rw_problem prob, N_Vector f, MPI_Comm comm, long *ntot)
{
  rw_grid g = rw_gs_grid(prob);
  const rw_grid_config *cf = rw_grid_get_config(g);
  long st[3], cnt[3], N = cf->n[0], nz = cf->dim == 3 ? N : 1;
  rw_grid_local_box(g, st, cnt);
  *ntot = 2 * N * N * nz;
  double *all = calloc((size_t)*ntot, sizeof(double)), *d = rw_vec_data(f);
  for (long k = 0; k < cnt[2]; k++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        for (int c = 0; c < 2; c++)
          all[(((st[2] + k) * N + st[1] + j) * N + st[0] + i) * 2 + c] =
              d[((k * cnt[1] + j) * cnt[0] + i) * 2 + c];
  int r;
  MPI_Comm_rank(comm, &r);
  MPI_Reduce(r == 0 ? MPI_IN_PLACE : all, all, (int)*ntot, MPI_DOUBLE, MPI_SUM, 0, comm);
  if (r != 0) {
    free(all);
    return NULL;
  }
  return all;
}

static void solve(MPI_Comm comm, int dim, long n, rw_gs_objective obj, result *res)
{
  rw_context ctx;
  CHECK(rw_context_create(comm, &ctx));
  rw_problem prob = make(ctx, dim, n, obj, 0);
  rw_stepper st;
  N_Vector y, gy;
  CHECK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_vec_clone(y, &gy));
  const double by[2] = {0.6, 0.25}, ay[2] = {0.3, 0.2};
  fill(prob, y, 31, 1, by, ay);
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.t0 = 0.0, opt.tf = 10.0, opt.dt = 0.5;
  CHECK(rw_adjoint_solve(prob, st, &opt, y, &res->J, res->g, gy, NULL));
  res->y = gather(prob, y, comm, &res->n);
  res->gy = gather(prob, gy, comm, &res->n);
  rw_vec_destroy(&y);
  rw_vec_destroy(&gy);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

/* 3. Rank-count invariance. */
static void rank_tests(int dim, long n, rw_gs_objective obj)
{
  result a = {0}, b = {0};
  solve(MPI_COMM_WORLD, dim, n, obj, &a);
  int ok = 1;
  if (rank == 0) {
    solve(MPI_COMM_SELF, dim, n, obj, &b);
    double worst = relerr(a.J, b.J), gmax = 0.0, dmax = 0.0;
    for (int k = 0; k < 4; k++)
      worst = rw_test_max(worst, relerr(a.g[k], b.g[k]));
    long ydiff = 0, gdiff = 0;
    for (long i = 0; i < a.n; i++) {
      ydiff += a.y[i] != b.y[i];
      gdiff += a.gy[i] != b.gy[i];
      gmax = rw_test_max(gmax, fabs(b.gy[i]));
      dmax = rw_test_max(dmax, fabs(a.gy[i] - b.gy[i]));
    }
    int jbit = a.J == b.J;
    ok = worst <= 1e-12 && ydiff == 0 && dmax <= 1e-14 * gmax && (obj != RW_GS_POINT || jbit);
    printf("%s ranks %dD N=%ld objective %s: %d ranks vs 1: J %s (rel %.2e), worst rel in J and "
           "dJ/dp %.2e; y(T) %s; dJ/dy0 %ld of %ld entries differ, max |diff| / max |dJ/dy0| "
           "= %.2e\n",
           ok ? "ok  " : "FAIL", dim, n, obj == RW_GS_POINT ? "point" : "u2", size,
           jbit ? "bitwise equal" : "differs", relerr(a.J, b.J), worst,
           ydiff ? "DIFFERS" : "bitwise equal", gdiff, a.n, dmax / gmax);
    fflush(stdout);
    free(b.y);
    free(b.gy);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) fails++;
  free(a.y);
  free(a.gy);
}

/* 4. Checkpointed gradient equals store-everything bit for bit. */
static void checkpoint_tests(rw_context ctx, int dim, long n)
{
  rw_problem prob = make(ctx, dim, n, RW_GS_U2, 0);
  rw_stepper st;
  N_Vector y0, y, g0, g1;
  CHECK(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
  CHECK(rw_problem_new_state(prob, &y0));
  CHECK(rw_vec_clone(y0, &y));
  CHECK(rw_vec_clone(y0, &g0));
  CHECK(rw_vec_clone(y0, &g1));
  const double by[2] = {0.6, 0.25}, ay[2] = {0.3, 0.2};
  fill(prob, y0, 41, 1, by, ay);
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.t0 = 0.0, opt.tf = 15.0, opt.dt = 0.5;
  double J0, J1, p0[4], p1[4];
  N_VScale(1.0, y0, y);
  CHECK(rw_adjoint_solve(prob, st, &opt, y, &J0, p0, g0, NULL));
  const int slots[] = {2, 4};
  for (int s = 0; s < 2; s++) {
    rw_adjoint_stats stats;
    rw_adjoint_options o = opt;
    o.mode = RW_ADJOINT_CHECKPOINT;
    o.schedule = RW_SCHEDULE_BINOMIAL;
    o.ram_slots = slots[s];
    N_VScale(1.0, y0, y);
    CHECK(rw_adjoint_solve(prob, st, &o, y, &J1, p1, g1, &stats));
    int same = J0 == J1 && memcmp(p0, p1, sizeof p0) == 0 &&
               memcmp(rw_vec_data(g0), rw_vec_data(g1), rw_vec_bytes(g0)) == 0;
    int all = 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, rw_context_comm(ctx));
    report(all,
           "checkpoint %dD N=%ld on %d ranks: binomial %d slots (%ld recomputed steps, %ld "
           "steps) vs store: J, dJ/dp, dJ/dy0 %s",
           dim, n, size, slots[s], stats.recomputed_steps, stats.steps,
           all ? "bitwise equal" : "DIFFERENT");
  }
  rw_vec_destroy(&y0);
  rw_vec_destroy(&y);
  rw_vec_destroy(&g0);
  rw_vec_destroy(&g1);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t mem0 = rw_mem_current();
  rw_context ctx;
  CHECK(rw_context_create(MPI_COMM_WORLD, &ctx));
  for (int strong = 0; strong <= 1; strong++) {
    dot_tests(ctx, 2, 20, strong);
    dot_tests(ctx, 3, 10, strong);
  }
  for (int strong = 0; strong <= 1; strong++)
    for (int obj = 0; obj < 2; obj++)
      taylor_tests(ctx, 2, 16, (rw_gs_objective)obj, strong);
  taylor_tests(ctx, 3, 8, RW_GS_U2, 1);
  wave_default_tests(ctx, 256, 2);
  wave_default_tests(ctx, 160, 1);
  wave_tableau_tests(ctx, 2, 20);
  wave_tableau_tests(ctx, 3, 10);
  checkpoint_tests(ctx, 2, 24);
  checkpoint_tests(ctx, 3, 8);
  rw_context_destroy(&ctx);
  for (int obj = 0; obj < 2; obj++)
    rank_tests(2, 24, (rw_gs_objective)obj);
  rank_tests(3, 12, RW_GS_POINT);
  size_t mem1 = rw_mem_current();
  report(mem1 == mem0, "allocator: %zu bytes held after every object is destroyed (%zu before)",
         mem1, mem0);
  int all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("%s\n", all ? "FAILED" : "all Gray-Scott checks passed");
  MPI_Finalize();
  return all ? 1 : 0;
}
