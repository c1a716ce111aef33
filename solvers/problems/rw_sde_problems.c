/* Ornstein-Uhlenbeck and geometric Brownian motion ensembles (rw_sde_problems.h). Drift,
 * diffusion and their VJPs are elementwise (RW_BODY_ENS in rw_dev_bodies.h: the CPU loops and a
 * device run the same body per path); the dot-product and Taylor tests in tests/unit/test_sde.c
 * check them through the steppers' adjoints. */
#include "rewind/rw_sde_problems.h"

#include "rw_ensemble.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  int model; /* RW_ENS_OU or RW_ENS_GBM */
  long nloc, offset;
  double y0, spread, target, wT, wR;
  rw_ens_work work; /* where the path loops run (the context's device or the CPU) */
} rw_sdep;

/* A body over the paths with the parameters (theta or mu, sigma). */
static rw_body_ens sde_body(const rw_sdep *o, int mode, const double *p)
{
  rw_body_ens b;
  memset(&b, 0, sizeof b);
  b.kind = o->model, b.mode = mode;
  if (p) b.p[0] = p[0], b.p[1] = p[1];
  return b;
}

/* f = c y with c = -theta (ou) or mu (gbm): both drifts are linear in y and in p[0]. */
static int sde_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_RHS, p);
  b.u = rw_vec_data(y), b.out = rw_vec_data(f);
  return rw_ens_work_run(&o->work, &b);
}

static int sde_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)t, (void)y;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_VJPY, p);
  b.w = rw_vec_data(w), b.out = rw_vec_data(out);
  return rw_ens_work_run(&o->work, &b);
}

static int sde_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_VJPP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(w), b.terms = o->work.terms;
  RW_CALL(rw_ens_work_run(&o->work, &b));
  return rw_ens_work_add(&o->work, 0, out, 0);
}

static int sde_jvp(void *c, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
                   N_Vector out)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_JVP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(v), b.out = rw_vec_data(out);
  if (dp) b.has_dp = 1, b.dp[0] = dp[0];
  return rw_ens_work_run(&o->work, &b);
}

/* g = sigma (ou) or sigma y (gbm). */
static int sde_diffusion(void *c, double t, N_Vector y, const double *p, N_Vector g)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_DIFF, p);
  b.u = rw_vec_data(y), b.out = rw_vec_data(g);
  return rw_ens_work_run(&o->work, &b);
}

/* dg/dy = 0 (ou) or sigma (gbm); dg/dsigma = 1 (ou) or y (gbm). */
static int sde_diffusion_vjp(void *c, double t, N_Vector y, const double *p, N_Vector w,
                             N_Vector out_y, double *out_p)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_DIFFVJP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(w), b.out = rw_vec_data(out_y);
  b.terms = o->work.terms;
  RW_CALL(rw_ens_work_run(&o->work, &b));
  if (out_p) RW_CALL(rw_ens_work_add(&o->work, 0, out_p, 1));
  return 0;
}

static int sde_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  (void)t, (void)p;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_MISFIT, NULL);
  b.u = rw_vec_data(y), b.terms = o->work.terms, b.target[0] = o->target;
  double s = 0.0;
  RW_CALL(rw_ens_work_run(&o->work, &b));
  RW_CALL(rw_ens_work_total(&o->work, &s));
  s *= 0.5 * o->wT;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, rw_vec_comm(y)));
  *g = s;
  return 0;
}

static int sde_terminal_grad(void *c, double t, N_Vector y, const double *p, N_Vector gy,
                             double *gp)
{
  (void)t, (void)p, (void)gp;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_TGRAD, NULL);
  b.u = rw_vec_data(y), b.out = rw_vec_data(gy), b.a = o->wT, b.target[0] = o->target;
  return rw_ens_work_run(&o->work, &b);
}

static int sde_running(void *c, double t, N_Vector y, const double *p, double *r)
{
  (void)t, (void)p;
  rw_sdep *o = c;
  double s = 0.0;
  RW_CALL(rw_ens_work_sumsq(&o->work, rw_vec_data(y), o->nloc, &s));
  *r = 0.5 * o->wR * s;
  return 0;
}

