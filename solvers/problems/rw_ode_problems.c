/* Van der Pol and Lotka-Volterra ensembles (see rw_ode_problems.h). Each member's field,
 * state VJP, parameter VJP and JVP are written out by hand from the Jacobians below; the
 * dot-product tests check each against finite differences. */
#include "rewind/rw_ode_problems.h"

#include <stdio.h>
#include <string.h>

typedef enum { RW_VDP, RW_LV } rw_ode_kind;

typedef struct {
  rw_ode_kind kind;
  long nloc, offset;
  double y0[2], spread, target[2], wT, wR;
} rw_ode;

/* f for one member. */
static void ode_f(rw_ode_kind k, const double *p, const double *u, double *f)
{
  double x = u[0], y = u[1];
  if (k == RW_VDP) {
    f[0] = y;
    f[1] = p[0] * (1.0 - x * x) * y - x;
  } else {
    f[0] = p[0] * x - p[1] * x * y;
    f[1] = p[3] * x * y - p[2] * y;
  }
}

/* Jacobian df/du for one member, row-major 2x2.
 * VdP: [[0, 1], [-2 mu x v - 1, mu (1 - x^2)]]
 * LV:  [[alpha - beta y, -beta x], [delta y, delta x - gamma]] */
static void ode_jac(rw_ode_kind k, const double *p, const double *u, double J[4])
{
  double x = u[0], y = u[1];
  if (k == RW_VDP) {
    J[0] = 0.0;
    J[1] = 1.0;
    J[2] = -2.0 * p[0] * x * y - 1.0;
    J[3] = p[0] * (1.0 - x * x);
  } else {
    J[0] = p[0] - p[1] * y;
    J[1] = -p[1] * x;
    J[2] = p[3] * y;
    J[3] = p[3] * x - p[2];
  }
}

/* df/dp for one member, row-major 2 x np. */
static int ode_np(rw_ode_kind k) { return k == RW_VDP ? 1 : 4; }
static void ode_dfdp(rw_ode_kind k, const double *u, double *D)
{
  double x = u[0], y = u[1];
  if (k == RW_VDP) {
    D[0] = 0.0;
    D[1] = (1.0 - x * x) * y;
  } else { /* columns: alpha beta gamma delta */
    D[0] = x, D[1] = -x * y, D[2] = 0.0, D[3] = 0.0;
    D[4] = 0.0, D[5] = 0.0, D[6] = -y, D[7] = x * y;
  }
}

static int ode_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)t;
  rw_ode *o = c;
  const double *u = rw_vec_data(y);
  double *fo = rw_vec_data(f);
  for (long e = 0; e < o->nloc; e++)
    ode_f(o->kind, p, u + 2 * e, fo + 2 * e);
  return 0;
}

static int ode_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)t;
  rw_ode *o = c;
  const double *u = rw_vec_data(y), *wv = rw_vec_data(w);
  double *ov = rw_vec_data(out), J[4];
  for (long e = 0; e < o->nloc; e++) {
    ode_jac(o->kind, p, u + 2 * e, J);
    const double *we = wv + 2 * e;
    ov[2 * e] += J[0] * we[0] + J[2] * we[1];
    ov[2 * e + 1] += J[1] * we[0] + J[3] * we[1];
  }
  return 0;
}

static int ode_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)t, (void)p;
  rw_ode *o = c;
  int np = ode_np(o->kind);
  const double *u = rw_vec_data(y), *wv = rw_vec_data(w);
  double D[8];
  for (long e = 0; e < o->nloc; e++) {
    ode_dfdp(o->kind, u + 2 * e, D);
    for (int k = 0; k < np; k++)
      out[k] += D[k] * wv[2 * e] + D[np + k] * wv[2 * e + 1];
  }
  return 0;
}

