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
 * The state VJP applies R^T per node and the transpose of the Laplacian. The grid is periodic
 * and the stencil symmetric, so L^T = L: the transpose gathers the neighbours of w through a
 * halo exchange of w, exactly as the forward gathers y (no zeroed scatter array, no reverse
 * exchange), and each node's value is the same expression whatever the decomposition. */
#include "rewind/rw_grayscott.h"

#include "../../core/rw_device_impl.h"
#include "../rw_dev_bodies.h"
#include "rewind/rw_kernels.h"
#include "rewind/rw_rng.h"

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
  double *gy, *gv;
  const double *p;   /* parameters of the current call (kernel argument) */
  const double *dp;  /* jvp: parameter direction (may be NULL) */
  const double *gyk; /* jvp: the ghosted state (the kernel's own array is the direction) */
  const double *yk;  /* vjp: the owned state (the kernel's own array is the ghosted w) */
  int vadd;          /* vjp: 1 adds into the output, 0 overwrites it */
  double *pacc;      /* vjp: parameter VJP lane sums, a set of GS_ROWACC per owned row (k, j), NULL
                      * when not wanted */
  /* the lane sums per owned row: nrows rows, acc_sets sets (one per stage of an adjoint
   * wave), zero between calls (gs_rows_fold) */
  double *rowacc;
  long nrows;
  int acc_sets;
  rw_gs_noise noise; /* noisy species */
  int nnoisy;        /* number of noisy components per node (1 or 2) */
  double gscale;     /* h^(-dim/2): the diffusion coefficient of a noisy component */
  double *zrow;      /* one row of normals (cnt[0] doubles), when one species is noisy */
  /* on a device (rw_device.h): gy, gv and terms are device arrays, the kernels device bodies
   * (rw_dev_bodies.h) */
  rw_device dev;
  double *terms; /* 4 x nodes per-node parameter terms (also u^2 of the u2 objective) */
  rw_pdefer pd;  /* the parameter sums held on the device while the driver defers pbar */
  long nodes;
  int dev_err; /* first failure inside a kernel callback (which returns nothing) */
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

const char *rw_gs_noise_names(void) { return "uv, u, v"; }