static int sde_running_grad(void *c, double t, N_Vector y, const double *p, double w, N_Vector ry,
                            double *rp)
{
  (void)t, (void)p, (void)rp;
  rw_sdep *o = c;
  rw_body_ens b = sde_body(o, RW_ENS_RGRAD, NULL);
  b.u = rw_vec_data(y), b.out = rw_vec_data(ry), b.a = w * o->wR;
  return rw_ens_work_run(&o->work, &b);
}

/* rw_problem_params_defer / _flush: on a device dJ/dp's sums stay there until the flush. */
static int sde_params_defer(void *c, double *pbar)
{
  return rw_pdefer_set(&((rw_sdep *)c)->work.pd, pbar);
}
static int sde_params_flush(void *c) { return rw_pdefer_flush(&((rw_sdep *)c)->work.pd); }

static void sde_destroy(void *c)
{
  rw_sdep *o = c;
  if (o) rw_ens_work_free(&o->work);
  rw_free(&o);
}

const char *rw_sde_model_names(void) { return "ou, gbm"; }

int rw_sde_problem_create(rw_context ctx, const rw_sde_config *cfg, rw_problem *out)
{
  static const char *ou_names[] = {"theta", "sigma"};
  static const char *gbm_names[] = {"mu", "sigma"};
  rw_sdep *o = NULL;
  RW_CHECK(cfg && cfg->model && out, RW_ERR_ARG, "rw_sde_problem_create: NULL argument");
  int model;
  if (strcmp(cfg->model, "ou") == 0)
    model = RW_ENS_OU;
  else if (strcmp(cfg->model, "gbm") == 0)
    model = RW_ENS_GBM;
  else
    return RW_ERROR(RW_ERR_ARG, "unknown SDE model '%s'; known models: %s", cfg->model,
                    rw_sde_model_names());
  RW_CHECK(cfg->paths >= 1, RW_ERR_ARG, "number of paths %ld must be >= 1", cfg->paths);
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);
  RW_CALL(rw_calloc(1, sizeof *o, "SDE problem", &o));
  o->model = model;
  long M = cfg->paths, q = M / size, rem = M % size;
  o->nloc = q + (rank < rem ? 1 : 0);
  o->offset = rank * q + (rank < rem ? rank : rem);
  o->y0 = cfg->y0;
  o->spread = cfg->spread;
  o->target = cfg->target;
  o->wT = cfg->terminal_weight;
  o->wR = cfg->running_weight;
  int ierr = rw_ens_work_init(&o->work, ctx, o->nloc, 1, 2);
  if (ierr) {
    rw_free(&o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  rw_problem_ops ops = {0};
  ops.rhs = sde_rhs;
  ops.vjp_y = sde_vjp_y;
  ops.vjp_p = sde_vjp_p;
  ops.jvp = sde_jvp;
  ops.diffusion = sde_diffusion;
  ops.diffusion_vjp = sde_diffusion_vjp;
  if (o->wT != 0.0) {
    ops.terminal = sde_terminal;
    ops.terminal_grad = sde_terminal_grad;
  }
  if (o->wR != 0.0) {
    ops.running = sde_running;
    ops.running_grad = sde_running_grad;
  }
  ops.params_defer = sde_params_defer;
  ops.params_flush = sde_params_flush;
  ops.destroy = sde_destroy;
  ierr = rw_problem_create(ctx, cfg->model, &ops, o, o->nloc, 2,
                           model == RW_ENS_OU ? ou_names : gbm_names, out);
  if (ierr) {
    sde_destroy(o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  if (o->work.dev) rw_problem_set_device_ready(*out);
  double *p = rw_problem_params(*out);
  p[0] = model == RW_ENS_OU ? 1.0 : 0.5;
  p[1] = 0.5;
  return 0;
}

int rw_sde_initial_state(rw_problem prob, N_Vector y)
{
  rw_sdep *o = rw_problem_content(prob);
  double *u = NULL;
  RW_CALL(rw_calloc((size_t)o->nloc + 1, sizeof(double), "initial state", &u));
  for (long i = 0; i < o->nloc; i++)
    u[i] = o->y0 + (double)(o->offset + i) * o->spread;
  int ierr = rw_ens_work_set_state(y, u);
  rw_free(&u);
  return ierr;
}

long rw_sde_path_offset(rw_problem prob) { return ((rw_sdep *)rw_problem_content(prob))->offset; }
