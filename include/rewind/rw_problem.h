/* The problem interface: an ODE y' = f(t, y; p) on a distributed state, its vector-Jacobian
 * products, and the objective J = g(y(T); p) + integral_{t0}^{T} r(t, y; p) dt.
 *
 * Parameters p are a small named vector replicated on every rank (Van der Pol's mu, the
 * four Lotka-Volterra rates, an MLP's weights). VJP callbacks ACCUMULATE this rank's local
 * contribution into the parameter adjoint; the adjoint driver sums over ranks once at the
 * end. State VJPs ACCUMULATE into a distributed vector.
 *
 * A problem is an ops table + content, as SUNDIALS objects are: the ops a problem does not
 * provide stay NULL, and calling them returns RW_ERR_NOT_IMPLEMENTED.
 *
 * Every op reads y, w and p and must not modify them. The drivers call the ops on every rank in
 * the same order (so an op may exchange halos or reduce over ranks), any number of times
 * (recomputation under a checkpoint schedule evaluates states again), and need the same bits
 * for the same inputs for the checkpointed gradient to equal the stored one bit for bit. An op
 * returns 0 or an rw_error_code (RW_ERROR gives it a message); a failure on one rank only is
 * not seen by the others, which go on to their next collective call: make it collective
 * (rw_error_agree) or end the job. docs/library.md is the user's guide to these contracts. */
#ifndef REWIND_RW_PROBLEM_H
#define REWIND_RW_PROBLEM_H

#include "rw_vector.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_problem_s *rw_problem;
struct rw_stage_plan_s; /* rw_grid.h */

