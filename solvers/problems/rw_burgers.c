/* 2-D viscous Burgers problem (see rw_burgers.h).
 *
 * With D_x w = (w_{i+1} - w_{i-1}) / (2 hx), D_y likewise, and L the 5-point Laplacian, all
 * periodic:
 *   f            = -1/2 (D_x + D_y)(u^2) + nu L u
 *   (df/du) v    = -(D_x + D_y)(u v) + nu L v
 *   (df/du)^T w  = u (D_x + D_y) w + nu L w   (D^T = -D and L^T = L on a periodic grid)
 *   (df/dnu)^T w = sum w L u
 * Each is a gather stencil on a halo-exchanged field, so the state gradient is bitwise
 * independent of the decomposition (dJ/dnu and J are global sums grouped by rank). */
#include "rewind/rw_burgers.h"

#include "../../core/rw_device_impl.h"
#include "../rw_dev_bodies.h"
#include "rewind/rw_kernels.h"
#include "rewind/rw_stability.h"

#include <math.h>
#include <string.h>

typedef struct {
  rw_grid g;
  long start[3], count[3], gn[3];
  double hx, hy, ihx2, ihy2, i4hx, i4hy, i2hx, i2hy;
  double lo[2], len[2];
  rw_burgers_config cfg;
  N_Vector target;
  double *gA, *gB; /* ghosted work arrays */
  /* on a device (rw_device.h): gA, gB and terms are device arrays, the kernels device bodies
   * (rw_dev_bodies.h) */
  rw_device dev;
  double *terms; /* per-node terms of the nu VJP and the misfit */
  /* CPU: the nu VJP's sums per owned row (bg_rows_total), RW_WAVE_MAX_STAGES sets of count[1]
   * (set k: an adjoint wave's plan stage k; set 0 the stage-by-stage ops'), and the stored
   * state's row between its two ghosts for the adjoint wave (urow + 1 on a cache line) */
  double *rows, *urow_mem, *urow;
  rw_pdefer pd; /* the nu VJP's sum held on the device while the driver defers pbar */
  long nodes;
  int dev_err;
} rw_burgers;

typedef enum { BG_RHS, BG_VJPY, BG_NU, BG_JVP, BG_VJPC } bg_mode;

typedef struct {
  const rw_burgers *b;
  bg_mode mode;
  double nu, dnu;
  const double *u;  /* BG_VJPY: the state (owned layout) */
  const double *gu; /* BG_JVP, BG_VJPC (with the nu sum): the ghosted state */
  const double *w;  /* BG_NU: the cotangent (owned layout) */
  double *rows;     /* BG_NU, BG_VJPC with the sum: each owned row's sum of w L u (CPU) */
} bg_kctx;

/* bg_kernel's modes BG_RHS, BG_VJPY and BG_NU (per-node terms into b->terms) as a device body
 * over the box [lo, hi). */
static void bg_dev_box(bg_kctx *k, const double *gv, double *out, const long lo[3],
                       const long hi[3])
{
  rw_burgers *b = (rw_burgers *)k->b;
  rw_body_bg p;
  memset(&p, 0, sizeof p);
  for (int d = 0; d < 3; d++)
    p.g.gn[d] = b->gn[d], p.g.cnt[d] = b->count[d], p.lo[d] = lo[d], p.cnt[d] = hi[d] - lo[d];
  p.g.ghost = 1, p.g.dim = 2, p.g.ncomp = 1;
  p.ihx2 = b->ihx2, p.ihy2 = b->ihy2, p.i4hx = b->i4hx, p.i4hy = b->i4hy;
  p.i2hx = b->i2hx, p.i2hy = b->i2hy, p.nu = k->nu;
  p.mode = k->mode == BG_RHS ? 0 : k->mode == BG_VJPY ? 1 : k->mode == BG_NU ? 2 : 3;
  p.dnu = k->dnu, p.gu = k->gu;
  p.gv = gv, p.u = k->u, p.w = k->w, p.out = k->mode == BG_NU ? b->terms : out;
  if (!b->dev_err)
    b->dev_err = rw_device_run(b->dev, RW_BODY_BG, &p, sizeof p, p.cnt[0] * p.cnt[1], rw_body_host);
}

/* The failure a device kernel callback recorded (and forgets it). */
static int bg_dev_error(rw_burgers *b)
{
  int e = b->dev_err;
  b->dev_err = 0;
  return e;
}

/* The stencil's coefficients, copied out of the problem for the row loops. */
typedef struct {
  double ihx2, ihy2, i4hx, i4hy, i2hx, i2hy, nu, dnu;
  ptrdiff_t gx; /* ghosted row stride */
} bg_coef;

