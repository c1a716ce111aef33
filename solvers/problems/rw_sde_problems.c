/* Ornstein-Uhlenbeck and geometric Brownian motion ensembles (rw_sde_problems.h). Drift,
 * diffusion and their VJPs are elementwise (RW_BODY_ENS in rw_dev_bodies.h: the CPU loops and a
 * device run the same body per path); the dot-product and Taylor tests in tests/unit/test_sde.c
 * check them through the steppers' adjoints. */
#include "rewind/rw_sde_problems.h"

#include "rw_ensemble.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  rw_ens_problem e; /* first: the shared ops take the content as it */
  double y0, spread;
} rw_sdep;

/* f = c y with c = -theta (ou) or mu (gbm): both drifts are linear in y and in p[0]. */
static int sde_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_RHS, p);
  b.u = rw_vec_data(y), b.out = rw_vec_data(f);
  return rw_ens_work_run(&o->e.work, &b);
}

static int sde_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)t, (void)y;
  rw_sdep *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_VJPY, p);
  b.w = rw_vec_data(w), b.out = rw_vec_data(out);
  return rw_ens_work_run(&o->e.work, &b);
}

static int sde_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_VJPP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(w), b.terms = o->e.work.terms;
  RW_CALL(rw_ens_work_run(&o->e.work, &b));
  return rw_ens_work_add(&o->e.work, 0, out, 0);
}

static int sde_jvp(void *c, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
                   N_Vector out)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_JVP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(v), b.out = rw_vec_data(out);
  if (dp) b.has_dp = 1, b.dp[0] = dp[0];
  return rw_ens_work_run(&o->e.work, &b);
}

/* g = sigma (ou) or sigma y (gbm). */
static int sde_diffusion(void *c, double t, N_Vector y, const double *p, N_Vector g)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_DIFF, p);
  b.u = rw_vec_data(y), b.out = rw_vec_data(g);
  return rw_ens_work_run(&o->e.work, &b);
}

/* dg/dy = 0 (ou) or sigma (gbm); dg/dsigma = 1 (ou) or y (gbm). */
static int sde_diffusion_vjp(void *c, double t, N_Vector y, const double *p, N_Vector w,
                             N_Vector out_y, double *out_p)
{
  (void)t;
  rw_sdep *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_DIFFVJP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(w), b.out = rw_vec_data(out_y);
  b.terms = o->e.work.terms;
  RW_CALL(rw_ens_work_run(&o->e.work, &b));
  if (out_p) RW_CALL(rw_ens_work_add(&o->e.work, 0, out_p, 1));
  return 0;
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
  RW_CALL(rw_calloc(1, sizeof *o, "SDE problem", &o));
  o->y0 = cfg->y0;
  o->spread = cfg->spread;
  int ierr = rw_ens_problem_init(&o->e, ctx, model, 1, 2, 1, cfg->paths, &cfg->target,
                                 cfg->terminal_weight, cfg->running_weight);
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
  rw_ens_problem_ops(&o->e, &ops);
  ierr = rw_problem_create(ctx, cfg->model, &ops, o, o->e.nloc, 2,
                           model == RW_ENS_OU ? ou_names : gbm_names, out);
  if (ierr) {
    ops.destroy(o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  if (o->e.work.dev) rw_problem_set_device_ready(*out);
  double *p = rw_problem_params(*out);
  p[0] = model == RW_ENS_OU ? 1.0 : 0.5;
  p[1] = 0.5;
  return 0;
}

int rw_sde_initial_state(rw_problem prob, N_Vector y)
{
  rw_sdep *o = rw_problem_content(prob);
  double *u = NULL;
  RW_CALL(rw_calloc((size_t)o->e.nloc + 1, sizeof(double), "initial state", &u));
  for (long i = 0; i < o->e.nloc; i++)
    u[i] = o->y0 + (double)(o->e.offset + i) * o->spread;
  int ierr = rw_ens_work_set_state(y, u);
  rw_free(&u);
  return ierr;
}

long rw_sde_path_offset(rw_problem prob) { return ((rw_sdep *)rw_problem_content(prob))->e.offset; }