int rw_gs_noise_from_name(const char *name, rw_gs_noise *noise)
{
  RW_CHECK(name && noise, RW_ERR_ARG, "rw_gs_noise_from_name: NULL argument");
  if (strcmp(name, "uv") == 0)
    *noise = RW_GS_NOISE_UV;
  else if (strcmp(name, "u") == 0)
    *noise = RW_GS_NOISE_U;
  else if (strcmp(name, "v") == 0)
    *noise = RW_GS_NOISE_V;
  else
    return RW_ERROR(RW_ERR_ARG, "unknown Gray-Scott noisy species '%s'; known: %s", name,
                    rw_gs_noise_names());
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

typedef struct {
  double Du, Dv, ga, gk, ih2, nd;
  size_t sy, sz;
} gs_coef;

static inline gs_coef gs_coefs(const rw_gs *s, const double *p)
{
  gs_coef k = {p[0], p[1], p[2], p[2] + p[3], s->ih2, 2.0 * s->dim, s->sy, s->sz};
  return k;
}

/* The parameter VJP by the symmetry of the periodic Laplacian: sum_x w_u (L u)(x) =
 * sum_x u (L w_u)(x), so with L w, which the state VJP gathers anyway, the four sums
 *   D_u: sum u (L w_u),  D_v: sum v (L w_v),  gamma: sum w_u (1 - u) - w_v v,  kappa: -sum w_v v
 * need neither a ghosted copy of y nor a pass of their own. Four sums are kept: S_Du, S_Dv,
 * S_g = sum w_u (1 - u) and S_k = sum w_v (0 - v); then gamma is S_g + S_k and kappa S_k. The
 * last two are one vector expression on the interleaved pairs, w * ((1, 0) - y), two operations
 * a vector where the combined gamma term took six (shuffles included): on Gray-Scott 512^2 the
 * sums had made the every-gradient adjoint step about 20 % dearer than the dJ/dy0 one. Each sum
 * is kept in GS_LANES lane partial sums (node m of a row block adds to lane m mod GS_LANES),
 * folded by a fixed tree at the end (gs_rows_fold), so every SIMD width gives the same bits. */
#define GS_LANES  8
#define GS_ROWACC (4 * GS_LANES) /* the lane sums of one row: GS_LANES per sum */
/* Where lane l of sum c (0 D_u, 1 D_v, 2 S_g, 3 S_k) lies in a row's set: as gs_vjp_rowv's
 * vectors hold them (pairs (D_u, D_v) then (S_g, S_k), the two sums of a node side by side, the
 * lanes in order), so a row loads and stores its sums as whole vectors at any width. */
static inline size_t gs_lane_at(int c, int l)
{
  return (size_t)((c >> 1) * 2 * GS_LANES + 2 * l + (c & 1));
}

/* One row of out += (df/dy)^T w, or out = when add is 0: y the owned state row, gw the ghosted
 * w at the row's first node, q the owned output row (NULL: not written), acc the lane sums of
 * the parameter VJP (NULL: not computed). Per node: R^T w (reaction) plus D L^T w; the periodic
 * 5/7-point Laplacian is symmetric (each neighbour enters with 1/h^2, the node itself with
 * -2 dim/h^2), so L^T w at a node gathers the neighbours' w exactly as L gathers y. The flags
 * are constants at each call site below, so each variant is a branch-free loop. */
static inline __attribute__((always_inline)) void
gs_vjp_node(const gs_coef *k, const double *restrict y, const double *restrict gw,
            double *restrict q, long i, const int add, const int three, double *lu, double *lv)
{
  const size_t sy = k->sy, sz = k->sz;
  double u = y[i], v = y[i + 1], wu = gw[i], wv = gw[i + 1], vv = v * v, uv2 = 2.0 * u * v;
  double tu = gw[i - 2] + gw[i + 2] + gw[i - sy] + gw[i + sy];
  double tv = gw[i - 1] + gw[i + 3] + gw[i + 1 - sy] + gw[i + 1 + sy];
  if (three) {
    tu += gw[i - sz] + gw[i + sz];
    tv += gw[i + 1 - sz] + gw[i + 1 + sz];
  }
  *lu = (tu - k->nd * wu) * k->ih2, *lv = (tv - k->nd * wv) * k->ih2;
  if (q) {
    double fu = (vv * wv - (vv + k->ga) * wu) + k->Du * *lu;
    double fv = ((uv2 - k->gk) * wv - uv2 * wu) + k->Dv * *lv;
    q[i] = add ? q[i] + fu : fu;
    q[i + 1] = add ? q[i + 1] + fv : fv;
  }
}

/* The rows in vectors, once per ISA at its width (rw_kernels.h), and the calls that pick one. */
#if RW_ISA_X86
#define GS_W      8
#define GS_ISA(n) n##_avx512
#define GS_TARGET RW_ISA_AVX512_TARGET
#include "rw_grayscott_simd.h"
#define GS_W      4
#define GS_ISA(n) n##_avx2
#define GS_TARGET RW_ISA_AVX2_TARGET
#include "rw_grayscott_simd.h"
#endif
#define GS_W      2
#define GS_ISA(n) n##_base
#define GS_TARGET
#include "rw_grayscott_simd.h"

static void gs_rhs_row2(const gs_coef *k, const double *restrict a, double *restrict q, long m)
{
  RW_ISA_CALL(gs_rhs_row2, (k, a, q, m));
}

static void gs_rhs_row3(const gs_coef *k, const double *restrict a, double *restrict q, long m)
{
  RW_ISA_CALL(gs_rhs_row3, (k, a, q, m));
}

static void gs_vjp_rows(const gs_coef *k, const double *restrict y, const double *restrict gw,
                        double *restrict q, long m, int add, int three, double *restrict acc,
                        const double *pf)
{
  RW_ISA_CALL(gs_vjp_rows, (k, y, gw, q, m, add, three, acc, pf));
}

/* A Gray-Scott device body over the box [lo, hi) (rw_dev_bodies.h). */
static void gs_dev_box(rw_gs *s, int id, const double *gv, double *out, const long lo[3],
                       const long hi[3])
{
  rw_body_gs b;
  const gs_coef k = gs_coefs(s, s->p);
  long n = 1;
  for (int d = 0; d < 3; d++) {
    b.g.gn[d] = s->gn[d], b.g.cnt[d] = s->cnt[d];
    b.lo[d] = lo[d], b.cnt[d] = hi[d] - lo[d];
    n *= b.cnt[d];
  }
  b.g.ghost = 1, b.g.dim = s->dim, b.g.ncomp = 2;
  b.Du = k.Du, b.Dv = k.Dv, b.ga = k.ga, b.gk = k.gk, b.ih2 = k.ih2, b.nd = k.nd;
  b.sy = k.sy, b.sz = k.sz;
  b.gv = gv, b.y = s->yk, b.out = out;
  b.add = s->pacc ? 0 : s->vadd;
  b.terms = s->pacc ? s->terms : NULL;
  b.nodes = s->nodes;
  if (n > 0 && !s->dev_err) s->dev_err = rw_device_run(s->dev, id, &b, sizeof b, n, rw_body_host);
}

/* The fused stage's interior box: Y = sum_j c_j X_j formed at every stencil point, f and keep
 * written (RW_BODY_GS_RHS_COMB). */
static void gs_dev_rhs_comb(rw_gs *s, rw_grid g, double *out, const long lo[3], const long hi[3])
{
  rw_body_gs_comb q;
  const gs_coef k = gs_coefs(s, s->p);
  long items = 1;
  memset(&q, 0, sizeof q);
  int e = rw_grid_comb_body(g, &q.in);
  if (e) {
    if (!s->dev_err) s->dev_err = e;
    return;
  }
  for (int d = 0; d < 3; d++) {
    q.b.g.gn[d] = s->gn[d], q.b.g.cnt[d] = s->cnt[d];
    q.b.lo[d] = lo[d], q.b.cnt[d] = hi[d] - lo[d];
    items *= q.b.cnt[d];
  }
  q.b.g.ghost = 1, q.b.g.dim = s->dim, q.b.g.ncomp = 2;
  q.b.Du = k.Du, q.b.Dv = k.Dv, q.b.ga = k.ga, q.b.gk = k.gk, q.b.ih2 = k.ih2, q.b.nd = k.nd;
  q.b.out = out;
  if (items > 0 && !s->dev_err)
    s->dev_err = rw_device_run(s->dev, RW_BODY_GS_RHS_COMB, &q, sizeof q, items, rw_body_host);
}

/* The parameter sums from the device's per-node terms, in its fixed order: out[c] += sum (held
 * on the device when out is the deferred pbar: rw_pdefer_sum). */
static int gs_dev_fold(rw_gs *s, double *out)
{
  for (int c = 0; c < 4; c++)
    RW_CALL(rw_pdefer_sum(&s->pd, out, c, s->terms + (size_t)c * (size_t)s->nodes, s->nodes));
  return 0;
}

/* The failure a device kernel callback recorded (and forgets it). */
static int gs_dev_error(rw_gs *s)
{
  int e = s->dev_err;
  s->dev_err = 0;
  return e;
}

/* f on the box [lo, hi): gv is the ghosted state. */
static void gs_rhs_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                          const long hi[3])
{
  const rw_gs *s = kc;
  const gs_coef k = gs_coefs(s, s->p);
  if (s->dev && !gv) { /* the fused stage's interior (rw_grid_apply_comb_fused) */
    gs_dev_rhs_comb((rw_gs *)s, g, out, lo, hi);
    return;
  }
  if (s->dev) {
    gs_dev_box((rw_gs *)s, RW_BODY_GS_RHS, gv, out, lo, hi);
    return;
  }
  for (long kk = lo[2]; kk < hi[2]; kk++)
    for (long j = lo[1]; j < hi[1]; j++) {
      const double *a = gv + gs_gx(s, lo[0], j, kk);
      double *q = out + gs_ox(s, lo[0], j, kk);
      if (s->dim == 2)
        gs_rhs_row2(&k, a, q, hi[0] - lo[0]);
      else
        gs_rhs_row3(&k, a, q, hi[0] - lo[0]);
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
  if (s->dev) { /* the same per node, as a device body */
    rw_body_gs_jvp b;
    long n = 1;
    memset(&b, 0, sizeof b);
    for (int d = 0; d < 3; d++) {
      b.g.gn[d] = s->gn[d], b.g.cnt[d] = s->cnt[d];
      b.lo[d] = lo[d], b.cnt[d] = hi[d] - lo[d];
      n *= b.cnt[d];
    }
    b.g.ghost = 1, b.g.dim = s->dim, b.g.ncomp = 2;
    for (int q = 0; q < 4; q++)
      b.p[q] = s->p[q], b.dp[q] = dp ? dp[q] : 0.0;
    b.has_dp = dp != NULL, b.ih2 = s->ih2, b.sy = s->sy, b.sz = s->sz;
    b.gv = gv, b.gy = gy, b.out = out;
    if (n > 0 && !s->dev_err)
      ((rw_gs *)s)->dev_err = rw_device_run(s->dev, RW_BODY_GS_JVP, &b, sizeof b, n, rw_body_host);
    return;
  }
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
  RW_CALL(gs_dev_error(s));
  return 0;
}

/* f = f(Y), Y = sum_j c[j] X[j] formed in the halo copy (and kept in `keep` when not NULL). */
static int gs_rhs_comb(void *c, double t, const double *p, int n, const double *cx, N_Vector *X,
                       N_Vector keep, N_Vector f)
{
  rw_gs *s = c;
  (void)t;
  s->p = p;
  /* the combination formed inside the stencil's pass (a device), or just ahead of it in a
   * window of rows in cache (CPU vectors) */
  RW_CALL(rw_grid_apply_comb_fused(s->grid, n, cx, X, keep, s->gy, f, gs_rhs_kernel, s));
  RW_CALL(gs_dev_error(s));
  return 0;
}

/* A whole RK step in one sweep (rw_grid_erk_wave) on the CPU: the right-hand side reads the
 * ghosted state only, so the stages may run past the block's edge (ext_ok). */
static int gs_step_wave(void *c, const double *t, const double *p,
                        const struct rw_stage_plan_s *plan, N_Vector y, N_Vector y_out, double *q,
                        int *done)
{
  rw_gs *s = c;
  (void)t;
  *done = 0;
  if (s->dev || q) return 0; /* no running cost here: the stepper passes none */
  s->p = p;
  void *kc[RW_WAVE_MAX_STAGES];
  for (int i = 0; i < plan->s; i++)
    kc[i] = s;
  RW_CALL(rw_grid_erk_wave(s->grid, plan, y, y_out, 1, gs_rhs_kernel, kc, done));
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
  RW_CALL(gs_dev_error(s));
  return 0;
}

/* out += (df/dy)^T w (out = ... when s->vadd is 0) on the box: gv is the ghosted w, s->yk
 * the owned state; with s->pacc the parameter VJP's lane sums too, into each row's own set
 * (out overwritten, or not written at all when out is NULL). */
static void gs_vjp_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                          const long hi[3])
{
  const rw_gs *s = kc;
  const gs_coef k = gs_coefs(s, s->p);
  (void)g;
  if (s->dev) {
    gs_dev_box((rw_gs *)s, RW_BODY_GS_VJP, gv, out, lo, hi);
    return;
  }
  for (long kk = lo[2]; kk < hi[2]; kk++)
    for (long j = lo[1]; j < hi[1]; j++) {
      size_t o = gs_ox(s, lo[0], j, kk);
      const double *w = gv + gs_gx(s, lo[0], j, kk);
      double *q = out ? out + o : NULL;
      long m = hi[0] - lo[0];
      double *acc = s->pacc ? s->pacc + (size_t)(kk * s->cnt[1] + j) * GS_ROWACC : NULL;
      long jn = j + 1, kn = kk; /* the row read next, within the box */
      if (jn >= hi[1]) jn = lo[1], kn = kk + 1;
      const double *pf = kn < hi[2] ? s->yk + gs_ox(s, lo[0], jn, kn) : NULL;
      gs_vjp_rows(&k, s->yk + o, w, q, m, s->pacc ? 0 : s->vadd, s->dim == 3, acc, pf);
    }
}

