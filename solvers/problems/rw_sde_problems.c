/* Ornstein-Uhlenbeck and geometric Brownian motion ensembles (rw_sde_problems.h). Drift,
 * diffusion and their VJPs are elementwise; the dot-product and Taylor tests in
 * tests/unit/test_sde.c check them through the steppers' adjoints. */
#include "rewind/rw_sde_problems.h"

#include <stdio.h>
#include <string.h>

typedef enum { RW_OU, RW_GBM } rw_sde_model;

typedef struct {
  rw_sde_model model;
  long nloc, offset;
  double y0, spread, target, wT, wR;
} rw_sdep;

/* f = a y with a = -theta (ou) or mu (gbm): both drifts are linear in y and in p[0]. */
static double drift_coef(const rw_sdep *o, const double *p)
{
  return o->model == RW_OU ? -p[0] : p[0];
}

static int sde_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)t;
  rw_sdep *o = c;
  const double *u = rw_vec_data(y);
  double *fo = rw_vec_data(f), a = drift_coef(o, p);
  for (long i = 0; i < o->nloc; i++)
    fo[i] = a * u[i];
  return 0;
}

static int sde_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)t, (void)y;
  rw_sdep *o = c;
  const double *wv = rw_vec_data(w);
  double *ov = rw_vec_data(out), a = drift_coef(o, p);
  for (long i = 0; i < o->nloc; i++)
    ov[i] += a * wv[i];
  return 0;
}

static int sde_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)t, (void)p;
  rw_sdep *o = c;
  const double *u = rw_vec_data(y), *wv = rw_vec_data(w);
  double s = 0.0;
  for (long i = 0; i < o->nloc; i++)
    s += u[i] * wv[i];
  out[0] += o->model == RW_OU ? -s : s;
  return 0;
}

static int sde_jvp(void *c, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
                   N_Vector out)
{
  (void)t;
  rw_sdep *o = c;
  const double *u = rw_vec_data(y), *vv = rw_vec_data(v);
  double *ov = rw_vec_data(out), a = drift_coef(o, p);
  double da = dp ? (o->model == RW_OU ? -dp[0] : dp[0]) : 0.0;
  for (long i = 0; i < o->nloc; i++)
    ov[i] = a * vv[i] + da * u[i];
  return 0;
}

/* g = sigma (ou) or sigma y (gbm). */
static int sde_diffusion(void *c, double t, N_Vector y, const double *p, N_Vector g)
{
  (void)t;
  rw_sdep *o = c;
  const double *u = rw_vec_data(y);
  double *go = rw_vec_data(g);
  for (long i = 0; i < o->nloc; i++)
    go[i] = o->model == RW_OU ? p[1] : p[1] * u[i];
  return 0;
}

/* dg/dy = 0 (ou) or sigma (gbm); dg/dsigma = 1 (ou) or y (gbm). */
static int sde_diffusion_vjp(void *c, double t, N_Vector y, const double *p, N_Vector w,
                             N_Vector out_y, double *out_p)
{
  (void)t;
  rw_sdep *o = c;
  const double *u = rw_vec_data(y), *wv = rw_vec_data(w);
  double *ov = rw_vec_data(out_y), s = 0.0;
  if (o->model == RW_GBM) {
    for (long i = 0; i < o->nloc; i++) {
      ov[i] += p[1] * wv[i];
      s += u[i] * wv[i];
    }
  } else {
    for (long i = 0; i < o->nloc; i++)
      s += wv[i];
  }
  if (out_p) out_p[1] += s;
  return 0;
}

static int sde_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  (void)t, (void)p;
  rw_sdep *o = c;
  const double *u = rw_vec_data(y);
  double s = 0.0;
  for (long i = 0; i < o->nloc; i++) {
    double d = u[i] - o->target;
    s += d * d;
  }
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
  const double *u = rw_vec_data(y);
  double *g = rw_vec_data(gy);
  for (long i = 0; i < o->nloc; i++)
    g[i] = o->wT * (u[i] - o->target);
  return 0;
}

static int sde_running(void *c, double t, N_Vector y, const double *p, double *r)
{
  (void)t, (void)p;
  rw_sdep *o = c;
  const double *u = rw_vec_data(y);
  double s = 0.0;
  for (long i = 0; i < o->nloc; i++)
    s += u[i] * u[i];
  *r = 0.5 * o->wR * s;
  return 0;
}

static int sde_running_grad(void *c, double t, N_Vector y, const double *p, double w, N_Vector ry,
                            double *rp)
{
  (void)t, (void)p, (void)rp;
  rw_sdep *o = c;
  const double *u = rw_vec_data(y);
  double *g = rw_vec_data(ry);
  for (long i = 0; i < o->nloc; i++)
    g[i] += w * o->wR * u[i];
  return 0;
}

static void sde_destroy(void *c) { rw_free(&c); }

const char *rw_sde_model_names(void) { return "ou, gbm"; }

int rw_sde_problem_create(rw_context ctx, const rw_sde_config *cfg, rw_problem *out)
{
  static const char *ou_names[] = {"theta", "sigma"};
  static const char *gbm_names[] = {"mu", "sigma"};
  rw_sdep *o = NULL;
  RW_CHECK(cfg && cfg->model && out, RW_ERR_ARG, "rw_sde_problem_create: NULL argument");
  rw_sde_model model;
  if (strcmp(cfg->model, "ou") == 0)
    model = RW_OU;
  else if (strcmp(cfg->model, "gbm") == 0)
    model = RW_GBM;
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
  ops.destroy = sde_destroy;
  int ierr = rw_problem_create(ctx, cfg->model, &ops, o, o->nloc, 2,
                               model == RW_OU ? ou_names : gbm_names, out);
  if (ierr) {
    rw_free(&o);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  double *p = rw_problem_params(*out);
  p[0] = model == RW_OU ? 1.0 : 0.5;
  p[1] = 0.5;
  return 0;
}

int rw_sde_initial_state(rw_problem prob, N_Vector y)
{
  rw_sdep *o = rw_problem_content(prob);
  double *u = rw_vec_data(y);
  for (long i = 0; i < o->nloc; i++)
    u[i] = o->y0 + (double)(o->offset + i) * o->spread;
  return 0;
}

long rw_sde_path_offset(rw_problem prob) { return ((rw_sdep *)rw_problem_content(prob))->offset; }
