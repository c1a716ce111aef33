/* Problem object: owns the parameter vector and names, dispatches to the ops table and
 * counts evaluations (the counts feed the run statistics and the recomputation tests). */
#include "rewind/rw_problem.h"

#include "rewind/rw_device.h"
#include "rewind/rw_grid.h"
#include "rewind/rw_rng.h"
#include "rw_dev_bodies.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct rw_problem_s {
  rw_context ctx;
  char name[64];
  rw_problem_ops ops;
  void *content;
  sunindextype local_n;
  int np;
  char (*pnames)[64];
  double *p;
  rw_problem_counts counts;
  N_Vector field, field_bar;
  char field_name[64];
  rw_problem inner;           /* partnered problem: field, counters and parameters are inner's */
  int frozen_p, frozen_field; /* not differentiated (rw_problem_set_active) */
  int device_ready;           /* ops run device kernels (rw_problem_set_device_ready) */
  N_Vector vwork;             /* rw_problem_set_vjp_by_comb: rw_problem_vjp's work vector */
  /* noise (rw_problem_set_noise) */
  uint64_t seed;
  double amplitude;
  long refine;
  sunindextype noise_offset; /* global index of this rank's first entry */
};

int rw_problem_create(rw_context ctx, const char *name, const rw_problem_ops *ops, void *content,
                      sunindextype local_n, int nparams, const char *const *param_names,
                      rw_problem *out)
{
  int ierr = 0;
  rw_problem prob = NULL;
  RW_CHECK(out && ops && ops->rhs, RW_ERR_ARG, "rw_problem_create: ops->rhs is required");
  RW_CHECK(nparams >= 0 && local_n >= 0, RW_ERR_ARG,
           "rw_problem_create: negative parameter count or length");
  *out = NULL;
  RW_CALL(rw_calloc(1, sizeof *prob, "problem", &prob));
  prob->ctx = ctx;
  prob->ops = *ops;
  prob->content = content;
  prob->local_n = local_n;
  prob->np = nparams;
  snprintf(prob->name, sizeof prob->name, "%s", name ? name : "problem");
  prob->amplitude = 1.0;
  prob->refine = 1;
  if (ctx) { /* the default noise mapping: this rank's block of the global index range */
    long long ln = (long long)local_n, off = 0;
    RW_TRY_MPI(MPI_Exscan(&ln, &off, 1, MPI_LONG_LONG, MPI_SUM, rw_context_comm(ctx)));
    prob->noise_offset = rw_context_rank(ctx) == 0 ? 0 : (sunindextype)off;
  }
  RW_TRY(rw_calloc((size_t)nparams + 1, sizeof *prob->p, "parameters", &prob->p));
  if (param_names) { /* named scalars; without names the parameters are one vector, theta */
    RW_TRY(rw_calloc((size_t)nparams + 1, sizeof *prob->pnames, "parameter names", &prob->pnames));
    for (int k = 0; k < nparams; k++)
      snprintf(prob->pnames[k], sizeof prob->pnames[k], "%s",
               param_names[k] ? param_names[k] : "p");
  }
  *out = prob;
  return 0;
cleanup:
  prob->content = NULL; /* the caller still owns content on failure */
  rw_problem_destroy(&prob);
  return ierr;
}

int rw_problem_destroy(rw_problem *pprob)
{
  if (!pprob || !*pprob) return 0;
  rw_problem prob = *pprob;
  if (prob->ops.destroy && prob->content) prob->ops.destroy(prob->content);
  rw_vec_destroy(&prob->field);
  rw_vec_destroy(&prob->field_bar);
  rw_vec_destroy(&prob->vwork);
  rw_free(&prob->pnames);
  if (!prob->inner) rw_free(&prob->p);
  rw_free(pprob);
  return 0;
}