typedef struct {
  /* f = f(t, y; p). Required. Not collective unless the problem needs halos. */
  int (*rhs)(void *content, double t, N_Vector y, const double *p, N_Vector f);
  /* out += (df/dy)^T w. Required for adjoints. */
  int (*vjp_y)(void *content, double t, N_Vector y, const double *p, N_Vector w, N_Vector out);
  /* out[k] += local part of (df/dp_k)^T w, k < nparams. Required for dJ/dp. */
  int (*vjp_p)(void *content, double t, N_Vector y, const double *p, N_Vector w, double *out);
  /* Both VJPs in one pass: out_y += (df/dy)^T w and, when out_p is not NULL, out_p[k] +=
   * local part of (df/dp_k)^T w. Optional; for problems whose two VJPs share work (an MLP
   * recomputes its activations once for both). Without it, vjp_y then vjp_p. */
  int (*vjp)(void *content, double t, N_Vector y, const double *p, N_Vector w, N_Vector out_y,
             double *out_p);
  /* f = f(t, Y; p) with Y = sum_j c[j] X[j] (n vectors), Y also written to `keep` when not
   * NULL. The problem may form Y where it needs it (a halo copy) instead of in a vector of its
   * own; Y must be rounded as rw_lincomb rounds it. Optional: without it rw_problem_rhs_comb
   * forms Y in a vector and calls rhs. */
  int (*rhs_comb)(void *content, double t, const double *p, int n, const double *c, N_Vector *X,
                  N_Vector keep, N_Vector f);
  /* out_y = (df/dy)^T w with w = sum_j c[j] W[j] (n vectors), out_p += (df/dp)^T w when not
   * NULL. Overwrites out_y (its old values are not read: the caller need not zero it), and
   * may form w where it needs it (a halo copy) instead of in a vector of its own; w must be
   * rounded as rw_lincomb rounds it. Optional: without it rw_problem_vjp_comb forms w in a
   * work vector, zeroes out_y and calls the accumulating VJPs. */
  int (*vjp_comb)(void *content, double t, N_Vector y, const double *p, int n, const double *c,
                  N_Vector *W, N_Vector out_y, double *out_p);
  /* vjp_comb and, in the same pass where the problem can, the field's VJP: field_out +=
   * (df/dfield)^T w. Optional: used instead of vjp_field + vjp_comb when the problem has both
   * and its field is differentiated; the field's gradient may differ from vjp_field's in the
   * last bits (another summation order), never by more. */
  int (*vjp_comb_field)(void *content, double t, N_Vector y, const double *p, int n,
                        const double *c, N_Vector *W, N_Vector out_y, double *out_p, N_Vector field,
                        N_Vector field_out);
  /* out = (df/dy) v + (df/dp) dp (dp may be NULL). Optional. */
  int (*jvp)(void *content, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
             N_Vector out);
  /* *g = g(y; p), the terminal cost (global value, collective). Optional (g = 0). */
  int (*terminal)(void *content, double t, N_Vector y, const double *p, double *g);
  /* gy = dg/dy (set), gp[k] += local part of dg/dp_k. Required when terminal is set. */
  int (*terminal_grad)(void *content, double t, N_Vector y, const double *p, N_Vector gy,
                       double *gp);
  /* *r = local part of r(t, y; p) (the driver sums over ranks). Optional (r = 0). */
  int (*running)(void *content, double t, N_Vector y, const double *p, double *r);
  /* ry += w dr/dy, rp[k] += w * local part of dr/dp_k. Required when running is set. */
  int (*running_grad)(void *content, double t, N_Vector y, const double *p, double w, N_Vector ry,
                      double *rp);
  /* Distributed parameter field (a conductivity kappa(x), a velocity model c(x)): out +=
   * (df/dfield)^T w, `out` laid out like the field. Required when the problem has a field
   * (rw_problem_set_field). The objective does not depend on the field. */
  int (*vjp_field)(void *content, double t, N_Vector y, const double *p, N_Vector field, N_Vector w,
                   N_Vector out);
  /* --- Noise (SDEs dy = f dt + g(t, y; p) o dW, steppers in rw_sde.h) ---
   * g is DIAGONAL: entry i of g multiplies entry i of dW and depends on y_i only (additive
   * noise: g does not depend on y at all). g = g(t, y; p), a vector like y. Required by the
   * SDE steppers; a problem without it is an ODE. */
  int (*diffusion)(void *content, double t, N_Vector y, const double *p, N_Vector g);
  /* out_y += (dg/dy) w, elementwise (out_y_i += dg_i/dy_i w_i), and, when out_p is not NULL,
   * out_p[k] += local part of sum_i dg_i/dp_k w_i. Required for the SDE steppers' adjoints.
   * The diffusion does not depend on a parameter field. */
  int (*diffusion_vjp)(void *content, double t, N_Vector y, const double *p, N_Vector w,
                       N_Vector out_y, double *out_p);
  /* z = the standard normal draws of this rank's entries for the noise coordinate
   * (seed, step, stage 0, RW_RNG_STREAM_FORCING) (rw_rng.h), each keyed by the GLOBAL index of
   * its entry, so the path does not depend on the decomposition. Optional: without it the
   * rank's entries are one block whose global index is the sum of the local lengths of the
   * lower ranks plus the local index (rw_rng_normal_fill over that range). A grid problem whose
   * owned nodes are not one global block provides its own. */
  int (*noise_fill)(void *content, uint64_t seed, uint64_t step, N_Vector z);
  /* Called by the drivers (rw_forward_solve, rw_adjoint_solve) before the first step of a
   * solve and after its last use of the problem (also when the solve fails): between the two,
   * the parameters and the field do not change, so a problem may prepare what depends on
   * them only (a halo copy of a parameter field) once instead of in every call. Outside a
   * solve every op must work without them. Optional; begin is collective. */
  int (*solve_begin)(void *content);
  void (*solve_end)(void *content);
  /* Deferred parameter gradients, for a problem that forms dJ/dp somewhere the host cannot add
   * it cheaply (device memory): after params_defer(pbar) the problem may hold the VJP terms
   * whose out_p is pbar (and only those) and add them to pbar at params_flush; the driver
   * flushes before it reads or copies pbar. params_defer(NULL) drops what is held and stops.
   * Both optional (then every term is added at once); not collective. */
  int (*params_defer)(void *content, double *pbar);
  int (*params_flush)(void *content);
  /* One explicit Runge-Kutta step y_out = y + ... of the stages in `plan` (rw_grid.h's
   * rw_stage_plan: the stepper's own combinations, h in the coefficients), at stage times
   * t[i], computed by the problem in one sweep instead of stage by stage (rw_grid_erk_wave),
   * with the same bits as the stage-by-stage step's rhs_comb calls and final combination.
   * With q (not NULL) it also adds the running cost's quadrature as the stepper does:
   * *q += sum over m >= 1 of cb[m] r(t[xb[m]], Y_xb[m]), summed in that order into a fresh 0
   * first (the problem's running op's bits). The plan may ask for the stage inputs Y_i to be
   * kept (plan->keep) and, with plan->no_out, for them alone (y_out NULL: an adjoint's
   * recomputation of a step's stages; the last slope is then not evaluated). *done = 0 when it
   * does not apply (nothing computed). Optional. */
  int (*step_wave)(void *content, const double *t, const double *p,
                   const struct rw_stage_plan_s *plan, N_Vector y, N_Vector y_out, double *q,
                   int *done);
  /* An explicit RK adjoint step in one sweep: the plan's stages are the adjoint's, in reverse
   * stage order (stage k of the plan is the method's stage s - 1 - k), X = lambda (x = -1) and
   * the stage adjoints before it, aux[k] the stored stage state Y; each stage computes
   * Ybar = (df/dy)(aux_k)^T w_k (w_k its combination) plus, where hb[k] != 0, the running
   * cost's gradient hb[k] dr/dy(aux_k), and lambda (in place) becomes the plan's update.
   * out_p[j] += the local part of (df/dp_j)^T w_k and field_bar += (df/dfield)^T w_k, each in
   * stage order k = 0, 1, ... (NULL: frozen, not computed). The same bits as the stage-by-stage
   * adjoint (vjp_comb, running_grad, the update). *done = 0 when it does not apply (nothing
   * computed). Optional. */
  int (*adjoint_wave)(void *content, const double *t, const double *p,
                      const struct rw_stage_plan_s *plan, const double *hb, N_Vector lambda,
                      double *out_p, N_Vector field, N_Vector field_bar, int *done);
  /* A checkpointed backward step of an explicit RK method in one sweep: the recomputation of
   * the step's stage inputs from y_n (plan_f: step_wave's plan with no_out and nothing kept,
   * stage times tf) and the adjoint step over them (plan_a: adjoint_wave's plan without aux
   * vectors, its stage k reading the method's stage input s - 1 - k; stage times ta), the
   * stage inputs never written to memory (rw_grid_erk_wave_pair). The same bits as step_wave
   * then adjoint_wave. *done = 0 when it does not apply (nothing computed). Optional. */
  int (*backward_wave)(void *content, const double *tf, const double *ta, const double *p,
                       const struct rw_stage_plan_s *plan_f, N_Vector y_n,
                       const struct rw_stage_plan_s *plan_a, const double *hb, N_Vector lambda,
                       double *out_p, N_Vector field, N_Vector field_bar, int *done);
  /* One plain leapfrog step (rw_leapfrog.h's layout and update) in one sweep instead of rhs
   * then the update: y_out = ((2 u - v) + h2 a, u) at every node, a = the first component of
   * rhs(t, y); with `reverse` the inverse step from y = (u^{n+1}, u^n): y_out = (u^n, (2 u^n -
   * u^{n+1}) + h2 a), a = a(t, u^n). Each a and each update rounded as the rhs and the
   * stepper's loops round them (the same bits). y_out may be y. *done = 0 when it does not
   * apply (nothing computed). Optional. */
  int (*leapfrog_step)(void *content, double t, const double *p, double h2, int reverse, N_Vector y,
                       N_Vector y_out, int *done);
  /* Releases the content. Optional. */
  void (*destroy)(void *content);
} rw_problem_ops;

