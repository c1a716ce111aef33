/* The heat problem: diffusion with a spatially varying conductivity on a distributed 2-D or
 * 3-D grid, the conductivity being a distributed parameter field.
 *
 *   u_t = div(kappa(x) grad u) + q s(x),
 *
 * on the grid of rw_grid.h (domain [0, L_d] per dimension, one boundary condition for every
 * side: periodic, Dirichlet (ghost value u_b) or Neumann (mirror)). kappa lives at the nodes;
 * the discretisation is conservative, with face conductivities the arithmetic mean of the two
 * nodes:
 *   f_i = sum_d sum_{j = i +- e_d} (kappa_i + kappa_j) / 2 (u_j - u_i) / h_d^2 + q s_i.
 * Outside the domain kappa is mirrored (kappa_{-m} = kappa_m) for Dirichlet and Neumann
 * boundaries and wrapped for periodic ones. s(x) is a fixed Gaussian shape and q (parameter
 * "source") its amplitude.
 *
 * Objective: the misfit of u at sensor nodes against data d_s(t),
 *   J = 1/2 sum_s integral_{t0}^{T} (u(x_s, t) - d_s(t))^2 dt,
 * a running cost whose local part comes from the sensors this rank owns. The data are
 * recorded values d_s(t_n) at times t_n, linearly interpolated in t (constant outside the
 * recorded range); rw_heat_record_* make them from a forward run with a "true" kappa.
 * The data do not depend on u, kappa or q, so the interpolation changes J but not the
 * exactness of its derivatives.
 *
 * Parameters: one scalar ("source" = q) and the field ("kappa", rw_problem_field). Change
 * kappa by writing into rw_problem_field(prob): every right-hand side, JVP and VJP re-reads
 * it and exchanges its halo, so a change takes effect at once (no refresh call). Never
 * replace the field vector (rw_problem_set_field): the problem keeps a pointer to it.
 *
 * Noise (issue 12; the SDE steppers em and sheun of rw_sde.h): additive space-time white
 * noise, du = (...) dt + sigma dW(x, t), discretised by finite differences as in Walsh
 * (Lecture Notes in Math. 1180, 1986) and Da Prato & Zabczyk ("Stochastic Equations in
 * Infinite Dimensions", 1992): the noise averaged over a node's cell of volume
 * V = h_0 h_1 [h_2] has variance dt / V over a step dt, so node i receives
 *   sigma V_i^(-1/2) sqrt(dt) z_i,   z_i independent standard normals,
 * an increment of variance sigma^2 dt / V_i. Every node of a periodic or Dirichlet grid is an
 * unknown with a full cell (V_i = V); with Neumann sides a node on the boundary has half a
 * cell in each dimension where it is on the boundary (its mirrored equation is the half-cell
 * balance), so V_i = V / 2 per such dimension. The problem's diffusion g = V_i^(-1/2) is
 * constant in t, y and the parameters (zero VJP: sigma is not differentiated); sigma is the
 * problem's noise amplitude (rw_problem_set_noise; 0 at creation: deterministic until set).
 * Its noise_fill keys global node m = (k n_1 + j) n_0 + i by the index m and draws each owned
 * row with one rw_rng_normal_fill, so any rank count draws the same numbers bit for bit. */
#ifndef REWIND_RW_HEAT_H
#define REWIND_RW_HEAT_H

#include "rw_grid.h"
#include "rw_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RW_HEAT_MAX_SENSORS 4096

typedef struct {
  int dim;                               /* 2 or 3 */
  long n[3];                             /* nodes per dimension */
  double length[3];                      /* domain [0, length[d]] */
  rw_bc bc;                              /* every side */
  double boundary_value;                 /* Dirichlet ghost value u_b */
  double source_center[3], source_width; /* s(x) = exp(-|x - c|^2 / (2 w^2)) */
  /* Sensors: `nsensors` nodes, at `sensor_coords` (nsensors x dim, snapped to the nearest
   * node) or, when sensor_coords is NULL, on a regular sub-grid: m = ceil(nsensors^(1/dim))
   * points per dimension at fractions (a + 1/2) / m of the domain, the first nsensors of
   * them (x fastest). */
  int nsensors;
  const double *sensor_coords;
  int procs[3]; /* ranks per dimension (rw_grid_config.procs); all 0: the grid's choice */
} rw_heat_config;

/* Creates the heat problem (name "heat", parameter "source" = 0, field "kappa" = 1
 * everywhere). Checks the configuration (RW_ERR_ARG with a message on bad sizes, sensors
 * outside the domain, ...). Collective. */
int rw_heat_problem_create(rw_context ctx, const rw_heat_config *cfg, rw_problem *out);

/* The grid of the state and of kappa. Not collective. */
rw_grid rw_heat_grid(rw_problem prob);
/* The grid of the adjoint step's sweep (its wave settings are the state grid's, copied at each
 * step; tests count its waves). Not collective. */
rw_grid rw_heat_adjoint_grid(rw_problem prob);

/* v = background + amplitude exp(-|x - center|^2 / (2 width^2)) at every owned node (center
 * has dim entries). Not collective. */
int rw_heat_fill_gaussian(rw_problem prob, N_Vector v, double background, double amplitude,
                          const double *center, double width);

/* Global minimum and maximum of kappa. Collective. */
int rw_heat_kappa_range(rw_problem prob, double *kmin, double *kmax);

/* The explicit (forward Euler) stability limit for conductivities up to kappa_max:
 * 1 / (2 kappa_max sum_d 1/h_d^2), which is h^2 / (2 dim kappa_max) for equal spacings.
 * Not collective. */
double rw_heat_stability_limit(rw_problem prob, double kappa_max);

/* Number of sensors, and the global node (i, j, k) and coordinates of sensor s (either
 * pointer may be NULL). Not collective. */
int rw_heat_num_sensors(rw_problem prob);
void rw_heat_sensor(rw_problem prob, int s, long node[3], double x[3]);

/* vals[s] = u at sensor s (replicated on every rank; length num_sensors). Collective. */
int rw_heat_sample(rw_problem prob, N_Vector u, double *vals);

/* Sets the data: nt >= 1 strictly increasing times and values[n * nsensors + s] (copied).
 * Not collective (call on every rank with the same data). */
int rw_heat_set_data(rw_problem prob, long nt, const double *times, const double *values);

/* The data (NULL and 0 when none). values[n * nsensors + s]. Not collective. */
long rw_heat_data(rw_problem prob, const double **times, const double **values);

/* Recording data from a forward run (the app does it with kappa = kappa_true):
 *   rw_heat_record_begin(prob, N + 1);   drops the data (objective off while recording)
 *   opt.monitor = rw_heat_record_monitor, opt.monitor_ctx = prob;  rw_forward_solve(...);
 *   rw_heat_record_end(prob);            the recorded samples become the data
 * The monitor (an rw_monitor_fn) samples u at the sensors at every grid time it is called
 * with; at most `capacity` samples. begin/end: not collective; the monitor: collective. */
int rw_heat_record_begin(rw_problem prob, long capacity);
int rw_heat_record_monitor(void *prob, long n, double t, N_Vector y);
int rw_heat_record_end(rw_problem prob);

/* The derivative of f in the direction dkappa of the field: out = (df/dkappa) dkappa
 * (= the diffusion operator with conductivity dkappa applied to y, without the source).
 * Collective. */
int rw_heat_jvp_field(rw_problem prob, double t, N_Vector y, N_Vector dkappa, N_Vector out);

#ifdef __cplusplus
}
#endif
#endif
