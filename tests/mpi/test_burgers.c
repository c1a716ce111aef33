/* The 2-D viscous Burgers problem, under mpiexec with 1, 2 and 4 ranks:
 *  1. dot-product tests of the VJPs against central differences of the rhs: state
 *     <w, (f(y+ev) - f(y-ev)) / 2e> = <(df/dy)^T w, v> (e = 1e-6: f is quadratic, so the
 *     truncation error is ~e^2) and the scalar parameter nu, to 1e-7 relative; the analytic
 *     JVP (state and nu) against the VJPs to 1e-12;
 *  2. Taylor remainders of J = 1/2 |u(T) - u_target|^2 (full forward/adjoint RK4 solves):
 *     |J(x + e d) - J(x) - e <dJ/dx, d>| decays at second order (observed order >= 1.8 over
 *     five halvings) for x = nu and x = u0;
 *  3. binomial checkpointing (4 slots) and store-stages give the store-everything gradient
 *     bit for bit;
 *  4. rank 0 repeats the solve alone (MPI_COMM_SELF): dJ/du0 agrees to 1e-12 relative (it is
 *     bitwise equal: every node's adjoint is the same gather-stencil arithmetic whatever the
 *     decomposition), J and dJ/dnu to 1e-12 (global sums grouped by rank);
 *  5. whole RK steps as one sweep (rw_grid_erk_wave) against the stage-by-stage steps, bit for
 *     bit (rk4, ssprk3, euler, heun, rk38 and dopri5).
 * Prints one line per check on rank 0; exits 1 if any fails. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_burgers.h"
#include "rw_mpi_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails, world_rank;

static void report(const char *what, double value, double limit, int ok)
{
  if (world_rank == 0)
    printf("%-58s %.3e (limit %.1e) %s\n", what, value, limit, ok ? "ok" : "FAILED");
  if (!ok) fails++;
}

#define NSTEPS 60
#define DT     0.005

typedef struct {
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  rw_grid g;
  rw_adjoint_options opt;
  N_Vector y0, y, dy0;
} bg_fx;

static void fx_create(bg_fx *f, MPI_Comm comm, const char *method)
{
  memset(f, 0, sizeof *f);
  CHECK(rw_context_create(comm, &f->ctx));
  rw_burgers_config cfg = {.n = {24, 20},
                           .lo = {0.0, 0.0},
                           .hi = {1.0, 1.0},
                           .nu = 0.02,
                           .offset = 0.5,
                           .amplitude = 1.0,
                           .center = {0.4, 0.3},
                           .width = 0.12,
                           .shift = {0.1, 0.05}};
  CHECK(rw_burgers_problem_create(f->ctx, &cfg, &f->prob));
  CHECK(rw_stepper_create_erk(f->prob, rw_tableau_find(method), &f->st));
  f->g = rw_burgers_grid(f->prob);
  CHECK(rw_problem_new_state(f->prob, &f->y0));
  CHECK(rw_problem_new_state(f->prob, &f->y));
  CHECK(rw_problem_new_state(f->prob, &f->dy0));
  CHECK(rw_burgers_initial_state(f->prob, f->y0));
  rw_adjoint_options_default(&f->opt);
  f->opt.tf = NSTEPS * DT;
  f->opt.dt = DT;
}

static void fx_destroy(bg_fx *f)
{
  rw_vec_destroy(&f->y0);
  rw_vec_destroy(&f->y);
  rw_vec_destroy(&f->dy0);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

static double fx_J(bg_fx *f, N_Vector y0)
{
  double J;
  rw_vec_copy(y0, f->y);
  CHECK(rw_forward_solve(f->prob, f->st, &f->opt, f->y, &J, NULL));
  return J;
}

static double fx_grad(bg_fx *f, const rw_adjoint_options *opt, N_Vector y0, double *dJdnu)
{
  double J;
  rw_vec_copy(y0, f->y);
  CHECK(rw_adjoint_solve(f->prob, f->st, opt, f->y, &J, dJdnu, f->dy0, NULL));
  return J;
}

static double rel(double a, double b) { return rw_test_rel(a, b); }

/* 1. VJP dot-product tests at a state near the solution. */
static void test_vjps(bg_fx *f)
{
  N_Vector y, v, w, ys, fp, fm, g, jv;
  CHECK(rw_problem_new_state(f->prob, &y));
  CHECK(rw_problem_new_state(f->prob, &v));
  CHECK(rw_problem_new_state(f->prob, &w));
  CHECK(rw_problem_new_state(f->prob, &ys));
  CHECK(rw_problem_new_state(f->prob, &fp));
  CHECK(rw_problem_new_state(f->prob, &fm));
  CHECK(rw_problem_new_state(f->prob, &g));
  CHECK(rw_problem_new_state(f->prob, &jv));
  rw_test_fill(f->g, y, 0.5, 0.5, 1);
  rw_test_fill(f->g, v, 0.0, 1.0, 2);
  rw_test_fill(f->g, w, 0.0, 1.0, 3);
  double t = 0.1, e = 1e-6, *p = rw_problem_params(f->prob), nu = p[0];
  N_VLinearSum(1.0, y, e, v, ys);
  CHECK(rw_problem_rhs(f->prob, t, ys, fp));
  N_VLinearSum(1.0, y, -e, v, ys);
  CHECK(rw_problem_rhs(f->prob, t, ys, fm));
  double lhs = (N_VDotProd(w, fp) - N_VDotProd(w, fm)) / (2.0 * e);
  N_VConst(0.0, g);
  CHECK(rw_problem_vjp_y(f->prob, t, y, w, g));
  double r = rel(lhs, N_VDotProd(g, v));
  report("VJP state: <w, FD JVP> vs <VJP w, v>", r, 1e-7, r < 1e-7);
  CHECK(rw_problem_jvp(f->prob, t, y, v, NULL, jv));
  r = rel(N_VDotProd(w, jv), N_VDotProd(g, v));
  report("VJP state: <w, JVP v> vs <VJP w, v>", r, 1e-12, r < 1e-12);
  /* nu */
  double de = 1e-3;
  p[0] = nu + de;
  CHECK(rw_problem_rhs(f->prob, t, y, fp));
  p[0] = nu - de;
  CHECK(rw_problem_rhs(f->prob, t, y, fm));
  p[0] = nu;
  lhs = (N_VDotProd(w, fp) - N_VDotProd(w, fm)) / (2.0 * de);
  double pb = 0.0;
  CHECK(rw_problem_vjp_p(f->prob, t, y, w, &pb));
  MPI_Allreduce(MPI_IN_PLACE, &pb, 1, MPI_DOUBLE, MPI_SUM, rw_context_comm(f->ctx));
  r = rel(lhs, pb);
  report("VJP nu: FD vs VJP", r, 1e-7, r < 1e-7 && fabs(pb) > 0.0);
  double dp = 1.0;
  N_VConst(0.0, v);
  CHECK(rw_problem_jvp(f->prob, t, y, v, &dp, jv));
  r = rel(N_VDotProd(w, jv), pb);
  report("VJP nu: <w, JVP dnu> vs VJP", r, 1e-12, r < 1e-12);
  /* the stage (rhs_comb: the combination formed in the halo copy; on CPU vectors windows of 1,
   * 2, 3 rows formed just ahead of the stencil, or the default, two passes on blocks this
   * small) against rhs on the combination formed as a vector: slope and kept input bit for
   * bit; the set windows must have run (in all three calls) where the block is at least 4
   * rows thick */
  for (long win = 0; win <= 3; win++) {
    N_Vector X[3] = {y, v, w};
    const double cx[3] = {1.0, 0.35, -0.2};
    long st[3], cnt[3];
    rw_grid_local_box(f->g, st, cnt);
    rw_grid_set_window(f->g, win);
    long runs = rw_grid_windows(f->g);
    N_VConst(-7.0, fp);
    N_VConst(-7.0, ys);
    CHECK(rw_problem_rhs_comb(f->prob, t, 3, cx, X, ys, jv, fp));
    runs = rw_grid_windows(f->g) - runs;
    rw_grid_set_window(f->g, 0);
    CHECK(N_VLinearCombination(3, (double *)cx, X, g));
    CHECK(rw_problem_rhs(f->prob, t, g, fm));
    int same = memcmp(rw_vec_data(fp), rw_vec_data(fm), rw_vec_bytes(fm)) == 0 &&
               memcmp(rw_vec_data(ys), rw_vec_data(g), rw_vec_bytes(g)) == 0;
    /* the adjoint stage (vjp_comb: w formed in the halo copy, the nu sum in the same pass)
     * against w formed as a vector, zeroed output, vjp_y and vjp_p: output and the local nu
     * sum bit for bit, with and without the nu sum */
    rw_grid_set_window(f->g, win);
    long runs2 = rw_grid_windows(f->g);
    double pa = 0.0, pb2 = 0.0;
    N_VConst(-7.0, fp); /* overwritten, never read */
    CHECK(rw_problem_vjp_comb(f->prob, t, y, 3, cx, X, jv, fp, &pa));
    N_VConst(-7.0, ys);
    CHECK(rw_problem_vjp_comb(f->prob, t, y, 2, cx, X, jv, ys, NULL));
    runs += rw_grid_windows(f->g) - runs2;
    rw_grid_set_window(f->g, 0);
    N_VConst(0.0, fm);
    CHECK(rw_problem_vjp_y(f->prob, t, y, g, fm));
    CHECK(rw_problem_vjp_p(f->prob, t, y, g, &pb2));
    same = same && memcmp(rw_vec_data(fp), rw_vec_data(fm), rw_vec_bytes(fm)) == 0 && pa == pb2;
    CHECK(N_VLinearCombination(2, (double *)cx, X, g));
    N_VConst(0.0, fm);
    CHECK(rw_problem_vjp_y(f->prob, t, y, g, fm));
    same = same && memcmp(rw_vec_data(ys), rw_vec_data(fm), rw_vec_bytes(fm)) == 0;
    int thick = cnt[0] >= 4 && cnt[1] >= 4;
    int wok = win == 0 || (thick ? runs >= 3 * ((cnt[1] - 2) / win) : runs == 0), ok = same && wok;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, rw_context_comm(f->ctx));
    char what[96];
    snprintf(what, sizeof what, "rhs_comb, vjp_comb (window %ld) vs the plain ops", win);
    report(what, ok ? 0.0 : 1.0, 0.0, ok);
  }
  rw_vec_destroy(&y);
  rw_vec_destroy(&v);
  rw_vec_destroy(&w);
  rw_vec_destroy(&ys);
  rw_vec_destroy(&fp);
  rw_vec_destroy(&fm);
  rw_vec_destroy(&g);
  rw_vec_destroy(&jv);
}