/* Creates a problem with `nparams` parameters (values set to 0) and a state layout given by
 * `local_n` entries on this rank. With `param_names` (copied) the parameters are named
 * scalars (mu, kappa, ...); with NULL they are one unnamed vector theta (an MLP's weights,
 * any length: nothing per parameter is allocated, and outputs report the vector as a whole,
 * /gradient/dJdtheta and |dJ/dtheta|_2). On success the problem takes ownership of
 * `content` (released by ops->destroy at rw_problem_destroy); on failure it does not, and the
 * caller still frees it. Collective. */
int rw_problem_create(rw_context ctx, const char *name, const rw_problem_ops *ops, void *content,
                      sunindextype local_n, int nparams, const char *const *param_names,
                      rw_problem *out);
int rw_problem_destroy(rw_problem *prob);

const char *rw_problem_name(rw_problem prob);
rw_context rw_problem_context(rw_problem prob);
int rw_problem_nparams(rw_problem prob);
/* Name of parameter k, or NULL when out of range or when the parameters are unnamed. */
const char *rw_problem_param_name(rw_problem prob, int k);
/* 1 when the parameters are named scalars, 0 when they are one vector theta. */
int rw_problem_params_named(rw_problem prob);
/* The parameter values (length nparams), owned by the problem, writable. */
double *rw_problem_params(rw_problem prob);
/* Index of parameter `name`, or -1. */
int rw_problem_param_index(rw_problem prob, const char *name);
const rw_problem_ops *rw_problem_get_ops(rw_problem prob);
void *rw_problem_content(rw_problem prob);
sunindextype rw_problem_local_length(rw_problem prob);