/* The adjoint step as one sweep (rw_grid_erk_wave with the adjoint's plan, rw_problem_ops'
 * adjoint_wave): stage i's kernel is vjp_comb's (out = (df/dy)^T w, overwritten), with the
 * stored stage state read layer by layer from the plan's aux vectors, past the block's edge
 * too (the wave exchanges their layers there), so the stages run past it as the forward's do.
 * The parameter VJP's lane sums go to each owned row's own set of the stage (zeroed first: a
 * row computed again by the next tile gives the same sums), folded after the sweep in stage
 * order as the stage-by-stage adjoint folds them (gs_rows_fold). */
static void gs_rows_fold(const rw_gs *s, double *acc, double *out);

typedef struct {
  const rw_gs *s;
  int stage;
  double *acc; /* the stage's row sets (NULL: the parameters frozen) */
} gs_actx;

static void gs_vjp_wave_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                               const long hi[3])
{
  const gs_actx *a = kc;
  const rw_gs *s = a->s;
  const gs_coef k = gs_coefs(s, s->p);
  const int D = s->dim - 1;
  const size_t Lo = (size_t)(2 * s->cnt[0]) * (size_t)(s->dim == 3 ? s->cnt[1] : 1);
  const long v0 = rw_grid_wave_layer0(g), N = s->cnt[D];
  for (long kk = lo[2]; kk < hi[2]; kk++)
    for (long j = lo[1]; j < hi[1]; j++) {
      const long v = D == 2 ? kk : j, l = v - v0; /* the layer, and the block's */
      const double *ly = rw_grid_wave_aux_layer(g, a->stage, v);
      const size_t o = gs_ox(s, lo[0], j, kk);
      long jn = j + 1, kn = kk; /* the row read next: in 3-D the next layer's first at the end */
      if (D == 2 && jn >= hi[1]) jn = lo[1], kn = kk + 1;
      const long vn = D == 2 ? kn : jn;
      const double *ln = rw_grid_wave_aux_layer(g, a->stage, vn);
      const double *pf = ln ? ln + (gs_ox(s, lo[0], jn, kn) - (size_t)vn * Lo) : NULL;
      double *acc = NULL;
      if (a->acc && l >= 0 && l < N) { /* an owned row: its sums, from zero */
        acc = a->acc + (size_t)(D == 2 ? l * s->cnt[1] + j : l) * GS_ROWACC;
        memset(acc, 0, GS_ROWACC * sizeof(double));
      }
      gs_vjp_rows(&k, ly + (o - (size_t)v * Lo), gv + gs_gx(s, lo[0], j, kk), out + o,
                  hi[0] - lo[0], 0, s->dim == 3, acc, pf);
    }
}