/* The rows of bg_kernel's modes: m nodes from ghosted index 0 of gv (gu likewise) and owned
 * index 0 of out, u and w; each mode a branch-free loop of its own, built for three ISAs
 * (RW_SIMD_CLONES) so that the compiler vectorises it. Every node keeps bg_kernel's operations
 * in their order (the expressions below are the scalar form's, and a vector lane rounds as the
 * scalar does), so every width gives the same bits. The nu VJP's terms go to `terms`, which the
 * caller adds up into the row's sum in node order. The kernel ran as one scalar loop with the
 * mode switched per node: 64 % of `rewind-burgers -N 512`'s time. */
#define BG_LAP(a, x, c)                                                                            \
  ((((a)[(x)-1] - 2.0 * (a)[x]) + (a)[(x) + 1]) * (c)->ihx2 +                                      \
   (((a)[(x) - (c)->gx] - 2.0 * (a)[x]) + (a)[(x) + (c)->gx]) * (c)->ihy2)

RW_SIMD_CLONES static void bg_row_rhs(const bg_coef *k, const double *restrict gv,
                                      double *restrict out, long m)
{
  const bg_coef c = *k;
  for (long i = 0; i < m; i++) {
    const double e = gv[i + 1], wst = gv[i - 1], n = gv[i + c.gx], so = gv[i - c.gx];
    const double lap = BG_LAP(gv, i, &c);
    out[i] = -(e * e - wst * wst) * c.i4hx - (n * n - so * so) * c.i4hy + c.nu * lap;
  }
}

RW_SIMD_CLONES static void bg_row_vjpy(const bg_coef *k, const double *restrict gv,
                                       const double *restrict u, double *restrict out, long m)
{
  const bg_coef c = *k;
  for (long i = 0; i < m; i++) {
    const double e = gv[i + 1], wst = gv[i - 1], n = gv[i + c.gx], so = gv[i - c.gx];
    const double lap = BG_LAP(gv, i, &c);
    out[i] += u[i] * ((e - wst) * c.i2hx + (n - so) * c.i2hy) + c.nu * lap;
  }
}

RW_SIMD_CLONES static void bg_row_nu(const bg_coef *k, const double *restrict gv,
                                     const double *restrict w, double *restrict terms, long m)
{
  const bg_coef c = *k;
  for (long i = 0; i < m; i++)
    terms[i] = w[i] * BG_LAP(gv, i, &c);
}

RW_SIMD_CLONES static void bg_row_vjpc(const bg_coef *k, const double *restrict gv,
                                       const double *restrict u, const double *restrict gu,
                                       double *restrict out, double *restrict terms, long m)
{
  const bg_coef c = *k;
  for (long i = 0; i < m; i++) {
    const double e = gv[i + 1], wst = gv[i - 1], n = gv[i + c.gx], so = gv[i - c.gx];
    const double lap = BG_LAP(gv, i, &c);
    out[i] = 0.0 + (u[i] * ((e - wst) * c.i2hx + (n - so) * c.i2hy) + c.nu * lap);
  }
  for (long i = 0; gu && i < m; i++)
    terms[i] = gv[i] * BG_LAP(gu, i, &c);
}

RW_SIMD_CLONES static void bg_row_jvp(const bg_coef *k, const double *restrict gv,
                                      const double *restrict gu, double *restrict out, long m)
{
  const bg_coef c = *k;
  for (long i = 0; i < m; i++) {
    const double e = gv[i + 1], wst = gv[i - 1], n = gv[i + c.gx], so = gv[i - c.gx];
    const double lap = BG_LAP(gv, i, &c), lapu = BG_LAP(gu, i, &c);
    out[i] = -(gu[i + 1] * e - gu[i - 1] * wst) * c.i2hx -
             (gu[i + c.gx] * n - gu[i - c.gx] * so) * c.i2hy + c.nu * lap + c.dnu * lapu;
  }
}

/* Kernel over [lo, hi) reading the ghosted gv:
 *  BG_RHS:  out = f(gv)
 *  BG_VJPY: out += u (D_x + D_y) gv + nu L gv        (gv = the cotangent w)
 *  BG_NU:   sum += w L gv                             (gv = u; out unused)
 *  BG_JVP:  out = -(D_x + D_y)(gu gv) + nu L gv + dnu L gu   (gv = v)
 *  BG_VJPC: out = 0 + (BG_VJPY's terms), and sum += gv L gu when gu is not NULL: the adjoint
 *           stage (gv = the combination w, gu = the ghosted state), with the operations,
 *           their order and the sum's node order of BG_VJPY into a zeroed out and BG_NU
 * Row by row (bg_row_*), the rows in pieces of at most BG_PIECE nodes for the sums' terms; the
 * sum of w L u is kept per owned row j (k->rows[j], its nodes in the order the kernel visits
 * them: whole rows in order wherever x is not split), and bg_rows_total adds the rows in order.
 * So the adjoint wave, which visits the rows layer by layer, stage by stage, gives the
 * stage-by-stage sum bit for bit (one sum over the block in visiting order did not: the
 * stage-by-stage ops visit the interior rows before the frame's where y is split). */