/* Observed orders of the Taylor remainders r_k = |J(x + e_k d) - J(x) - e_k g.d|, e_k =
 * e0 / 2^k; returns the smallest order over the five halvings. */
static double taylor_min_order(const double *res, int n)
{
  double m = INFINITY;
  for (int k = 0; k + 1 < n; k++)
    m = rw_test_min(m, log2(res[k] / res[k + 1]));
  return m;
}

static void print_res(const char *what, const double *res, int n)
{
  if (world_rank != 0) return;
  printf("  Taylor %-10s remainders:", what);
  for (int k = 0; k < n; k++)
    printf(" %.3e", res[k]);
  printf("\n");
}

/* 2. Taylor remainders in nu and u0. */
static void test_taylor(bg_fx *f)
{
  enum { NT = 6 };
  double dJdnu = 0.0, res[NT], *p = rw_problem_params(f->prob), nu = p[0];
  N_Vector dy, y0p, g;
  CHECK(rw_problem_new_state(f->prob, &dy));
  CHECK(rw_problem_new_state(f->prob, &y0p));
  CHECK(rw_problem_new_state(f->prob, &g));
  double J0 = fx_grad(f, &f->opt, f->y0, &dJdnu);
  rw_vec_copy(f->dy0, g);
  if (world_rank == 0) printf("  J = %.15e, dJ/dnu = %.15e\n", J0, dJdnu);
  for (int k = 0; k < NT; k++) {
    double e = 0.01 / (double)(1 << k);
    p[0] = nu + e;
    res[k] = fabs(fx_J(f, f->y0) - J0 - e * dJdnu);
  }
  p[0] = nu;
  print_res("nu", res, NT);
  double o = taylor_min_order(res, NT);
  report("Taylor remainder in nu: min observed order", o, 1.8, o >= 1.8);
  rw_test_fill(f->g, dy, 0.0, 0.1, 5);
  double gd = N_VDotProd(g, dy);
  for (int k = 0; k < NT; k++) {
    double e = 1.0 / (double)(1 << k);
    N_VLinearSum(1.0, f->y0, e, dy, y0p);
    res[k] = fabs(fx_J(f, y0p) - J0 - e * gd);
  }
  print_res("u0", res, NT);
  o = taylor_min_order(res, NT);
  report("Taylor remainder in u0: min observed order", o, 1.8, o >= 1.8);
  rw_vec_destroy(&dy);
  rw_vec_destroy(&y0p);
  rw_vec_destroy(&g);
}