/* Gives the problem a distributed parameter field named `name` (the problem takes
 * ownership of `field`, and allocates its adjoint like it). Not collective. */
int rw_problem_set_field(rw_problem prob, const char *name, N_Vector field);
/* The field, its name, and the adjoint the driver accumulates into (NULL when none). */
N_Vector rw_problem_field(rw_problem prob);
const char *rw_problem_field_name(rw_problem prob);
N_Vector rw_problem_field_adjoint(rw_problem prob);

/* The partnered problem of `inner` (for the reversible Heun stepper, rw_revheun.h): its state
 * is (y, yhat), this rank's y entries followed by its yhat entries (2 local_n), where y is
 * inner's state and yhat a partner of the same layout. It shares inner's parameter values
 * (the same array), parameter names, field, field adjoint and counters; its objective is
 * inner's evaluated on y (the terminal gradient's yhat half is zero) and its running cost
 * inner's on yhat; its rhs is (f(t, yhat), f(t, yhat)). `inner` must outlive it. Collective.
 * rw_problem_partner_inner returns inner (NULL for a problem that is not partnered). */
int rw_problem_create_partnered(rw_problem inner, rw_problem *out);
rw_problem rw_problem_partner_inner(rw_problem prob);

/* What the adjoint differentiates ("frozen" inputs cost nothing). params = 0 freezes the
 * scalar parameters (or the vector theta): the VJPs are asked for no parameter part (vjp_p is
 * not called; vjp, vjp_comb, vjp_comb_field and diffusion_vjp get out_p = NULL, as they do
 * when there are no parameters), and rw_adjoint_solve leaves dJdp as the caller set it.
 * field = 0 freezes the parameter field: vjp_field is not called and its adjoint stays 0.
 * dJ/dy0 is the adjoint state itself and is always computed. Both active at creation; a
 * partnered problem passes the setting to its inner problem. */
void rw_problem_set_active(rw_problem prob, int params, int field);
/* 1 when the problem has parameters (a field) and they are differentiated. */
int rw_problem_params_active(rw_problem prob);
int rw_problem_field_active(rw_problem prob);

/* Whether the problem provides what an adjoint solve will call for what is active now: a VJP
 * in y (vjp_y, vjp or vjp_comb), one in p when parameters are active (vjp_p, vjp or
 * vjp_comb), the field's (vjp_field or vjp_comb_field) when the field is active, the
 * gradient of each cost it has (terminal_grad, running_grad), and diffusion_vjp when it has a
 * diffusion term (an SDE). It does not know the stepper: one that calls rw_problem_vjp (the
 * leapfrog, reversible Heun, the SDE steppers) needs vjp, or vjp_y (+ vjp_p), unless
 * rw_problem_set_vjp_by_comb was called; the explicit RK steppers work from vjp_comb alone.
 * RW_ERR_NOT_IMPLEMENTED naming the first missing op, and what to freeze instead, else 0.
 * rw_adjoint_solve calls it before its forward sweep. Not collective (every rank's problem has the
 * same ops). */
int rw_problem_check_adjoint(rw_problem prob);

/* Says that the problem's ops run their own device kernels on device vectors (rw_device.h):
 * the dispatchers then open no host scope around them, so on the emulated device any host
 * access to device memory inside the problem faults as it would on a GPU. Not collective. */
void rw_problem_set_device_ready(rw_problem prob);

/* For a problem with vjp_comb (and vjp_comb_field when it has a field) but no vjp op:
 * rw_problem_vjp then runs vjp_comb with the one vector w into a work vector allocated here
 * and adds it to out_y, instead of vjp_y, vjp_p and vjp_field (the steppers other than Runge-
 * Kutta call rw_problem_vjp). For problems whose fused VJP is a gather and the separate ones
 * scatter (heat): one code path for the CPU and a device. Collective (allocates a state
 * vector). */
int rw_problem_set_vjp_by_comb(rw_problem prob);

/* A zeroed state vector with the problem's layout. Collective. */
int rw_problem_new_state(rw_problem prob, N_Vector *out);