/* The adjoint wave's kernel contexts for s stages, with a row set of lane sums per stage when
 * the parameters are differentiated (set 0: the plain VJPs'). */
static int gs_adjoint_ctx(rw_gs *s, int ns, const double *out_p, gs_actx *ac, void **kc)
{
  if (out_p && s->acc_sets < ns) {
    const size_t n = (size_t)ns * (size_t)s->nrows * GS_ROWACC;
    rw_free(&s->rowacc);
    s->acc_sets = 0;
    RW_CALL(rw_calloc(n, sizeof(double), "Gray-Scott parameter lane sums", &s->rowacc));
    s->acc_sets = ns;
  }
  for (int i = 0; i < ns; i++) {
    ac[i].s = s, ac[i].stage = i, kc[i] = &ac[i];
    ac[i].acc = out_p ? s->rowacc + (size_t)i * (size_t)s->nrows * GS_ROWACC : NULL;
  }
  return 0;
}

static int gs_adjoint_wave(void *c, const double *t, const double *p,
                           const struct rw_stage_plan_s *plan, const double *hb, N_Vector lambda,
                           double *out_p, N_Vector field, N_Vector field_bar, int *done)
{
  rw_gs *s = c;
  (void)t, (void)hb, (void)field;
  *done = 0;
  if (s->dev || field_bar || plan->s > RW_WAVE_MAX_STAGES) return 0;
  for (int i = 0; i < plan->s; i++)
    if (!plan->aux[i]) return 0;
  gs_actx ac[RW_WAVE_MAX_STAGES];
  void *kc[RW_WAVE_MAX_STAGES] = {NULL};
  RW_CALL(gs_adjoint_ctx(s, plan->s, out_p, ac, kc));
  s->p = p;
  rw_stage_plan P = *plan;
  P.aux_ahead = 1;              /* the VJP reads the stored state at every node */
  P.tune_class = out_p != NULL; /* the parameters' lane sums: a dearer sweep */
  /* at the nodes it computes only: stage i's (s - 1 - i) G layers past the block (G = 1, the
   * grid's ghost width set in rw_gs_problem_create) */
  P.aux_reach_set = 1;
  for (int i = 0; i < plan->s; i++)
    P.aux_reach[i] = plan->s - 1 - i;
  RW_CALL(rw_grid_erk_wave(s->grid, &P, lambda, lambda, 1, gs_vjp_wave_kernel, kc, done));
  for (int i = 0; *done && out_p && i < plan->s; i++) /* vjp_comb's folds, in stage order */
    gs_rows_fold(s, ac[i].acc, out_p);
  return 0;
}