#define BG_PIECE 512
static void bg_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                      const long hi[3])
{
  (void)g;
  bg_kctx *k = kc;
  const rw_burgers *b = k->b;
  if (b->dev) {
    bg_dev_box(k, gv, out, lo, hi);
    return;
  }
  const bg_coef c = {
      b->ihx2, b->ihy2, b->i4hx, b->i4hy, b->i2hx, b->i2hy, k->nu, k->dnu, (ptrdiff_t)b->gn[0]};
  const long nx = b->count[0];
  double terms[BG_PIECE];
  for (long j = lo[1]; j < hi[1]; j++)
    for (long i0 = lo[0]; i0 < hi[0]; i0 += BG_PIECE) {
      const long mm = hi[0] - i0 < BG_PIECE ? hi[0] - i0 : BG_PIECE;
      const size_t s = rw_grid_gidx(b->gn, 1, 2, i0, j, 0, 1, 0);
      const long m = j * nx + i0;
      int sum = 0;
      switch (k->mode) {
      case BG_RHS:
        bg_row_rhs(&c, gv + s, out + m, mm);
        break;
      case BG_VJPY:
        bg_row_vjpy(&c, gv + s, k->u + m, out + m, mm);
        break;
      case BG_NU:
        bg_row_nu(&c, gv + s, k->w + m, terms, mm);
        sum = 1;
        break;
      case BG_VJPC:
        bg_row_vjpc(&c, gv + s, k->u + m, k->gu ? k->gu + s : NULL, out + m, terms, mm);
        sum = k->gu != NULL;
        break;
      case BG_JVP:
        bg_row_jvp(&c, gv + s, k->gu + s, out + m, mm);
        break;
      }
      if (sum) { /* the row's sum, its nodes in order */
        double r = k->rows[j];
        for (long i = 0; i < mm; i++)
          r += terms[i];
        k->rows[j] = r;
      }
    }
}

/* The nu VJP's local sum: each owned row's sum (bg_kernel), added in row order. */
static double bg_rows_total(const rw_burgers *b, const double *rows)
{
  double s = 0.0;
  for (long j = 0; j < b->count[1]; j++)
    s += rows[j];
  return s;
}

/* The nu VJP's terms w L u of a row (bg_row_vjpc's), u given as its own row between two ghosts
 * (uc) and its neighbours' rows along y (um, up): the same operations in the same order as
 * BG_LAP on the halo copy. */
RW_SIMD_CLONES static void bg_row_nuw(const bg_coef *k, const double *restrict w,
                                      const double *restrict uc, const double *restrict um,
                                      const double *restrict up, double *restrict terms, long m)
{
  const bg_coef c = *k;
  for (long i = 0; i < m; i++)
    terms[i] = w[i] * ((((uc[i - 1] - 2.0 * uc[i]) + uc[i + 1]) * c.ihx2) +
                       (((um[i] - 2.0 * uc[i]) + up[i]) * c.ihy2));
}

/* The adjoint step as one sweep (rw_grid_erk_wave with the adjoint's plan, rw_problem_ops'
 * adjoint_wave; in a pair, backward_wave): plan stage k's kernel is vjp_comb's rows
 * (bg_row_vjpc, out = 0 + the VJP) with u the stored stage state's row from the plan's aux
 * vectors (rw_grid_wave_aux_layer: past the block's edge too, so ext_ok), and, on owned rows
 * with nu differentiated, the row's sum of w L u into set k of b->rows (u's row copied between
 * its two periodic ghosts, the rows above and below from the aux layers), folded after the
 * sweep in stage order as the stage-by-stage adjoint adds its vjp_comb sums. */
typedef struct {
  const rw_burgers *b;
  int stage;
  double nu;
  double *rows; /* this stage's row sums (NULL: nu frozen) */
} bg_actx;

