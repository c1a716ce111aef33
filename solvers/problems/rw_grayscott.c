/* Gray-Scott reaction-diffusion (see rw_grayscott.h).
 *
 * Model: Pearson, Science 261 (1993). Set-up (domain, grid, parameters, initial state, the
 * node of the point objective): PETSc's TSAdjoint tutorial
 * src/ts/tutorials/advection-diffusion-reaction/ex5adj.c. The code is our own.
 *
 * Per node, with y = (u, v), w = (w_u, w_v) and lap the 5/7-point Laplacian (1/h^2 scaled):
 *   f_u = D_u lap(u) - u v^2 + gamma (1 - u)
 *   f_v = D_v lap(v) + u v^2 - (gamma + kappa) v
 * Reaction Jacobian R = [[-v^2 - gamma, -2 u v], [v^2, 2 u v - gamma - kappa]] (rows f_u, f_v;
 * columns u, v), and df/dp columns:
 *   D_u: (lap u, 0),  D_v: (0, lap v),  gamma: (1 - u, -v),  kappa: (0, -v).
 * The state VJP applies R^T per node and the transpose of the Laplacian as a scatter: each
 * owned node adds D w / h^2 to its neighbours (ghosts included) and -2 dim D w / h^2 to
 * itself in a zeroed ghosted array; rw_grid_exchange_adjoint then adds the ghost entries to
 * the nodes they copy (on whichever rank owns them). No symmetry of the stencil is used. */
#include "rewind/rw_grayscott.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  rw_grid grid;
  int dim;
  long n;
  double h, ih2, vol; /* spacing, 1/h^2, h^dim (the quadrature weight of one node) */
  rw_gs_objective obj;
  long point[3];
  long pidx; /* this rank's local index of the point node, -1 when another rank owns it */
  long start[3], cnt[3], gn[3];
  size_t glen, sy, sz; /* ghosted length; strides of y and z in the ghosted array */
  double *gy, *gv, *gadj;
  const double *p;   /* parameters of the current call (kernel argument) */
  const double *dp;  /* jvp: parameter direction (may be NULL) */
  const double *gyk; /* jvp: the ghosted state (the kernel's own array is the direction) */
} rw_gs;

static const char *const rw_gs_param_names[] = {"D_u", "D_v", "gamma", "kappa"};

void rw_gs_config_default(rw_gs_config *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->dim = 2;
  cfg->n = 128;
  cfg->length = 2.5;
  cfg->objective = RW_GS_POINT;
  cfg->point[0] = cfg->point[1] = cfg->point[2] = -1;
}

const char *rw_gs_objective_names(void) { return "point, u2"; }

int rw_gs_objective_from_name(const char *name, rw_gs_objective *obj)
{
  RW_CHECK(name && obj, RW_ERR_ARG, "rw_gs_objective_from_name: NULL argument");
  if (strcmp(name, "point") == 0)
    *obj = RW_GS_POINT;
  else if (strcmp(name, "u2") == 0)
    *obj = RW_GS_U2;
  else
    return RW_ERROR(RW_ERR_ARG, "unknown Gray-Scott objective '%s'; known objectives: %s", name,
                    rw_gs_objective_names());
  return 0;
}

/* Laplacian (times 1/h^2) of the component at ghosted index x. The same expression, in the
 * same order, for every node whatever the decomposition: the forward state is bitwise
 * independent of the rank count. */
static inline double gs_lap(const rw_gs *s, const double *a, size_t x)
{
  double t = a[x - 2] + a[x + 2] + a[x - s->sy] + a[x + s->sy];
  if (s->dim == 3) t += a[x - s->sz] + a[x + s->sz];
  return (t - 2.0 * s->dim * a[x]) * s->ih2;
}

static inline size_t gs_gx(const rw_gs *s, long i, long j, long k)
{
  return rw_grid_gidx(s->gn, 1, s->dim, i, j, k, 2, 0);
}

static inline size_t gs_ox(const rw_gs *s, long i, long j, long k)
{
  return (size_t)(((k * s->cnt[1] + j) * s->cnt[0] + i) * 2);
}

/* f on the box [lo, hi): gv is the ghosted state. */
static void gs_rhs_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                          const long hi[3])
{
  const rw_gs *s = kc;
  const double Du = s->p[0], Dv = s->p[1], ga = s->p[2], ka = s->p[3];
  (void)g;
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++)
      for (long i = lo[0]; i < hi[0]; i++) {
        size_t x = gs_gx(s, i, j, k), o = gs_ox(s, i, j, k);
        double u = gv[x], v = gv[x + 1], uvv = u * v * v;
        out[o] = Du * gs_lap(s, gv, x) - uvv + ga * (1.0 - u);
        out[o + 1] = Dv * gs_lap(s, gv, x + 1) + uvv - (ga + ka) * v;
      }
}