/* The checkpointed backward step as one sweep (rw_grid_erk_wave_pair): gs_step_wave's
 * recomputation and gs_adjoint_wave's adjoint, whose kernel reads the stage state through
 * rw_grid_wave_aux_layer, from the recomputation's rings. */
static int gs_backward_wave(void *c, const double *tf, const double *ta, const double *p,
                            const struct rw_stage_plan_s *pf, N_Vector y_n,
                            const struct rw_stage_plan_s *pa, const double *hb, N_Vector lambda,
                            double *out_p, N_Vector field, N_Vector field_bar, int *done)
{
  rw_gs *s = c;
  (void)tf, (void)ta, (void)hb, (void)field;
  *done = 0;
  if (s->dev || field_bar || pa->s > RW_WAVE_MAX_STAGES) return 0;
  gs_actx ac[RW_WAVE_MAX_STAGES];
  void *kc[RW_WAVE_MAX_STAGES] = {NULL}, *kf[RW_WAVE_MAX_STAGES];
  RW_CALL(gs_adjoint_ctx(s, pa->s, out_p, ac, kc));
  for (int i = 0; i < pf->s; i++)
    kf[i] = s;
  s->p = p;
  rw_stage_plan Pa = *pa;
  Pa.tune_class = out_p != NULL; /* as gs_adjoint_wave's */
  RW_CALL(rw_grid_erk_wave_pair(s->grid, pf, y_n, gs_rhs_kernel, kf, &Pa, lambda,
                                gs_vjp_wave_kernel, kc, done));
  for (int i = 0; *done && out_p && i < pa->s; i++) /* vjp_comb's folds, in stage order */
    gs_rows_fold(s, ac[i].acc, out_p);
  return 0;
}

/* out[c] += parameter c's sum: over the owned rows, in (k, j) order, each row's lane sums of
 * S_Du, S_Dv, S_g and S_k folded by a fixed tree, gamma S_g + S_k; the sums are zeroed. A row's
 * lanes hold its nodes in order (its pieces in the order they came, where another rank's messages
 * split it), so the result does not depend on the order in which the rows were visited: the
 * stage-by-stage VJP (interior box, then frame) and the adjoint wave (layer by layer, tile by tile)
 * agree. */