static void bg_adj_wave_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                               const long hi[3])
{
  const bg_actx *a = kc;
  const rw_burgers *b = a->b;
  const bg_coef c = {
      b->ihx2, b->ihy2, b->i4hx, b->i4hy, b->i2hx, b->i2hy, a->nu, 0.0, (ptrdiff_t)b->gn[0]};
  const long nx = b->count[0], N = b->count[1], v0 = rw_grid_wave_layer0(g);
  double terms[BG_PIECE], *uc = b->urow;
  for (long j = lo[1]; j < hi[1]; j++) {
    const double *u = rw_grid_wave_aux_layer(g, a->stage, j);
    const long l = j - v0;
    const int own = a->rows && l >= 0 && l < N && lo[0] == 0 && hi[0] == nx;
    const double *um = own ? rw_grid_wave_aux_layer(g, a->stage, j - 1) : NULL,
                 *up = own ? rw_grid_wave_aux_layer(g, a->stage, j + 1) : NULL;
    if (own) { /* the row between its periodic ghosts (x is never split in a wave) */
      memcpy(uc + 1, u, (size_t)nx * sizeof(double));
      uc[0] = u[nx - 1], uc[nx + 1] = u[0];
    }
    double r = 0.0;
    for (long i0 = lo[0]; i0 < hi[0]; i0 += BG_PIECE) {
      const long mm = hi[0] - i0 < BG_PIECE ? hi[0] - i0 : BG_PIECE;
      const size_t s = rw_grid_gidx(b->gn, 1, 2, i0, j, 0, 1, 0);
      bg_row_vjpc(&c, gv + s, u + i0, NULL, out + j * nx + i0, terms, mm);
      if (!own) continue;
      bg_row_nuw(&c, gv + s, uc + 1 + i0, um + i0, up + i0, terms, mm);
      for (long i = 0; i < mm; i++)
        r += terms[i];
    }
    if (own) a->rows[l] = r;
  }
}

/* The adjoint wave's kernel contexts for s stages, a set of row sums each when nu is
 * differentiated. */
static void bg_adjoint_ctx(rw_burgers *b, const double *p, int s, const double *out_p, bg_actx *ac,
                           void **kc)
{
  for (int k = 0; k < s; k++) {
    ac[k].b = b, ac[k].stage = k, ac[k].nu = p[0];
    ac[k].rows = out_p ? b->rows + (size_t)k * (size_t)b->count[1] : NULL;
    kc[k] = &ac[k];
  }
}

static int bg_adjoint_wave(void *content, const double *t, const double *p,
                           const struct rw_stage_plan_s *plan, const double *hb, N_Vector lambda,
                           double *out_p, N_Vector field, N_Vector field_bar, int *done)
{
  rw_burgers *b = content;
  (void)t, (void)hb, (void)field;
  *done = 0;
  if (b->dev || field_bar || plan->s > RW_WAVE_MAX_STAGES) return 0;
  for (int i = 0; i < plan->s; i++)
    if (!plan->aux[i]) return 0;
  bg_actx ac[RW_WAVE_MAX_STAGES];
  void *kc[RW_WAVE_MAX_STAGES];
  bg_adjoint_ctx(b, p, plan->s, out_p, ac, kc);
  rw_stage_plan P = *plan;
  P.aux_ahead = 1;              /* the VJP reads the stored state at every node */
  P.tune_class = out_p != NULL; /* nu's sums: a dearer sweep */
  /* at the rows stage k computes, (s - 1 - k) G past the block (G = 1, rw_burgers_problem's
   * grid), and with nu differentiated the rows next to the owned ones */
  P.aux_reach_set = 1;
  for (int k = 0; k < plan->s; k++)
    P.aux_reach[k] = plan->s - 1 - k > (out_p != NULL) ? plan->s - 1 - k : (out_p != NULL);
  RW_CALL(rw_grid_erk_wave(b->g, &P, lambda, lambda, 1, bg_adj_wave_kernel, kc, done));
  for (int k = 0; *done && out_p && k < plan->s; k++) /* vjp_comb's sums, in stage order */
    out_p[0] += bg_rows_total(b, ac[k].rows);
  return 0;
}

/* The checkpointed backward step as one sweep (rw_grid_erk_wave_pair): bg_step_wave's
 * recomputation and bg_adjoint_wave's adjoint, whose kernel reads the stage states from the
 * recomputation's rings. */
