/* The 2-D acoustic wave equation with a velocity model as parameter field, point sources
 * and receivers: the full-waveform-inversion (FWI) set-up.
 *
 *   u_tt = c(x)^2 lap u + A s(t) sum_k delta(x - x_k),   u = 0 outside the domain,
 *
 * on an n[0] x n[1] node grid over [lo, hi] (node (i, j) at lo + (i hx, j hy),
 * h = (hi - lo) / (n - 1)), zero Dirichlet ghosts one spacing outside the boundary nodes
 * (reflecting walls; no absorbing layer). Space: the 5-point Laplacian. The point source is
 * the discrete delta 1 / (hx hy) at the nearest node; s(t) is the Ricker wavelet of peak
 * frequency f delayed by t_d = 1.2 / f:
 *   s(t) = (1 - 2 (pi f (t - t_d))^2) exp(-(pi f (t - t_d))^2).
 * Time: second order, leapfrog (rw_leapfrog.h), so the state holds (u^n, u^{n-1})
 * interleaved (2 components per node) and the rhs returns the acceleration
 *   f = (c^2 lap u^n + A s(t) delta_src, 0).
 * Parameters: the scalar source amplitude A ("amplitude") and the velocity field c
 * ("velocity", rw_problem_field; the field is c itself, so dJ/dc is reported, with
 * df/dc = 2 c lap u).
 * Objective: the receiver misfit as the running cost (evaluated by the leapfrog on the new
 * state, see rw_leapfrog.h):
 *   r(t_n, y) = 1/2 sum_r (u(x_r) - d_r^n)^2,   J = sum_{n=1}^{N} dt r(t_n, y_n),
 * with receivers at their nearest nodes and traces d_r^n recorded on the time grid
 * t_n = t0 + n dt, n = 0..nsteps (rw_wave_record_traces), e.g. from a run in a "true"
 * velocity model. Stability: c_max dt sqrt(1/hx^2 + 1/hy^2) <= 1 (rw_wave_check_cfl; for
 * hx = hy = h: c_max dt / h <= 1/sqrt(2)). */
#ifndef REWIND_RW_WAVE_H
#define REWIND_RW_WAVE_H

#include "rw_grid.h"
#include "rw_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  long n[2];           /* nodes per dimension (>= 3) */
  double lo[2], hi[2]; /* domain */
  double velocity;     /* initial value of the velocity field c (> 0) */
  double amplitude;    /* initial value of parameter "amplitude" (A) */
  double freq;         /* Ricker peak frequency f (> 0) */
  int nsrc;            /* number of sources (>= 1) */
  const double *src;   /* nsrc (x, y) positions */
  int nrec;            /* number of receivers (>= 1) */
  const double *rec;   /* nrec (x, y) positions */
  double t0, dt;       /* time grid of the traces */
  long nsteps;         /* traces hold samples n = 0 .. nsteps */
  int procs[3];        /* ranks per dimension (rw_grid_config.procs); all 0: auto */
} rw_wave_config;

/* Creates the problem (parameter "amplitude", field "velocity" set to cfg->velocity; traces
 * zero). Positions outside the domain are RW_ERR_ARG naming them. Collective. */
int rw_wave_problem_create(rw_context ctx, const rw_wave_config *cfg, rw_problem *out);

/* The state grid (2 components: u^n, u^{n-1}) and the field grid (1 component), with the same
 * decomposition. Not collective. Returns NULL when prob is not a wave problem. */
rw_grid rw_wave_state_grid(rw_problem prob);
rw_grid rw_wave_field_grid(rw_problem prob);

/* The Ricker wavelet s(t) of peak frequency f, delay 1.2 / f. Not collective. */
double rw_wave_ricker(double f, double t);

/* Fills the field vector c (field-grid layout) with a background velocity plus a Gaussian
 * anomaly: c = background + anomaly exp(-|x - center|^2 / (2 radius^2)). Not collective. */
int rw_wave_velocity_model(rw_problem prob, double background, double anomaly,
                           const double center[2], double radius, N_Vector c);

/* Checks the CFL condition of the leapfrog for the velocity field c and step dt:
 * c_max dt sqrt(1/hx^2 + 1/hy^2) <= 1. RW_ERR_ARG naming dt, c_max and the largest stable
 * dt otherwise. `what` names the model in the message ("true model"). Collective (max). */
int rw_wave_check_cfl(rw_problem prob, N_Vector c, double dt, const char *what);

/* Records the receiver samples of state y as sample n (0 <= n <= nsteps) of the traces (each
 * rank its own receivers). Not collective. */
int rw_wave_record_traces(rw_problem prob, long n, N_Vector y);
/* Makes the recorded traces the same on every rank (sum over ranks: each sample has one
 * owner). Call once after recording. Collective. */
int rw_wave_finish_traces(rw_problem prob);
/* The traces, row-major [nrec][nsteps + 1] (writable: tests set synthetic data), and their
 * sizes. Not collective. */
double *rw_wave_traces(rw_problem prob, int *nrec, long *nsamples);
/* The node (global i, j) of source k / receiver k. Not collective. */
void rw_wave_source_node(rw_problem prob, int k, long ij[2]);
void rw_wave_receiver_node(rw_problem prob, int k, long ij[2]);

#ifdef __cplusplus
}
#endif
#endif