static void gs_rows_fold(const rw_gs *s, double *acc, double *out)
{
  double tot[4] = {0.0, 0.0, 0.0, 0.0};
  for (long r = 0; r < s->nrows; r++)
    for (int c = 0; c < 4; c++) {
      double a[GS_LANES], *set = acc + (size_t)r * GS_ROWACC;
      for (int l = 0; l < GS_LANES; l++)
        a[l] = set[gs_lane_at(c, l)];
      tot[c] += ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
    }
  memset(acc, 0, (size_t)s->nrows * GS_ROWACC * sizeof(double));
  out[0] += tot[0], out[1] += tot[1];
  out[2] += tot[2] + tot[3]; /* gamma: sum w_u (1 - u), then sum -w_v v */
  out[3] += tot[3];
}

/* The kernel for rw_grid_apply when only the parameter VJP is wanted: out is not written. */
static void gs_vjp_p_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                            const long hi[3])
{
  (void)out;
  gs_vjp_kernel(kc, g, gv, NULL, lo, hi);
}

/* out += (df/dy)^T w: w's halo is exchanged (the interior runs while it travels) and the
 * transposed stencil gathers it. Collective (neighbours). */
static int gs_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  rw_gs *s = c;
  (void)t;
  s->p = p, s->yk = rw_vec_data(y), s->vadd = 1;
  RW_CALL(rw_grid_apply(s->grid, w, s->gv, out, gs_vjp_kernel, s));
  s->yk = NULL;
  RW_CALL(gs_dev_error(s));
  return 0;
}

/* out[k] += this rank's sum over owned nodes of w . df/dp_k (see the symmetry note above):
 * w's halo is exchanged and the rows gather L w as the state VJP does, with the same lane
 * sums in the same box order, so this equals the parameter part of gs_vjp_comb bit for bit.
 * Collective (neighbours). */
static int gs_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  rw_gs *s = c;
  (void)t;
  s->p = p, s->yk = rw_vec_data(y), s->pacc = s->rowacc;
  int ierr = rw_grid_apply(s->grid, w, s->gv, w, gs_vjp_p_kernel, s);
  s->yk = NULL, s->pacc = NULL;
  RW_CALL(ierr);
  RW_CALL(gs_dev_error(s));
  if (s->dev)
    RW_CALL(gs_dev_fold(s, out));
  else
    gs_rows_fold(s, s->rowacc, out);
  return 0;
}

/* out_y = (df/dy)^T w (overwritten, not read) with w = sum_j c[j] W[j] formed in the halo
 * copy; out_p += the parameter VJP, computed in the same rows, when asked for. */
static int gs_vjp_comb(void *c, double t, N_Vector y, const double *p, int n, const double *cw,
                       N_Vector *W, N_Vector out_y, double *out_p)
{
  rw_gs *s = c;
  (void)t;
  s->p = p, s->yk = rw_vec_data(y), s->vadd = 0, s->pacc = out_p ? s->rowacc : NULL;
  /* CPU vectors: w formed in a window of rows just ahead of the kernel (rw_grid_apply_comb_fused;
   * the device's fused interior is the right-hand side's only) */
  int ierr =
      s->dev ? rw_grid_apply_comb(s->grid, n, cw, W, NULL, s->gv, out_y, gs_vjp_kernel, s)
             : rw_grid_apply_comb_fused(s->grid, n, cw, W, NULL, s->gv, out_y, gs_vjp_kernel, s);
  s->yk = NULL, s->pacc = NULL;
  RW_CALL(ierr);
  RW_CALL(gs_dev_error(s));
  if (out_p && s->dev)
    RW_CALL(gs_dev_fold(s, out_p));
  else if (out_p)
    gs_rows_fold(s, s->rowacc, out_p);
  return 0;
}