static int bg_backward_wave(void *content, const double *tf, const double *ta, const double *p,
                            const struct rw_stage_plan_s *pf, N_Vector y_n,
                            const struct rw_stage_plan_s *pa, const double *hb, N_Vector lambda,
                            double *out_p, N_Vector field, N_Vector field_bar, int *done)
{
  rw_burgers *b = content;
  (void)tf, (void)ta, (void)hb, (void)field;
  *done = 0;
  if (b->dev || field_bar || pa->s > RW_WAVE_MAX_STAGES || pf->s > RW_WAVE_MAX_STAGES) return 0;
  bg_actx ac[RW_WAVE_MAX_STAGES];
  void *kc[RW_WAVE_MAX_STAGES], *kf[RW_WAVE_MAX_STAGES];
  bg_adjoint_ctx(b, p, pa->s, out_p, ac, kc);
  bg_kctx k = {b, BG_RHS, p[0], 0.0, NULL, NULL, NULL, NULL};
  for (int i = 0; i < pf->s; i++)
    kf[i] = &k;
  rw_stage_plan Pa = *pa;
  Pa.tune_class = out_p != NULL; /* as bg_adjoint_wave's */
  RW_CALL(rw_grid_erk_wave_pair(b->g, pf, y_n, bg_kernel, kf, &Pa, lambda, bg_adj_wave_kernel, kc,
                                done));
  for (int i = 0; *done && out_p && i < pa->s; i++) /* vjp_comb's sums, in stage order */
    out_p[0] += bg_rows_total(b, ac[i].rows);
  return 0;
}

static int bg_rhs(void *content, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)t;
  rw_burgers *b = content;
  bg_kctx k = {b, BG_RHS, p[0], 0.0, NULL, NULL, NULL, NULL};
  RW_CALL(rw_grid_apply(b->g, y, b->gA, f, bg_kernel, &k));
  RW_CALL(bg_dev_error(b));
  return 0;
}

/* f = f(Y), Y = sum_j c[j] X[j] formed in the halo copy (kept in `keep` when not NULL), on
 * the CPU a window of rows at a time just ahead of the stencil where the block is large
 * enough (rw_grid_apply_comb_fused); on a device in two passes (bg_kernel has no fused body).
 * The combination is rounded as rw_problem_rhs_comb's fallback rounds it, so the bits are the
 * plain rhs's on the formed combination. */
static int bg_rhs_comb(void *content, double t, const double *p, int n, const double *c,
                       N_Vector *X, N_Vector keep, N_Vector f)
{
  (void)t;
  rw_burgers *b = content;
  bg_kctx k = {b, BG_RHS, p[0], 0.0, NULL, NULL, NULL, NULL};
  if (b->dev)
    RW_CALL(rw_grid_apply_comb(b->g, n, c, X, keep, b->gA, f, bg_kernel, &k));
  else
    RW_CALL(rw_grid_apply_comb_fused(b->g, n, c, X, keep, b->gA, f, bg_kernel, &k));
  RW_CALL(bg_dev_error(b));
  return 0;
}

/* A whole RK step as one sweep (rw_grid_erk_wave, see docs/architecture.md) where the grid suits
 * it: the stages' slopes by bg_kernel's BG_RHS rows, which read nothing but the halo copy, so
 * the stages may run past the block's edge (ext_ok: a neighbour's layers, or the far layers
 * where the slowest dimension is periodic over one rank). The same bits as the stage-by-stage
 * step. CPU only (a device keeps the stage-by-stage step). */
static int bg_step_wave(void *content, const double *t, const double *p,
                        const struct rw_stage_plan_s *plan, N_Vector y, N_Vector y_out, double *q,
                        int *done)
{
  rw_burgers *b = content;
  (void)t;
  *done = 0;
  if (b->dev || q) return 0; /* no running cost here: the stepper passes none */
  bg_kctx k = {b, BG_RHS, p[0], 0.0, NULL, NULL, NULL, NULL};
  void *kc[RW_WAVE_MAX_STAGES];
  for (int i = 0; i < plan->s && i < RW_WAVE_MAX_STAGES; i++)
    kc[i] = &k;
  if (plan->s > RW_WAVE_MAX_STAGES) return 0;
  RW_CALL(rw_grid_erk_wave(b->g, plan, y, y_out, 1, bg_kernel, kc, done));
  return 0;
}

/* out_y = (df/dy)^T w (overwritten) with w = sum_j c[j] W[j] formed in the halo copy (in
 * windows on large CPU blocks), and out_p[0] += the nu VJP sum_m w_m (L u)_m in the same pass,
 * the state's halo copy made first (one grid, one exchange in flight). The same bits as the
 * generic path (w in a vector, out_y zeroed, vjp_y, vjp_p): each node's operations and the
 * sum's node order are theirs. CPU only (not registered on a device). */