const char *rw_problem_name(rw_problem prob) { return prob->name; }
rw_context rw_problem_context(rw_problem prob) { return prob->ctx; }
int rw_problem_nparams(rw_problem prob) { return prob->np; }
const char *rw_problem_param_name(rw_problem prob, int k)
{
  return (prob->pnames && k >= 0 && k < prob->np) ? prob->pnames[k] : NULL;
}
int rw_problem_params_named(rw_problem prob) { return prob->pnames != NULL; }
double *rw_problem_params(rw_problem prob) { return prob->p; }
int rw_problem_param_index(rw_problem prob, const char *name)
{
  for (int k = 0; prob->pnames && k < prob->np; k++)
    if (strcmp(prob->pnames[k], name) == 0) return k;
  return -1;
}
const rw_problem_ops *rw_problem_get_ops(rw_problem prob) { return &prob->ops; }
void *rw_problem_content(rw_problem prob) { return prob->content; }
sunindextype rw_problem_local_length(rw_problem prob) { return prob->local_n; }

void rw_problem_set_device_ready(rw_problem prob) { prob->device_ready = 1; }

int rw_problem_set_vjp_by_comb(rw_problem prob)
{
  RW_CHECK(prob->ops.vjp_comb, RW_ERR_ARG,
           "rw_problem_set_vjp_by_comb: problem '%s' has no vjp_comb op", prob->name);
  if (!prob->vwork) RW_CALL(rw_problem_new_state(prob, &prob->vwork));
  return 0;
}

int rw_problem_new_state(rw_problem prob, N_Vector *out)
{
  RW_CALL(rw_vec_create(prob->ctx, prob->local_n, out));
  return 0;
}

/* A problem op, run with host access to an emulated device's memory (rw_device.h): the
 * problem's kernels are the part a GPU problem runs on the device. */
#define RW_OP_CALL(expr)                                                                           \
  do {                                                                                             \
    rw_device rw_op_dev_ = prob->device_ready ? NULL : rw_context_device(prob->ctx);               \
    rw_device_host_begin(rw_op_dev_);                                                              \
    int rw_op_ierr_ = (expr);                                                                      \
    rw_device_host_end(rw_op_dev_);                                                                \
    if (rw_op_ierr_) return rw_error_push(rw_op_ierr_, __func__, __FILE__, __LINE__);              \
  } while (0)

