/* Van der Pol and Lotka-Volterra ensembles (see rw_ode_problems.h). Each member's field,
 * state VJP, parameter VJP and JVP are written out by hand from the Jacobians in
 * rw_dev_bodies.h (RW_BODY_ENS: the CPU loops and a device run the same body per member); the
 * dot-product tests check each against finite differences. */
#include "rewind/rw_ode_problems.h"

#include "rw_ensemble.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  rw_ens_problem e; /* first: the shared ops take the content as it */
  double y0[2], spread;
} rw_ode;

static int ode_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)t;
  rw_ode *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_RHS, p);
  b.u = rw_vec_data(y), b.out = rw_vec_data(f);
  return rw_ens_work_run(&o->e.work, &b);
}

static int ode_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)t;
  rw_ode *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_VJPY, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(w), b.out = rw_vec_data(out);
  return rw_ens_work_run(&o->e.work, &b);
}

static int ode_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)t;
  rw_ode *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_VJPP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(w), b.terms = o->e.work.terms;
  RW_CALL(rw_ens_work_run(&o->e.work, &b));
  return rw_ens_work_add_rows(&o->e.work, o->e.np, out);
}

static int ode_jvp(void *c, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
                   N_Vector out)
{
  (void)t;
  rw_ode *o = c;
  rw_body_ens b = rw_ens_body(&o->e, RW_ENS_JVP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(v), b.out = rw_vec_data(out);
  if (dp) {
    b.has_dp = 1;
    memcpy(b.dp, dp, (size_t)o->e.np * sizeof(double));
  }
  return rw_ens_work_run(&o->e.work, &b);
}

const char *rw_ode_model_names(void) { return "vanderpol, lotkavolterra"; }

int rw_ode_problem_create(rw_context ctx, const rw_ode_config *cfg, rw_problem *out)
{
  static const char *vdp_names[] = {"mu"};
  static const char *lv_names[] = {"alpha", "beta", "gamma", "delta"};
  rw_ode *o = NULL;
  RW_CHECK(cfg && cfg->model && out, RW_ERR_ARG, "rw_ode_problem_create: NULL argument");
  int kind;
  if (strcmp(cfg->model, "vanderpol") == 0)
    kind = RW_ENS_VDP;
  else if (strcmp(cfg->model, "lotkavolterra") == 0)
    kind = RW_ENS_LV;
  else
    return RW_ERROR(RW_ERR_ARG, "unknown ODE model '%s'; known models: %s", cfg->model,
                    rw_ode_model_names());
  RW_CHECK(cfg->ensemble >= 1, RW_ERR_ARG, "ensemble size %ld must be >= 1", cfg->ensemble);
  RW_CALL(rw_calloc(1, sizeof *o, "ODE problem", &o));
  memcpy(o->y0, cfg->y0, sizeof o->y0);
  o->spread = cfg->spread;
  int np = rw_ens_nterms(kind);
  int ierr = rw_ens_problem_init(&o->e, ctx, kind, 2, np, np, cfg->ensemble, cfg->target,
                                 cfg->terminal_weight, cfg->running_weight);
  if (ierr) {
    rw_free(&o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  rw_problem_ops ops = {0};
  ops.rhs = ode_rhs;
  ops.vjp_y = ode_vjp_y;
  ops.vjp_p = ode_vjp_p;
  ops.jvp = ode_jvp;
  rw_ens_problem_ops(&o->e, &ops);
  ierr = rw_problem_create(ctx, cfg->model, &ops, o, 2 * o->e.nloc, np,
                           kind == RW_ENS_VDP ? vdp_names : lv_names, out);
  if (ierr) {
    ops.destroy(o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  if (o->e.work.dev) rw_problem_set_device_ready(*out);
  double *p = rw_problem_params(*out);
  if (kind == RW_ENS_VDP) {
    p[0] = 1.0;
  } else {
    p[0] = 1.5, p[1] = 1.0, p[2] = 3.0, p[3] = 1.0;
  }
  return 0;
}

int rw_ode_initial_state(rw_problem prob, N_Vector y)
{
  rw_ode *o = rw_problem_content(prob);
  double *u = NULL;
  RW_CALL(rw_calloc(2 * (size_t)o->e.nloc + 1, sizeof(double), "initial state", &u));
  for (long e = 0; e < o->e.nloc; e++) {
    u[2 * e] = o->y0[0] + (double)(o->e.offset + e) * o->spread;
    u[2 * e + 1] = o->y0[1];
  }
  int ierr = rw_ens_work_set_state(y, u);
  rw_free(&u);
  return ierr;
}

long rw_ode_member_offset(rw_problem prob)
{
  return ((rw_ode *)rw_problem_content(prob))->e.offset;
}