static int bg_vjp_comb(void *content, double t, N_Vector y, const double *p, int n, const double *c,
                       N_Vector *W, N_Vector out_y, double *out_p)
{
  (void)t;
  rw_burgers *b = content;
  if (out_p) {
    RW_CALL(rw_grid_exchange_begin(b->g, y, b->gB));
    RW_CALL(rw_grid_exchange_end(b->g, b->gB));
  }
  bg_kctx k = {b, BG_VJPC, p[0], 0.0, rw_vec_data(y), out_p ? b->gB : NULL, NULL, b->rows};
  if (out_p) memset(b->rows, 0, (size_t)b->count[1] * sizeof(double));
  RW_CALL(rw_grid_apply_comb_fused(b->g, n, c, W, NULL, b->gA, out_y, bg_kernel, &k));
  if (out_p) out_p[0] += bg_rows_total(b, b->rows);
  return 0;
}

static int bg_vjp_y(void *content, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)t;
  rw_burgers *b = content;
  bg_kctx k = {b, BG_VJPY, p[0], 0.0, rw_vec_data(y), NULL, NULL, NULL};
  RW_CALL(rw_grid_apply(b->g, w, b->gA, out, bg_kernel, &k));
  RW_CALL(bg_dev_error(b));
  return 0;
}

static int bg_vjp_p(void *content, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)t;
  rw_burgers *b = content;
  bg_kctx k = {b, BG_NU, p[0], 0.0, NULL, NULL, rw_vec_data(w), b->rows};
  if (!b->dev) memset(b->rows, 0, (size_t)b->count[1] * sizeof(double));
  /* `out` of the kernel is unused in BG_NU; w is passed as a harmless target. */
  RW_CALL(rw_grid_apply(b->g, y, b->gA, w, bg_kernel, &k));
  RW_CALL(bg_dev_error(b));
  if (b->dev) /* the per-node terms, summed in the device's order (held there when deferred) */
    return rw_pdefer_sum(&b->pd, out, 0, b->terms, b->nodes);
  out[0] += bg_rows_total(b, b->rows);
  return 0;
}

static int bg_jvp(void *content, double t, N_Vector y, const double *p, N_Vector v,
                  const double *dp, N_Vector out)
{
  (void)t;
  rw_burgers *b = content;
  RW_CALL(rw_grid_exchange_begin(b->g, y, b->gB));
  RW_CALL(rw_grid_exchange_end(b->g, b->gB));
  bg_kctx k = {b, BG_JVP, p[0], dp ? dp[0] : 0.0, NULL, b->gB, NULL, NULL};
  RW_CALL(rw_grid_apply(b->g, v, b->gA, out, bg_kernel, &k));
  RW_CALL(bg_dev_error(b));
  return 0;
}

static int bg_terminal(void *content, double t, N_Vector y, const double *p, double *g)
{
  (void)t, (void)p;
  rw_burgers *b = content;
  const double *u = rw_vec_data(y), *ut = rw_vec_data(b->target);
  double s = 0.0;
  if (b->dev) {
    rw_body_bg_misfit q = {u, ut, b->terms, NULL, 0.0};
    RW_CALL(rw_device_run(b->dev, RW_BODY_BG_MISFIT, &q, sizeof q, b->nodes, rw_body_host));
    RW_CALL(rw_device_reduce(b->dev, RW_DK_SUM, b->terms, NULL, b->nodes, &s));
  }
  for (sunindextype m = 0; !b->dev && m < rw_vec_local_length(y); m++) {
    double e = u[m] - ut[m];
    s += e * e;
  }
  s *= 0.5 * b->hx * b->hy;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM,
                            rw_context_comm(rw_grid_context(b->g))));
  *g = s;
  return 0;
}

static int bg_terminal_grad(void *content, double t, N_Vector y, const double *p, N_Vector gy,
                            double *gp)
{
  (void)t, (void)p, (void)gp;
  rw_burgers *b = content;
  const double *u = rw_vec_data(y), *ut = rw_vec_data(b->target);
  double *g = rw_vec_data(gy), a = b->hx * b->hy;
  if (b->dev) {
    rw_body_bg_misfit q = {u, ut, NULL, g, a};
    RW_CALL(rw_device_run(b->dev, RW_BODY_BG_MISFIT, &q, sizeof q, b->nodes, rw_body_host));
    return 0;
  }
  for (sunindextype m = 0; m < rw_vec_local_length(y); m++)
    g[m] = a * (u[m] - ut[m]);
  return 0;
}

/* rw_problem_params_defer / _flush: on a device the nu VJP's sums of the deferred pbar stay there
 * until the flush (rw_pdefer). */
static int bg_params_defer(void *c, double *pbar)
{
  return rw_pdefer_set(&((rw_burgers *)c)->pd, pbar);
}
static int bg_params_flush(void *c) { return rw_pdefer_flush(&((rw_burgers *)c)->pd); }

