/* Independent check of the flagship gradient against PETSc's TSAdjoint.
 *
 * The same Gray-Scott problem (periodic [0, 2.5)^2, N x N nodes, 5-point Laplacian, the ex5adj
 * parameters and initial state) is integrated with classic RK4 at a fixed step twice: by
 * Rewind (rw_grayscott + rw_adjoint_solve, binomial checkpointing) and by PETSc (DMDA + TSRK
 * "4" + TSAdjointSolve with an assembled RHS Jacobian, written here independently of Rewind's
 * operators). Both are discrete adjoints of the same discrete scheme, so dJ/d(u0, v0) for
 * J = u + v at node (N/2 - 1, N/2 - 1) at T must agree to rounding; 1e-11 relative to the
 * gradient's largest entry is asserted (the two codes sum the same terms in different
 * orders over a few hundred steps). The final state is compared the same way. Run under
 * mpiexec (1 and 2 ranks); exit 0 on agreement. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_grayscott.h"

#include <math.h>
#include <petscdmda.h>
#include <petscts.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef N_NODES /* -DN_NODES=128 -DSTEPS=500 gives the full ex5adj set-up */
#define N_NODES 32
#endif
#ifndef STEPS
#define STEPS 40
#endif
#define DT 0.5

typedef struct {
  double Du, Dv, gamma, kappa, sx;
} gs_par;

typedef struct {
  PetscScalar u, v;
} node;

static PetscErrorCode rhs(TS ts, PetscReal t, Vec U, Vec F, void *ctx)
{
  gs_par *p = ctx;
  DM da;
  Vec loc;
  node **u, **f;
  PetscInt xs, ys, xm, ym;
  (void)t;
  PetscFunctionBeginUser;
  PetscCall(TSGetDM(ts, &da));
  PetscCall(DMGetLocalVector(da, &loc));
  PetscCall(DMGlobalToLocalBegin(da, U, INSERT_VALUES, loc));
  PetscCall(DMGlobalToLocalEnd(da, U, INSERT_VALUES, loc));
  PetscCall(DMDAVecGetArrayRead(da, loc, &u));
  PetscCall(DMDAVecGetArray(da, F, &f));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
  for (PetscInt j = ys; j < ys + ym; j++)
    for (PetscInt i = xs; i < xs + xm; i++) {
      node c = u[j][i];
      double lu = (u[j][i - 1].u + u[j][i + 1].u + u[j - 1][i].u + u[j + 1][i].u - 4 * c.u) * p->sx;
      double lv = (u[j][i - 1].v + u[j][i + 1].v + u[j - 1][i].v + u[j + 1][i].v - 4 * c.v) * p->sx;
      f[j][i].u = p->Du * lu - c.u * c.v * c.v + p->gamma * (1 - c.u);
      f[j][i].v = p->Dv * lv + c.u * c.v * c.v - (p->gamma + p->kappa) * c.v;
    }
  PetscCall(DMDAVecRestoreArrayRead(da, loc, &u));
  PetscCall(DMDAVecRestoreArray(da, F, &f));
  PetscCall(DMRestoreLocalVector(da, &loc));
  PetscFunctionReturn(0);
}