#define RW_NEED(op)                                                                                \
  RW_CHECK(prob->ops.op, RW_ERR_NOT_IMPLEMENTED, "problem '%s' does not provide " #op, prob->name)

int rw_problem_rhs(rw_problem prob, double t, N_Vector y, N_Vector f)
{
  prob->counts.rhs++;
  RW_OP_CALL(prob->ops.rhs(prob->content, t, y, prob->p, f));
  return 0;
}

int rw_problem_vjp_y(rw_problem prob, double t, N_Vector y, N_Vector w, N_Vector out)
{
  RW_NEED(vjp_y);
  prob->counts.vjp_y++;
  RW_OP_CALL(prob->ops.vjp_y(prob->content, t, y, prob->p, w, out));
  return 0;
}

void rw_problem_set_active(rw_problem prob, int params, int field)
{
  prob->frozen_p = !params;
  prob->frozen_field = !field;
  if (prob->inner) rw_problem_set_active(prob->inner, params, field);
}

int rw_problem_params_active(rw_problem prob) { return prob->np > 0 && !prob->frozen_p; }
int rw_problem_field_active(rw_problem prob)
{
  return rw_problem_field(prob) && !prob->frozen_field;
}

int rw_problem_check_adjoint(rw_problem prob)
{
  /* a partnered pair's steppers call the inner problem's ops; its costs mirror the inner's */
  if (prob->inner) return rw_problem_check_adjoint(prob->inner);
  const rw_problem_ops *o = &prob->ops;
  RW_CHECK(o->vjp_y || o->vjp || o->vjp_comb, RW_ERR_NOT_IMPLEMENTED,
           "problem '%s' provides no VJP in y (vjp_y, vjp or vjp_comb): an adjoint solve needs "
           "one",
           prob->name);
  RW_CHECK(!rw_problem_params_active(prob) || o->vjp_p || o->vjp || o->vjp_comb,
           RW_ERR_NOT_IMPLEMENTED,
           "problem '%s' has %d active parameters but provides no VJP in them (vjp_p, vjp or "
           "vjp_comb): provide one, or freeze them with rw_problem_set_active(prob, 0, ...)",
           prob->name, prob->np);
  RW_CHECK(!rw_problem_field_active(prob) || o->vjp_field || o->vjp_comb_field,
           RW_ERR_NOT_IMPLEMENTED,
           "problem '%s' has an active parameter field but provides no VJP in it (vjp_field or "
           "vjp_comb_field): provide one, or freeze it with rw_problem_set_active(prob, ..., 0)",
           prob->name);
  RW_CHECK(!o->terminal || o->terminal_grad, RW_ERR_NOT_IMPLEMENTED,
           "problem '%s' has a terminal cost but no terminal_grad", prob->name);
  RW_CHECK(!o->running || o->running_grad, RW_ERR_NOT_IMPLEMENTED,
           "problem '%s' has a running cost but no running_grad", prob->name);
  RW_CHECK(!o->diffusion || o->diffusion_vjp, RW_ERR_NOT_IMPLEMENTED,
           "problem '%s' has a diffusion term but no diffusion_vjp", prob->name);
  return 0;
}

int rw_problem_vjp_p(rw_problem prob, double t, N_Vector y, N_Vector w, double *out)
{
  if (prob->field && !prob->frozen_field) {
    RW_NEED(vjp_field);
    RW_OP_CALL(prob->ops.vjp_field(prob->content, t, y, prob->p, prob->field, w, prob->field_bar));
  }
  if (prob->np == 0 || prob->frozen_p) return 0;
  RW_NEED(vjp_p);
  prob->counts.vjp_p++;
  RW_OP_CALL(prob->ops.vjp_p(prob->content, t, y, prob->p, w, out));
  return 0;
}

int rw_problem_vjp(rw_problem prob, double t, N_Vector y, N_Vector w, N_Vector out_y, double *out_p)
{
  if (prob->vwork && !prob->ops.vjp &&
      (!prob->field || prob->frozen_field || prob->ops.vjp_comb_field)) {
    /* the problem's fused VJP with one vector (rw_problem_set_vjp_by_comb), then added */
    double one = 1.0;
    N_Vector W[1] = {w};
    RW_CALL(rw_problem_vjp_comb(prob, t, y, 1, &one, W, NULL, prob->vwork, out_p));
    N_VLinearSum(1.0, out_y, 1.0, prob->vwork, out_y);
    return 0;
  }
  if (!prob->ops.vjp) {
    RW_CALL(rw_problem_vjp_y(prob, t, y, w, out_y));
    return rw_problem_vjp_p(prob, t, y, w, out_p);
  }
  if (prob->field && !prob->frozen_field) {
    RW_NEED(vjp_field);
    RW_OP_CALL(prob->ops.vjp_field(prob->content, t, y, prob->p, prob->field, w, prob->field_bar));
  }
  prob->counts.vjp_y++;
  int active = prob->np > 0 && !prob->frozen_p;
  if (active) prob->counts.vjp_p++;
  RW_OP_CALL(prob->ops.vjp(prob->content, t, y, prob->p, w, out_y, active ? out_p : NULL));
  return 0;
}

int rw_problem_rhs_comb(rw_problem prob, double t, int n, const double *c, N_Vector *X,
                        N_Vector keep, N_Vector work, N_Vector f)
{
  RW_CHECK(n >= 1 && n <= RW_LINCOMB_MAX, RW_ERR_ARG,
           "rw_problem_rhs_comb: %d vectors; 1 to %d are supported", n, RW_LINCOMB_MAX);
  if (!prob->ops.rhs_comb) {
    N_Vector Y = keep ? keep : work;
    RW_CALL_SUNDIALS(N_VLinearCombination(n, (double *)c, X, Y));
    return rw_problem_rhs(prob, t, Y, f);
  }
  prob->counts.rhs++;
  RW_OP_CALL(prob->ops.rhs_comb(prob->content, t, prob->p, n, c, X, keep, f));
  return 0;
}

int rw_problem_has_step_wave(rw_problem prob) { return prob->ops.step_wave != NULL; }

int rw_problem_step_wave(rw_problem prob, const double *t, const rw_stage_plan *plan, N_Vector y,
                         N_Vector y_out, double *q, int *done)
{
  *done = 0;
  if (!prob->ops.step_wave) return 0;
  RW_OP_CALL(prob->ops.step_wave(prob->content, t, prob->p, plan, y, y_out, q, done));
  if (*done) prob->counts.rhs += plan->s - (plan->no_out ? 1 : 0);
  if (*done && q) prob->counts.running += plan->nb - 1;
  return 0;
}

int rw_problem_leapfrog_step(rw_problem prob, double t, double h2, int reverse, N_Vector y,
                             N_Vector y_out, int *done)
{
  *done = 0;
  if (!prob->ops.leapfrog_step) return 0;
  RW_OP_CALL(prob->ops.leapfrog_step(prob->content, t, prob->p, h2, reverse, y, y_out, done));
  if (*done) prob->counts.rhs++;
  return 0;
}

int rw_problem_has_adjoint_wave(rw_problem prob) { return prob->ops.adjoint_wave != NULL; }

int rw_problem_adjoint_wave(rw_problem prob, const double *t, const rw_stage_plan *plan,
                            const double *hb, N_Vector lambda, double *pbar, int *done)
{
  *done = 0;
  if (!prob->ops.adjoint_wave) return 0;
  const int active = prob->np > 0 && !prob->frozen_p;
  N_Vector fbar = prob->field && !prob->frozen_field ? prob->field_bar : NULL;
  RW_OP_CALL(prob->ops.adjoint_wave(prob->content, t, prob->p, plan, hb, lambda,
                                    active ? pbar : NULL, prob->field, fbar, done));
  if (!*done) return 0;
  prob->counts.vjp_y += plan->s;
  if (active) prob->counts.vjp_p += plan->s;
  for (int k = 0; prob->ops.running && k < plan->s; k++)
    if (hb[k] != 0.0) prob->counts.running_grad++;
  return 0;
}

int rw_problem_has_backward_wave(rw_problem prob) { return prob->ops.backward_wave != NULL; }

int rw_problem_backward_wave(rw_problem prob, const double *tf, const double *ta,
                             const rw_stage_plan *plan_f, N_Vector y_n, const rw_stage_plan *plan_a,
                             const double *hb, N_Vector lambda, double *pbar, int *done)
{
  *done = 0;
  if (!prob->ops.backward_wave) return 0;
  const int active = prob->np > 0 && !prob->frozen_p;
  N_Vector fbar = prob->field && !prob->frozen_field ? prob->field_bar : NULL;
  RW_OP_CALL(prob->ops.backward_wave(prob->content, tf, ta, prob->p, plan_f, y_n, plan_a, hb,
                                     lambda, active ? pbar : NULL, prob->field, fbar, done));
  if (!*done) return 0;
  prob->counts.rhs += plan_f->s - 1;
  prob->counts.vjp_y += plan_a->s;
  if (active) prob->counts.vjp_p += plan_a->s;
  for (int k = 0; prob->ops.running && k < plan_a->s; k++)
    if (hb[k] != 0.0) prob->counts.running_grad++;
  return 0;
}

int rw_problem_vjp_comb(rw_problem prob, double t, N_Vector y, int n, const double *c, N_Vector *W,
                        N_Vector work, N_Vector out_y, double *out_p)
{
  RW_CHECK(n >= 1 && n <= RW_LINCOMB_MAX, RW_ERR_ARG,
           "rw_problem_vjp_comb: %d vectors; 1 to %d are supported", n, RW_LINCOMB_MAX);
  if (!prob->ops.vjp_comb) {
    RW_CALL_SUNDIALS(N_VLinearCombination(n, (double *)c, W, work));
    N_VConst(0.0, out_y);
    return rw_problem_vjp(prob, t, y, work, out_y, out_p);
  }
  int active = prob->np > 0 && !prob->frozen_p;
  if (prob->field && !prob->frozen_field && prob->ops.vjp_comb_field) {
    prob->counts.vjp_y++;
    if (active) prob->counts.vjp_p++;
    RW_OP_CALL(prob->ops.vjp_comb_field(prob->content, t, y, prob->p, n, c, W, out_y,
                                        active ? out_p : NULL, prob->field, prob->field_bar));
    return 0;
  }
  if (prob->field && !prob->frozen_field) { /* the field's VJP needs w as a vector */
    RW_NEED(vjp_field);
    RW_CALL_SUNDIALS(N_VLinearCombination(n, (double *)c, W, work));
    RW_OP_CALL(
        prob->ops.vjp_field(prob->content, t, y, prob->p, prob->field, work, prob->field_bar));
  }
  prob->counts.vjp_y++;
  if (active) prob->counts.vjp_p++;
  RW_OP_CALL(
      prob->ops.vjp_comb(prob->content, t, y, prob->p, n, c, W, out_y, active ? out_p : NULL));
  return 0;
}

int rw_problem_set_field(rw_problem prob, const char *name, N_Vector field)
{
  RW_CHECK(field, RW_ERR_ARG, "rw_problem_set_field: NULL field");
  RW_CHECK(prob->ops.vjp_field, RW_ERR_NOT_IMPLEMENTED,
           "problem '%s' has no vjp_field op, so it cannot take a parameter field", prob->name);
  N_Vector bar = NULL;
  RW_CALL(rw_vec_clone(field, &bar));
  rw_vec_destroy(&prob->field);
  rw_vec_destroy(&prob->field_bar);
  prob->field = field;
  prob->field_bar = bar;
  snprintf(prob->field_name, sizeof prob->field_name, "%s", name ? name : "field");
  return 0;
}

N_Vector rw_problem_field(rw_problem prob)
{
  return prob->inner ? rw_problem_field(prob->inner) : prob->field;
}
const char *rw_problem_field_name(rw_problem prob)
{
  return prob->inner ? rw_problem_field_name(prob->inner) : prob->field_name;
}
N_Vector rw_problem_field_adjoint(rw_problem prob)
{
  return prob->inner ? rw_problem_field_adjoint(prob->inner) : prob->field_bar;
}

int rw_problem_jvp(rw_problem prob, double t, N_Vector y, N_Vector v, const double *dp,
                   N_Vector out)
{
  RW_NEED(jvp);
  prob->counts.jvp++;
  RW_OP_CALL(prob->ops.jvp(prob->content, t, y, prob->p, v, dp, out));
  return 0;
}

int rw_problem_terminal(rw_problem prob, double t, N_Vector y, double *g)
{
  *g = 0.0;
  if (!prob->ops.terminal) return 0;
  RW_OP_CALL(prob->ops.terminal(prob->content, t, y, prob->p, g));
  return 0;
}

int rw_problem_terminal_grad(rw_problem prob, double t, N_Vector y, N_Vector gy, double *gp)
{
  N_VConst(0.0, gy);
  if (!prob->ops.terminal) return 0;
  RW_NEED(terminal_grad);
  RW_OP_CALL(prob->ops.terminal_grad(prob->content, t, y, prob->p, gy, gp));
  return 0;
}

int rw_problem_running_local(rw_problem prob, double t, N_Vector y, double *r)
{
  *r = 0.0;
  if (!prob->ops.running) return 0;
  prob->counts.running++;
  RW_OP_CALL(prob->ops.running(prob->content, t, y, prob->p, r));
  return 0;
}

int rw_problem_running_grad(rw_problem prob, double t, N_Vector y, double w, N_Vector ry,
                            double *rp)
{
  if (!prob->ops.running) return 0;
  RW_NEED(running_grad);
  prob->counts.running_grad++;
  RW_OP_CALL(prob->ops.running_grad(prob->content, t, y, prob->p, w, ry, rp));
  return 0;
}

int rw_problem_has_running(rw_problem prob) { return prob->ops.running != NULL; }

int rw_problem_set_noise(rw_problem prob, uint64_t seed, double amplitude, long refine)
{
  RW_CHECK(isfinite(amplitude), RW_ERR_ARG, "problem '%s': noise amplitude %g must be finite",
           prob->name, amplitude);
  RW_CHECK(refine >= 1 && refine <= (1L << 20), RW_ERR_ARG,
           "problem '%s': noise refinement %ld must be between 1 and 2^20", prob->name, refine);
  prob->seed = seed;
  prob->amplitude = amplitude;
  prob->refine = refine;
  return 0;
}

void rw_problem_get_noise(rw_problem prob, uint64_t *seed, double *amplitude, long *refine)
{
  if (seed) *seed = prob->seed;
  if (amplitude) *amplitude = prob->amplitude;
  if (refine) *refine = prob->refine;
}

int rw_problem_has_noise(rw_problem prob) { return prob->ops.diffusion != NULL; }
sunindextype rw_problem_noise_offset(rw_problem prob) { return prob->noise_offset; }

int rw_noise_device_run(rw_device dev, rw_body_noise *b, uint64_t seed, uint64_t step, long n,
                        uint64_t index_end)
{
  uint32_t ctr[4];
  RW_CALL(rw_rng_counter(step, 0, 0, RW_RNG_STREAM_FORCING, ctr));
  RW_CHECK(index_end <= RW_RNG_INDEX_LIMIT, RW_ERR_ARG,
           "noise: global index %llu is past the noise counter's limit 2^49",
           (unsigned long long)index_end);
  b->seed = seed;
  b->c1hi = 0; /* stage 0 */
  b->c2 = (uint32_t)step;
  b->c3 = (uint32_t)(step >> 32) | ((uint32_t)RW_RNG_STREAM_FORCING << 16);
  if (n > 0) RW_CALL(rw_device_run(dev, RW_BODY_NOISE, b, sizeof *b, n, rw_body_host));
  return 0;
}

/* z = the normals of noise step m for this rank's entries. */
static int rw_problem_noise_fill(rw_problem prob, uint64_t m, N_Vector z)
{
  prob->counts.noise++;
  if (prob->ops.noise_fill) {
    RW_OP_CALL(prob->ops.noise_fill(prob->content, prob->seed, m, z));
    return 0;
  }
  rw_device dev = rw_vec_device(z);
  if (dev) { /* the same draws as a device body */
    rw_body_noise b;
    memset(&b, 0, sizeof b);
    long n = (long)rw_vec_local_length(z);
    b.mode = 0, b.first = (uint64_t)prob->noise_offset, b.out = rw_vec_data(z);
    RW_CALL(rw_noise_device_run(dev, &b, prob->seed, m, n, b.first + (uint64_t)n));
    return 0;
  }
  RW_CALL(rw_rng_normal_fill(prob->seed, m, 0, RW_RNG_STREAM_FORCING, (uint64_t)prob->noise_offset,
                             (size_t)rw_vec_local_length(z), rw_vec_data(z)));
  return 0;
}

int rw_problem_noise_increment(rw_problem prob, long n, double h, N_Vector dW, N_Vector work)
{
  RW_CHECK(n >= 0, RW_ERR_ARG,
           "problem '%s': the noise of a step needs its index (got %ld); the driver sets it with "
           "rw_stepper_set_step_index",
           prob->name, n);
  RW_CHECK(isfinite(h) && h > 0.0, RW_ERR_ARG, "problem '%s': noise of a step of size %g",
           prob->name, h);
  long R = prob->refine;
  RW_CHECK(R == 1 || work, RW_ERR_ARG, "rw_problem_noise_increment: refinement %ld needs `work`",
           R);
  RW_CHECK((uint64_t)n < RW_RNG_STEP_LIMIT / (uint64_t)R, RW_ERR_ARG,
           "problem '%s': step %ld with noise refinement %ld is past the generator's step range",
           prob->name, n, R);
  uint64_t m0 = (uint64_t)n * (uint64_t)R;
  RW_CALL(rw_problem_noise_fill(prob, m0, dW));
  for (long r = 1; r < R; r++) {
    RW_CALL(rw_problem_noise_fill(prob, m0 + (uint64_t)r, work));
    N_VLinearSum(1.0, dW, 1.0, work, dW);
  }
  N_VScale(prob->amplitude * sqrt(h / (double)R), dW, dW);
  return 0;
}

int rw_problem_diffusion(rw_problem prob, double t, N_Vector y, N_Vector g)
{
  RW_NEED(diffusion);
  prob->counts.diffusion++;
  RW_OP_CALL(prob->ops.diffusion(prob->content, t, y, prob->p, g));
  return 0;
}

int rw_problem_diffusion_vjp(rw_problem prob, double t, N_Vector y, N_Vector w, N_Vector out_y,
                             double *out_p)
{
  RW_NEED(diffusion_vjp);
  prob->counts.diffusion_vjp++;
  int active = prob->np > 0 && !prob->frozen_p;
  RW_OP_CALL(
      prob->ops.diffusion_vjp(prob->content, t, y, prob->p, w, out_y, active ? out_p : NULL));
  return 0;
}
int rw_problem_has_terminal(rw_problem prob) { return prob->ops.terminal != NULL; }

/* A partnered problem's evaluations are its inner problem's (the reversible Heun stepper calls
 * inner directly) plus its own. */
void rw_problem_get_counts(rw_problem prob, rw_problem_counts *c)
{
  *c = prob->counts;
  if (prob->inner) {
    rw_problem_counts ic;
    rw_problem_get_counts(prob->inner, &ic);
    c->rhs += ic.rhs, c->vjp_y += ic.vjp_y, c->vjp_p += ic.vjp_p, c->jvp += ic.jvp;
    c->running += ic.running, c->running_grad += ic.running_grad;
    c->diffusion += ic.diffusion, c->diffusion_vjp += ic.diffusion_vjp, c->noise += ic.noise;
  }
}
void rw_problem_reset_counts(rw_problem prob)
{
  memset(&prob->counts, 0, sizeof prob->counts);
  if (prob->inner) rw_problem_reset_counts(prob->inner);
}

/* --- Partnered problem (state (y, yhat)) ------------------------------------------------ */
typedef struct {
  rw_problem inner;
  N_Vector a, b; /* views on the two halves of an argument */
  N_Vector c, d; /* views on the two halves of a second argument */
} rw_partner;

static void rw_partner_point(const rw_partner *pc, N_Vector v, N_Vector lo, N_Vector hi)
{
  double *x = rw_vec_data(v);
  rw_vec_view_point(lo, x);
  rw_vec_view_point(hi, x + rw_vec_local_length(v) / 2);
  (void)pc;
}

static int rw_partner_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  rw_partner *pc = c;
  (void)p;
  rw_partner_point(pc, y, pc->a, pc->b);
  rw_partner_point(pc, f, pc->c, pc->d);
  RW_CALL(rw_problem_rhs(pc->inner, t, pc->b, pc->c));
  rw_vec_copy(pc->c, pc->d);
  return 0;
}

