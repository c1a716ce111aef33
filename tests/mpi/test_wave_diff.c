/* A differential check of the sweeps (rw_grid_erk_wave and the problems' step_wave,
 * adjoint_wave and backward_wave) against the stage-by-stage steps, for one configuration given
 * on the command line: a step keeping its stages, the adjoint step from them, the adjoint step
 * recomputing them and a step in place, each with the sweep off and then on, every output
 * compared bit for bit (y_{n+1}, each stage, both lambdas, the parameter gradient, heat's
 * running cost and field adjoints). A difference is printed with its rank, entry count, largest
 * size, global node and the block's layers it spans. Written while hunting the conductivity ghost
 * that rw_grid_wave_field left unfilled past a neighbour's layers (2026-12-02): a random and a
 * targeted search over 1318 configurations (1-4 ranks, blocks of s - 1 to 2 s layers, every
 * tableau, side, window and tile) found nothing more; tests/mpi/wave_diff.cmake runs a few.
 * Usage (key=value, any order):
 *   prob=grayscott|heat|burgers dim=2|3 n=N0,N1,N2 bc=periodic|dirichlet|neumann
 *   tab=euler|heun|ssprk3|rk4|rk38|dopri5 W=0..4 R=rows procs=P0,P1,P2 act=0..3 pair=0|1 reps=K
 *   sweeps=1 (each of the four steps must run as a sweep on every rank, else it fails: an
 *   equality where nothing swept proves nothing)
 * grayscott: a cubic grid of n[0] nodes a side (N1, N2 ignored). With REWIND_DIFF_SELFTEST set
 * the last rank's swept y_{n+1} is changed by 1e-13 in one entry, which must be reported.
 * Exit status 0 when everything is bit for bit equal (and swept where asked), 1 otherwise. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_burgers.h"
#include "rewind/rw_grayscott.h"
#include "rewind/rw_heat.h"
#include "rewind/rw_stepper.h"
#include "rw_mpi_test.h"

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static rw_grid G;
static int ncomp = 1, dimg = 2;

/* v = base[c] + amp[c] * hash(global index) */
static void fill(N_Vector v, uint64_t seed, const double *base, const double *amp)
{
  const rw_grid_config *cf = rw_grid_get_config(G);
  long st[3], cnt[3];
  rw_grid_local_box(G, st, cnt);
  double *d = rw_vec_data(v);
  for (long k = 0; k < cnt[2]; k++)
    for (long j = 0; j < cnt[1]; j++)
      for (long i = 0; i < cnt[0]; i++)
        for (int c = 0; c < ncomp; c++) {
          uint64_t gidx =
              (uint64_t)(((st[2] + k) * cf->n[1] + st[1] + j) * cf->n[0] + st[0] + i) * ncomp + c;
          d[((k * cnt[1] + j) * cnt[0] + i) * ncomp + c] =
              base[c] + amp[c] * rw_test_hash01(seed, gidx);
        }
}