/* 3. Checkpointed and store-stages gradients == store-everything, bit for bit. */
static void test_checkpoint(bg_fx *f)
{
  double A1 = 0.0, A2 = 0.0, A3 = 0.0;
  N_Vector d1;
  CHECK(rw_problem_new_state(f->prob, &d1));
  double J1 = fx_grad(f, &f->opt, f->y0, &A1);
  rw_vec_copy(f->dy0, d1);
  rw_adjoint_options o = f->opt;
  o.mode = RW_ADJOINT_CHECKPOINT;
  o.schedule = RW_SCHEDULE_BINOMIAL;
  o.ram_slots = 4;
  double J2 = fx_grad(f, &o, f->y0, &A2);
  int same =
      J1 == J2 && A1 == A2 && memcmp(rw_vec_data(f->dy0), rw_vec_data(d1), rw_vec_bytes(d1)) == 0;
  o = f->opt;
  o.store_stages = 1;
  double J3 = fx_grad(f, &o, f->y0, &A3);
  int same3 =
      J1 == J3 && A1 == A3 && memcmp(rw_vec_data(f->dy0), rw_vec_data(d1), rw_vec_bytes(d1)) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, rw_context_comm(f->ctx));
  MPI_Allreduce(MPI_IN_PLACE, &same3, 1, MPI_INT, MPI_MIN, rw_context_comm(f->ctx));
  report("binomial (4 slots) == store: J, dJ/dnu, dJ/du0 (0 = bitwise)", same ? 0.0 : 1.0, 0.0,
         same);
  report("store stages == store states (0 = bitwise)", same3 ? 0.0 : 1.0, 0.0, same3);
  rw_vec_destroy(&d1);
}