/* (df/dy) d + (df/dp) dp on the box: gv is the ghosted direction d, s->gyk the ghosted
 * state. */
static void gs_jvp_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                          const long hi[3])
{
  const rw_gs *s = kc;
  const double Du = s->p[0], Dv = s->p[1], ga = s->p[2], ka = s->p[3];
  const double *gy = s->gyk, *dp = s->dp;
  (void)g;
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++)
      for (long i = lo[0]; i < hi[0]; i++) {
        size_t x = gs_gx(s, i, j, k), o = gs_ox(s, i, j, k);
        double u = gy[x], v = gy[x + 1], a = gv[x], b = gv[x + 1];
        double fu = Du * gs_lap(s, gv, x) - (v * v + ga) * a - 2.0 * u * v * b;
        double fv = Dv * gs_lap(s, gv, x + 1) + v * v * a + (2.0 * u * v - ga - ka) * b;
        if (dp) {
          fu += dp[0] * gs_lap(s, gy, x) + dp[2] * (1.0 - u);
          fv += dp[1] * gs_lap(s, gy, x + 1) - (dp[2] + dp[3]) * v;
        }
        out[o] = fu;
        out[o + 1] = fv;
      }
}

static int gs_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  rw_gs *s = c;
  (void)t;
  s->p = p;
  RW_CALL(rw_grid_apply(s->grid, y, s->gy, f, gs_rhs_kernel, s));
  return 0;
}

static int gs_jvp(void *c, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
                  N_Vector out)
{
  rw_gs *s = c;
  (void)t;
  RW_CALL(rw_grid_exchange_begin(s->grid, y, s->gy));
  RW_CALL(rw_grid_exchange_end(s->grid, s->gy));
  s->p = p, s->dp = dp, s->gyk = s->gy;
  RW_CALL(rw_grid_apply(s->grid, v, s->gv, out, gs_jvp_kernel, s));
  s->dp = NULL, s->gyk = NULL;
  return 0;
}

/* out += (df/dy)^T w. The reaction part is local to each node; the diffusion part is the
 * transposed stencil scattered into s->gadj (zeroed, ghosts included), whose ghost entries
 * rw_grid_exchange_adjoint returns to their owners. Collective (neighbours). */
static int gs_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  rw_gs *s = c;
  (void)t;
  const double Du = p[0], Dv = p[1], ga = p[2], ka = p[3], nd = 2.0 * s->dim;
  const double *yd = rw_vec_data(y), *wd = rw_vec_data(w);
  double *adj = s->gadj;
  const size_t off[3] = {2, s->sy, s->sz};
  memset(adj, 0, s->glen * sizeof(double));
  for (long k = 0; k < s->cnt[2]; k++)
    for (long j = 0; j < s->cnt[1]; j++)
      for (long i = 0; i < s->cnt[0]; i++) {
        size_t x = gs_gx(s, i, j, k), o = gs_ox(s, i, j, k);
        double u = yd[o], v = yd[o + 1], wu = wd[o], wv = wd[o + 1];
        /* R^T w */
        double ru = -(v * v + ga) * wu + v * v * wv;
        double rv = -2.0 * u * v * wu + (2.0 * u * v - ga - ka) * wv;
        /* L^T (D w): node x entered f at itself (-2 dim / h^2) and at each neighbour (1/h^2). */
        double su = Du * wu * s->ih2, sv = Dv * wv * s->ih2;
        adj[x] += ru - nd * su;
        adj[x + 1] += rv - nd * sv;
        for (int d = 0; d < s->dim; d++) {
          adj[x - off[d]] += su;
          adj[x - off[d] + 1] += sv;
          adj[x + off[d]] += su;
          adj[x + off[d] + 1] += sv;
        }
      }
  RW_CALL(rw_grid_exchange_adjoint(s->grid, adj, out));
  return 0;
}

/* out[k] += sum over owned nodes of w . df/dp_k. Needs lap(y): collective (neighbours). */
static int gs_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  rw_gs *s = c;
  (void)t, (void)p;
  const double *wd = rw_vec_data(w), *gy = s->gy;
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  RW_CALL(rw_grid_exchange_begin(s->grid, y, s->gy));
  RW_CALL(rw_grid_exchange_end(s->grid, s->gy));
  for (long k = 0; k < s->cnt[2]; k++)
    for (long j = 0; j < s->cnt[1]; j++)
      for (long i = 0; i < s->cnt[0]; i++) {
        size_t x = gs_gx(s, i, j, k), o = gs_ox(s, i, j, k);
        double u = gy[x], v = gy[x + 1], wu = wd[o], wv = wd[o + 1];
        acc[0] += wu * gs_lap(s, gy, x);
        acc[1] += wv * gs_lap(s, gy, x + 1);
        acc[2] += wu * (1.0 - u) - wv * v;
        acc[3] -= wv * v;
      }
  for (int k = 0; k < 4; k++)
    out[k] += acc[k];
  return 0;
}