static int rw_partner_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  rw_partner *pc = c;
  (void)p;
  rw_partner_point(pc, y, pc->a, pc->b);
  RW_CALL(rw_problem_terminal(pc->inner, t, pc->a, g));
  return 0;
}

static int rw_partner_terminal_grad(void *c, double t, N_Vector y, const double *p, N_Vector gy,
                                    double *gp)
{
  rw_partner *pc = c;
  (void)p;
  rw_partner_point(pc, y, pc->a, pc->b);
  rw_partner_point(pc, gy, pc->c, pc->d);
  RW_CALL(rw_problem_terminal_grad(pc->inner, t, pc->a, pc->c, gp));
  N_VConst(0.0, pc->d);
  return 0;
}

static int rw_partner_running(void *c, double t, N_Vector y, const double *p, double *r)
{
  rw_partner *pc = c;
  (void)p;
  rw_partner_point(pc, y, pc->a, pc->b);
  RW_CALL(rw_problem_running_local(pc->inner, t, pc->b, r));
  return 0;
}

static int rw_partner_running_grad(void *c, double t, N_Vector y, const double *p, double w,
                                   N_Vector ry, double *rp)
{
  rw_partner *pc = c;
  (void)p;
  rw_partner_point(pc, y, pc->a, pc->b);
  rw_partner_point(pc, ry, pc->c, pc->d);
  RW_CALL(rw_problem_running_grad(pc->inner, t, pc->b, w, pc->d, rp));
  return 0;
}