static int gs_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  rw_gs *s = c;
  (void)t, (void)p;
  const double *yd = rw_vec_data(y);
  double val = 0.0;
  if (s->dev) {
    if (s->obj == RW_GS_POINT && s->pidx >= 0) {
      double two[2];
      RW_CALL(rw_device_copy(s->dev, two, yd + s->pidx, sizeof two, RW_COPY_D2H));
      val = two[0] + two[1];
    } else if (s->obj != RW_GS_POINT) {
      rw_body_gs_u2 b = {yd, s->terms, NULL, s->vol};
      RW_CALL(rw_device_run(s->dev, RW_BODY_GS_U2, &b, sizeof b, s->nodes, rw_body_host));
      RW_CALL(rw_device_reduce(s->dev, RW_DK_SUM, s->terms, NULL, s->nodes, &val));
    }
  } else if (s->obj == RW_GS_POINT) {
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
  if (s->dev) {
    if (s->obj == RW_GS_POINT) {
      const double one[2] = {1.0, 1.0};
      N_VConst(0.0, gy);
      if (s->pidx >= 0) RW_CALL(rw_device_copy(s->dev, g + s->pidx, one, sizeof one, RW_COPY_H2D));
    } else {
      rw_body_gs_u2 b = {yd, NULL, g, s->vol};
      RW_CALL(rw_device_run(s->dev, RW_BODY_GS_U2, &b, sizeof b, s->nodes, rw_body_host));
    }
    return 0;
  }
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

/* --- Noise: additive space-time white noise (see rw_grayscott.h) ------------------------- */

/* g = h^(-dim/2) on the noisy components, 0 on the others; it does not depend on t, y or p
 * (the amplitude is the problem's noise amplitude, rw_problem_set_noise). */
static int gs_diffusion(void *c, double t, N_Vector y, const double *p, N_Vector g)
{
  (void)t, (void)y, (void)p;
  rw_gs *s = c;
  double *gd = rw_vec_data(g);
  double gu = s->noise != RW_GS_NOISE_V ? s->gscale : 0.0;
  double gv = s->noise != RW_GS_NOISE_U ? s->gscale : 0.0;
  long nn = s->cnt[0] * s->cnt[1] * s->cnt[2];
  if (s->dev) { /* the same two constants, as a device body */
    rw_body_noise b;
    memset(&b, 0, sizeof b);
    b.mode = 2, b.out = gd, b.ncomp = 2, b.cval[0] = gu, b.cval[1] = gv;
    RW_CALL(rw_device_run(s->dev, RW_BODY_NOISE, &b, sizeof b, 2 * nn, rw_body_host));
    return 0;
  }
  for (long i = 0; i < nn; i++) {
    gd[2 * i] = gu;
    gd[2 * i + 1] = gv;
  }
  return 0;
}

/* Additive noise: dg/dy = 0 and dg/dp = 0, nothing to accumulate. */
static int gs_diffusion_vjp(void *c, double t, N_Vector y, const double *p, N_Vector w,
                            N_Vector out_y, double *out_p)
{
  (void)c, (void)t, (void)y, (void)p, (void)w, (void)out_y, (void)out_p;
  return 0;
}

/* z = the normals of noise step `step`: the noisy component c' (0 .. nnoisy-1, in the order
 * u, v) of global node m = (gk N + gj) N + gi takes index m nnoisy + c'. An owned row
 * (fixed j, k) is one contiguous global range, drawn by one rw_rng_normal_fill, so the values
 * do not depend on the decomposition. Entries of a component without noise are 0. */
static int gs_noise_fill(void *c, uint64_t seed, uint64_t step, N_Vector z)
{
  rw_gs *s = c;
  double *zd = rw_vec_data(z);
  const uint64_t nc = (uint64_t)s->nnoisy;
  const size_t m = (size_t)s->cnt[0];
  if (s->dev) { /* one item per owned entry, each drawing the index its CPU row gives it */
    rw_body_noise b;
    memset(&b, 0, sizeof b);
    b.mode = 1, b.out = zd, b.ncomp = 2, b.nnoisy = s->nnoisy, b.dim = s->dim;
    for (int d = 0; d < 3; d++)
      b.cnt[d] = s->cnt[d], b.start[d] = s->start[d], b.n[d] = s->n;
    b.comp_on[0] = s->noise == RW_GS_NOISE_V ? -1 : 0;
    b.comp_on[1] = s->noise == RW_GS_NOISE_U ? -1 : s->noise == RW_GS_NOISE_V ? 0 : 1;
    uint64_t nodes = (uint64_t)s->n * (uint64_t)s->n * (uint64_t)(s->dim == 3 ? s->n : 1);
    RW_CALL(rw_noise_device_run(s->dev, &b, seed, step, 2 * s->cnt[0] * s->cnt[1] * s->cnt[2],
                                nodes * nc));
    return 0;
  }
  for (long k = 0; k < s->cnt[2]; k++)
    for (long j = 0; j < s->cnt[1]; j++) {
      uint64_t node = (uint64_t)(((s->start[2] + k) * s->n + s->start[1] + j) * s->n + s->start[0]);
      double *row = zd + gs_ox(s, 0, j, k);
      if (nc == 2) {
        RW_CALL(rw_rng_normal_fill(seed, step, 0, RW_RNG_STREAM_FORCING, node * 2, 2 * m, row));
        continue;
      }
      RW_CALL(rw_rng_normal_fill(seed, step, 0, RW_RNG_STREAM_FORCING, node, m, s->zrow));
      int on = s->noise == RW_GS_NOISE_U ? 0 : 1;
      for (size_t i = 0; i < m; i++) {
        row[2 * i + (size_t)on] = s->zrow[i];
        row[2 * i + (size_t)(1 - on)] = 0.0;
      }
    }
  return 0;
}

/* rw_problem_params_defer / _flush: on a device the parameter sums of the deferred pbar stay
 * there until the flush (rw_pdefer), so a VJP does not wait for its reductions. */
static int gs_params_defer(void *c, double *pbar) { return rw_pdefer_set(&((rw_gs *)c)->pd, pbar); }
static int gs_params_flush(void *c) { return rw_pdefer_flush(&((rw_gs *)c)->pd); }

static void gs_destroy(void *c)
{
  rw_gs *s = c;
  if (!s) return;
  rw_free(&s->zrow);
  rw_free(&s->rowacc);
  if (s->dev) {
    rw_device_free(s->dev, &s->gy, s->glen * sizeof(double));
    rw_device_free(s->dev, &s->gv, s->glen * sizeof(double));
    rw_device_free(s->dev, &s->terms, 4 * (size_t)s->nodes * sizeof(double));
  }
  rw_pdefer_free(&s->pd);
  rw_grid_ghosted_free(&s->gy);
  rw_grid_ghosted_free(&s->gv);
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
  RW_CHECK(cfg->noise == RW_GS_NOISE_UV || cfg->noise == RW_GS_NOISE_U ||
               cfg->noise == RW_GS_NOISE_V,
           RW_ERR_ARG, "Gray-Scott: noisy species %d unknown (RW_GS_NOISE_UV, _U or _V)",
           (int)cfg->noise);
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
    gc.procs[d] = cfg->procs[d];
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
  s->nodes = s->cnt[0] * s->cnt[1] * s->cnt[2];
  s->nrows = s->cnt[1] * s->cnt[2];
  RW_TRY(rw_calloc((size_t)s->nrows * GS_ROWACC, sizeof(double), "Gray-Scott parameter lane sums",
                   &s->rowacc));
  s->acc_sets = 1;
  s->dev = rw_context_device(ctx);
  if (s->dev) {
    RW_TRY(rw_device_alloc(s->dev, s->glen * sizeof(double), &s->gy));
    RW_TRY(rw_device_alloc(s->dev, s->glen * sizeof(double), &s->gv));
    RW_TRY(rw_device_alloc(s->dev, 4 * (size_t)s->nodes * sizeof(double), &s->terms));
    RW_TRY(rw_pdefer_init(&s->pd, s->dev, 4));
  } else {
    RW_TRY(rw_grid_ghosted_alloc(s->grid, s->glen, "Gray-Scott ghosted state", &s->gy));
    RW_TRY(rw_grid_ghosted_alloc(s->grid, s->glen, "Gray-Scott ghosted direction", &s->gv));
  }
  s->noise = cfg->noise;
  s->nnoisy = cfg->noise == RW_GS_NOISE_UV ? 2 : 1;
  s->gscale = 1.0 / sqrt(s->vol);
  if (s->nnoisy == 1)
    RW_TRY(rw_calloc((size_t)s->cnt[0], sizeof(double), "Gray-Scott noise row", &s->zrow));

  rw_problem_ops ops;
  memset(&ops, 0, sizeof ops);
  ops.rhs = gs_rhs;
  ops.vjp_y = gs_vjp_y;
  ops.vjp_p = gs_vjp_p;
  ops.vjp_comb = gs_vjp_comb;
  ops.rhs_comb = gs_rhs_comb;
  ops.step_wave = gs_step_wave;
  ops.jvp = gs_jvp;
  ops.adjoint_wave = gs_adjoint_wave;
  ops.backward_wave = gs_backward_wave;
  ops.terminal = gs_terminal;
  ops.terminal_grad = gs_terminal_grad;
  ops.diffusion = gs_diffusion;
  ops.diffusion_vjp = gs_diffusion_vjp;
  ops.noise_fill = gs_noise_fill;
  ops.params_defer = gs_params_defer;
  ops.params_flush = gs_params_flush;
  ops.destroy = gs_destroy;
  int on_dev = s->dev != NULL;
  RW_TRY(rw_problem_create(ctx, "grayscott", &ops, s, rw_grid_local_length(s->grid), 4,
                           rw_gs_param_names, out));
  s = NULL; /* owned by the problem now */
  double *p = rw_problem_params(*out);
  p[0] = 8e-5, p[1] = 4e-5, p[2] = 0.024, p[3] = 0.06;
  if (on_dev) rw_problem_set_device_ready(*out);
  /* Deterministic until the noise is set: amplitude 0, seed 0. */
  RW_TRY(rw_problem_set_noise(*out, 0, 0.0, 1));
cleanup:
  gs_destroy(s);
  if (ierr) rw_problem_destroy(out);
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
  double *yd = rw_vec_data(y), *host = NULL;
  if (rw_vec_device(y)) /* computed on the host, then copied to the device */
    RW_CALL(rw_calloc((size_t)rw_vec_local_length(y) + 1, sizeof(double), "initial state", &host));
  if (host) yd = host;
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
  if (host) {
    int ierr = rw_vec_from_host(y, host);
    rw_free(&host);
    RW_CALL(ierr);
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