static void bg_destroy(void *content)
{
  rw_burgers *b = content;
  if (!b) return;
  rw_grid_destroy(&b->g);
  rw_vec_destroy(&b->target);
  if (b->dev) {
    size_t gl = (size_t)b->gn[0] * (size_t)b->gn[1] * sizeof(double);
    rw_device_free(b->dev, &b->gA, gl);
    rw_device_free(b->dev, &b->gB, gl);
    rw_device_free(b->dev, &b->terms, (size_t)(b->nodes + 1) * sizeof(double));
  }
  rw_pdefer_free(&b->pd);
  rw_grid_ghosted_free(&b->gA);
  rw_grid_ghosted_free(&b->gB);
  rw_free(&b->rows);
  rw_free(&b->urow_mem);
  rw_free(&b);
}

/* The initial profile moved by (sx, sy), into v. */
static int bg_profile(const rw_burgers *b, double sx, double sy, N_Vector v)
{
  const rw_burgers_config *c = &b->cfg;
  double *o = rw_vec_data(v), *host = NULL;
  if (rw_vec_device(v)) { /* computed on the host, then copied to the device */
    RW_CALL(rw_calloc((size_t)rw_vec_local_length(v) + 1, sizeof(double), "profile", &host));
    o = host;
  }
  for (long j = 0; j < b->count[1]; j++)
    for (long i = 0; i < b->count[0]; i++) {
      double d[2] = {b->lo[0] + (double)(b->start[0] + i) * b->hx - (c->center[0] + sx),
                     b->lo[1] + (double)(b->start[1] + j) * b->hy - (c->center[1] + sy)};
      for (int e = 0; e < 2; e++)
        d[e] -= b->len[e] * nearbyint(d[e] / b->len[e]); /* minimum image */
      o[j * b->count[0] + i] = c->offset + c->amplitude * exp(-(d[0] * d[0] + d[1] * d[1]) /
                                                              (2.0 * c->width * c->width));
    }
  if (host) {
    int ierr = rw_vec_from_host(v, host);
    rw_free(&host);
    RW_CALL(ierr);
  }
  return 0;
}