/* Checked dispatchers (RW_ERR_NOT_IMPLEMENTED when the op is absent). */
int rw_problem_rhs(rw_problem prob, double t, N_Vector y, N_Vector f);
int rw_problem_vjp_y(rw_problem prob, double t, N_Vector y, N_Vector w, N_Vector out);
/* Scalar parameters: out[k] += ...; and, when the problem has a field, its adjoint
 * (rw_problem_field_adjoint) += (df/dfield)^T w. */
int rw_problem_vjp_p(rw_problem prob, double t, N_Vector y, N_Vector w, double *out);
/* out_y += (df/dy)^T w and the parameter VJP of rw_problem_vjp_p into out_p (field adjoint
 * included), through ops->vjp when the problem has it. */
int rw_problem_vjp(rw_problem prob, double t, N_Vector y, N_Vector w, N_Vector out_y,
                   double *out_p);
/* f = f(t, Y) with Y = sum_j c[j] X[j] (1 <= n <= RW_LINCOMB_MAX), Y kept in `keep` when not
 * NULL: one pass with the problem's rhs_comb, else Y formed in keep (or in `work` when keep is
 * NULL) and rhs. The same bits either way. */
int rw_problem_rhs_comb(rw_problem prob, double t, int n, const double *c, N_Vector *X,
                        N_Vector keep, N_Vector work, N_Vector f);
/* One explicit RK step of `plan` (stage times t[i]) through the problem's step_wave, adding
 * the running cost's quadrature to *q when q is not NULL: *done = 1 when it ran (counted as
 * plan->s right-hand sides, one fewer with no_out, and plan->nb - 1 running costs with q), 0
 * when the problem has none
 * or declines (nothing computed; the caller steps stage by stage). Collective. */
int rw_problem_has_step_wave(rw_problem prob);
int rw_problem_step_wave(rw_problem prob, const double *t, const struct rw_stage_plan_s *plan,
                         N_Vector y, N_Vector y_out, double *q, int *done);
/* One plain leapfrog step (reverse: its inverse) through the problem's leapfrog_step (see
 * rw_problem_ops): *done = 1 when it ran (counted as one rhs evaluation), 0 when the problem has
 * none or declines (nothing computed; the stepper evaluates the rhs and updates). Collective. */
int rw_problem_leapfrog_step(rw_problem prob, double t, double h2, int reverse, N_Vector y,
                             N_Vector y_out, int *done);
/* An adjoint step of an explicit RK method through the problem's adjoint_wave (see
 * rw_problem_ops), with the parameters and the field that are not frozen: *done = 1 when it ran
 * (counted as plan->s VJPs and one running-cost gradient per nonzero hb[k]), 0 when the problem
 * has none or declines (nothing computed; the caller goes stage by stage). Collective. */
int rw_problem_has_adjoint_wave(rw_problem prob);
int rw_problem_adjoint_wave(rw_problem prob, const double *t, const struct rw_stage_plan_s *plan,
                            const double *hb, N_Vector lambda, double *pbar, int *done);
/* A checkpointed backward step of an explicit RK method through the problem's backward_wave
 * (see rw_problem_ops): *done = 1 when it ran (counted as rw_problem_step_wave's recomputation
 * and rw_problem_adjoint_wave's adjoint step), 0 when the problem has none or declines (nothing
 * computed). Collective. */
int rw_problem_has_backward_wave(rw_problem prob);
int rw_problem_backward_wave(rw_problem prob, const double *tf, const double *ta,
                             const struct rw_stage_plan_s *plan_f, N_Vector y_n,
                             const struct rw_stage_plan_s *plan_a, const double *hb,
                             N_Vector lambda, double *pbar, int *done);
/* out_y = (df/dy)^T w (set, not added) and out_p as in rw_problem_vjp, with w = sum_j c[j] W[j]
 * (1 <= n <= RW_LINCOMB_MAX): one pass with the problem's vjp_comb, else w formed in `work`
 * (a vector like y), out_y zeroed and rw_problem_vjp. The same bits either way. */
int rw_problem_vjp_comb(rw_problem prob, double t, N_Vector y, int n, const double *c, N_Vector *W,
                        N_Vector work, N_Vector out_y, double *out_p);
int rw_problem_jvp(rw_problem prob, double t, N_Vector y, N_Vector v, const double *dp,
                   N_Vector out);
/* g is the global value (the terminal op reduces over the ranks itself): collective.
 * rw_problem_running_local returns this rank's part of r, as the running op does (the drivers
 * sum the running cost over the ranks once, at the end of the forward sweep): not collective.
 * The gradients add this rank's parts to gp / rp, as the VJPs do. */