/* compares local arrays; prints per rank; returns global count of differing entries */
static long cmpvec(const char *what, N_Vector a, N_Vector b)
{
  long st[3], cnt[3];
  rw_grid_local_box(G, st, cnt);
  const double *x = rw_vec_data(a), *y = rw_vec_data(b);
  size_t n = rw_vec_bytes(a) / sizeof(double);
  long nd = 0, at = -1;
  double md = -1.0;
  long lmin = -1, lmax = -1;
  for (size_t e = 0; e < n; e++) {
    if (memcmp(&x[e], &y[e], sizeof(double)) == 0) continue;
    nd++;
    double d = fabs(x[e] - y[e]);
    if (isnan(d)) d = INFINITY;
    if (d > md) md = d, at = (long)e;
    long node = (long)e / ncomp;
    long lay = dimg == 3 ? node / (cnt[0] * cnt[1]) : node / cnt[0];
    if (lmin < 0 || lay < lmin) lmin = lay;
    if (lay > lmax) lmax = lay;
  }
  if (nd) {
    long node = at / ncomp, c = at % ncomp;
    long i = node % cnt[0], j = (node / cnt[0]) % cnt[1], k = node / (cnt[0] * cnt[1]);
    printf("  rank %d: %-22s %ld of %zu entries differ, max|d| %.3e (off %.17g on %.17g) at "
           "global (%ld,%ld,%ld) comp %ld; local layers %ld..%ld of %ld (block start %ld)\n",
           rank, what, nd, n, md, x[at], y[at], st[0] + i, st[1] + j, st[2] + k, c, lmin, lmax,
           dimg == 3 ? cnt[2] : cnt[1], dimg == 3 ? st[2] : st[1]);
    fflush(stdout);
  }
  long all = 0;
  MPI_Allreduce(&nd, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

static long cmparr(const char *what, const double *a, const double *b, int n)
{
  long nd = 0;
  for (int k = 0; k < n; k++)
    if (memcmp(&a[k], &b[k], sizeof(double)) != 0) {
      nd++;
      printf("  rank %d: %s[%d] differs: off %.17g on %.17g (|d| %.3e)\n", rank, what, k, a[k],
             b[k], fabs(a[k] - b[k]));
      fflush(stdout);
    }
  long all = 0;
  MPI_Allreduce(&nd, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

static void parse3(const char *s, long *v)
{
  v[0] = v[1] = v[2] = 0;
  sscanf(s, "%ld,%ld,%ld", &v[0], &v[1], &v[2]);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *pname = "grayscott", *tname = "rk4", *bcs = "periodic";
  int dim = 2, act = 3, pair = 1, reps = 1, need = 0;
  long n[3] = {16, 16, 8}, W = 0, R = 0, pr[3] = {0, 0, 0};
  for (int a = 1; a < argc; a++) {
    char *s = argv[a];
    if (!strncmp(s, "prob=", 5))
      pname = s + 5;
    else if (!strncmp(s, "dim=", 4))
      dim = atoi(s + 4);
    else if (!strncmp(s, "n=", 2))
      parse3(s + 2, n);
    else if (!strncmp(s, "bc=", 3))
      bcs = s + 3;
    else if (!strncmp(s, "tab=", 4))
      tname = s + 4;
    else if (!strncmp(s, "W=", 2))
      W = atol(s + 2);
    else if (!strncmp(s, "R=", 2))
      R = atol(s + 2);
    else if (!strncmp(s, "procs=", 6))
      parse3(s + 6, pr);
    else if (!strncmp(s, "act=", 4))
      act = atoi(s + 4);
    else if (!strncmp(s, "pair=", 5))
      pair = atoi(s + 5);
    else if (!strncmp(s, "reps=", 5))
      reps = atoi(s + 5);
    else if (!strncmp(s, "sweeps=", 7))
      need = atoi(s + 7);
    else {
      if (!rank) fprintf(stderr, "unknown arg %s\n", s);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  rw_bc bc = !strcmp(bcs, "dirichlet") ? RW_BC_DIRICHLET
             : !strcmp(bcs, "neumann") ? RW_BC_NEUMANN
                                       : RW_BC_PERIODIC;
  rw_context ctx;
  CHECK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_problem prob = NULL;
  rw_grid GA = NULL;
  double t = 0.7, h = 0.5;
  int heat = 0;
  if (!strcmp(pname, "grayscott")) {
    rw_gs_config cfg;
    rw_gs_config_default(&cfg);
    cfg.dim = dim;
    cfg.n = n[0];
    cfg.objective = RW_GS_POINT;
    for (int d = 0; d < 3; d++)
      cfg.procs[d] = (int)pr[d];
    CHECK(rw_gs_problem_create(ctx, &cfg, &prob));
    double hh = 2.5 / (double)n[0], *p = rw_problem_params(prob);
    p[0] = 0.3 * hh * hh, p[1] = 0.2 * hh * hh;
    G = rw_gs_grid(prob);
    ncomp = 2;
  } else if (!strcmp(pname, "heat")) {
    heat = 1;
    rw_heat_config c;
    memset(&c, 0, sizeof c);
    c.dim = dim;
    c.n[0] = n[0], c.n[1] = n[1], c.n[2] = n[2];
    c.length[0] = 1.0, c.length[1] = 0.8, c.length[2] = 0.7;
    c.bc = bc;
    c.boundary_value = bc == RW_BC_DIRICHLET ? 0.3 : 0.0;
    c.source_center[0] = 0.4, c.source_center[1] = 0.5, c.source_center[2] = 0.3;
    c.source_width = 0.2;
    c.nsensors = 5;
    for (int d = 0; d < 3; d++)
      c.procs[d] = (int)pr[d];
    CHECK(rw_heat_problem_create(ctx, &c, &prob));
    G = rw_heat_grid(prob);
    GA = rw_heat_adjoint_grid(prob);
    rw_problem_params(prob)[0] = 0.7;
    const double b1[1] = {1.0}, a1[1] = {0.3};
    fill(rw_problem_field(prob), 2, b1, a1);
    double kmin, kmax;
    CHECK(rw_heat_kappa_range(prob, &kmin, &kmax));
    h = 0.5 * rw_heat_stability_limit(prob, kmax);
    t = 0.1;
    int ns = rw_heat_num_sensors(prob);
    double times[3] = {0.0, 0.1 + 0.5 * h, 1.0}, *vals = malloc(sizeof(double) * 3 * ns);
    for (int k = 0; k < 3 * ns; k++)
      vals[k] = 0.5 + 0.4 * rw_test_hash01(77, (uint64_t)k);
    CHECK(rw_heat_set_data(prob, 3, times, vals));
    free(vals);
  } else if (!strcmp(pname, "burgers")) {
    dim = 2;
    rw_burgers_config cfg = {.n = {n[0], n[1]},
                             .lo = {0.0, 0.0},
                             .hi = {1.0, 1.0},
                             .nu = 0.02,
                             .offset = 0.5,
                             .amplitude = 1.0,
                             .center = {0.4, 0.3},
                             .width = 0.12,
                             .shift = {0.1, 0.05}};
    for (int d = 0; d < 3; d++)
      cfg.procs[d] = (int)pr[d];
    CHECK(rw_burgers_problem_create(ctx, &cfg, &prob));
    G = rw_burgers_grid(prob);
    h = 0.005, t = 0.01;
  } else {
    if (!rank) fprintf(stderr, "unknown problem %s\n", pname);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  dimg = rw_grid_get_config(G)->dim;
  if (!GA) GA = G;
  const rw_tableau *tab = rw_tableau_find(tname);
  if (!tab) {
    if (!rank) fprintf(stderr, "unknown tableau %s\n", tname);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  rw_stepper st;
  CHECK(rw_stepper_create_erk(prob, tab, &st));
  const int ns = rw_stepper_num_stage_vectors(st), np = rw_problem_nparams(prob);
  int dims[3], coords[3];
  rw_grid_topology(G, dims, coords);
  long lst[3], lcnt[3];
  rw_grid_local_box(G, lst, lcnt);
  { /* the configuration and every rank's block */
    long mine[3] = {lcnt[0], lcnt[1], lcnt[2]}, *c0 = malloc(sizeof(long) * 3 * (size_t)size);
    if (!c0) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Gather(mine, 3, MPI_LONG, c0, 3, MPI_LONG, 0, MPI_COMM_WORLD);
    if (!rank) {
      printf(
          "config: prob=%s dim=%d n=%ld,%ld,%ld bc=%s tab=%s W=%ld R=%ld act=%d pair=%d ranks=%d "
          "topology %dx%dx%d blocks:",
          pname, dimg, n[0], n[1], n[2], bcs, tname, W, R, act, pair, size, dims[0], dims[1],
          dims[2]);
      for (int r = 0; r < size; r++)
        printf(" [%ldx%ldx%ld]", c0[3 * r], c0[3 * r + 1], c0[3 * r + 2]);
      printf("\n");
    }
    free(c0);
  }
  if (heat) rw_problem_set_active(prob, act & 1, (act >> 1) & 1);
  N_Vector y, w, y1[2], *ys[2], lst_[2], lrc[2], yin[2], fst[2] = {NULL, NULL},
                                                         frc[2] = {NULL, NULL};
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_vec_clone(y, &w));
  for (int on = 0; on < 2; on++) {
    CHECK(rw_vec_clone(y, &y1[on]));
    CHECK(rw_vec_clone(y, &lst_[on]));
    CHECK(rw_vec_clone(y, &lrc[on]));
    CHECK(rw_vec_clone(y, &yin[on]));
    CHECK(rw_vec_clone_array(y, ns, &ys[on]));
    if (heat) {
      CHECK(rw_vec_clone(rw_problem_field_adjoint(prob), &fst[on]));
      CHECK(rw_vec_clone(rw_problem_field_adjoint(prob), &frc[on]));
    }
  }
  {
    const double by[2] = {0.6, 0.25}, ay[2] = {0.3, 0.2}, b0[2] = {0, 0}, a1[2] = {1, 1};
    const double hb[1] = {0.5}, ha[1] = {0.5};
    if (ncomp == 2)
      fill(y, 31, by, ay);
    else
      fill(y, 31, hb, ha);
    fill(w, 32, b0, a1);
  }
  int fails = 0;
  for (int rep = 0; rep < reps; rep++) {
    double q[2] = {0.125, 0.125}, pst[2][8], prc[2][8];
    long sw[2][4] = {{0}}, swa[2][4] = {{0}}, prs[2] = {0, 0};
    for (int on = 0; on < 2; on++) {
      rw_grid_set_wave_rows(G, R);
      rw_grid_set_wave_pair(G, pair);
      rw_grid_set_wave(G, on ? W : -1);
      if (heat) CHECK(rw_problem_solve_begin(prob));
      long p0 = rw_grid_wave_pairs(G);
      for (int op = 0; op < 4; op++) {
        long a0 = rw_grid_waves(G), b0 = rw_grid_waves(GA);
        if (op == 0) {
          CHECK(rw_stepper_step(st, t, h, y, y1[on], ys[on], heat ? &q[on] : NULL));
        } else if (op == 1 || op == 2) {
          N_Vector l = op == 1 ? lst_[on] : lrc[on];
          double *pq = op == 1 ? pst[on] : prc[on];
          rw_vec_copy(w, l);
          for (int k = 0; k < 8; k++)
            pq[k] = 0.125;
          if (heat) N_VConst(0.25, rw_problem_field_adjoint(prob));
          CHECK(rw_stepper_adjoint_step(st, t, h, y, op == 1 ? ys[on] : NULL, l, pq));
          if (heat) rw_vec_copy(rw_problem_field_adjoint(prob), op == 1 ? fst[on] : frc[on]);
        } else {
          rw_vec_copy(y, yin[on]);
          CHECK(rw_stepper_step(st, t, h, yin[on], yin[on], NULL, NULL));
        }
        sw[on][op] = rw_grid_waves(G) - a0;
        swa[on][op] = GA != G ? rw_grid_waves(GA) - b0 : 0;
      }
      prs[on] = rw_grid_wave_pairs(G) - p0;
      if (heat) rw_problem_solve_end(prob);
      rw_grid_set_wave(G, 0);
      rw_grid_set_wave_rows(G, 0);
    }
    long bad = 0;
    if (getenv("REWIND_DIFF_SELFTEST") && rank == size - 1) rw_vec_data(y1[1])[3] += 1e-13;
    bad += cmpvec("step y_{n+1}", y1[0], y1[1]);
    for (int i = 0; i < ns; i++) {
      char nm[32];
      snprintf(nm, sizeof nm, "step stage %d", i);
      bad += cmpvec(nm, ys[0][i], ys[1][i]);
    }
    bad += cmpvec("adj(stored) lambda", lst_[0], lst_[1]);
    bad += cmpvec("adj(recomp) lambda", lrc[0], lrc[1]);
    bad += cmparr("adj(stored) pbar", pst[0], pst[1], np);
    bad += cmparr("adj(recomp) pbar", prc[0], prc[1], np);
    if (heat) {
      bad += cmparr("step q", &q[0], &q[1], 1);
      bad += cmpvec("adj(stored) fieldadj", fst[0], fst[1]);
      bad += cmpvec("adj(recomp) fieldadj", frc[0], frc[1]);
    }
    bad += cmpvec("inplace y_{n+1}", yin[0], yin[1]);
    /* sweeps per op on each rank (gather) */
    long loc[6] = {sw[1][0],
                   sw[1][1] + swa[1][1],
                   sw[1][2] + swa[1][2],
                   sw[1][3],
                   prs[1],
                   sw[0][0] + sw[0][1] + sw[0][2] + sw[0][3] + swa[0][1] + swa[0][2]};
    long mn[6], mx[6];
    MPI_Allreduce(loc, mn, 6, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(loc, mx, 6, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (!rank) {
      printf("%s rep %d: %ld differing entries; sweeps (on) step %ld-%ld adjS %ld-%ld adjR %ld-%ld "
             "inplace %ld-%ld pairs %ld-%ld; (off) %ld-%ld\n",
             bad ? "MISMATCH" : "ok", rep, bad, mn[0], mx[0], mn[1], mx[1], mn[2], mx[2], mn[3],
             mx[3], mn[4], mx[4], mn[5], mx[5]);
      fflush(stdout);
    }
    /* where asked: every rank swept the step, both adjoint steps and the step in place */
    const int swept = mn[0] >= 1 && mn[1] >= 1 && mn[2] >= 1 && mn[3] >= 1;
    if (need && !swept && !rank) printf("FAIL: sweeps=1, but a step ran stage by stage\n");
    if (bad || (need && !swept)) fails++;
  }
  for (int on = 0; on < 2; on++) {
    rw_vec_destroy(&y1[on]);
    rw_vec_destroy(&lst_[on]);
    rw_vec_destroy(&lrc[on]);
    rw_vec_destroy(&yin[on]);
    rw_vec_destroy_array(&ys[on], ns);
    if (heat) {
      rw_vec_destroy(&fst[on]);
      rw_vec_destroy(&frc[on]);
    }
  }
  rw_vec_destroy(&y);
  rw_vec_destroy(&w);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
  MPI_Finalize();
  return fails ? 1 : 0;
}