int rw_burgers_problem_create(rw_context ctx, const rw_burgers_config *cfg, rw_problem *out)
{
  int ierr = 0;
  rw_burgers *b = NULL;
  rw_problem prob = NULL;
  RW_CHECK(cfg && out, RW_ERR_ARG, "rw_burgers_problem_create: NULL argument");
  *out = NULL;
  RW_CHECK(cfg->n[0] >= 3 && cfg->n[1] >= 3, RW_ERR_ARG,
           "burgers: grid %ld x %ld; at least 3 x 3 nodes are needed", cfg->n[0], cfg->n[1]);
  RW_CHECK(cfg->hi[0] > cfg->lo[0] && cfg->hi[1] > cfg->lo[1], RW_ERR_ARG,
           "burgers: empty domain [%g, %g) x [%g, %g)", cfg->lo[0], cfg->hi[0], cfg->lo[1],
           cfg->hi[1]);
  RW_CHECK(cfg->width > 0.0, RW_ERR_ARG, "burgers: profile width %g must be > 0", cfg->width);
  RW_CALL(rw_calloc(1, sizeof *b, "burgers problem", &b));
  b->cfg = *cfg;
  rw_grid_config gc;
  memset(&gc, 0, sizeof gc);
  gc.dim = 2;
  gc.n[0] = cfg->n[0], gc.n[1] = cfg->n[1], gc.n[2] = 1;
  gc.lo[0] = cfg->lo[0], gc.lo[1] = cfg->lo[1];
  gc.hi[0] = cfg->hi[0], gc.hi[1] = cfg->hi[1];
  gc.bc[0] = gc.bc[1] = gc.bc[2] = RW_BC_PERIODIC;
  gc.ghost = 1;
  gc.ncomp = 1;
  for (int d = 0; d < 3; d++)
    gc.procs[d] = cfg->procs[d];
  RW_TRY(rw_grid_create(ctx, &gc, &b->g));
  rw_grid_local_box(b->g, b->start, b->count);
  rw_grid_ghosted_dims(b->g, b->gn);
  double h[3];
  rw_grid_spacing(b->g, h);
  b->hx = h[0], b->hy = h[1];
  b->ihx2 = 1.0 / (h[0] * h[0]), b->ihy2 = 1.0 / (h[1] * h[1]);
  b->i4hx = 0.25 / h[0], b->i4hy = 0.25 / h[1];
  b->i2hx = 0.5 / h[0], b->i2hy = 0.5 / h[1];
  b->lo[0] = cfg->lo[0], b->lo[1] = cfg->lo[1];
  b->len[0] = cfg->hi[0] - cfg->lo[0], b->len[1] = cfg->hi[1] - cfg->lo[1];
  RW_TRY(rw_grid_new_field(b->g, &b->target));
  RW_TRY(bg_profile(b, cfg->shift[0], cfg->shift[1], b->target));
  b->dev = rw_context_device(ctx);
  b->nodes = b->count[0] * b->count[1];
  if (b->dev) {
    size_t gl = rw_grid_ghosted_length(b->g) * sizeof(double);
    RW_TRY(rw_device_alloc(b->dev, gl, &b->gA));
    RW_TRY(rw_device_alloc(b->dev, gl, &b->gB));
    RW_TRY(rw_device_alloc(b->dev, (size_t)(b->nodes + 1) * sizeof(double), &b->terms));
    RW_TRY(rw_pdefer_init(&b->pd, b->dev, 1));
  } else {
    RW_TRY(rw_grid_ghosted_alloc(b->g, rw_grid_ghosted_length(b->g), "burgers halo work", &b->gA));
    RW_TRY(rw_grid_ghosted_alloc(b->g, rw_grid_ghosted_length(b->g), "burgers halo work", &b->gB));
    RW_TRY(rw_calloc((size_t)RW_WAVE_MAX_STAGES * (size_t)b->count[1], sizeof(double),
                     "burgers nu VJP row sums", &b->rows));
    RW_TRY(rw_calloc((size_t)b->count[0] + 9, sizeof(double), "burgers adjoint row", &b->urow_mem));
    b->urow = b->urow_mem + 7; /* urow + 1 on a cache line, as rw_calloc's block starts */
  }
  static const rw_problem_ops ops = {.rhs = bg_rhs,
                                     .rhs_comb = bg_rhs_comb,
                                     .vjp_y = bg_vjp_y,
                                     .vjp_p = bg_vjp_p,
                                     .jvp = bg_jvp,
                                     .terminal = bg_terminal,
                                     .terminal_grad = bg_terminal_grad,
                                     .params_defer = bg_params_defer,
                                     .params_flush = bg_params_flush,
                                     .destroy = bg_destroy};
  static const char *const names[] = {"nu"};
  rw_problem_ops dops = ops;
  int on_dev = b->dev != NULL;
  if (!on_dev) dops.vjp_comb = bg_vjp_comb; /* a device takes the generic adjoint stage */
  if (!on_dev) {
    dops.step_wave = bg_step_wave;
    dops.adjoint_wave = bg_adjoint_wave;
    dops.backward_wave = bg_backward_wave;
  }
  RW_TRY(rw_problem_create(ctx, "burgers", &dops, b, rw_grid_local_length(b->g), 1, names, &prob));
  if (on_dev) rw_problem_set_device_ready(prob);
  rw_problem_params(prob)[0] = cfg->nu;
  *out = prob;
  return 0;
cleanup:
  bg_destroy(b);
  return ierr;
}

static rw_burgers *bg_of(rw_problem prob)
{
  return prob && strcmp(rw_problem_name(prob), "burgers") == 0 ? rw_problem_content(prob) : NULL;
}

rw_grid rw_burgers_grid(rw_problem prob)
{
  rw_burgers *b = bg_of(prob);
  return b ? b->g : NULL;
}

int rw_burgers_initial_state(rw_problem prob, N_Vector y)
{
  rw_burgers *b = bg_of(prob);
  RW_CHECK(b && y, RW_ERR_ARG, "rw_burgers_initial_state: not a Burgers problem or NULL state");
  RW_CALL(bg_profile(b, 0.0, 0.0, y));
  return 0;
}

N_Vector rw_burgers_target(rw_problem prob)
{
  rw_burgers *b = bg_of(prob);
  return b ? b->target : NULL;
}

/* The advection-diffusion bound (see rw_burgers.h): 4 nu (1/hx^2 + 1/hy^2) + max|u| (1/hx +
 * 1/hy), with nu the current parameter and max|u| over all ranks.
 *   prob  a Burgers problem
 *   u     the state the advection speed is taken from (the initial state)
 *   rho   out: the bound, the same on every rank
 * Collective. Returns RW_ERR_ARG for another problem. */
int rw_burgers_eigen_bound(rw_problem prob, N_Vector u, double *rho)
{
  rw_burgers *b = bg_of(prob);
  double umax = 0.0;
  RW_CHECK(b && u && rho, RW_ERR_ARG, "rw_burgers_eigen_bound: not a Burgers problem");
  RW_CALL(rw_state_max_abs(u, &umax));
  double nu = fabs(rw_problem_params(prob)[0]);
  *rho = 4.0 * nu * (b->ihx2 + b->ihy2) + umax * (1.0 / b->hx + 1.0 / b->hy);
  return 0;
}