static int gs_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  rw_gs *s = c;
  (void)t, (void)p;
  const double *yd = rw_vec_data(y);
  double val = 0.0;
  if (s->obj == RW_GS_POINT) {
    if (s->pidx >= 0) val = yd[s->pidx] + yd[s->pidx + 1];
  } else {
    sunindextype n = rw_vec_local_length(y);
    for (sunindextype m = 0; m < n; m += 2)
      val += yd[m] * yd[m];
  }
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &val, 1, MPI_DOUBLE, MPI_SUM,
                            rw_context_comm(rw_grid_context(s->grid))));
  *g = s->obj == RW_GS_POINT ? val : s->vol * val;
  return 0;
}

static int gs_terminal_grad(void *c, double t, N_Vector y, const double *p, N_Vector gy, double *gp)
{
  rw_gs *s = c;
  (void)t, (void)p, (void)gp; /* J does not depend on the parameters */
  const double *yd = rw_vec_data(y);
  double *g = rw_vec_data(gy);
  sunindextype n = rw_vec_local_length(y);
  if (s->obj == RW_GS_POINT) {
    memset(g, 0, (size_t)n * sizeof(double));
    if (s->pidx >= 0) g[s->pidx] = g[s->pidx + 1] = 1.0;
  } else {
    for (sunindextype m = 0; m < n; m += 2) {
      g[m] = 2.0 * s->vol * yd[m];
      g[m + 1] = 0.0;
    }
  }
  return 0;
}

static void gs_destroy(void *c)
{
  rw_gs *s = c;
  if (!s) return;
  rw_free(&s->gy);
  rw_free(&s->gv);
  rw_free(&s->gadj);
  rw_grid_destroy(&s->grid);
  rw_free(&s);
}

int rw_gs_problem_create(rw_context ctx, const rw_gs_config *cfg, rw_problem *out)
{
  int ierr = 0;
  rw_gs *s = NULL;
  RW_CHECK(ctx && cfg && out, RW_ERR_ARG, "rw_gs_problem_create: NULL argument");
  *out = NULL;
  RW_CHECK(cfg->dim == 2 || cfg->dim == 3, RW_ERR_ARG,
           "Gray-Scott: dimension %d is not supported (2 or 3)", cfg->dim);
  RW_CHECK(cfg->n >= 4, RW_ERR_ARG, "Gray-Scott: N = %ld nodes per dimension; need N >= 4", cfg->n);
  RW_CHECK(isfinite(cfg->length) && cfg->length > 0.0, RW_ERR_ARG,
           "Gray-Scott: domain side L = %g must be > 0", cfg->length);
  RW_CALL(rw_calloc(1, sizeof *s, "Gray-Scott problem", &s));
  s->dim = cfg->dim;
  s->n = cfg->n;
  s->obj = cfg->objective;
  for (int d = 0; d < 3; d++) {
    long q = d < cfg->dim ? (cfg->point[d] < 0 ? cfg->n / 2 - 1 : cfg->point[d]) : 0;
    RW_CHECK_GOTO(q < (d < cfg->dim ? cfg->n : 1), RW_ERR_ARG,
                  "Gray-Scott: point objective node index %ld (dimension %d) is outside the "
                  "grid 0..%ld",
                  q, d, cfg->n - 1);
    s->point[d] = q;
  }
  rw_grid_config gc;
  memset(&gc, 0, sizeof gc);
  gc.dim = cfg->dim;
  gc.ncomp = 2;
  gc.ghost = 1;
  for (int d = 0; d < 3; d++) {
    gc.n[d] = d < cfg->dim ? cfg->n : 1;
    gc.lo[d] = 0.0;
    gc.hi[d] = cfg->length;
    gc.bc[d] = RW_BC_PERIODIC;
  }
  RW_TRY(rw_grid_create(ctx, &gc, &s->grid));
  double h[3];
  rw_grid_spacing(s->grid, h);
  s->h = h[0];
  s->ih2 = 1.0 / (s->h * s->h);
  s->vol = cfg->dim == 3 ? s->h * s->h * s->h : s->h * s->h;
  rw_grid_local_box(s->grid, s->start, s->cnt);
  rw_grid_ghosted_dims(s->grid, s->gn);
  s->glen = rw_grid_ghosted_length(s->grid);
  s->sy = (size_t)(2 * s->gn[0]);
  s->sz = (size_t)(2 * s->gn[0] * s->gn[1]);
  s->pidx = rw_grid_local_index(s->grid, s->point[0], s->point[1], s->point[2]);
  RW_TRY(rw_calloc(s->glen, sizeof(double), "Gray-Scott ghosted state", &s->gy));
  RW_TRY(rw_calloc(s->glen, sizeof(double), "Gray-Scott ghosted direction", &s->gv));
  RW_TRY(rw_calloc(s->glen, sizeof(double), "Gray-Scott ghosted adjoint", &s->gadj));

  rw_problem_ops ops;
  memset(&ops, 0, sizeof ops);
  ops.rhs = gs_rhs;
  ops.vjp_y = gs_vjp_y;
  ops.vjp_p = gs_vjp_p;
  ops.jvp = gs_jvp;
  ops.terminal = gs_terminal;
  ops.terminal_grad = gs_terminal_grad;
  ops.destroy = gs_destroy;
  RW_TRY(rw_problem_create(ctx, "grayscott", &ops, s, rw_grid_local_length(s->grid), 4,
                           rw_gs_param_names, out));
  s = NULL; /* owned by the problem now */
  double *p = rw_problem_params(*out);
  p[0] = 8e-5, p[1] = 4e-5, p[2] = 0.024, p[3] = 0.06;
cleanup:
  gs_destroy(s);
  return ierr;
}

