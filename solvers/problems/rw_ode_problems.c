/* Van der Pol and Lotka-Volterra ensembles (see rw_ode_problems.h). Each member's field,
 * state VJP, parameter VJP and JVP are written out by hand from the Jacobians in
 * rw_dev_bodies.h (RW_BODY_ENS: the CPU loops and a device run the same body per member); the
 * dot-product tests check each against finite differences. */
#include "rewind/rw_ode_problems.h"

#include "rw_ensemble.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  int kind; /* RW_ENS_VDP or RW_ENS_LV */
  long nloc, offset;
  double y0[2], spread, target[2], wT, wR;
  rw_ens_work work; /* where the member loops run (the context's device or the CPU) */
} rw_ode;

/* The parameters: mu (Van der Pol), alpha beta gamma delta (Lotka-Volterra). */
static int ode_np(int kind) { return rw_ens_nterms(kind); }

/* A body over the members with the model's parameters. */
static rw_body_ens ode_body(const rw_ode *o, int mode, const double *p)
{
  rw_body_ens b;
  memset(&b, 0, sizeof b);
  b.kind = o->kind, b.mode = mode;
  if (p) memcpy(b.p, p, (size_t)ode_np(o->kind) * sizeof(double));
  return b;
}

static int ode_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)t;
  rw_ode *o = c;
  rw_body_ens b = ode_body(o, RW_ENS_RHS, p);
  b.u = rw_vec_data(y), b.out = rw_vec_data(f);
  return rw_ens_work_run(&o->work, &b);
}

static int ode_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)t;
  rw_ode *o = c;
  rw_body_ens b = ode_body(o, RW_ENS_VJPY, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(w), b.out = rw_vec_data(out);
  return rw_ens_work_run(&o->work, &b);
}

static int ode_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)t;
  rw_ode *o = c;
  rw_body_ens b = ode_body(o, RW_ENS_VJPP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(w), b.terms = o->work.terms;
  RW_CALL(rw_ens_work_run(&o->work, &b));
  return rw_ens_work_add_rows(&o->work, ode_np(o->kind), out);
}

static int ode_jvp(void *c, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
                   N_Vector out)
{
  (void)t;
  rw_ode *o = c;
  rw_body_ens b = ode_body(o, RW_ENS_JVP, p);
  b.u = rw_vec_data(y), b.w = rw_vec_data(v), b.out = rw_vec_data(out);
  if (dp) {
    b.has_dp = 1;
    memcpy(b.dp, dp, (size_t)ode_np(o->kind) * sizeof(double));
  }
  return rw_ens_work_run(&o->work, &b);
}

static int ode_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  (void)t, (void)p;
  rw_ode *o = c;
  rw_body_ens b = ode_body(o, RW_ENS_MISFIT, NULL);
  b.u = rw_vec_data(y), b.terms = o->work.terms;
  memcpy(b.target, o->target, sizeof b.target);
  double s = 0.0;
  RW_CALL(rw_ens_work_run(&o->work, &b));
  RW_CALL(rw_ens_work_total(&o->work, &s));
  s *= 0.5 * o->wT;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, rw_vec_comm(y)));
  *g = s;
  return 0;
}

static int ode_terminal_grad(void *c, double t, N_Vector y, const double *p, N_Vector gy,
                             double *gp)
{
  (void)t, (void)p, (void)gp;
  rw_ode *o = c;
  rw_body_ens b = ode_body(o, RW_ENS_TGRAD, NULL);
  b.u = rw_vec_data(y), b.out = rw_vec_data(gy), b.a = o->wT;
  memcpy(b.target, o->target, sizeof b.target);
  return rw_ens_work_run(&o->work, &b);
}

static int ode_running(void *c, double t, N_Vector y, const double *p, double *r)
{
  (void)t, (void)p;
  rw_ode *o = c;
  double s = 0.0;
  RW_CALL(rw_ens_work_sumsq(&o->work, rw_vec_data(y), 2 * o->nloc, &s));
  *r = 0.5 * o->wR * s;
  return 0;
}

static int ode_running_grad(void *c, double t, N_Vector y, const double *p, double w, N_Vector ry,
                            double *rp)
{
  (void)t, (void)p, (void)rp;
  rw_ode *o = c;
  rw_body_ens b = ode_body(o, RW_ENS_RGRAD, NULL);
  b.u = rw_vec_data(y), b.out = rw_vec_data(ry), b.a = w * o->wR;
  return rw_ens_work_run(&o->work, &b);
}

/* rw_problem_params_defer / _flush: on a device dJ/dp's sums stay there until the flush. */
static int ode_params_defer(void *c, double *pbar)
{
  return rw_pdefer_set(&((rw_ode *)c)->work.pd, pbar);
}
static int ode_params_flush(void *c) { return rw_pdefer_flush(&((rw_ode *)c)->work.pd); }

static void ode_destroy(void *c)
{
  rw_ode *o = c;
  if (o) rw_ens_work_free(&o->work);
  rw_free(&o);
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
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);
  RW_CALL(rw_calloc(1, sizeof *o, "ODE problem", &o));
  o->kind = kind;
  long E = cfg->ensemble, q = E / size, rem = E % size;
  o->nloc = q + (rank < rem ? 1 : 0);
  o->offset = rank * q + (rank < rem ? rank : rem);
  memcpy(o->y0, cfg->y0, sizeof o->y0);
  memcpy(o->target, cfg->target, sizeof o->target);
  o->spread = cfg->spread;
  o->wT = cfg->terminal_weight;
  o->wR = cfg->running_weight;
  int ierr = rw_ens_work_init(&o->work, ctx, o->nloc, ode_np(kind), ode_np(kind));
  if (ierr) {
    rw_free(&o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  rw_problem_ops ops = {0};
  ops.rhs = ode_rhs;
  ops.vjp_y = ode_vjp_y;
  ops.vjp_p = ode_vjp_p;
  ops.jvp = ode_jvp;
  if (o->wT != 0.0) {
    ops.terminal = ode_terminal;
    ops.terminal_grad = ode_terminal_grad;
  }
  if (o->wR != 0.0) {
    ops.running = ode_running;
    ops.running_grad = ode_running_grad;
  }
  ops.params_defer = ode_params_defer;
  ops.params_flush = ode_params_flush;
  ops.destroy = ode_destroy;
  ierr = rw_problem_create(ctx, cfg->model, &ops, o, 2 * o->nloc, ode_np(kind),
                           kind == RW_ENS_VDP ? vdp_names : lv_names, out);
  if (ierr) {
    ode_destroy(o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  if (o->work.dev) rw_problem_set_device_ready(*out);
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
  RW_CALL(rw_calloc(2 * (size_t)o->nloc + 1, sizeof(double), "initial state", &u));
  for (long e = 0; e < o->nloc; e++) {
    u[2 * e] = o->y0[0] + (double)(o->offset + e) * o->spread;
    u[2 * e + 1] = o->y0[1];
  }
  int ierr = rw_ens_work_set_state(y, u);
  rw_free(&u);
  return ierr;
}

long rw_ode_member_offset(rw_problem prob) { return ((rw_ode *)rw_problem_content(prob))->offset; }
