/* Gray-Scott reaction-diffusion on a periodic square (or cube), distributed over MPI ranks.
 *
 * Two species u, v, interleaved per node (grid ncomp = 2):
 *   u_t = D_u lap(u) - u v^2 + gamma (1 - u),
 *   v_t = D_v lap(v) + u v^2 - (gamma + kappa) v
 * (Pearson, "Complex patterns in a simple system", Science 261, 1993), on [0, L)^dim with
 * periodic boundaries, N nodes per dimension, node (i, j, k) at (i h, j h, k h), h = L / N,
 * and the 5-point (7-point in 3-D) Laplacian. The named scalar parameters are, in order,
 * "D_u", "D_v", "gamma", "kappa".
 *
 * The defaults are the set-up of the PETSc TSAdjoint tutorial
 * src/ts/tutorials/advection-diffusion-reaction/ex5adj.c, so users can compare: L = 2.5,
 * N = 128, D_u = 8e-5, D_v = 4e-5, gamma = 0.024, kappa = 0.06, and the initial state
 *   v = 0.25 sin^2(4 pi x) sin^2(4 pi y)  for 1 <= x, y <= 1.5 (else 0),  u = 1 - 2 v
 * (3-D, our own extension: a third factor sin^2(4 pi z) and 1 <= z <= 1.5). The tutorial's
 * own defaults are a 64 x 64 grid, Crank-Nicolson and T = 200; the run the issue asks for is
 * its explicit form: ex5adj -implicitform 0 -ts_type rk -ts_rk_type 4 -da_grid_x 128
 * -da_grid_y 128 -ts_dt 0.5 -ts_max_steps 500 -ts_max_time 250. (ex5adj tests 1 <= x <= 1.5
 * with a tolerance, PetscApproximateGTE/LTE; here the test is exact: the two differ only at
 * a node within rounding of 1 or 1.5, where sin^2(4 pi x) is zero to rounding anyway.)
 *
 * Objectives (terminal, at T):
 *   point: J = u + v at one node (default (N/2 - 1, N/2 - 1[, N/2 - 1]), the node at which
 *          ex5adj seeds its adjoint);
 *   u2:    J = integral of u^2 = h^dim sum over nodes of u^2.
 *
 * Every operator (rhs, jvp, vjp_y, vjp_p) is written out by hand: the VJP in the state is the
 * reaction Jacobian transposed per node plus the transposed Laplacian scattered into a
 * ghosted adjoint array and sent back to the owners by rw_grid_exchange_adjoint. Ghosted
 * work arrays are allocated at creation, never in the time loop.
 *
 * Noise (issue 12; the SDE steppers em and sheun of rw_sde.h). With the noise on, the model
 * is the stochastic PDE with additive space-time white noise W(x, t) forcing the species
 * the configuration selects (both by default):
 *   du = (...) dt + sigma dW_u(x, t),   dv = (...) dt + sigma dW_v(x, t),
 * discretised by finite differences in the standard way (Walsh, "An introduction to
 * stochastic partial differential equations", Lecture Notes in Math. 1180, 1986; Da Prato &
 * Zabczyk, "Stochastic Equations in Infinite Dimensions", 1992; Gyongy, Potential Anal. 9,
 * 1998, for the lattice scheme): the noise averaged over a node's cell of volume h^dim has
 * variance dt / h^dim over a step dt, so node i of a noisy species receives
 *   sigma h^(-dim/2) dW_i,   dW_i = sqrt(dt) z_i,   z_i standard normal, independent
 * over nodes, species and steps: an increment of variance sigma^2 dt / h^dim. The problem's
 * diffusion g is the constant h^(-dim/2) on the noisy components (0 on the others; zero
 * derivative in y and in the parameters: sigma is not differentiated) and sigma is the
 * problem's noise amplitude (rw_problem_set_noise; 0 at creation, so the problem is
 * deterministic until it is set). Its noise_fill keys component c' (0 .. c-1 among the c
 * noisy species, u first) of global node m = (k N + j) N + i by the index m c + c' and draws
 * each owned row (one contiguous global range) with one rw_rng_normal_fill: any rank count
 * draws the same numbers bit for bit. */
#ifndef REWIND_RW_GRAYSCOTT_H
#define REWIND_RW_GRAYSCOTT_H

#include "rw_grid.h"
#include "rw_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RW_GS_POINT = 0, RW_GS_U2 = 1 } rw_gs_objective;

/* Which species the noise forces. */
typedef enum { RW_GS_NOISE_UV = 0, RW_GS_NOISE_U = 1, RW_GS_NOISE_V = 2 } rw_gs_noise;

typedef struct {
  int dim;                   /* 2 or 3 */
  long n;                    /* nodes per dimension, >= 4 */
  double length;             /* side L of the periodic domain [0, L)^dim */
  rw_gs_objective objective; /* point or u2 */
  long point[3];             /* node of the point objective; -1 entries: N/2 - 1 */
  rw_gs_noise noise;         /* noisy species (RW_GS_NOISE_UV: both, the default) */
  int procs[3];              /* ranks per dimension (rw_grid_config.procs); all 0: auto */
} rw_gs_config;

/* Names of the noise choices ("uv, u, v") and the choice of a name (RW_ERR_ARG naming the
 * known ones otherwise). Not collective. */
const char *rw_gs_noise_names(void);
int rw_gs_noise_from_name(const char *name, rw_gs_noise *noise);

/* The PETSc ex5adj set-up: 2-D, N = 128, L = 2.5, point objective at the default node.
 * Not collective. */
void rw_gs_config_default(rw_gs_config *cfg);

/* Objective names ("point, u2") and the objective of a name (RW_ERR_ARG naming the known
 * ones for an unknown name). Not collective. */
const char *rw_gs_objective_names(void);
int rw_gs_objective_from_name(const char *name, rw_gs_objective *obj);

/* Creates the problem and its grid on the context's communicator; the parameters get the
 * defaults above. Fails with RW_ERR_ARG for dim not 2 or 3, N < 4, L <= 0, a point node
 * outside the grid, or too many ranks for N (every rank must own at least one node per
 * dimension). The noise ops (diffusion, noise_fill) are always there; the noise amplitude is 0
 * (seed 0) until rw_problem_set_noise sets it. Collective. */
int rw_gs_problem_create(rw_context ctx, const rw_gs_config *cfg, rw_problem *out);

/* The problem's grid (owned by the problem: do not destroy). Not collective. */
rw_grid rw_gs_grid(rw_problem prob);

/* Fills y with the ex5adj initial state (this rank's nodes). Not collective. */
int rw_gs_initial_state(rw_problem prob, N_Vector y);

/* The node of the point objective (global indices, 3 entries; 0 for the absent third
 * dimension). Not collective. */
void rw_gs_point(rw_problem prob, long node[3]);

/* A bound rho on the magnitude of the eigenvalues of df/dy on the negative real axis, for
 * the explicit stability limit dt <= beta / rho (rw_stability.h): the 5/7-point Laplacian's
 * 4 dim D / h^2 with the larger diffusivity, plus the linear reaction rates
 * max(|gamma|, |gamma + kappa|) (current parameter values). The nonlinear term u v^2 is left
 * out: its Jacobian entries stay below 3 on the invariant region 0 <= u, v <= 1 and are far
 * smaller in practice, while the diffusion term sets the limit on the grids where it binds.
 * Not collective. */
int rw_gs_eigen_bound(rw_problem prob, double *rho);

#ifdef __cplusplus
}
#endif
#endif