static rw_gs *gs_content(rw_problem prob)
{
  if (!prob || strcmp(rw_problem_name(prob), "grayscott") != 0) return NULL;
  return rw_problem_content(prob);
}

rw_grid rw_gs_grid(rw_problem prob)
{
  rw_gs *s = gs_content(prob);
  return s ? s->grid : NULL;
}

void rw_gs_point(rw_problem prob, long node[3])
{
  rw_gs *s = gs_content(prob);
  for (int d = 0; d < 3; d++)
    node[d] = s ? s->point[d] : -1;
}

/* v = 0.25 prod_d sin^2(4 pi x_d) inside [1, 1.5]^dim, else 0; u = 1 - 2 v (ex5adj). */
int rw_gs_initial_state(rw_problem prob, N_Vector y)
{
  rw_gs *s = gs_content(prob);
  RW_CHECK(s, RW_ERR_ARG, "rw_gs_initial_state: not a Gray-Scott problem");
  RW_CHECK(rw_vec_local_length(y) == rw_grid_local_length(s->grid), RW_ERR_ARG,
           "rw_gs_initial_state: vector has %ld local entries, the grid %ld",
           (long)rw_vec_local_length(y), (long)rw_grid_local_length(s->grid));
  double *yd = rw_vec_data(y);
  const double pi = 3.14159265358979323846;
  for (long k = 0; k < s->cnt[2]; k++)
    for (long j = 0; j < s->cnt[1]; j++)
      for (long i = 0; i < s->cnt[0]; i++) {
        double x[3] = {(double)(s->start[0] + i) * s->h, (double)(s->start[1] + j) * s->h,
                       (double)(s->start[2] + k) * s->h};
        double v = 0.25;
        for (int d = 0; d < s->dim; d++) {
          if (x[d] < 1.0 || x[d] > 1.5) {
            v = 0.0;
            break;
          }
          double sn = sin(4.0 * pi * x[d]);
          v *= sn * sn;
        }
        size_t o = gs_ox(s, i, j, k);
        yd[o] = 1.0 - 2.0 * v;
        yd[o + 1] = v;
      }
  return 0;
}

/* The bound on the Jacobian's spectrum along the negative real axis (see rw_grayscott.h):
 * 4 dim max(D_u, D_v) / h^2 + max(|gamma|, |gamma + kappa|), with the current parameters.
 *   prob  a Gray-Scott problem
 *   rho   out: the bound
 * Not collective. Returns RW_ERR_ARG for another problem. */
int rw_gs_eigen_bound(rw_problem prob, double *rho)
{
  rw_gs *s = gs_content(prob);
  RW_CHECK(s && rho, RW_ERR_ARG, "rw_gs_eigen_bound: not a Gray-Scott problem");
  const double *p = rw_problem_params(prob);
  double dmax = fmax(fabs(p[0]), fabs(p[1]));
  *rho = 4.0 * s->dim * dmax * s->ih2 + fmax(fabs(p[2]), fabs(p[2] + p[3]));
  return 0;
}