int rw_problem_terminal(rw_problem prob, double t, N_Vector y, double *g);
int rw_problem_terminal_grad(rw_problem prob, double t, N_Vector y, N_Vector gy, double *gp);
int rw_problem_running_local(rw_problem prob, double t, N_Vector y, double *r);
int rw_problem_running_grad(rw_problem prob, double t, N_Vector y, double w, N_Vector ry,
                            double *rp);
int rw_problem_has_running(rw_problem prob);
int rw_problem_has_terminal(rw_problem prob);

/* --- Noise --------------------------------------------------------------------------------
 *
 * The Brownian increment of step n (the step [t_n, t_n + h] of the run's grid; the drivers
 * pass n to the stepper, rw_stepper_set_step_index) is
 *
 *     dW_n = amplitude * sqrt(h / R) * (z_{nR} + z_{nR+1} + ... + z_{nR+R-1}),
 *
 * summed in that order, where z_m is the vector of standard normals of noise step m
 * (ops->noise_fill or the default block mapping: rw_rng_normal_fill(seed, m, 0,
 * RW_RNG_STREAM_FORCING, global index of the entry)) and R >= 1 is the REFINEMENT. With R = 1
 * (the default) dW_n = amplitude sqrt(h) z_n. With R > 1 step n takes the sum of the R
 * increments of a grid R times finer, so a run with step h and refinement R follows the SAME
 * Brownian path as a run with step h / R and refinement 1 (its increments are the fine ones
 * summed, up to the rounding of the scale factor): strong convergence is measured against a
 * fine reference of the same path this way. The noise is a pure function of (seed, n, global
 * index): never stored, redrawn by every recomputation, identical for every schedule and rank
 * count. The amplitude is a fixed scale (a deck's noise_amplitude), not a differentiated
 * parameter: put a differentiable amplitude into g. */

/* Sets the noise of the problem: `seed` (the Philox key), `amplitude` (finite; 1 by default)
 * and `refine` (R >= 1; 1 by default). RW_ERR_ARG for a bad amplitude or R. Not collective,
 * but every rank must set the same values. */
int rw_problem_set_noise(rw_problem prob, uint64_t seed, double amplitude, long refine);
void rw_problem_get_noise(rw_problem prob, uint64_t *seed, double *amplitude, long *refine);
/* 1 when the problem has a diffusion term (an SDE). */
int rw_problem_has_noise(rw_problem prob);
/* The global index of this rank's first entry under the default block mapping (the sum of
 * the lower ranks' local lengths, computed at creation). */
sunindextype rw_problem_noise_offset(rw_problem prob);
/* dW = the increment of step n of size h (formula above). `work` is a vector like the state,
 * used when R > 1 (may be NULL when R = 1). Not collective. */
int rw_problem_noise_increment(rw_problem prob, long n, double h, N_Vector dW, N_Vector work);

/* The drivers' solve brackets (ops solve_begin / solve_end; no-ops without them). begin is
 * collective. */
int rw_problem_solve_begin(rw_problem prob);
void rw_problem_solve_end(rw_problem prob);
/* The drivers' side of ops params_defer / params_flush (no-ops without them; a partnered
 * problem passes them to its inner one). The backward sweep defers its pbar, flushes before
 * anything reads or copies it, and ends with a flush and rw_problem_params_defer(prob, NULL)
 * (also when it fails). Not collective. */
int rw_problem_params_defer(rw_problem prob, double *pbar);
int rw_problem_params_flush(rw_problem prob);
/* Checked dispatchers of the diffusion ops (RW_ERR_NOT_IMPLEMENTED when absent). The VJP
 * passes out_p only when the parameters are differentiated (rw_problem_set_active). */
int rw_problem_diffusion(rw_problem prob, double t, N_Vector y, N_Vector g);
int rw_problem_diffusion_vjp(rw_problem prob, double t, N_Vector y, N_Vector w, N_Vector out_y,
                             double *out_p);

/* Counters of callback evaluations since creation (or the last reset). */
typedef struct {
  long rhs, vjp_y, vjp_p, jvp, running, running_grad;
  long diffusion, diffusion_vjp, noise; /* noise: normal vectors drawn (R per increment) */
} rw_problem_counts;
void rw_problem_get_counts(rw_problem prob, rw_problem_counts *c);
void rw_problem_reset_counts(rw_problem prob);

#ifdef __cplusplus
}
#endif
#endif