/* 4. Gradients across rank counts. */
static void test_ranks(bg_fx *f, const char *method)
{
  double A = 0.0, J = fx_grad(f, &f->opt, f->y0, &A);
  long ny;
  double *gy = rw_test_gather(f->g, f->dy0, &ny);
  double r[3] = {0, 0, 0};
  if (world_rank == 0) {
    bg_fx s;
    fx_create(&s, MPI_COMM_SELF, method);
    double As = 0.0, Js = fx_grad(&s, &s.opt, s.y0, &As);
    long n2;
    double *sy = rw_test_gather(s.g, s.dy0, &n2);
    double my = 0.0, dy = 0.0;
    for (long i = 0; i < ny; i++) {
      my = rw_test_max(my, fabs(sy[i]));
      dy = rw_test_max(dy, fabs(sy[i] - gy[i]));
    }
    r[0] = rel(J, Js);
    r[1] = rel(A, As);
    r[2] = dy / my;
    printf("  %s: J = %.15e (1 rank %.15e), dJ/dnu = %.15e (1 rank %.15e), |dJ/du0|_inf = "
           "%.6e\n",
           method, J, Js, A, As, my);
    free(sy);
    fx_destroy(&s);
  }
  MPI_Bcast(r, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  report("ranks vs 1 rank: J relative difference", r[0], 1e-12, r[0] <= 1e-12);
  report("ranks vs 1 rank: dJ/dnu relative difference", r[1], 1e-12, r[1] <= 1e-12);
  report("ranks vs 1 rank: dJ/du0 max relative difference", r[2], 1e-12, r[2] <= 1e-12);
  free(gy);
}

/* 5. Whole RK steps as one sweep (rw_grid_erk_wave, windows of 1 to 3 layers and the default;
 * the stages past the block's edge on the periodic wrap or a neighbour's layers) against the
 * stage-by-stage steps (the wave off), bit for bit: the step in place, the step keeping its
 * stages (each stage), the adjoint step from those stages (lambda and dJ/dnu; with nu
 * differentiated and frozen) and the adjoint step that recomputes them (its recomputation and
 * its adjoint in one sweep, rw_grid_erk_wave_pair). On one rank the set windows must run as
 * sweeps: 6 a case (the step, the step keeping its stages, the two adjoint steps from stored
 * stages, the pair's two). */
static void test_wave(bg_fx *f)
{
  const int ns = rw_stepper_num_stage_vectors(f->st);
  const double t = 0.01;
  int size = 1;
  MPI_Comm_size(rw_context_comm(f->ctx), &size);
  /* v[on]: y in place, y kept, lambda from the stored stages with nu differentiated and frozen,
   * lambda recomputing them */
  N_Vector y, w, v[2][5], *sv[2] = {NULL, NULL};
  CHECK(rw_problem_new_state(f->prob, &y));
  CHECK(rw_problem_new_state(f->prob, &w));
  for (int on = 0; on < 2; on++) {
    for (int k = 0; k < 5; k++)
      CHECK(rw_problem_new_state(f->prob, &v[on][k]));
    CHECK(rw_vec_clone_array(y, ns, &sv[on]));
  }
  rw_test_fill(f->g, y, 0.5, 0.5, 11);
  rw_test_fill(f->g, w, 0.0, 1.0, 12);
  /* dJ/dnu starts at nearly minus what one stage-by-stage adjoint step adds to it, so that the
   * result is mostly the rounding of the partial sums (of the rows, of the stages), which any
   * other order of adding them changes (from 0 or 0.25, the four stage sums added in reverse
   * gave the same bits) */
  double start = 0.0;
  rw_grid_set_wave(f->g, -1);
  CHECK(rw_stepper_step(f->st, t, DT, y, v[0][1], sv[0], NULL));
  rw_vec_copy(w, v[0][2]);
  CHECK(rw_stepper_adjoint_step(f->st, t, DT, y, sv[0], v[0][2], &start));
  rw_grid_set_wave(f->g, 0);
  start *= -(1.0 - 0x1p-20);
  for (long win = 0; win <= 3; win++) {
    double pq[2][3] = {{start, start, start}, {start, start, start}};
    long runs = 0;
    for (int on = 0; on < 2; on++) {
      rw_grid_set_wave(f->g, on ? win : -1);
      const long r0 = rw_grid_waves(f->g);
      rw_vec_copy(y, v[on][0]);
      CHECK(rw_stepper_step(f->st, t, DT, v[on][0], v[on][0], NULL, NULL));
      CHECK(rw_stepper_step(f->st, t, DT, y, v[on][1], sv[on], NULL));
      for (int frozen = 0; frozen < 2; frozen++) {
        rw_problem_set_active(f->prob, !frozen, 1);
        rw_vec_copy(w, v[on][2 + frozen]);
        CHECK(rw_stepper_adjoint_step(f->st, t, DT, y, sv[on], v[on][2 + frozen], &pq[on][frozen]));
      }
      rw_problem_set_active(f->prob, 1, 1);
      rw_vec_copy(w, v[on][4]);
      CHECK(rw_stepper_adjoint_step(f->st, t, DT, y, NULL, v[on][4], &pq[on][2]));
      runs += on ? rw_grid_waves(f->g) - r0 : 0;
    }
    rw_grid_set_wave(f->g, 0);
    int same = memcmp(pq[0], pq[1], sizeof pq[0]) == 0 && pq[0][0] != start && pq[0][1] == start &&
               pq[0][2] != start;
    for (int k = 0; k < 5; k++)
      same = same && memcmp(rw_vec_data(v[0][k]), rw_vec_data(v[1][k]), rw_vec_bytes(y)) == 0;
    for (int i = 0; i < ns; i++)
      same = same && memcmp(rw_vec_data(sv[0][i]), rw_vec_data(sv[1][i]), rw_vec_bytes(y)) == 0;
    int ok = same && (size > 1 || win == 0 || runs == 6);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, rw_context_comm(f->ctx));
    char what[96];
    snprintf(what, sizeof what, "RK step as one sweep (window %ld, %ld sweeps) vs stage by stage",
             win, runs);
    report(what, ok ? 0.0 : 1.0, 0.0, ok);
  }
  for (int on = 0; on < 2; on++) {
    for (int k = 0; k < 5; k++)
      rw_vec_destroy(&v[on][k]);
    rw_vec_destroy_array(&sv[on], ns);
  }
  rw_vec_destroy(&y);
  rw_vec_destroy(&w);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t mem0 = rw_mem_current();
  {
    bg_fx f;
    fx_create(&f, MPI_COMM_WORLD, "rk4");
    if (world_rank == 0)
      printf("burgers on %d ranks, 24 x 20 periodic nodes, rk4, %d steps\n", size, NSTEPS);
    test_vjps(&f);
    test_taylor(&f);
    test_checkpoint(&f);
    test_ranks(&f, "rk4");
    test_wave(&f);
    fx_destroy(&f);
    fx_create(&f, MPI_COMM_WORLD, "ssprk3");
    test_ranks(&f, "ssprk3");
    test_wave(&f);
    fx_destroy(&f);
    /* the sweeps with the other tableaux: rk38's adjoint stages combine up to four terms,
     * dopri5's fixed step has six stages and b_2 = 0 */
    static const char *const more[] = {"euler", "heun", "rk38", "dopri5"};
    for (size_t m = 0; m < sizeof more / sizeof more[0]; m++) {
      fx_create(&f, MPI_COMM_WORLD, more[m]);
      if (world_rank == 0) printf("sweeps with %s:\n", more[m]);
      test_wave(&f);
      fx_destroy(&f);
    }
  }
  size_t mem1 = rw_mem_current();
  report("Rewind allocations released (bytes still held)", (double)(mem1 - mem0), 0.0,
         mem1 == mem0);
  MPI_Finalize();
  return fails ? 1 : 0;
}