static void rw_partner_destroy(void *c)
{
  rw_partner *pc = c;
  rw_vec_view_destroy(&pc->a);
  rw_vec_view_destroy(&pc->b);
  rw_vec_view_destroy(&pc->c);
  rw_vec_view_destroy(&pc->d);
  rw_free(&pc);
}

int rw_problem_create_partnered(rw_problem inner, rw_problem *out)
{
  int ierr = 0;
  rw_partner *pc = NULL;
  rw_problem prob = NULL;
  N_Vector tmpl = NULL;
  const char **names = NULL;
  RW_CHECK(inner && out, RW_ERR_ARG, "rw_problem_create_partnered: NULL argument");
  RW_CHECK(!inner->inner, RW_ERR_ARG, "problem '%s' is already partnered", inner->name);
  *out = NULL;
  RW_CALL(rw_calloc(1, sizeof *pc, "partnered problem", &pc));
  pc->inner = inner;
  RW_TRY(rw_problem_new_state(inner, &tmpl));
  RW_TRY(rw_vec_view_create(tmpl, &pc->a));
  RW_TRY(rw_vec_view_create(tmpl, &pc->b));
  RW_TRY(rw_vec_view_create(tmpl, &pc->c));
  RW_TRY(rw_vec_view_create(tmpl, &pc->d));
  if (inner->pnames) { /* named scalars keep their names; a vector theta stays unnamed */
    RW_TRY(rw_calloc((size_t)inner->np + 1, sizeof *names, "parameter names", &names));
    for (int k = 0; k < inner->np; k++)
      names[k] = inner->pnames[k];
  }
  rw_problem_ops ops = {.rhs = rw_partner_rhs, .destroy = rw_partner_destroy};
  if (inner->ops.terminal) {
    ops.terminal = rw_partner_terminal;
    ops.terminal_grad = rw_partner_terminal_grad;
  }
  if (inner->ops.running) {
    ops.running = rw_partner_running;
    ops.running_grad = rw_partner_running_grad;
  }
  char name[64];
  snprintf(name, sizeof name, "%.50s+partner", inner->name);
  RW_TRY(
      rw_problem_create(inner->ctx, name, &ops, pc, 2 * inner->local_n, inner->np, names, &prob));
  pc = NULL; /* owned by prob */
  rw_free(&prob->p);
  prob->p = inner->p;
  prob->inner = inner;
  /* its ops use views and vector operations only: device-ready when inner is */
  prob->device_ready = inner->device_ready;
  *out = prob;
cleanup:
  if (pc) rw_partner_destroy(pc);
  rw_vec_destroy(&tmpl);
  rw_free(&names);
  return ierr;
}

rw_problem rw_problem_partner_inner(rw_problem prob) { return prob->inner; }

int rw_problem_solve_begin(rw_problem prob)
{
  if (prob->ops.solve_begin) RW_OP_CALL(prob->ops.solve_begin(prob->content));
  return 0;
}

int rw_problem_params_defer(rw_problem prob, double *pbar)
{
  if (prob->inner) return rw_problem_params_defer(prob->inner, pbar);
  if (prob->ops.params_defer) RW_OP_CALL(prob->ops.params_defer(prob->content, pbar));
  return 0;
}

int rw_problem_params_flush(rw_problem prob)
{
  if (prob->inner) return rw_problem_params_flush(prob->inner);
  if (prob->ops.params_flush) RW_OP_CALL(prob->ops.params_flush(prob->content));
  return 0;
}

void rw_problem_solve_end(rw_problem prob)
{
  if (prob->ops.solve_end) {
    rw_device dev = prob->device_ready ? NULL : rw_context_device(prob->ctx);
    rw_device_host_begin(dev);
    prob->ops.solve_end(prob->content);
    rw_device_host_end(dev);
  }
}
