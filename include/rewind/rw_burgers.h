/* 2-D viscous Burgers equation (scalar form) with initial-condition sensitivity.
 *
 *   u_t + (u^2/2)_x + (u^2/2)_y = nu lap u     on the periodic square [lo, hi)^2,
 *
 * i.e. u_t + u (u_x + u_y) = nu lap u: one scalar field advected along the diagonal with
 * speed u (the classic 1-D Burgers equation along x = y, shocks smoothed by nu). On an
 * n[0] x n[1] periodic node grid (node (i, j) at lo + (i hx, j hy), h = (hi - lo) / n),
 * centred differences in conservative form and the 5-point Laplacian:
 *   f_ij = -(u_{i+1,j}^2 - u_{i-1,j}^2) / (4 hx) - (u_{i,j+1}^2 - u_{i,j-1}^2) / (4 hy)
 *          + nu L u,
 * integrated in time by any explicit RK stepper (rw_stepper_create_erk). Centred
 * differences need a cell Reynolds number max|u| h / nu below about 2 to stay free of
 * wiggles.
 * Initial profile (periodic Gaussian bump on a constant):
 *   u0(x) = offset + amplitude exp(-|x - center|_per^2 / (2 width^2)),
 * with |.|_per the minimum-image distance; the target is the same profile moved by `shift`:
 *   u_target(x) = u0(x - shift).
 * Objective: J = 1/2 integral (u(T) - u_target)^2 dx = 1/2 hx hy sum_ij (u_ij(T) -
 * u_target,ij)^2. Parameter: "nu". Gradients: dJ/dnu and dJ/du0 (a grid field). */
#ifndef REWIND_RW_BURGERS_H
#define REWIND_RW_BURGERS_H

#include "rw_grid.h"
#include "rw_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  long n[2];                                  /* nodes per dimension (>= 3) */
  double lo[2], hi[2];                        /* periodic domain */
  double nu;                                  /* initial value of parameter "nu" (viscosity) */
  double offset, amplitude, center[2], width; /* initial profile (width > 0) */
  double shift[2];                            /* target = initial profile moved by shift */
  int procs[3]; /* ranks per dimension (rw_grid_config.procs); all 0: the grid's choice */
} rw_burgers_config;

/* Creates the problem (one parameter, "nu"). Collective. */
int rw_burgers_problem_create(rw_context ctx, const rw_burgers_config *cfg, rw_problem *out);

/* The problem's grid (1 component, periodic). NULL when prob is not a Burgers problem.
 * Not collective. */
rw_grid rw_burgers_grid(rw_problem prob);

/* Fills y with the initial profile u0. Not collective. */
int rw_burgers_initial_state(rw_problem prob, N_Vector y);

/* The target field u_target (owned by the problem, grid layout). Not collective. */
N_Vector rw_burgers_target(rw_problem prob);

/* A bound rho for the explicit stability limit dt <= beta / rho (rw_stability.h) of this
 * advection-diffusion operator: the 5-point Laplacian's 4 nu (1/hx^2 + 1/hy^2) plus the
 * centred advection's max|u| (1/hx + 1/hy), with max|u| from `u` (pass the initial state:
 * viscous Burgers does not raise max|u|). The advection eigenvalues are imaginary, so this
 * is an estimate of where the steps become unstable, not a bound (euler and heun, with no
 * imaginary axis in their stability region, rely on the diffusion). Collective. */
int rw_burgers_eigen_bound(rw_problem prob, N_Vector u, double *rho);

#ifdef __cplusplus
}
#endif
#endif