static int ode_jvp(void *c, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
                   N_Vector out)
{
  (void)t;
  rw_ode *o = c;
  int np = ode_np(o->kind);
  const double *u = rw_vec_data(y), *vv = rw_vec_data(v);
  double *ov = rw_vec_data(out), J[4], D[8];
  for (long e = 0; e < o->nloc; e++) {
    ode_jac(o->kind, p, u + 2 * e, J);
    const double *ve = vv + 2 * e;
    ov[2 * e] = J[0] * ve[0] + J[1] * ve[1];
    ov[2 * e + 1] = J[2] * ve[0] + J[3] * ve[1];
    if (dp) {
      ode_dfdp(o->kind, u + 2 * e, D);
      for (int k = 0; k < np; k++) {
        ov[2 * e] += D[k] * dp[k];
        ov[2 * e + 1] += D[np + k] * dp[k];
      }
    }
  }
  return 0;
}

static int ode_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  (void)t, (void)p;
  rw_ode *o = c;
  const double *u = rw_vec_data(y);
  double s = 0.0;
  for (long e = 0; e < o->nloc; e++)
    for (int i = 0; i < 2; i++) {
      double d = u[2 * e + i] - o->target[i];
      s += d * d;
    }
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
  const double *u = rw_vec_data(y);
  double *g = rw_vec_data(gy);
  for (long e = 0; e < o->nloc; e++)
    for (int i = 0; i < 2; i++)
      g[2 * e + i] = o->wT * (u[2 * e + i] - o->target[i]);
  return 0;
}

static int ode_running(void *c, double t, N_Vector y, const double *p, double *r)
{
  (void)t, (void)p;
  rw_ode *o = c;
  const double *u = rw_vec_data(y);
  double s = 0.0;
  for (long i = 0; i < 2 * o->nloc; i++)
    s += u[i] * u[i];
  *r = 0.5 * o->wR * s;
  return 0;
}

static int ode_running_grad(void *c, double t, N_Vector y, const double *p, double w, N_Vector ry,
                            double *rp)
{
  (void)t, (void)p, (void)rp;
  rw_ode *o = c;
  const double *u = rw_vec_data(y);
  double *g = rw_vec_data(ry);
  for (long i = 0; i < 2 * o->nloc; i++)
    g[i] += w * o->wR * u[i];
  return 0;
}

static void ode_destroy(void *c) { rw_free(&c); }

const char *rw_ode_model_names(void) { return "vanderpol, lotkavolterra"; }

int rw_ode_problem_create(rw_context ctx, const rw_ode_config *cfg, rw_problem *out)
{
  static const char *vdp_names[] = {"mu"};
  static const char *lv_names[] = {"alpha", "beta", "gamma", "delta"};
  rw_ode *o = NULL;
  RW_CHECK(cfg && cfg->model && out, RW_ERR_ARG, "rw_ode_problem_create: NULL argument");
  rw_ode_kind kind;
  if (strcmp(cfg->model, "vanderpol") == 0)
    kind = RW_VDP;
  else if (strcmp(cfg->model, "lotkavolterra") == 0)
    kind = RW_LV;
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
  ops.destroy = ode_destroy;
  int ierr = rw_problem_create(ctx, cfg->model, &ops, o, 2 * o->nloc, ode_np(kind),
                               kind == RW_VDP ? vdp_names : lv_names, out);
  if (ierr) {
    rw_free(&o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  double *p = rw_problem_params(*out);
  if (kind == RW_VDP) {
    p[0] = 1.0;
  } else {
    p[0] = 1.5, p[1] = 1.0, p[2] = 3.0, p[3] = 1.0;
  }
  return 0;
}

int rw_ode_initial_state(rw_problem prob, N_Vector y)
{
  rw_ode *o = rw_problem_content(prob);
  double *u = rw_vec_data(y);
  for (long e = 0; e < o->nloc; e++) {
    u[2 * e] = o->y0[0] + (double)(o->offset + e) * o->spread;
    u[2 * e + 1] = o->y0[1];
  }
  return 0;
}

long rw_ode_member_offset(rw_problem prob) { return ((rw_ode *)rw_problem_content(prob))->offset; }