static PetscErrorCode jac(TS ts, PetscReal t, Vec U, Mat A, Mat B, void *ctx)
{
  gs_par *p = ctx;
  DM da;
  Vec loc;
  node **u;
  PetscInt xs, ys, xm, ym;
  (void)t, (void)B;
  PetscFunctionBeginUser;
  PetscCall(TSGetDM(ts, &da));
  PetscCall(DMGetLocalVector(da, &loc));
  PetscCall(DMGlobalToLocalBegin(da, U, INSERT_VALUES, loc));
  PetscCall(DMGlobalToLocalEnd(da, U, INSERT_VALUES, loc));
  PetscCall(DMDAVecGetArrayRead(da, loc, &u));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
  for (PetscInt j = ys; j < ys + ym; j++)
    for (PetscInt i = xs; i < xs + xm; i++) {
      double uc = u[j][i].u, vc = u[j][i].v;
      for (PetscInt c = 0; c < 2; c++) {
        double D = c == 0 ? p->Du : p->Dv;
        MatStencil row = {.k = 0, .j = j, .i = i, .c = c}, col[6];
        PetscScalar val[6];
        PetscInt di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
        for (int m = 0; m < 4; m++) {
          col[m] = (MatStencil){.k = 0, .j = j + dj[m], .i = i + di[m], .c = c};
          val[m] = D * p->sx;
        }
        col[4] = (MatStencil){.k = 0, .j = j, .i = i, .c = c};
        col[5] = (MatStencil){.k = 0, .j = j, .i = i, .c = 1 - c};
        if (c == 0) {
          val[4] = -4 * D * p->sx - vc * vc - p->gamma;
          val[5] = -2 * uc * vc;
        } else {
          val[4] = -4 * D * p->sx + 2 * uc * vc - p->gamma - p->kappa;
          val[5] = vc * vc;
        }
        PetscCall(MatSetValuesStencil(A, 1, &row, 6, col, val, INSERT_VALUES));
      }
    }
  PetscCall(DMDAVecRestoreArrayRead(da, loc, &u));
  PetscCall(DMRestoreLocalVector(da, &loc));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* PETSc side: y(T) and dJ/dy0 on rank 0 in natural order (x fastest, u and v interleaved). */
static PetscErrorCode petsc_solve(double *yT, double *grad)
{
  DM da;
  TS ts;
  Vec x, lam, nat, seq;
  VecScatter sc;
  gs_par p = {8e-5, 4e-5, 0.024, 0.06, 0};
  double h = 2.5 / N_NODES;
  p.sx = 1.0 / (h * h);
  PetscFunctionBeginUser;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC,
                         DMDA_STENCIL_STAR, N_NODES, N_NODES, PETSC_DECIDE, PETSC_DECIDE, 2, 1,
                         NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &x));
  node **xv;
  PetscInt xs, ys, xm, ym;
  PetscCall(DMDAVecGetArray(da, x, &xv));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
  for (PetscInt j = ys; j < ys + ym; j++)
    for (PetscInt i = xs; i < xs + xm; i++) {
      double X = i * h, Y = j * h, v = 0.0;
      if (X >= 1.0 && X <= 1.5 && Y >= 1.0 && Y <= 1.5)
        v = 0.25 * pow(sin(4 * PETSC_PI * X), 2) * pow(sin(4 * PETSC_PI * Y), 2);
      xv[j][i].v = v;
      xv[j][i].u = 1 - 2 * v;
    }
  PetscCall(DMDAVecRestoreArray(da, x, &xv));
  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetDM(ts, da));
  PetscCall(TSSetProblemType(ts, TS_NONLINEAR));
  PetscCall(TSSetType(ts, TSRK));
  PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetRHSFunction(ts, NULL, rhs, &p));
  Mat J;
  PetscCall(DMCreateMatrix(da, &J));
  PetscCall(TSSetRHSJacobian(ts, J, J, jac, &p));
  PetscCall(TSSetSaveTrajectory(ts));
  PetscCall(TSSetTimeStep(ts, DT));
  PetscCall(TSSetMaxSteps(ts, STEPS));
  PetscCall(TSSetMaxTime(ts, STEPS * DT));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSolve(ts, x));
  /* TSAdjointSolve reuses the solution vector while it walks back: keep y(T) first. */
  Vec xT;
  PetscCall(VecDuplicate(x, &xT));
  PetscCall(VecCopy(x, xT));
  PetscCall(VecDuplicate(x, &lam));
  PetscCall(VecSet(lam, 0.0));
  PetscInt c0 = N_NODES / 2 - 1;
  if (c0 >= xs && c0 < xs + xm && c0 >= ys && c0 < ys + ym) {
    node **l;
    PetscCall(DMDAVecGetArray(da, lam, &l));
    l[c0][c0].u = 1.0;
    l[c0][c0].v = 1.0;
    PetscCall(DMDAVecRestoreArray(da, lam, &l));
  }
  PetscCall(TSSetCostGradients(ts, 1, &lam, NULL));
  PetscCall(TSAdjointSolve(ts));
  PetscCall(DMDACreateNaturalVector(da, &nat));
  PetscCall(VecScatterCreateToZero(nat, &sc, &seq));
  Vec src[2] = {xT, lam};
  double *dst[2] = {yT, grad};
  for (int k = 0; k < 2; k++) {
    PetscCall(DMDAGlobalToNaturalBegin(da, src[k], INSERT_VALUES, nat));
    PetscCall(DMDAGlobalToNaturalEnd(da, src[k], INSERT_VALUES, nat));
    PetscCall(VecScatterBegin(sc, nat, seq, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterEnd(sc, nat, seq, INSERT_VALUES, SCATTER_FORWARD));
    const PetscScalar *a;
    PetscInt n;
    PetscCall(VecGetLocalSize(seq, &n));
    PetscCall(VecGetArrayRead(seq, &a));
    for (PetscInt m = 0; m < n; m++)
      dst[k][m] = a[m];
    PetscCall(VecRestoreArrayRead(seq, &a));
  }
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(VecDestroy(&seq));
  PetscCall(VecDestroy(&nat));
  PetscCall(VecDestroy(&lam));
  PetscCall(VecDestroy(&xT));
  PetscCall(VecDestroy(&x));
  PetscCall(MatDestroy(&J));
  PetscCall(TSDestroy(&ts));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* Rewind side, gathered on rank 0 in the same natural order. */
static int rewind_solve(double *yT, double *grad)
{
  rw_context ctx = NULL;
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL, g = NULL;
  rw_gs_config cfg;
  rw_gs_config_default(&cfg);
  cfg.n = N_NODES;
  RW_CALL(rw_context_create(MPI_COMM_WORLD, &ctx));
  RW_CALL(rw_gs_problem_create(ctx, &cfg, &prob));
  RW_CALL(rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st));
  RW_CALL(rw_problem_new_state(prob, &y));
  RW_CALL(rw_problem_new_state(prob, &g));
  RW_CALL(rw_gs_initial_state(prob, y));
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.tf = STEPS * DT;
  opt.dt = DT;
  opt.mode = RW_ADJOINT_CHECKPOINT;
  opt.ram_slots = 5;
  double J, dJdp[4];
  RW_CALL(rw_adjoint_solve(prob, st, &opt, y, &J, dJdp, g, NULL));
  rw_grid grid = rw_gs_grid(prob);
  long start[3], count[3];
  rw_grid_local_box(grid, start, count);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long box[4] = {start[0], start[1], count[0], count[1]}, *boxes = NULL;
  int n = (int)rw_vec_local_length(y), *counts = NULL, *displ = NULL;
  double *buf = NULL;
  if (rank == 0) {
    boxes = malloc(sizeof(long) * 4 * (size_t)size);
    counts = malloc(sizeof(int) * (size_t)size);
    displ = malloc(sizeof(int) * (size_t)size);
    buf = malloc(sizeof(double) * 2 * N_NODES * N_NODES);
  }
  MPI_Gather(box, 4, MPI_LONG, boxes, 4, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    displ[0] = 0;
    for (int r = 1; r < size; r++)
      displ[r] = displ[r - 1] + counts[r - 1];
  }
  N_Vector src[2] = {y, g};
  double *dst[2] = {yT, grad};
  for (int k = 0; k < 2; k++) {
    MPI_Gatherv(rw_vec_data(src[k]), n, MPI_DOUBLE, buf, counts, displ, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    if (rank == 0)
      for (int r = 0; r < size; r++) {
        long *b = boxes + 4 * r;
        for (long j = 0; j < b[3]; j++)
          for (long i = 0; i < b[2]; i++)
            for (int c = 0; c < 2; c++)
              dst[k][2 * ((b[1] + j) * N_NODES + b[0] + i) + c] =
                  buf[displ[r] + 2 * (j * b[2] + i) + c];
      }
  }
  free(boxes), free(counts), free(displ), free(buf);
  rw_vec_destroy(&y);
  rw_vec_destroy(&g);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
  return 0;
}

int main(int argc, char **argv)
{
  static double py[2 * N_NODES * N_NODES], pg[2 * N_NODES * N_NODES];
  static double ry[2 * N_NODES * N_NODES], rg[2 * N_NODES * N_NODES];
  if (PetscInitialize(&argc, &argv, NULL, NULL)) return 1;
  if (petsc_solve(py, pg)) {
    fprintf(stderr, "the PETSc solve failed\n");
    return 1;
  }
  if (rewind_solve(ry, rg)) {
    fprintf(stderr, "the Rewind solve failed: %s\n", rw_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int rank, fail = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    double gmax = 0, ymax = 0, gd = 0, yd = 0;
    for (int m = 0; m < 2 * N_NODES * N_NODES; m++) {
      gmax = fmax(gmax, fabs(pg[m]));
      ymax = fmax(ymax, fabs(py[m]));
      gd = fmax(gd, fabs(pg[m] - rg[m]));
      yd = fmax(yd, fabs(py[m] - ry[m]));
    }
    printf("Gray-Scott %dx%d, RK4, %d steps of %g: max|y_T difference| / max|y_T| = %.3e, "
           "max|dJ/dy0 difference| / max|dJ/dy0| = %.3e (max|dJ/dy0| = %.6e)\n",
           N_NODES, N_NODES, STEPS, DT, yd / ymax, gd / gmax, gmax);
    fail = !(yd <= 1e-11 * ymax) || !(gd <= 1e-11 * gmax) || gmax == 0.0;
  }
  MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
  PetscFinalize();
  return fail;
}
