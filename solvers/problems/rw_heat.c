/* The heat problem (see rw_heat.h): variable-conductivity diffusion on a distributed grid,
 * with kappa as a distributed parameter field and a sensor-misfit running cost.
 *
 * Three grids share one decomposition (same sizes, same rank count, so MPI_Dims_create gives
 * the same blocks; checked at creation): the state grid (Dirichlet ghosts = u_b), the
 * linearised-state grid (Dirichlet ghosts = 0, for tangents) and the kappa grid (periodic
 * where the state is periodic, Neumann mirror elsewhere). Each has its own halo buffers and
 * communicator, so a kappa exchange can be in flight during a state exchange.
 *
 * kappa is exchanged in every right-hand side, overlapped with the state exchange and the
 * interior work of rw_grid_apply: its owned values are copied at once (the interior needs no
 * ghosts still in flight) and its exchange is completed before the first box that reaches a
 * block edge (a frame slab, or, on one rank, the whole block). That keeps the problem
 * correct when anybody writes into the field (Taylor tests, the app's data run) without a
 * refresh call to forget; its cost is measured in tests/mpi/test_heat.c (see the report).
 *
 * The VJPs are the exact transposes of the discrete operator: each face's terms are
 * scattered into a ghosted adjoint array (the state's for vjp_y, kappa's for vjp_field),
 * whose ghost entries rw_grid_exchange_adjoint sends back to their owners (added to the
 * mirrored node for Neumann/mirror ghosts, dropped for Dirichlet ghosts, which are
 * constants). */
#include "rewind/rw_heat.h"

#include "../../core/rw_device_impl.h"
#include "../rw_dev_bodies.h"
#include "rewind/rw_kernels.h"
#include "rewind/rw_rng.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The indices the source's middle and slowest factors reach past the block each side
 * (heat_fill_shape): a wave of s stages computes s G layers past it (G = 1), so s up to this. */
#define HEAT_SF_PAST RW_WAVE_MAX_STAGES

typedef struct {
  rw_context ctx;
  rw_grid ug, lg, kg; /* state, linearised state, kappa */
  int dim;
  long n[3], st[3], cnt[3], gn[3];
  size_t glen, sd[3];        /* ghosted length, strides per dimension in a ghosted array */
  double h[3], c[3];         /* spacing, 1 / (2 h^2) */
  double *gu, *gk, *ga, *gb; /* ghosted work arrays: state, kappa, state adjoint, kappa adjoint */
  N_Vector kappa;            /* the problem's field (owned by the problem) */
  int gk_ready;   /* inside a solve (solve_begin): gk holds kappa's halo copy, not redone */
  N_Vector shape; /* s(x) as an array: on a device only (its bodies read it) */
  /* s's 1-D factors (heat_fill_shape): sf[d][i] along d (sf[2][0] = 1 in 2-D), so s at
   * (i, j, k) is sf[0][i] * (sf[1][j] * sf[2][k]) bit for bit; on the CPU every path forms s
   * from them instead of storing or streaming it. sf[1] and sf[2] also hold HEAT_SF_PAST
   * indices each side of the block, for the layers a wave computes past it */
  double *sf_mem, *sf[3];
  N_Vector vscr; /* on a device: a state-like scratch for the plain VJPs (made at first use) */
  int neumann;   /* Neumann sides: the operator is not symmetric */
  int periodic;  /* periodic sides: no physical boundary */
  rw_grid zg;    /* Neumann only: the adjoint's halo grid (zero ghosts, Dirichlet 0) */
  int ns;
  long (*snode)[3]; /* sensor nodes (global) */
  long *sloc;       /* local index of the sensor node, -1 when another rank owns it */
  double *sbuf;     /* ns doubles */
  /* this rank's sensors in order: nsl of them at owned offsets slocal; their values (sval),
   * and per stage of a wave (scap: RW_WAVE_MAX_STAGES x nsl) */
  int nsl;
  long *slocal;
  double *sval, *scap;
  /* an adjoint wave's running-cost gradient: per stage and sensor (sgv, RW_WAVE_MAX_STAGES x
   * ns; every rank's where the stages run past the block) and the wave's injections (sinj:
   * values per stage, soff: offsets from the block's layer 0; up to HEAT_INJ_COPIES a sensor) */
  double *sinj, *sgv;
  long *soff;
  /* the source parameter's VJP: lane sets (heat_ws_row), HEAT_LANES per row index j, for
   * RW_WAVE_MAX_STAGES stages */
  double *lanes;
  /* the adjoint wave's rows of the stored state */
  double *urow_mem; /* urow and brow's block */
  double *urow;     /* the adjoint's copy of a stored row between two ghosts (urow + 1 aligned) */
  double *brow;     /* a row of the boundary value (aligned) */
  double *yq, *yb;  /* the adjoint wave's y faces of the last row (heat_adj_vec; aligned) */
  long nt;          /* data: nt times, values[n * ns + s] */
  double *dtimes, *dvals;
  int recording;
  long rcap, nrec;
  double *rtimes, *rvals;
  double ub;     /* the Dirichlet boundary value */
  double gscale; /* noise: (h_0 h_1 [h_2])^(-1/2), the diffusion at a full-cell node */
  /* on a device (rw_device.h): gu, gk, ga, gb and terms are device arrays, the stencils
   * device bodies (rw_dev_bodies.h); Dirichlet and periodic sides only */
  rw_device dev;
  double *terms; /* nodes doubles: per-node terms of the source parameter's VJP */
  /* the whole-step wave (rw_grid_erk_wave) where the slowest dimension has a neighbour: the
   * conductivity (ghosted) s G layers past the block, made once per solve for wave_s stages
   * (0: not this solve) */
  double *wk;
  size_t wk_len;
  int wave_s;
  rw_pdefer pd; /* the source's VJP sum held on the device while the driver defers pbar */
  long nodes;
} heat;

/* Kernel context of the right-hand side and the tangents. */
typedef struct {
  const heat *H;
  const double *gk; /* ghosted conductivity */
  rw_grid kgrid;    /* grid whose exchange of gk is still in flight (NULL: none) */
  double *gk_pending;
  int src; /* the source term q s is added */
  double q;
  int err;
} heat_kctx;

static int heat_rhs(void *content, double t, N_Vector y, const double *p, N_Vector f);

static heat *heat_of(rw_problem prob)
{
  if (!prob || rw_problem_get_ops(prob)->rhs != heat_rhs) return NULL;
  return rw_problem_content(prob);
}

#define HEAT_GET(H, prob)                                                                          \
  heat *H = heat_of(prob);                                                                         \
  RW_CHECK(H, RW_ERR_ARG, "%s: not a heat problem", __func__)

/* One row of f = div(k grad u) (+ q s), m nodes from ghosted index 0 of gk/gu (row pointers),
 * output row out, the source's row s_i = sx[i] * syz from its factors (heat_fill_shape: the
 * bits of the product the array would hold; sx NULL: no source). Per node, per dimension d in
 * order, with
 * s = stride: f += c_d ((k_i + k_{i-s}) (u_{i-s} - u_i) + (k_i + k_{i+s}) (u_{i+s} - u_i)),
 * starting from 0.0. The 2-D and 3-D rows are separate branch-free loops over restrict
 * pointers, so the compiler vectorises them; the operations and their order are the same in
 * both and in every clone. */
/* The row body; `three` and `has_src` are constants at each call site below, so every variant
 * is a branch-free loop (no masked load standing for the optional source). */
static inline __attribute__((always_inline)) void
heat_row_body(const double *restrict gk, const double *restrict gu, const double *restrict sx,
              double syz, double q, double *restrict out, long m, const size_t sd[3],
              const double c[3], const int three, const int has_src)
{
  const size_t s0 = sd[0], s1 = sd[1], s2 = sd[2];
  const double c0 = c[0], c1 = c[1], c2 = c[2];
  for (long i = 0; i < m; i++) {
    double ui = gu[i], ki = gk[i], fi = 0.0;
    fi += c0 * ((ki + gk[i - s0]) * (gu[i - s0] - ui) + (ki + gk[i + s0]) * (gu[i + s0] - ui));
    fi += c1 * ((ki + gk[i - s1]) * (gu[i - s1] - ui) + (ki + gk[i + s1]) * (gu[i + s1] - ui));
    if (three)
      fi += c2 * ((ki + gk[i - s2]) * (gu[i - s2] - ui) + (ki + gk[i + s2]) * (gu[i + s2] - ui));
    out[i] = has_src ? fi + q * (sx[i] * syz) : fi;
  }
}

/* The source parameter's VJP sum_i w_i s_i on the CPU, in one order for every path (the plain
 * VJP, the combined one, the conductivity's sweep, which adds it while w's row is in cache, and
 * the adjoint wave, which visits the rows tile by tile): node i of an owned row with middle
 * index j (3-D; the row index in 2-D) adds to lane i mod HEAT_LANES of set j, the rows of a set
 * in layer order; each set is folded by a fixed tree (heat_lanes_fold) and the sets are summed
 * in j order (heat_lanes_total). Independent lane sums vectorise, and every SIMD width gives
 * the same bits; one serial sum was a chain of dependent additions that cost as much as a pass
 * over memory. */
#define HEAT_LANES 8

/* The adjoint wave's row: the VJP (heat_row_body with no source: out = the operator on w) and
 * the conductivity's gradient (heat_kgrad_body's terms) of the same nodes in one loop, sharing
 * the loads of w and its differences: heat_kgrad_body's g += c ((w_i - w_m) a + (w_i - w_p) b)
 * is written g -= c ((w_m - w_i) a + (w_p - w_i) b), the same value bit for bit (x - y is
 * -(y - x) exactly, and a negation passes exactly through products and sums under
 * round-to-nearest; g never holds -0), with two subtractions fewer per dimension. The stored
 * state comes as rows: the node's own (uc, read at i - 1 and i + 1 too, so a copy whose two
 * ends hold the row's ghosts) and its neighbours' along the middle (um1, up1) and, in 3-D,
 * the slowest dimension (um2, up2): rows of the owned array, of a neighbour's layer, or of the
 * boundary value. So every node of a row, its ends and the block's sides included, goes
 * through this one vector loop. */
static inline __attribute__((always_inline)) void
heat_adj_node(const double *restrict gk, const double *restrict gw, const double *restrict uc,
              const double *restrict um1, const double *restrict up1, const double *restrict um2,
              const double *restrict up2, double *restrict out, double *restrict fo, long i,
              const size_t sd[3], const double c[3], const int three)
{
  const size_t s0 = sd[0], s1 = sd[1], s2 = sd[2];
  const double c0 = c[0], c1 = c[1], c2 = c[2];
  const double wi = gw[i], ki = gk[i], ui = uc[i];
  const double dm0 = gw[i - s0] - wi, dp0 = gw[i + s0] - wi, dm1 = gw[i - s1] - wi,
               dp1 = gw[i + s1] - wi;
  double fi = 0.0, g = 0.0;
  fi += c0 * ((ki + gk[i - s0]) * dm0 + (ki + gk[i + s0]) * dp0);
  fi += c1 * ((ki + gk[i - s1]) * dm1 + (ki + gk[i + s1]) * dp1);
  g -= c0 * (dm0 * (uc[i - 1] - ui) + dp0 * (uc[i + 1] - ui));
  g -= c1 * (dm1 * (um1[i] - ui) + dp1 * (up1[i] - ui));
  if (three) {
    const double dm2 = gw[i - s2] - wi, dp2 = gw[i + s2] - wi;
    fi += c2 * ((ki + gk[i - s2]) * dm2 + (ki + gk[i + s2]) * dp2);
    g -= c2 * (dm2 * (um2[i] - ui) + dp2 * (up2[i] - ui));
  }
  out[i] = fi;
  fo[i] += g;
}

/* The rows in vectors, once per ISA at its width (rw_kernels.h), and the calls that pick one. */
#if RW_ISA_X86
#define HEAT_VW     8
#define HEAT_ISA(n) n##_avx512
#define HEAT_TARGET RW_ISA_AVX512_TARGET
#include "rw_heat_simd.h"
#define HEAT_VW     4
#define HEAT_ISA(n) n##_avx2
#define HEAT_TARGET RW_ISA_AVX2_TARGET
#include "rw_heat_simd.h"
#endif
#define HEAT_VW     2
#define HEAT_ISA(n) n##_base
#define HEAT_TARGET
#include "rw_heat_simd.h"

static void heat_row3(const double *restrict gk, const double *restrict gu,
                      const double *restrict sx, double syz, double q, double *restrict out, long m,
                      const size_t sd[3], const double c[3])
{
  RW_ISA_CALL(heat_row3, (gk, gu, sx, syz, q, out, m, sd, c));
}

static void heat_row2(const double *restrict gk, const double *restrict gu,
                      const double *restrict sx, double syz, double q, double *restrict out, long m,
                      const size_t sd[3], const double c[3])
{
  RW_ISA_CALL(heat_row2, (gk, gu, sx, syz, q, out, m, sd, c));
}

static void heat_layer3(const double *restrict gk, const double *restrict gu,
                        const double *restrict sx, const double *restrict sy, double sz, double q,
                        double *restrict out, long m, long nj, long os, const size_t sd[3],
                        const double c[3])
{
  RW_ISA_CALL(heat_layer3, (gk, gu, sx, sy, sz, q, out, m, nj, os, sd, c));
}

static void heat_adj_row(const double *restrict gk, const double *restrict gw,
                         const double *restrict uc, const double *restrict um1,
                         const double *restrict up1, const double *restrict um2,
                         const double *restrict up2, const double *restrict sx, double syz,
                         double *restrict lanes, double *restrict out, double *restrict fo,
                         double *restrict fq, double *restrict fb, long m, const size_t sd[3],
                         const double c[3], int three, int shy, double ulo, double uhi, int ghu,
                         const double *const *pf)
{
  RW_ISA_CALL(heat_adj_row, (gk, gw, uc, um1, up1, um2, up2, sx, syz, lanes, out, fo, fq, fb, m, sd,
                             c, three, shy, ulo, uhi, ghu, pf));
}

/* A row's terms, the source's row formed from its factors (heat_fill_shape): s_i = sx[i] * syz,
 * the bits of the product the shape's array would hold. */
RW_SIMD_CLONES static void heat_ws_row_f(const double *restrict w, const double *restrict sx,
                                         double syz, long m, double *restrict lanes)
{
  long b = 0;
  for (; b + HEAT_LANES <= m; b += HEAT_LANES)
    for (int l = 0; l < HEAT_LANES; l++)
      lanes[l] += w[b + l] * (sx[b + l] * syz);
  for (int l = 0; b + l < m; l++)
    lanes[l] += w[b + l] * (sx[b + l] * syz);
}

static double heat_lanes_fold(const double *l)
{
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

static double heat_lanes_total(const heat *H, const double *lanes)
{
  double t = 0.0;
  for (long j = 0; j < H->cnt[1]; j++)
    t += heat_lanes_fold(lanes + (size_t)j * HEAT_LANES);
  return t;
}

static size_t heat_lanes_len(const heat *H) { return (size_t)H->cnt[1] * HEAT_LANES; }

/* sum_i w_i s_i over the owned nodes, w in a ghosted array (ghosted != 0) or an owned one. */
static double heat_ws_sum(const heat *H, const double *w, int ghosted)
{
  double *lanes = H->lanes;
  memset(lanes, 0, heat_lanes_len(H) * sizeof(double));
  for (long k = 0; k < H->cnt[2]; k++)
    for (long j = 0; j < H->cnt[1]; j++) {
      size_t o = (size_t)((k * H->cnt[1] + j) * H->cnt[0]);
      size_t x = ghosted ? rw_grid_gidx(H->gn, 1, H->dim, 0, j, k, 1, 0) : o;
      heat_ws_row_f(w + x, H->sf[0], H->sf[1][j] * H->sf[2][k], H->cnt[0],
                    lanes + (size_t)j * HEAT_LANES);
    }
  return heat_lanes_total(H, lanes);
}

/* The common part of a heat device body over the box [lo, hi) (rw_dev_bodies.h): geometry,
 * strides and 1/(2 h^2); returns the box's node count. */
static long heat_dev_init(const heat *H, rw_body_heat *b, const long lo[3], const long hi[3])
{
  long n = 1;
  memset(b, 0, sizeof *b);
  for (int d = 0; d < 3; d++) {
    b->g.gn[d] = H->gn[d], b->g.cnt[d] = H->cnt[d];
    b->lo[d] = lo[d], b->cnt[d] = hi[d] - lo[d];
    b->sd[d] = H->sd[d], b->c[d] = H->c[d];
    n *= b->cnt[d];
  }
  b->g.ghost = 1, b->g.dim = H->dim, b->g.ncomp = 1;
  return n;
}

/* A heat device body over the box [lo, hi). */
static int heat_dev_box(const heat *H, int id, const double *gk, const double *gu,
                        const double *src, double q, double *out, const long lo[3],
                        const long hi[3])
{
  rw_body_heat b;
  long n = heat_dev_init(H, &b, lo, hi);
  b.gk = gk, b.gu = gu, b.src = src, b.q = q, b.out = out;
  RW_CALL(rw_device_run(H->dev, id, &b, sizeof b, n, rw_body_host));
  return 0;
}

/* f = div(k grad u) (+ q s, src) on the owned box [lo, hi), conservative face form. v0: the
 * block's first layer in the box's coordinates along the slowest dimension (a wave's layer
 * numbering, rw_grid_wave_layer0; 0 otherwise), where the source's factors are indexed by the
 * block's. */
static int heat_diffuse(const heat *H, long v0, const double *gk, const double *gu, int src,
                        double q, double *out, const long lo[3], const long hi[3])
{
  const int D = H->dim;
  if (H->dev)
    return heat_dev_box(H, RW_BODY_HEAT_DIFFUSE, gk, gu, src ? rw_vec_data(H->shape) : NULL, q, out,
                        lo, hi);
  const double *sx = src ? H->sf[0] + lo[0] : NULL;
  for (long k = lo[2]; k < hi[2]; k++) {
    if (D == 3) { /* a layer's rows at once: their y faces shared */
      size_t x = rw_grid_gidx(H->gn, 1, D, lo[0], lo[1], k, 1, 0);
      size_t o = (size_t)((k * H->cnt[1] + lo[1]) * H->cnt[0] + lo[0]);
      heat_layer3(gk + x, gu + x, sx, H->sf[1] + lo[1], H->sf[2][k - v0], q, out + o, hi[0] - lo[0],
                  hi[1] - lo[1], H->cnt[0], H->sd, H->c);
      continue;
    }
    for (long j = lo[1]; j < hi[1]; j++) {
      size_t x = rw_grid_gidx(H->gn, 1, D, lo[0], j, k, 1, 0);
      size_t o = (size_t)((k * H->cnt[1] + j) * H->cnt[0] + lo[0]);
      heat_row2(gk + x, gu + x, sx, H->sf[1][j - v0] * H->sf[2][k], q, out + o, hi[0] - lo[0],
                H->sd, H->c);
    }
  }
  return 0;
}

/* The fused stage's interior box on a device (rw_grid_apply_comb_fused: gv == NULL): u formed
 * from the stage's inputs at every point read, u kept (RW_BODY_HEAT_DIFFUSE_COMB). */
static int heat_diffuse_comb(const heat *H, rw_grid g, const double *gk, int src, double q,
                             double *out, const long lo[3], const long hi[3])
{
  rw_body_heat_comb b;
  RW_CALL(rw_grid_comb_body(g, &b.in));
  long items = heat_dev_init(H, &b.b, lo, hi);
  b.b.gk = gk, b.b.src = src ? rw_vec_data(H->shape) : NULL, b.b.q = q, b.b.out = out;
  if (items > 0)
    RW_CALL(rw_device_run(H->dev, RW_BODY_HEAT_DIFFUSE_COMB, &b, sizeof b, items, rw_body_host));
  return 0;
}

/* rw_grid_apply kernel: before the first box that reaches a block edge (a frame slab, or an
 * interior box spanning a dimension whose ghosts the exchange's begin filled), the kappa
 * exchange still in flight (if any) is completed. */
static void heat_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                        const long hi[3])
{
  heat_kctx *c = kc;
  (void)g;
  if (c->kgrid) {
    int frame = 0;
    for (int d = 0; d < c->H->dim; d++)
      frame = frame || lo[d] < 1 || hi[d] > c->H->cnt[d] - 1;
    if (frame) {
      int e = rw_grid_exchange_end(c->kgrid, c->gk_pending);
      if (e && !c->err) c->err = e;
      c->kgrid = NULL;
    }
  }
  int e = gv ? heat_diffuse(c->H, rw_grid_wave_layer0(g), c->gk, gv, c->src, c->q, out, lo, hi)
             : heat_diffuse_comb(c->H, g, c->gk, c->src, c->q, out, lo, hi);
  if (e && !c->err) c->err = e;
}

/* out = div(a grad v) (+ q s where src): a exchanged on the kappa grid into ga_arr, v on
 * `vgrid` (into H->gu) by rw_grid_apply, the two exchanges overlapped with the interior. */
static int heat_apply_comb(heat *H, N_Vector a, double *ga_arr, rw_grid vgrid, int n,
                           const double *cv, N_Vector *V, N_Vector keep, int src, double q,
                           N_Vector out, int fused)
{
  heat_kctx c = {H, ga_arr, H->kg, ga_arr, src, q, 0};
  if (a == H->kappa && ga_arr == H->gk && H->gk_ready)
    c.kgrid = NULL; /* the field's halo copy of this solve is in place */
  else
    RW_CALL(rw_grid_exchange_begin(H->kg, a, ga_arr));
  int ierr = cv && fused /* the callers that need H->gu whole afterwards do not fuse */
                 ? rw_grid_apply_comb_fused(vgrid, n, cv, V, keep, H->gu, out, heat_kernel, &c)
                 : cv ? rw_grid_apply_comb(vgrid, n, cv, V, keep, H->gu, out, heat_kernel, &c)
                      : rw_grid_apply(vgrid, V[0], H->gu, out, heat_kernel, &c);
  if (c.kgrid) { /* apply failed before any frame box: finish the kappa exchange */
    int e = rw_grid_exchange_end(H->kg, ga_arr);
    if (!ierr) ierr = e;
  }
  RW_CALL(ierr);
  RW_CALL(c.err);
  return 0;
}

static int heat_apply(heat *H, N_Vector a, double *ga_arr, rw_grid vgrid, N_Vector v, int src,
                      double q, N_Vector out)
{
  RW_CALL(heat_apply_comb(H, a, ga_arr, vgrid, 1, NULL, &v, NULL, src, q, out, 0));
  return 0;
}

/* Inside a solve kappa does not change: its halo copy is made once here, not in every
 * operator call (one read and one write of the field per stage saved). */
static int heat_solve_begin(void *content)
{
  heat *H = content;
  H->gk_ready = 0;
  H->wave_s = 0;
  RW_CALL(rw_grid_exchange_begin(H->kg, H->kappa, H->gk));
  RW_CALL(rw_grid_exchange_end(H->kg, H->gk));
  H->gk_ready = 1;
  return 0;
}

static void heat_solve_end(void *content)
{
  heat *H = content;
  H->gk_ready = 0;
  H->wave_s = 0;
}

static int heat_rhs(void *content, double t, N_Vector y, const double *p, N_Vector f)
{
  heat *H = content;
  (void)t;
  RW_CALL(heat_apply(H, H->kappa, H->gk, H->ug, y, 1, p[0], f));
  return 0;
}

/* f = f(Y), Y = sum_j c[j] X[j] formed in the halo copy (kept in `keep` when not NULL). */
static int heat_rhs_comb(void *content, double t, const double *p, int n, const double *c,
                         N_Vector *X, N_Vector keep, N_Vector f)
{
  heat *H = content;
  (void)t;
  RW_CALL(heat_apply_comb(H, H->kappa, H->gk, H->ug, n, c, X, keep, 1, p[0], f, 1));
  return 0;
}

/* A whole RK step in one sweep (rw_grid_erk_wave) on the CPU inside a solve, where the
 * conductivity's halo copy is in place. The kernel reads the conductivity and the source at
 * the node: where the block's slowest dimension has a neighbour (another rank, or periodic
 * over this one) the stages run s G layers past the block, and the kernel then reads copies of
 * both fields that reach there (rw_grid_wave_field), made once per solve. */
static double heat_misfit(heat *H, double t, const double *v);

/* The conductivity (ghosted) s G layers past the block, for waves of s stages whose slowest
 * dimension has a neighbour: made once per solve. Collective. (The source there comes from its
 * factors, which reach HEAT_SF_PAST layers past the block.) */
static int heat_wave_fields(heat *H, int s)
{
  if (H->wave_s == s) return 0;
  size_t nk = rw_grid_wave_field_length(H->kg, s, 1);
  if (nk > H->wk_len) {
    rw_grid_ghosted_free(&H->wk);
    H->wk_len = 0;
    RW_CALL(rw_grid_ghosted_alloc(H->kg, nk, "heat wave conductivity", &H->wk));
    H->wk_len = nk;
  }
  RW_CALL(rw_grid_wave_field(H->kg, s, H->kappa, 1, H->wk));
  H->wave_s = s;
  return 0;
}

static int heat_step_wave(void *content, const double *t, const double *p,
                          const struct rw_stage_plan_s *plan, N_Vector y, N_Vector y_out, double *q,
                          int *done)
{
  heat *H = content;
  *done = 0;
  const int s = plan->s, reach = rw_grid_wave_reaches(H->ug);
  if (H->dev || !H->gk_ready || s > HEAT_SF_PAST || !rw_grid_wave_ready(H->ug, s, reach)) return 0;
  heat_kctx c = {H, H->gk, NULL, H->gk, 1, p[0], 0};
  if (reach) { /* the conductivity past the block, once per solve */
    RW_CALL(heat_wave_fields(H, s));
    c.gk = H->wk;
  }
  void *kc[RW_WAVE_MAX_STAGES];
  for (int i = 0; i < s; i++)
    kc[i] = &c;
  rw_stage_plan P = *plan; /* with the running cost: each stage's values at the sensors */
  P.ncap = q ? H->nsl : 0, P.cap = H->slocal, P.capv = H->scap;
  RW_CALL(rw_grid_erk_wave(H->ug, &P, y, y_out, reach, heat_kernel, kc, done));
  RW_CALL(c.err);
  if (*done && q) { /* rw_erk_stages' quadrature: sum of h b_i r(Y_i) in stage order, then added */
    double dq = 0.0;
    for (int m = 1; m < P.nb; m++) {
      const int i = P.xb[m];
      dq += P.cb[m] * heat_misfit(H, t[i], H->scap + (size_t)i * (size_t)H->nsl);
    }
    *q += dq;
  }
  return 0;
}

static int heat_jvp(void *content, double t, N_Vector y, const double *p, N_Vector v,
                    const double *dp, N_Vector out)
{
  heat *H = content;
  (void)t, (void)y, (void)p;
  RW_CALL(heat_apply(H, H->kappa, H->gk, H->lg, v, dp != NULL, dp ? dp[0] : 0.0, out));
  return 0;
}

static int heat_vjp_comb(void *content, double t, N_Vector y, const double *p, int n,
                         const double *c, N_Vector *W, N_Vector out_y, double *out_p);
static int heat_vjp_comb_field(void *content, double t, N_Vector y, const double *p, int n,
                               const double *c, N_Vector *W, N_Vector out_y, double *out_p,
                               N_Vector field, N_Vector field_out);

/* On a device the plain VJPs run the fused stage's gathers with the one input w (its transpose
 * by gather, heat_vjp_comb; the conductivity's by gather, heat_vjp_comb_field) into a scratch
 * vector: out_y += (df/du)^T w, and field_out += (df/dkappa)^T w when field_out is not NULL. */
static int heat_vjp_dev(heat *H, double t, N_Vector y, const double *p, N_Vector w, N_Vector out_y,
                        N_Vector field_out)
{
  const double one = 1.0;
  if (!H->vscr) RW_CALL(rw_vec_clone(w, &H->vscr));
  if (field_out)
    RW_CALL(heat_vjp_comb_field(H, t, y, p, 1, &one, &w, H->vscr, NULL, H->kappa, field_out));
  else
    RW_CALL(heat_vjp_comb(H, t, y, p, 1, &one, &w, H->vscr, NULL));
  if (out_y) N_VLinearSum(1.0, out_y, 1.0, H->vscr, out_y);
  return 0;
}

/* out += (df/du)^T w: each face term c (k_i + k_j) w_i (u_j - u_i) of f_i gives
 * +c (k_i + k_j) w_i to u_j and -c (k_i + k_j) w_i to u_i. */
static int heat_vjp_y(void *content, double t, N_Vector y, const double *p, N_Vector w,
                      N_Vector out)
{
  heat *H = content;
  const int D = H->dim;
  const double *wd = rw_vec_data(w), *gk = H->gk;
  double *ga = H->ga;
  if (H->dev) return heat_vjp_dev(H, t, y, p, w, out, NULL);
  (void)t, (void)y, (void)p;
  if (!H->gk_ready) RW_CALL(rw_grid_exchange_begin(H->kg, H->kappa, H->gk));
  memset(ga, 0, H->glen * sizeof(double));
  if (!H->gk_ready) RW_CALL(rw_grid_exchange_end(H->kg, H->gk));
  for (long k = 0; k < H->cnt[2]; k++)
    for (long j = 0; j < H->cnt[1]; j++) {
      size_t x = rw_grid_gidx(H->gn, 1, D, 0, j, k, 1, 0);
      size_t o = (size_t)((k * H->cnt[1] + j) * H->cnt[0]);
      for (long i = 0; i < H->cnt[0]; i++, x++, o++) {
        double wi = wd[o], ki = gk[x], self = 0.0;
        for (int d = 0; d < D; d++) {
          size_t s = H->sd[d];
          double am = H->c[d] * (ki + gk[x - s]) * wi, ap = H->c[d] * (ki + gk[x + s]) * wi;
          ga[x - s] += am;
          ga[x + s] += ap;
          self += am + ap;
        }
        ga[x] -= self;
      }
    }
  RW_CALL(rw_grid_exchange_adjoint(H->ug, ga, out));
  return 0;
}

/* out[0] += sum_i w_i s_i (local part; on the CPU in heat_ws_sum's order). */
static int heat_vjp_p(void *content, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  heat *H = content;
  (void)t, (void)y, (void)p;
  if (H->dev) {
    out[0] += rw_vec_dot_local(w, H->shape);
    return 0;
  }
  out[0] += heat_ws_sum(H, rw_vec_data(w), 0);
  return 0;
}

/* out += (df/dkappa)^T w: each face term c (k_i + k_j) w_i (u_j - u_i) gives
 * c w_i (u_j - u_i) to both k_i and k_j (k_j possibly a ghost: sent back to its owner). */
static int heat_vjp_field(void *content, double t, N_Vector y, const double *p, N_Vector field,
                          N_Vector w, N_Vector out)
{
  heat *H = content;
  const int D = H->dim;
  const double *wd = rw_vec_data(w), *gu = H->gu;
  double *gb = H->gb;
  if (H->dev) return heat_vjp_dev(H, t, y, p, w, NULL, out);
  (void)t, (void)p, (void)field;
  RW_CALL(rw_grid_exchange_begin(H->ug, y, H->gu));
  memset(gb, 0, H->glen * sizeof(double));
  RW_CALL(rw_grid_exchange_end(H->ug, H->gu));
  for (long k = 0; k < H->cnt[2]; k++)
    for (long j = 0; j < H->cnt[1]; j++) {
      size_t x = rw_grid_gidx(H->gn, 1, D, 0, j, k, 1, 0);
      size_t o = (size_t)((k * H->cnt[1] + j) * H->cnt[0]);
      for (long i = 0; i < H->cnt[0]; i++, x++, o++) {
        double wi = wd[o], ui = gu[x], self = 0.0;
        for (int d = 0; d < D; d++) {
          size_t s = H->sd[d];
          double bm = H->c[d] * wi * (gu[x - s] - ui), bp = H->c[d] * wi * (gu[x + s] - ui);
          gb[x - s] += bm;
          gb[x + s] += bp;
          self += bm + bp;
        }
        gb[x] += self;
      }
    }
  RW_CALL(rw_grid_exchange_adjoint(H->kg, gb, out));
  return 0;
}

/* The owned layer [lo, hi) of boundary face (d, side) when this rank holds that physical
 * boundary (returns 0 otherwise), with the ghosted stride s and the owned stride out_s along d
 * and the direction `toward` the inside (+1 on a low side, -1 on a high one). */
static int heat_face(const heat *H, int d, int side, long lo[3], long hi[3], ptrdiff_t *s,
                     ptrdiff_t *out_s, ptrdiff_t *toward)
{
  if (side == 0 ? H->st[d] != 0 : H->st[d] + H->cnt[d] != H->n[d]) return 0;
  for (int e = 0; e < 3; e++)
    lo[e] = 0, hi[e] = H->cnt[e];
  lo[d] = side == 0 ? 0 : H->cnt[d] - 1;
  hi[d] = lo[d] + 1;
  *s = (ptrdiff_t)H->sd[d];
  *out_s = d == 0 ? 1 : d == 1 ? (ptrdiff_t)H->cnt[0] : (ptrdiff_t)(H->cnt[0] * H->cnt[1]);
  *toward = side == 0 ? 1 : -1;
  return 1;
}

/* Neumann sides (after the symmetric part with zero ghosts): a boundary node b's face to its
 * ghost, whose value mirrors the node one layer inside (b + t, t = +1 on a low side, -1 on a
 * high one), contributes w_b c_d (k_b + k_g) to that node's adjoint, k_g the ghost's (mirrored)
 * conductivity: out[b + t] += c_d (k_b + k_g) w_b, per dimension and side in order, from the
 * ghosted copies of w (H->gu) and of the conductivity (H->gk). A gather per face node: no
 * scatter array, no transposed exchange, and the same on a device (RW_BODY_HEAT_KGHOST,
 * mode 1). */
static int heat_neumann_ghosts(heat *H, double *out)
{
  const double *gw = H->gu, *gk = H->gk;
  for (int d = 0; d < H->dim; d++)
    for (int side = 0; side < 2; side++) {
      long lo[3], hi[3];
      ptrdiff_t s, out_s, toward;
      if (!heat_face(H, d, side, lo, hi, &s, &out_s, &toward)) continue;
      if (H->dev) {
        rw_body_heat b;
        long nf = heat_dev_init(H, &b, lo, hi);
        b.gk = gk, b.gu = gw, b.out = out, b.d = d, b.mode = 1, b.toward = (long)toward,
        b.out_s = (long)out_s;
        RW_CALL(rw_device_run(H->dev, RW_BODY_HEAT_KGHOST, &b, sizeof b, nf, rw_body_host));
        continue;
      }
      for (long k = lo[2]; k < hi[2]; k++)
        for (long j = lo[1]; j < hi[1]; j++)
          for (long i = lo[0]; i < hi[0]; i++) {
            ptrdiff_t x = (ptrdiff_t)rw_grid_gidx(H->gn, 1, H->dim, i, j, k, 1, 0);
            ptrdiff_t o = (ptrdiff_t)((k * H->cnt[1] + j) * H->cnt[0] + i);
            out[o + toward * out_s] += H->c[d] * (gk[x] + gk[x - toward * s]) * gw[x];
          }
    }
  return 0;
}

/* out_y = (df/du)^T w (overwritten) with w = sum_j c[j] W[j]; out_p[0] += sum_i w_i s_i when
 * asked. With Dirichlet or periodic sides the operator on the unknowns is symmetric: the face
 * term c (k_i + k_j) (u_j - u_i) couples i to j exactly as j to i, and a Dirichlet ghost is a
 * constant whose face only adds -c (k_i + k_g) to i's diagonal. So the transpose is the
 * linearised operator itself, applied by gather with zero Dirichlet ghosts (grid lg, the
 * tangent grid) and w formed in its halo copy, overlapped like the forward; each node's value is
 * then independent of the decomposition. Neumann sides mirror an interior node into the ghost,
 * which is not symmetric: there the same gather runs with zero ghosts (grid zg), and each
 * ghost face's term is added to the node it mirrors (heat_neumann_ghosts). */
static int heat_vjp_comb(void *content, double t, N_Vector y, const double *p, int n,
                         const double *c, N_Vector *W, N_Vector out_y, double *out_p)
{
  heat *H = content;
  (void)t, (void)y, (void)p;
  RW_CALL(heat_apply_comb(H, H->kappa, H->gk, H->neumann ? H->zg : H->lg, n, c, W, NULL, 0, 0.0,
                          out_y, 0));
  if (H->neumann) RW_CALL(heat_neumann_ghosts(H, rw_vec_data(out_y)));
  if (out_p && H->dev) { /* w s per node from w's ghosted copy, summed in the device's order */
    const long lo[3] = {0, 0, 0};
    RW_CALL(heat_dev_box(H, RW_BODY_HEAT_WS, NULL, H->gu, rw_vec_data(H->shape), 0.0, H->terms, lo,
                         H->cnt));
    RW_CALL(rw_pdefer_sum(&H->pd, out_p, 0, H->terms, H->nodes));
  } else if (out_p) { /* w from its ghosted copy, in heat_vjp_p's order */
    out_p[0] += heat_ws_sum(H, H->gu, 1);
  }
  return 0;
}

/* One row of the conductivity's gradient by gather: for node m and each dimension d in order,
 * g += c_d ((w_m - w_{m-s}) (u_{m-s} - u_m) + (w_m - w_{m+s}) (u_{m+s} - u_m)), the face
 * terms c w_i (u_j - u_i) of heat_vjp_field's scatter that reach k_m (from m's own faces and
 * from its neighbours'), summed at m; then out += g. gw, gu: ghosted rows of w and u. */
static inline __attribute__((always_inline)) void
heat_kgrad_body(const double *restrict gw, const double *restrict gu, double *restrict out, long m,
                const size_t sd[3], const double c[3], const int three)
{
  const size_t s0 = sd[0], s1 = sd[1], s2 = sd[2];
  const double c0 = c[0], c1 = c[1], c2 = c[2];
  for (long i = 0; i < m; i++) {
    double wi = gw[i], ui = gu[i], g = 0.0;
    g += c0 * ((wi - gw[i - s0]) * (gu[i - s0] - ui) + (wi - gw[i + s0]) * (gu[i + s0] - ui));
    g += c1 * ((wi - gw[i - s1]) * (gu[i - s1] - ui) + (wi - gw[i + s1]) * (gu[i + s1] - ui));
    if (three)
      g += c2 * ((wi - gw[i - s2]) * (gu[i - s2] - ui) + (wi - gw[i + s2]) * (gu[i + s2] - ui));
    out[i] += g;
  }
}

RW_SIMD_CLONES static void heat_kgrad_row3(const double *restrict gw, const double *restrict gu,
                                           double *restrict out, long m, const size_t sd[3],
                                           const double c[3])
{
  heat_kgrad_body(gw, gu, out, m, sd, c, 1);
}

RW_SIMD_CLONES static void heat_kgrad_row2(const double *restrict gw, const double *restrict gu,
                                           double *restrict out, long m, const size_t sd[3],
                                           const double c[3])
{
  heat_kgrad_body(gw, gu, out, m, sd, c, 0);
}

/* vjp_comb and the conductivity's VJP in one sweep (every kind of side): w's halo
 * copy is the one vjp_comb forms (zero ghosts on a Dirichlet side), u's is exchanged meanwhile
 * into H->gb, and the gradient of every owned k_m is gathered from both (heat_kgrad_body), so
 * no zeroed scatter array and no reverse halo exchange. On a Dirichlet side the face to the
 * ghost also gives c w_m (u_g - u_m) to the ghost's conductivity, which the conductivity grid
 * mirrors from the node one layer inside: that term goes there, as the scatter's transposed
 * exchange would send it. A Neumann side is the same with the ghost u mirrored from inside. */
static int heat_vjp_comb_field(void *content, double t, N_Vector y, const double *p, int n,
                               const double *c, N_Vector *W, N_Vector out_y, double *out_p,
                               N_Vector field, N_Vector field_out)
{
  heat *H = content;
  (void)field;
  const int D = H->dim;
  double *fo = rw_vec_data(field_out);
  const double *gw = H->gu, *gu = H->gb;
  RW_CALL(rw_grid_exchange_begin(H->ug, y, H->gb));
  /* on the CPU the source parameter's sum is taken in the sweep below, w's rows in cache */
  int ierr = heat_vjp_comb(content, t, y, p, n, c, W, out_y, H->dev ? out_p : NULL);
  int e = rw_grid_exchange_end(H->ug, H->gb);
  RW_CALL(ierr);
  RW_CALL(e);
  if (H->dev) {
    const long lo[3] = {0, 0, 0};
    RW_CALL(heat_dev_box(H, RW_BODY_HEAT_KGRAD, gw, gu, NULL, 0.0, fo, lo, H->cnt));
  }
  const int ws = out_p != NULL;
  double *lanes = H->lanes;
  if (ws && !H->dev) memset(lanes, 0, heat_lanes_len(H) * sizeof(double));
  for (long k = 0; !H->dev && k < H->cnt[2]; k++)
    for (long j = 0; j < H->cnt[1]; j++) {
      size_t x = rw_grid_gidx(H->gn, 1, D, 0, j, k, 1, 0);
      size_t o = (size_t)((k * H->cnt[1] + j) * H->cnt[0]);
      if (D == 3)
        heat_kgrad_row3(gw + x, gu + x, fo + o, H->cnt[0], H->sd, H->c);
      else
        heat_kgrad_row2(gw + x, gu + x, fo + o, H->cnt[0], H->sd, H->c);
      if (ws) /* heat_ws_sum's order */
        heat_ws_row_f(gw + x, H->sf[0], H->sf[1][j] * H->sf[2][k], H->cnt[0],
                      lanes + (size_t)j * HEAT_LANES);
    }
  if (ws && !H->dev) out_p[0] += heat_lanes_total(H, lanes);
  if (H->periodic) return 0;
  for (int d = 0; d < D; d++) /* the boundary faces' ghost conductivities, mirrored inside */
    for (int side = 0; side < 2; side++) {
      long lo[3], hi[3];
      ptrdiff_t s, out_s, toward; /* toward: the mirror node, one layer inside */
      if (!heat_face(H, d, side, lo, hi, &s, &out_s, &toward)) continue;
      if (H->dev) {
        rw_body_heat b;
        long nf = heat_dev_init(H, &b, lo, hi);
        b.gk = gw, b.gu = gu, b.out = fo, b.d = d, b.toward = (long)toward, b.out_s = (long)out_s;
        RW_CALL(rw_device_run(H->dev, RW_BODY_HEAT_KGHOST, &b, sizeof b, nf, rw_body_host));
        continue;
      }
      for (long k = lo[2]; k < hi[2]; k++)
        for (long j = lo[1]; j < hi[1]; j++)
          for (long i = lo[0]; i < hi[0]; i++) {
            size_t x = rw_grid_gidx(H->gn, 1, D, i, j, k, 1, 0);
            size_t o = (size_t)((k * H->cnt[1] + j) * H->cnt[0] + i);
            double ug = gu[(ptrdiff_t)x - toward * s];
            fo[(ptrdiff_t)o + toward * out_s] += H->c[d] * gw[x] * (ug - gu[x]);
          }
    }
  return 0;
}

/* The data at time t for every sensor, into H->sbuf: linear interpolation between the
 * recorded times, constant outside them. */
static void heat_data_at(heat *H, double t)
{
  long nt = H->nt, a = 0, b = nt - 1;
  const double *T = H->dtimes;
  if (nt == 1 || t <= T[0]) {
    memcpy(H->sbuf, H->dvals, (size_t)H->ns * sizeof(double));
    return;
  }
  if (t >= T[nt - 1]) {
    memcpy(H->sbuf, H->dvals + (size_t)(nt - 1) * (size_t)H->ns, (size_t)H->ns * sizeof(double));
    return;
  }
  while (b - a > 1) { /* T[a] <= t < T[b] */
    long m = (a + b) / 2;
    if (T[m] <= t)
      a = m;
    else
      b = m;
  }
  double th = (t - T[a]) / (T[b] - T[a]);
  const double *va = H->dvals + (size_t)a * (size_t)H->ns, *vb = va + H->ns;
  for (int s = 0; s < H->ns; s++)
    H->sbuf[s] = (1.0 - th) * va[s] + th * vb[s];
}

/* The running cost on this rank from the state at its sensors (v[m]: the m-th of them, in
 * sensor order): 0.5 sum (v - d(t))^2, summed in sensor order. */
static double heat_misfit(heat *H, double t, const double *v)
{
  if (H->nt == 0 || H->recording) return 0.0;
  heat_data_at(H, t);
  double acc = 0.0;
  for (int s = 0, m = 0; s < H->ns; s++)
    if (H->sloc[s] >= 0) {
      double e = v[m++] - H->sbuf[s];
      acc += e * e;
    }
  return 0.5 * acc;
}

static int heat_running(void *content, double t, N_Vector y, const double *p, double *r)
{
  heat *H = content;
  (void)p;
  const double *yd = rw_vec_data(y);
  for (int m = 0; m < H->nsl; m++)
    if (H->dev)
      RW_CALL(rw_device_copy(H->dev, &H->sval[m], yd + H->slocal[m], sizeof(double), RW_COPY_D2H));
    else
      H->sval[m] = yd[H->slocal[m]];
  *r = heat_misfit(H, t, H->sval);
  return 0;
}

static int heat_running_grad(void *content, double t, N_Vector y, const double *p, double w,
                             N_Vector ry, double *rp)
{
  heat *H = content;
  (void)p, (void)rp;
  if (H->nt == 0 || H->recording) return 0;
  heat_data_at(H, t);
  const double *yd = rw_vec_data(y);
  double *g = rw_vec_data(ry);
  for (int s = 0; s < H->ns; s++) {
    if (H->sloc[s] < 0) continue;
    if (!H->dev) {
      g[H->sloc[s]] += w * (yd[H->sloc[s]] - H->sbuf[s]);
      continue;
    }
    double v = 0.0, gv = 0.0; /* one entry each way: the sensors are few */
    RW_CALL(rw_device_copy(H->dev, &v, yd + H->sloc[s], sizeof v, RW_COPY_D2H));
    RW_CALL(rw_device_copy(H->dev, &gv, g + H->sloc[s], sizeof gv, RW_COPY_D2H));
    gv += w * (v - H->sbuf[s]);
    RW_CALL(rw_device_copy(H->dev, g + H->sloc[s], &gv, sizeof gv, RW_COPY_H2D));
  }
  return 0;
}

/* --- The adjoint step as one sweep (rw_grid_erk_wave with the adjoint's plan) -------------
 * On the CPU inside a solve, with Dirichlet sides (zero ghosts for w: the grid lg) and a block
 * that is the whole domain (no stages past it; every other dimension without messages): each
 * stage's kernel is vjp_comb's gather (heat_kernel with no source), the running cost's gradient
 * at the sensors comes in as the plan's injections, and a side kernel gathers the
 * conductivity's gradient and the source parameter's lanes while w's layers are in cache,
 * reading the stored stage state where it lies (every ghost of it is the boundary value):
 * heat_vjp_comb_field's operations, in its order at each node. */
typedef struct {
  heat_kctx k;     /* the VJP's kernel; first, so that heat_kernel reads it */
  const double *y; /* the stage's stored state (owned layout) */
  double *fo;      /* the conductivity's gradient (NULL: frozen) */
  double *lanes;   /* this stage's lane sets of the source's VJP (NULL: frozen) */
  int stage;       /* the plan's stage (rw_grid_wave_aux_layer) */
} heat_actx;

/* A wave's layer coordinates against the block's: the block's node (i, j, k) lies at (i, j,
 * k) + v0 along the slowest dimension (v0 = rw_grid_wave_layer0: s G where the stages run past
 * the block's low edge). */
static void heat_to_block(const heat *H, long v0, long j, long k, long *jb, long *kb)
{
  *jb = H->dim == 2 ? j - v0 : j;
  *kb = H->dim == 3 ? k - v0 : k;
}

/* The stored state's row next to the block's row (jb, kb) along d (1: the middle dimension,
 * 2: the slowest, in 3-D), dir = -1 or +1: the owned row; outside the block the boundary value's
 * row (H->brow) on the domain's Dirichlet side, the row at the block's other end along a
 * periodic dimension below the slowest (the wave's dimensions below it are never split, so the
 * block spans them), or across the slowest dimension's edge to a neighbour (another rank, or
 * this one where it is periodic over one rank), that rank's, from the wave's copy of its layers
 * (rw_grid_wave_aux_layer). */
static const double *heat_u_row(const heat *H, const heat_actx *a, rw_grid gr, long v0, long jb,
                                long kb, int d, long dir)
{
  long r[3] = {0, jb, kb};
  r[d] += dir;
  const long n0 = H->cnt[0];
  const int L = H->dim - 1;
  if (H->periodic && d != L) r[d] = (r[d] + H->cnt[d]) % H->cnt[d];
  if (r[d] >= 0 && r[d] < H->cnt[d]) return a->y + (r[2] * H->cnt[1] + r[1]) * n0;
  const int nb = H->periodic || (r[d] < 0 ? H->st[d] > 0 : H->st[d] + H->cnt[d] < H->n[d]);
  if (H->neumann && (d != L || !nb)) { /* the ghost mirrors the row one layer inside */
    r[d] = r[d] < 0 ? 1 : H->cnt[d] - 2;
    return a->y + (r[2] * H->cnt[1] + r[1]) * n0;
  }
  if (d != L || !nb) return H->brow;
  const double *ly = rw_grid_wave_aux_layer(gr, a->stage, v0 + r[L]);
  return L == 2 ? ly + r[1] * n0 : ly;
}

/* After the row's own gradient (block row jb, kb): the terms of the domain's boundary faces
 * one layer away that heat_vjp_comb_field's last loop gives to this row's nodes, in its order
 * (dimension, then low side before high): a face node's c_d w (u_g - u) goes to the node one
 * layer inside, whose conductivity the ghost's mirrors, u_g the ghost's state: the boundary
 * value on a Dirichlet side, that inside node's own on a Neumann side. The face's w and u are
 * the row's neighbours' (or, along the row, its end nodes). */
static void heat_adj_row_faces(const heat *H, const double *gw, const double *const u[5],
                               double *fo, long jb, long kb)
{
  const long q[3] = {0, jb, kb}, n0 = H->cnt[0];
  if (H->periodic) return; /* no boundary faces */
  for (int d = 0; d < H->dim; d++)
    for (int side = 0; side < 2; side++) {
      if (side == 0 ? H->st[d] != 0 : H->st[d] + H->cnt[d] != H->n[d]) continue;
      const long src = side == 0 ? 0 : H->cnt[d] - 1, tgt = side == 0 ? 1 : H->cnt[d] - 2;
      if (tgt < 0 || tgt >= H->cnt[d]) continue;
      const double cd = H->c[d], ub = H->ub;
      if (d == 0) {
        fo[tgt] += cd * gw[src] * ((H->neumann ? u[0][tgt] : ub) - u[0][src]);
        continue;
      }
      if (q[d] != tgt) continue;
      const ptrdiff_t s = (side == 0 ? -1 : 1) * (ptrdiff_t)H->sd[d];
      const double *w = gw + s, *uf = u[2 * d - 1 + side]; /* um1, up1, um2, up2 */
      if (H->neumann)                                      /* the ghost's u mirrors this row's */
        for (long i = 0; i < n0; i++)
          fo[i] += cd * w[i] * (u[0][i] - uf[i]);
      else
        for (long i = 0; i < n0; i++)
          fo[i] += cd * w[i] * (ub - uf[i]);
    }
}

/* Neumann sides in an adjoint wave, which runs on the grid with zero ghosts (zg), as
 * heat_vjp_comb does: after the box's rows, heat_neumann_ghosts' term of each face node is
 * added to the node one layer inside it, c_d (k_b + k_g) w_b, with heat_neumann_ghosts'
 * operations, per dimension and side in its order (so every node adds its terms in the same
 * order, each after its own row's VJP and before the wave's injections, as the stage-by-stage
 * step adds them after the whole VJP and before the running cost's gradient). Along the slowest
 * dimension the faces are the domain's first and last layers, wherever the wave computes the
 * layer inside them (a neighbour's layers too, which its owner computes the same way). gk and
 * gw at the wave's coordinates; the box holds whole rows. */
static void heat_neumann_box(const heat *H, rw_grid g, const double *gk, const double *gw,
                             double *out, const long lo[3], const long hi[3])
{
  const int D = H->dim;
  const long n0 = H->cnt[0], n1 = H->cnt[1], v0 = rw_grid_wave_layer0(g);
  const double c0 = H->c[0];
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++) {
      long jb, kb;
      heat_to_block(H, v0, j, k, &jb, &kb);
      const long q[3] = {0, jb, kb};
      double *o = out + (size_t)((k * n1 + j) * n0);
      const ptrdiff_t x = (ptrdiff_t)rw_grid_gidx(H->gn, 1, D, 0, j, k, 1, 0);
      if (n0 >= 2) { /* along the row: its end nodes are faces */
        o[1] += c0 * (gk[x] + gk[x - 1]) * gw[x];
        const ptrdiff_t xf = x + (ptrdiff_t)n0 - 1;
        o[n0 - 2] += c0 * (gk[xf] + gk[xf + 1]) * gw[xf];
      }
      for (int d = 1; d < D; d++) {
        const long at = H->st[d] + q[d]; /* this row's index along d in the domain */
        const ptrdiff_t s = (ptrdiff_t)H->sd[d];
        for (int side = 0; side < 2; side++) {
          if (at != (side == 0 ? 1 : H->n[d] - 2)) continue;
          const ptrdiff_t xf = side == 0 ? x - s : x + s, xg = side == 0 ? xf - s : xf + s;
          for (long i = 0; i < n0; i++)
            o[i] += H->c[d] * (gk[xf + i] + gk[xg + i]) * gw[xf + i];
        }
      }
    }
}

/* The stage's kernel: the VJP on the box's rows (heat_kernel's rows with no source), and with
 * the conductivity differentiated its gradient too on the rows of owned layers the wave's tile
 * owns, in the same loop (heat_adj_body). The stored state's row is read where it lies when the
 * row is whole vectors (n0 a multiple of HEAT_LANES), its two ghosts (the boundary value, or
 * the wrapped or mirrored node: the fastest dimension is never split) given as values
 * (heat_adj_vec's ghu); otherwise, for the node loop's remainder, it is copied between them.
 * The copy took 2 % of heat 128^3's every-gradient adjoint step in `perf`; without it, 6 rounds
 * of the stage bench alternated with the build before: 26.0 against 27.8 ms (medians), paired
 * adjoint / forward 1.65 against 1.73. gw, gk and out at the wave's
 * coordinates, the stored state and the gradient at the block's. In 3-D the stored state's row
 * that the next row reads first (layer k + 1, row j + 1: every other row it reads, this row or
 * an earlier one has read) is prefetched to L1 before the row runs. A profile of heat 128^3's
 * every-gradient adjoint step had the row waiting on that stream's loads (17 % of the row's
 * samples on one load), the wave's L2 prefetch of the stage's next layer notwithstanding;
 * with the prefetch the step took 26.9 against 29.9 ms (the stage bench, 5 runs alternated
 * with the build before; medians), its paired adjoint / forward 1.70 (1.59-1.73) against
 * 1.92 (1.81-1.97). The wave's leading stage (the plan's stage 0, the first to reach a layer)
 * also prefetches, to L2, the rows that the fields stream from memory once a step: the
 * gradient's (read and written) of the next layer, and the conductivity's two layers ahead (a
 * row reads the conductivity of the layer above it as its z neighbour, so the next layer's rows
 * are read already by this layer's: prefetched one layer ahead until 2026-12-01, they were
 * asked for just before they were read; a profile put 9 % of the row's samples on that load,
 * and two layers ahead measured 0.977 and 0.906 of the step's time, paired medians of two runs
 * of 6 alternated rounds, every round but one faster). With the stored state and the
 * gradient and source read from one cached row instead (timing only), the step took 21.3
 * against 28-29.7 ms, the fields' rows alone 22.4-23.7: those streams, not the arithmetic, held
 * a quarter of it. The prefetch (then of the source's rows too), 7 rounds of the stage bench
 * alternated with the build without it: 24.8 against 26.0 ms (medians), paired adjoint /
 * forward 1.61 against 1.68; the gradient's and source's rows alone gave no clear change. No
 * prefetch changes a value. The source shape is not streamed at all since: the rows form it
 * from its 1-D factors (heat_fill_shape; 6 rounds alternated with the build that streamed it:
 * 23.8 against 26.3 ms, paired 1.51 against 1.69). Since stop 56 these prefetches go out from
 * the row's vector loop, a line per vector among its arithmetic (heat_adj_vec's pf), instead of
 * as a loop of prefetches before the row: a profile of the adjoint step alone had 4 % of its
 * samples on those loops, waiting to issue; 6 rounds of the stage bench alternated with the
 * build before: every-gradient step 0.971 (0.900 - 0.997) paired, every round faster. */
static void heat_adj_kernel(void *kc, rw_grid g, const double *gw, double *out, const long lo[3],
                            const long hi[3])
{
  heat_actx *a = kc;
  const heat *H = a->k.H;
  if (!a->fo) {
    heat_kernel(kc, g, gw, out, lo, hi);
    if (H->neumann) heat_neumann_box(H, g, a->k.gk, gw, out, lo, hi);
    return;
  }
  const int D = H->dim;
  const long n0 = H->cnt[0], n1 = H->cnt[1], N = H->cnt[D - 1];
  const long v0 = rw_grid_wave_layer0(g);
  const double *gk = a->k.gk;
  double *uc = H->urow;
  long j0 = 0, j1 = n1; /* 3-D: the tile's own rows (in 2-D j is the layer) */
  if (D == 3) rw_grid_wave_tile(g, &j0, &j1);
  long pj = LONG_MIN, pk = LONG_MIN; /* the last row through heat_adj_row: its y faces kept */
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++) {
      long jb, kb;
      heat_to_block(H, v0, j, k, &jb, &kb);
      const long lb = D == 3 ? kb : jb, m = hi[0] - lo[0];
      const size_t x = rw_grid_gidx(H->gn, 1, D, lo[0], j, k, 1, 0);
      const size_t o = (size_t)((k * n1 + j) * n0 + lo[0]), ob = (size_t)((kb * n1 + jb) * n0);
      const int own = lb >= 0 && lb < N && (D == 2 || (j >= j0 && j < j1)) && lo[0] == 0 && m == n0;
      if (!own) {
        if (D == 3)
          heat_row3(gk + x, gw + x, NULL, 0.0, 0.0, out + o, m, H->sd, H->c);
        else
          heat_row2(gk + x, gw + x, NULL, 0.0, 0.0, out + o, m, H->sd, H->c);
        continue;
      }
      const double *y = a->y + ob;
      /* the row's ghosts: they wrap, mirror or hold the boundary value */
      const double ulo = H->periodic  ? y[n0 - 1]
                         : H->neumann ? y[1]
                                      : H->ub,
                   uhi = H->periodic  ? y[0]
                         : H->neumann ? y[n0 - 2]
                                      : H->ub;
      const int ghu = n0 % HEAT_LANES == 0; /* whole vectors: the row read where it lies */
      if (!ghu) { /* the node loop reads the row's ghosts: a copy between them */
        memcpy(uc + 1, y, (size_t)n0 * sizeof(double));
        uc[0] = ulo, uc[n0 + 1] = uhi;
      }
      double *lanes = a->lanes ? a->lanes + (size_t)jb * HEAT_LANES : NULL;
      const double *u[5] = {ghu ? y : uc + 1, NULL, NULL, NULL, NULL};
      const long nl = D == 3 ? n0 * n1 : n0; /* a layer's nodes */
      u[1] = jb > 0 ? y - n0 : heat_u_row(H, a, g, v0, jb, kb, 1, -1);
      u[2] = jb < n1 - 1 ? y + n0 : heat_u_row(H, a, g, v0, jb, kb, 1, 1);
      if (D == 3) {
        u[3] = kb > 0 ? y - nl : heat_u_row(H, a, g, v0, jb, kb, 2, -1);
        u[4] = kb < N - 1 ? y + nl : heat_u_row(H, a, g, v0, jb, kb, 2, 1);
      }
      const int shy = pj == j - 1 && pk == k;
      const double *pf[3] = {NULL, NULL, NULL};
      if (D == 3 && ob + (size_t)(nl + n0) < (size_t)(N * nl)) /* the next row's leading row */
        pf[0] = y + nl + n0;
      if (a->stage == 0 && D == 3 && ob + (size_t)nl < (size_t)(N * nl))
        pf[1] = a->fo + ob + nl, pf[2] = gk + x + 2 * H->sd[2];
      heat_adj_row(gk + x, gw + x, u[0], u[1], u[2], u[3], u[4], H->sf[0],
                   H->sf[1][jb] * H->sf[2][kb], lanes, out + o, a->fo + ob, H->yq, H->yb, n0, H->sd,
                   H->c, D == 3, shy, ulo, uhi, ghu, pf);
      pj = j, pk = k;
      heat_adj_row_faces(H, gw + x, u, a->fo + ob, jb, kb);
    }
  if (H->neumann) heat_neumann_box(H, g, gk, gw, out, lo, hi);
}

/* The side kernel when only the source parameter is differentiated: its lanes at every node of
 * a box of owned layers and a tile's own rows (with the conductivity differentiated too,
 * heat_adj_kernel's rows sum them in their loop). */
static void heat_adj_side(void *kc, rw_grid g, const double *gw, double *out, const long lo[3],
                          const long hi[3])
{
  heat_actx *a = kc;
  const heat *H = a->k.H;
  const int D = H->dim, L = D - 1;
  const long n0 = H->cnt[0], v0 = rw_grid_wave_layer0(g);
  (void)out;
  long blo[3] = {lo[0], lo[1], lo[2]}, bhi[3] = {hi[0], hi[1], hi[2]}; /* the block's */
  blo[L] -= v0, bhi[L] -= v0;
  for (long k = blo[2]; k < bhi[2]; k++)
    for (long j = blo[1]; j < bhi[1]; j++) {
      size_t x = rw_grid_gidx(H->gn, 1, D, 0, L == 1 ? j + v0 : j, L == 2 ? k + v0 : k, 1, 0);
      heat_ws_row_f(gw + x, H->sf[0], H->sf[1][j] * H->sf[2][k], n0,
                    a->lanes + (size_t)j * HEAT_LANES);
    }
}

/* The running cost's gradient as the wave's injections: heat_running_grad's term at each sensor
 * and stage, from the stored state there; where the stages run past the block, every rank's
 * sensors that the wave reaches (their values summed over the ranks, each computed by its
 * owner alone: the same bits), in sensor order. */
/* Whether sensor sn lies where an adjoint wave of s stages reaches (owned, or within s G = s
 * layers past a block edge that has a neighbour when `reach`), and its offset from the block's
 * layer 0 there; its copy w = 1 (2) the domain's length along the slowest dimension below
 * (above) it, where that dimension is periodic (a sensor near one end of the domain lies past
 * the block's edge at the other end too, on one rank as on several). */
#define HEAT_INJ_COPIES 3
static int heat_inj_offset(const heat *H, int sn, int w, int s, int reach, long *off)
{
  const int L = H->dim - 1;
  if (w > 0 && !H->periodic) return 0;
  long l[3];
  int in = 1;
  for (int d = 0; d < 3; d++)
    l[d] = H->snode[sn][d] - H->st[d], in = in && (d == L || (l[d] >= 0 && l[d] < H->cnt[d]));
  l[L] += w == 1 ? -H->n[L] : w == 2 ? H->n[L] : 0;
  const long lD = l[L], N = H->cnt[L];
  const int nlo = H->periodic || H->st[L] > 0, nhi = H->periodic || H->st[L] + N < H->n[L];
  const int ok = (lD >= 0 && lD < N) || (reach && lD < 0 && lD >= -s && nlo) ||
                 (reach && lD >= N && lD < N + s && nhi);
  *off = (l[2] * H->cnt[1] + l[1]) * H->cnt[0] + l[0];
  return in && ok;
}

static int heat_adjoint_injections(heat *H, const double *t, const rw_stage_plan *plan,
                                   const double *hb, int reach, rw_stage_plan *P)
{
  const int s = plan->s;
  const size_t ns = (size_t)H->ns;
  memset(H->sgv, 0, (size_t)s * ns * sizeof(double));
  for (int k = 0; k < s; k++) {
    const double *yd = rw_vec_data(plan->aux[k]);
    heat_data_at(H, t[k]);
    for (int sn = 0; sn < H->ns; sn++)
      if (H->sloc[sn] >= 0)
        H->sgv[(size_t)k * ns + (size_t)sn] = hb[k] * (yd[H->sloc[sn]] - H->sbuf[sn]);
  }
  if (reach)
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, H->sgv, s * H->ns, MPI_DOUBLE, MPI_SUM,
                              rw_context_comm(H->ctx)));
  /* a stage without weight (b_i = 0: dopri5's second) takes no running term in the
   * stage-by-stage step; injected here as -0, which added to any value leaves its bits (a +0
   * would turn a -0 into +0) */
  for (int k = 0; k < s; k++)
    for (int sn = 0; hb[k] == 0.0 && sn < H->ns; sn++)
      H->sgv[(size_t)k * ns + (size_t)sn] = -0.0;
  int ne = 0;
  long off;
  for (int sn = 0; sn < H->ns; sn++) /* the entries, in sensor order */
    for (int w = 0; w < HEAT_INJ_COPIES; w++)
      if (heat_inj_offset(H, sn, w, s, reach, &off)) H->soff[ne++] = off;
  for (int sn = 0, e = 0; sn < H->ns; sn++) /* their values, ne per stage */
    for (int w = 0; w < HEAT_INJ_COPIES; w++)
      if (heat_inj_offset(H, sn, w, s, reach, &off)) {
        for (int k = 0; k < s; k++)
          H->sinj[(size_t)k * (size_t)ne + (size_t)e] = H->sgv[(size_t)k * ns + (size_t)sn];
        e++;
      }
  P->ninj = ne, P->inj = H->soff, P->injv = H->sinj;
  return 0;
}

static int heat_adjoint_wave(void *content, const double *t, const double *p,
                             const struct rw_stage_plan_s *plan, const double *hb, N_Vector lambda,
                             double *out_p, N_Vector field, N_Vector field_bar, int *done)
{
  heat *H = content;
  (void)p, (void)field;
  *done = 0;
  rw_grid ag = H->neumann ? H->zg : H->lg; /* the VJP's grid, as heat_vjp_comb's */
  const int s = plan->s, running = H->nt > 0 && !H->recording, reach = rw_grid_wave_reaches(ag);
  if (H->dev || !H->gk_ready || s > RW_WAVE_MAX_STAGES) return 0;
  rw_grid_copy_wave_settings(ag, H->ug);
  if (!rw_grid_wave_ready(ag, s, 1)) return 0;
  rw_stage_plan P = *plan;
  if (running) RW_CALL(heat_adjoint_injections(H, t, plan, hb, reach, &P));
  if (reach) RW_CALL(heat_wave_fields(H, s)); /* the conductivity past the block */
  heat_actx ac[RW_WAVE_MAX_STAGES];
  void *kc[RW_WAVE_MAX_STAGES];
  const size_t nl = heat_lanes_len(H);
  if (out_p) memset(H->lanes, 0, (size_t)s * nl * sizeof(double));
  for (int k = 0; k < s; k++) {
    ac[k].k = (heat_kctx){H, reach ? H->wk : H->gk, NULL, H->gk, 0, 0.0, 0};
    ac[k].y = rw_vec_data(plan->aux[k]);
    ac[k].fo = field_bar ? rw_vec_data(field_bar) : NULL;
    ac[k].lanes = out_p ? H->lanes + (size_t)k * nl : NULL;
    ac[k].stage = k;
    kc[k] = &ac[k];
  }
  P.side = !field_bar && out_p ? heat_adj_side : NULL;
  P.tune_class = (field_bar != NULL) | (out_p != NULL) << 1; /* which gradients: the work */
  P.aux_ahead = field_bar != NULL; /* only the conductivity's gradient reads the stored state */
  P.aux_reach_set = 1;             /* on owned rows and a layer past them (heat_u_row) */
  for (int k = 0; k < s; k++)
    P.aux_reach[k] = field_bar != NULL;
  RW_CALL(rw_grid_erk_wave(ag, &P, lambda, lambda, 1, heat_adj_kernel, kc, done));
  for (int k = 0; k < s; k++)
    RW_CALL(ac[k].k.err);
  for (int k = 0; *done && out_p && k < s; k++) /* vjp_comb's sums, in stage order */
    out_p[0] += heat_lanes_total(H, H->lanes + (size_t)k * nl);
  return 0;
}

/* --- Noise: additive space-time white noise (see rw_heat.h) ------------------------------ */

/* g = (volume of the node's cell)^(-1/2): gscale, times sqrt(2) per dimension in which a
 * Neumann node sits on the boundary (its cell is half as wide). Independent of t, y, p. */
static int heat_diffusion(void *content, double t, N_Vector y, const double *p, N_Vector g)
{
  (void)t, (void)y, (void)p;
  heat *H = content;
  double *gd = rw_vec_data(g);
  const double r2 = sqrt(2.0);
  if (H->dev) { /* the same products per node, as a device body */
    rw_body_noise b;
    memset(&b, 0, sizeof b);
    b.mode = 3, b.out = gd, b.ncomp = 1, b.dim = H->dim, b.neumann = H->neumann;
    b.cval[0] = H->gscale, b.cval[1] = r2;
    for (int d = 0; d < 3; d++)
      b.cnt[d] = H->cnt[d], b.start[d] = H->st[d], b.n[d] = H->n[d];
    RW_CALL(rw_device_run(H->dev, RW_BODY_NOISE, &b, sizeof b, H->nodes, rw_body_host));
    return 0;
  }
  for (long k = 0; k < H->cnt[2]; k++)
    for (long j = 0; j < H->cnt[1]; j++) {
      double gjk = H->gscale;
      if (H->neumann) {
        long gj = H->st[1] + j, gk = H->st[2] + k;
        if (gj == 0 || gj == H->n[1] - 1) gjk *= r2;
        if (H->dim == 3 && (gk == 0 || gk == H->n[2] - 1)) gjk *= r2;
      }
      double *row = gd + (k * H->cnt[1] + j) * H->cnt[0];
      for (long i = 0; i < H->cnt[0]; i++)
        row[i] = gjk;
      if (H->neumann && H->st[0] == 0) row[0] *= r2;
      if (H->neumann && H->st[0] + H->cnt[0] == H->n[0]) row[H->cnt[0] - 1] *= r2;
    }
  return 0;
}

/* Additive noise: dg/dy = 0 and dg/dp = 0, nothing to accumulate. */
static int heat_diffusion_vjp(void *content, double t, N_Vector y, const double *p, N_Vector w,
                              N_Vector out_y, double *out_p)
{
  (void)content, (void)t, (void)y, (void)p, (void)w, (void)out_y, (void)out_p;
  return 0;
}

/* z = the normals of noise step `step`, node m = (k n1 + j) n0 + i keyed by index m (one noisy
 * component); each owned row is one contiguous global range, one rw_rng_normal_fill. */
static int heat_noise_fill(void *content, uint64_t seed, uint64_t step, N_Vector z)
{
  heat *H = content;
  double *zd = rw_vec_data(z);
  if (H->dev) { /* one item per owned node, drawing the index its CPU row gives it */
    rw_body_noise b;
    memset(&b, 0, sizeof b);
    b.mode = 1, b.out = zd, b.ncomp = 1, b.nnoisy = 1, b.dim = H->dim, b.comp_on[0] = 0;
    for (int d = 0; d < 3; d++)
      b.cnt[d] = H->cnt[d], b.start[d] = H->st[d], b.n[d] = H->n[d];
    RW_CALL(rw_noise_device_run(H->dev, &b, seed, step, H->nodes,
                                (uint64_t)H->n[0] * (uint64_t)H->n[1] * (uint64_t)H->n[2]));
    return 0;
  }
  for (long k = 0; k < H->cnt[2]; k++)
    for (long j = 0; j < H->cnt[1]; j++) {
      uint64_t node = (uint64_t)(((H->st[2] + k) * H->n[1] + H->st[1] + j) * H->n[0] + H->st[0]);
      RW_CALL(rw_rng_normal_fill(seed, step, 0, RW_RNG_STREAM_FORCING, node, (size_t)H->cnt[0],
                                 zd + (k * H->cnt[1] + j) * H->cnt[0]));
    }
  return 0;
}

/* rw_problem_params_defer / _flush: on a device the source's VJP sums of the deferred pbar stay
 * there until the flush (rw_pdefer). */
static int heat_params_defer(void *c, double *pbar)
{
  return rw_pdefer_set(&((heat *)c)->pd, pbar);
}
static int heat_params_flush(void *c) { return rw_pdefer_flush(&((heat *)c)->pd); }

static void heat_destroy(void *content)
{
  heat *H = content;
  if (!H) return;
  rw_grid_destroy(&H->ug);
  rw_grid_destroy(&H->lg);
  rw_grid_destroy(&H->kg);
  rw_grid_destroy(&H->zg);
  if (H->dev) {
    rw_device_free(H->dev, &H->gu, H->glen * sizeof(double));
    rw_device_free(H->dev, &H->gk, H->glen * sizeof(double));
    rw_device_free(H->dev, &H->ga, H->glen * sizeof(double));
    rw_device_free(H->dev, &H->gb, H->glen * sizeof(double));
    rw_device_free(H->dev, &H->terms, (size_t)(H->nodes + 1) * sizeof(double));
  }
  rw_pdefer_free(&H->pd);
  rw_grid_ghosted_free(&H->gu);
  rw_grid_ghosted_free(&H->gk);
  rw_grid_ghosted_free(&H->wk);
  rw_grid_ghosted_free(&H->ga);
  rw_grid_ghosted_free(&H->gb);
  rw_vec_destroy(&H->shape);
  rw_vec_destroy(&H->vscr);
  rw_free(&H->snode);
  rw_free(&H->sloc);
  rw_free(&H->sbuf);
  rw_free(&H->slocal);
  rw_free(&H->sval);
  rw_free(&H->scap);
  rw_free(&H->sinj);
  rw_free(&H->sgv);
  rw_free(&H->soff);
  rw_free(&H->lanes);
  rw_free(&H->urow_mem);
  rw_free(&H->sf_mem);
  rw_free(&H->dtimes);
  rw_free(&H->dvals);
  rw_free(&H->rtimes);
  rw_free(&H->rvals);
  rw_free(&H);
}

/* Places the sensors (see rw_heat_config) and finds their owners. */
static int heat_place_sensors(heat *H, const rw_heat_config *cfg, rw_grid g)
{
  int m = 1, D = H->dim;
  for (;; m++) {
    long pw = 1;
    for (int d = 0; d < D; d++)
      pw *= m;
    if (pw >= cfg->nsensors) break;
  }
  for (int s = 0; s < H->ns; s++) {
    long a[3] = {s % m, (s / m) % m, s / ((long)m * m)};
    for (int d = 0; d < D; d++) {
      double x, L = cfg->length[d];
      if (cfg->sensor_coords) {
        x = cfg->sensor_coords[s * D + d];
        RW_CHECK(x >= 0.0 && x <= L, RW_ERR_ARG,
                 "sensor %d (counted from 1): %c = %g lies outside the domain [0, %g]", s + 1,
                 "xyz"[d], x, L);
      } else {
        x = ((double)a[d] + 0.5) / (double)m * L;
      }
      long i = lround(x / H->h[d]);
      if (cfg->bc == RW_BC_PERIODIC) i %= H->n[d];
      H->snode[s][d] = i < 0 ? 0 : i > H->n[d] - 1 ? H->n[d] - 1 : i;
    }
    if (D == 2) H->snode[s][2] = 0;
    H->sloc[s] = rw_grid_local_index(g, H->snode[s][0], H->snode[s][1], H->snode[s][2]);
  }
  return 0;
}

/* The source shape s(x) = exp(-|x - c|^2 / (2 w^2)) as the product of its 1-D factors
 * exp(-(x_d - c_d)^2 / (2 w^2)) (H->sf, kept): s at (i, j, k) is sf[0][i] * (sf[1][j] * sf[2][k]),
 * the product every CPU path forms from sf where it needs s (the forward rows, the source
 * parameter's sums, the adjoint wave's rows), so it reads three short arrays in cache instead
 * of streaming s from memory (16 MiB a stage at 128^3), and no state-sized array holds it; a
 * device's bodies read the array (H->shape, made only there). The factors use the global index
 * (wrapped where the domain is periodic), so s is the same at a node on any number of ranks,
 * and the middle and slowest factors reach HEAT_SF_PAST indices past the block each side: the
 * layers a wave computes past it (s G, G = 1) are its neighbour's, whose factors are these. */
static int heat_fill_shape(heat *H, const double *center, double width)
{
  const long M = HEAT_SF_PAST;
  const size_t n0 = ((size_t)H->cnt[0] + 7) / 8 * 8, n1 = (size_t)(H->cnt[1] + 2 * M),
               n2 = (size_t)(H->cnt[2] + 2 * M);
  RW_CALL(rw_calloc(n0 + n1 + n2, sizeof(double), "heat source factors", &H->sf_mem));
  H->sf[0] = H->sf_mem, H->sf[1] = H->sf_mem + n0 + M, H->sf[2] = H->sf_mem + n0 + n1 + M;
  const double w2 = 2.0 * width * width;
  for (int d = 0; d < 3; d++)
    for (long i = d == 0 ? 0 : -M; i < H->cnt[d] + (d == 0 ? 0 : M); i++) {
      const long gi = d < H->dim ? ((H->st[d] + i) % H->n[d] + H->n[d]) % H->n[d] : 0;
      const double x = d < H->dim ? (double)gi * H->h[d] - center[d] : 0.0;
      H->sf[d][i] = d < H->dim ? exp(-(x * x) / w2) : 1.0;
    }
  if (!H->shape) return 0;
  double *vd = rw_vec_data(H->shape), *host = NULL;
  if (rw_vec_device(H->shape)) { /* computed on the host, then copied to the device */
    RW_CALL(
        rw_calloc((size_t)rw_vec_local_length(H->shape) + 1, sizeof(double), "Gaussian", &host));
    vd = host;
  }
  for (long k = 0; k < H->cnt[2]; k++)
    for (long j = 0; j < H->cnt[1]; j++) {
      const double a = H->sf[1][j] * H->sf[2][k];
      for (long i = 0; i < H->cnt[0]; i++)
        vd[(k * H->cnt[1] + j) * H->cnt[0] + i] = H->sf[0][i] * a;
    }
  if (host) {
    const int ierr = rw_vec_from_host(H->shape, host);
    rw_free(&host);
    RW_CALL(ierr);
  }
  return 0;
}

int rw_heat_problem_create(rw_context ctx, const rw_heat_config *cfg, rw_problem *out)
{
  static const rw_problem_ops ops = {.rhs = heat_rhs,
                                     .step_wave = heat_step_wave,
                                     .adjoint_wave = heat_adjoint_wave,
                                     .rhs_comb = heat_rhs_comb,
                                     .vjp_y = heat_vjp_y,
                                     .vjp_p = heat_vjp_p,
                                     .vjp_comb = heat_vjp_comb,
                                     .vjp_comb_field = heat_vjp_comb_field,
                                     .jvp = heat_jvp,
                                     .running = heat_running,
                                     .running_grad = heat_running_grad,
                                     .vjp_field = heat_vjp_field,
                                     .diffusion = heat_diffusion,
                                     .diffusion_vjp = heat_diffusion_vjp,
                                     .noise_fill = heat_noise_fill,
                                     .solve_begin = heat_solve_begin,
                                     .solve_end = heat_solve_end,
                                     .params_defer = heat_params_defer,
                                     .params_flush = heat_params_flush,
                                     .destroy = heat_destroy};
  static const char *const names[] = {"source"};
  int ierr = 0;
  heat *H = NULL;
  rw_problem prob = NULL;
  N_Vector kappa = NULL;
  RW_CHECK(cfg && out, RW_ERR_ARG, "rw_heat_problem_create: NULL argument");
  *out = NULL;
  RW_CHECK(cfg->dim == 2 || cfg->dim == 3, RW_ERR_ARG, "heat: dimension %d; 2 or 3 supported",
           cfg->dim);
  RW_CHECK(cfg->nsensors >= 1 && cfg->nsensors <= RW_HEAT_MAX_SENSORS, RW_ERR_ARG,
           "heat: %d sensors; 1 to %d supported", cfg->nsensors, RW_HEAT_MAX_SENSORS);
  for (int d = 0; d < cfg->dim; d++)
    RW_CHECK(cfg->length[d] > 0.0 && cfg->n[d] >= 3, RW_ERR_ARG,
             "heat: dimension %d has %ld nodes on length %g; at least 3 nodes on a positive "
             "length needed",
             d, cfg->n[d], cfg->length[d]);
  RW_CHECK(cfg->source_width > 0.0, RW_ERR_ARG, "heat: source width %g must be > 0",
           cfg->source_width);
  RW_CALL(rw_calloc(1, sizeof *H, "heat problem", &H));
  H->ctx = ctx;
  H->dim = cfg->dim;
  H->ub = cfg->boundary_value;
  rw_grid_config gc = {.dim = cfg->dim, .ncomp = 1, .ghost = 1};
  for (int d = 0; d < 3; d++) {
    gc.n[d] = d < cfg->dim ? cfg->n[d] : 1;
    gc.lo[d] = 0.0;
    gc.hi[d] = d < cfg->dim ? cfg->length[d] : 1.0;
    gc.bc[d] = cfg->bc;
  }
  gc.dirichlet[0] = cfg->boundary_value;
  for (int d = 0; d < 3; d++)
    gc.procs[d] = cfg->procs[d];
  RW_TRY(rw_grid_create(ctx, &gc, &H->ug));
  int coords[3]; /* the other grids lie as the state's */
  rw_grid_topology(H->ug, gc.procs, coords);
  gc.dirichlet[0] = 0.0;
  RW_TRY(rw_grid_create(ctx, &gc, &H->lg));
  for (int d = 0; d < 3; d++)
    gc.bc[d] = cfg->bc == RW_BC_PERIODIC ? RW_BC_PERIODIC : RW_BC_NEUMANN;
  RW_TRY(rw_grid_create(ctx, &gc, &H->kg));
  long s2[3], c2[3];
  rw_grid_local_box(H->ug, H->st, H->cnt);
  rw_grid_local_box(H->kg, s2, c2);
  for (int d = 0; d < 3; d++)
    RW_CHECK_GOTO(s2[d] == H->st[d] && c2[d] == H->cnt[d], RW_ERR_INTERNAL,
                  "heat: the kappa grid is decomposed unlike the state grid");
  rw_grid_ghosted_dims(H->ug, H->gn);
  rw_grid_spacing(H->ug, H->h);
  H->glen = rw_grid_ghosted_length(H->ug);
  H->sd[0] = 1, H->sd[1] = (size_t)H->gn[0], H->sd[2] = (size_t)H->gn[0] * (size_t)H->gn[1];
  for (int d = 0; d < 3; d++) {
    H->n[d] = gc.n[d];
    H->c[d] = d < H->dim ? 0.5 / (H->h[d] * H->h[d]) : 0.0;
  }
  {
    double vol = 1.0;
    for (int d = 0; d < H->dim; d++)
      vol *= H->h[d];
    H->gscale = 1.0 / sqrt(vol);
  }
  H->dev = rw_context_device(ctx);
  H->nodes = H->cnt[0] * H->cnt[1] * H->cnt[2];
  if (H->dev) {
    RW_TRY(rw_device_alloc(H->dev, H->glen * sizeof(double), &H->gu));
    RW_TRY(rw_device_alloc(H->dev, H->glen * sizeof(double), &H->gk));
    RW_TRY(rw_device_alloc(H->dev, H->glen * sizeof(double), &H->ga));
    RW_TRY(rw_device_alloc(H->dev, H->glen * sizeof(double), &H->gb));
    RW_TRY(rw_device_alloc(H->dev, (size_t)(H->nodes + 1) * sizeof(double), &H->terms));
    RW_TRY(rw_pdefer_init(&H->pd, H->dev, 1));
  } else {
    RW_TRY(rw_grid_ghosted_alloc(H->ug, H->glen, "heat ghosted state", &H->gu));
    RW_TRY(rw_grid_ghosted_alloc(H->ug, H->glen, "heat ghosted kappa", &H->gk));
    RW_TRY(rw_grid_ghosted_alloc(H->ug, H->glen, "heat ghosted state adjoint", &H->ga));
    RW_TRY(rw_grid_ghosted_alloc(H->ug, H->glen, "heat ghosted kappa adjoint", &H->gb));
  }
  H->ns = cfg->nsensors;
  RW_TRY(rw_calloc((size_t)H->ns, sizeof *H->snode, "heat sensors", &H->snode));
  RW_TRY(rw_calloc((size_t)H->ns, sizeof *H->sloc, "heat sensors", &H->sloc));
  RW_TRY(rw_calloc((size_t)H->ns, sizeof *H->sbuf, "heat sensors", &H->sbuf));
  RW_TRY(heat_place_sensors(H, cfg, H->ug));
  RW_TRY(rw_calloc((size_t)H->ns + 1, sizeof *H->slocal, "heat sensors", &H->slocal));
  RW_TRY(rw_calloc((size_t)H->ns + 1, sizeof *H->sval, "heat sensors", &H->sval));
  RW_TRY(
      rw_calloc((size_t)H->ns * RW_WAVE_MAX_STAGES + 1, sizeof *H->scap, "heat sensors", &H->scap));
  RW_TRY(rw_calloc((size_t)H->ns * HEAT_INJ_COPIES * RW_WAVE_MAX_STAGES + 1, sizeof *H->sinj,
                   "heat sensors", &H->sinj));
  RW_TRY(
      rw_calloc((size_t)H->ns * RW_WAVE_MAX_STAGES + 1, sizeof *H->sgv, "heat sensors", &H->sgv));
  RW_TRY(rw_calloc((size_t)H->ns * HEAT_INJ_COPIES + 1, sizeof *H->soff, "heat sensors", &H->soff));
  for (int s = 0; s < H->ns; s++)
    if (H->sloc[s] >= 0) H->slocal[H->nsl++] = H->sloc[s];
  RW_TRY(rw_calloc(heat_lanes_len(H) * RW_WAVE_MAX_STAGES, sizeof(double), "heat source VJP lanes",
                   &H->lanes));
  { /* rw_calloc's blocks start on a cache line: so do urow + 1 and brow */
    const size_t brow_at = ((size_t)H->cnt[0] + 2 + 7 + 7) / 8 * 8,
                 rl = ((size_t)H->cnt[0] + 7) / 8 * 8, len = brow_at + 3 * rl;
    RW_TRY(rw_calloc(len, sizeof(double), "heat adjoint rows", &H->urow_mem));
    for (size_t i = 0; i < brow_at + rl; i++)
      H->urow_mem[i] = H->ub;
    H->urow = H->urow_mem + 7, H->brow = H->urow_mem + brow_at;
    H->yq = H->brow + rl, H->yb = H->yq + rl;
  }
  if (H->dev) RW_TRY(rw_grid_new_field(H->ug, &H->shape)); /* the CPU forms it (heat_fill_shape) */
  H->neumann = cfg->bc == RW_BC_NEUMANN;
  H->periodic = cfg->bc == RW_BC_PERIODIC;
  if (H->neumann) { /* the adjoint's halo: zero ghosts, decomposed like the state */
    for (int d = 0; d < 3; d++)
      gc.bc[d] = RW_BC_DIRICHLET;
    gc.dirichlet[0] = 0.0;
    RW_TRY(rw_grid_create(ctx, &gc, &H->zg));
    rw_grid_local_box(H->zg, s2, c2);
    for (int d = 0; d < 3; d++)
      RW_CHECK_GOTO(s2[d] == H->st[d] && c2[d] == H->cnt[d], RW_ERR_INTERNAL,
                    "heat: the adjoint grid is decomposed unlike the state grid");
  }
  rw_problem_ops dops = ops;
  int on_dev = H->dev != NULL;
  RW_TRY(rw_problem_create(ctx, "heat", &dops, H, rw_grid_local_length(H->ug), 1, names, &prob));
  if (on_dev) rw_problem_set_device_ready(prob);
  H = NULL;                                 /* owned by the problem from here */
  RW_TRY(rw_problem_set_vjp_by_comb(prob)); /* the gather VJPs for every stepper */
  {
    heat *Hp = rw_problem_content(prob);
    RW_TRY(heat_fill_shape(Hp, cfg->source_center, cfg->source_width));
    RW_TRY(rw_grid_new_field(Hp->ug, &kappa));
    N_VConst(1.0, kappa);
    RW_TRY(rw_problem_set_field(prob, "kappa", kappa));
    Hp->kappa = kappa;
    kappa = NULL;
  }
  /* Deterministic until the noise is set: amplitude 0, seed 0. */
  RW_TRY(rw_problem_set_noise(prob, 0, 0.0, 1));
  *out = prob;
  return 0;
cleanup:
  rw_vec_destroy(&kappa);
  rw_problem_destroy(&prob);
  heat_destroy(H);
  return ierr;
}

rw_grid rw_heat_grid(rw_problem prob)
{
  heat *H = heat_of(prob);
  return H ? H->ug : NULL;
}

rw_grid rw_heat_adjoint_grid(rw_problem prob)
{
  heat *H = heat_of(prob);
  return H ? (H->neumann ? H->zg : H->lg) : NULL;
}

int rw_heat_fill_gaussian(rw_problem prob, N_Vector v, double background, double amplitude,
                          const double *center, double width)
{
  HEAT_GET(H, prob);
  RW_CHECK(width > 0.0, RW_ERR_ARG, "heat: Gaussian width %g must be > 0", width);
  double *vd = rw_vec_data(v), c[3] = {0.0, 0.0, 0.0}, *host = NULL;
  if (rw_vec_device(v)) { /* computed on the host, then copied to the device */
    RW_CALL(rw_calloc((size_t)rw_vec_local_length(v) + 1, sizeof(double), "Gaussian", &host));
    vd = host;
  }
  for (int d = 0; d < H->dim; d++)
    c[d] = center[d];
  for (long k = 0; k < H->cnt[2]; k++)
    for (long j = 0; j < H->cnt[1]; j++)
      for (long i = 0; i < H->cnt[0]; i++) {
        long gi[3] = {H->st[0] + i, H->st[1] + j, H->st[2] + k};
        double r2 = 0.0;
        for (int d = 0; d < H->dim; d++) {
          double dx = (double)gi[d] * H->h[d] - c[d];
          r2 += dx * dx;
        }
        vd[(k * H->cnt[1] + j) * H->cnt[0] + i] =
            background + amplitude * exp(-r2 / (2.0 * width * width));
      }
  if (host) {
    int ierr = rw_vec_from_host(v, host);
    rw_free(&host);
    RW_CALL(ierr);
  }
  return 0;
}

int rw_heat_kappa_range(rw_problem prob, double *kmin, double *kmax)
{
  HEAT_GET(H, prob);
  const double *k = NULL;
  double *tmp = NULL; /* a device field's host copy */
  RW_CALL(rw_vec_host_read(H->kappa, &k, &tmp));
  double mm[2] = {INFINITY, INFINITY}; /* min kappa, min -kappa */
  for (sunindextype i = 0; i < rw_vec_local_length(H->kappa); i++) {
    mm[0] = fmin(mm[0], k[i]);
    mm[1] = fmin(mm[1], -k[i]);
  }
  rw_free(&tmp);
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_DOUBLE, MPI_MIN, rw_context_comm(H->ctx)));
  *kmin = mm[0];
  *kmax = -mm[1];
  return 0;
}

double rw_heat_stability_limit(rw_problem prob, double kappa_max)
{
  heat *H = heat_of(prob);
  if (!H || !(kappa_max > 0.0)) return INFINITY;
  double s = 0.0;
  for (int d = 0; d < H->dim; d++)
    s += 1.0 / (H->h[d] * H->h[d]);
  return 1.0 / (2.0 * kappa_max * s);
}

int rw_heat_num_sensors(rw_problem prob)
{
  heat *H = heat_of(prob);
  return H ? H->ns : 0;
}

void rw_heat_sensor(rw_problem prob, int s, long node[3], double x[3])
{
  heat *H = heat_of(prob);
  if (!H || s < 0 || s >= H->ns) return;
  for (int d = 0; d < 3; d++) {
    if (node) node[d] = H->snode[s][d];
    if (x) x[d] = d < H->dim ? (double)H->snode[s][d] * H->h[d] : 0.0;
  }
}

int rw_heat_sample(rw_problem prob, N_Vector u, double *vals)
{
  HEAT_GET(H, prob);
  const double *ud = rw_vec_data(u);
  /* Every node has one owner and the others add zeros: the sum is exact. */
  for (int s = 0; s < H->ns; s++) {
    vals[s] = 0.0;
    if (H->sloc[s] >= 0 && rw_vec_device(u))
      RW_CALL(
          rw_device_copy(rw_vec_device(u), &vals[s], ud + H->sloc[s], sizeof(double), RW_COPY_D2H));
    else if (H->sloc[s] >= 0)
      vals[s] = ud[H->sloc[s]];
  }
  RW_CALL_MPI(
      MPI_Allreduce(MPI_IN_PLACE, vals, H->ns, MPI_DOUBLE, MPI_SUM, rw_context_comm(H->ctx)));
  return 0;
}

int rw_heat_set_data(rw_problem prob, long nt, const double *times, const double *values)
{
  HEAT_GET(H, prob);
  RW_CHECK(nt >= 0, RW_ERR_ARG, "heat: %ld data times", nt);
  for (long n = 0; n + 1 < nt; n++)
    RW_CHECK(times[n + 1] > times[n], RW_ERR_ARG,
             "heat: data times must increase: times[%ld] = %.17g, times[%ld] = %.17g", n, times[n],
             n + 1, times[n + 1]);
  rw_free(&H->dtimes);
  rw_free(&H->dvals);
  H->nt = 0;
  if (nt == 0) return 0;
  RW_CALL(rw_calloc((size_t)nt, sizeof(double), "heat data times", &H->dtimes));
  RW_CALL(rw_calloc((size_t)nt * (size_t)H->ns, sizeof(double), "heat data", &H->dvals));
  memcpy(H->dtimes, times, (size_t)nt * sizeof(double));
  memcpy(H->dvals, values, (size_t)nt * (size_t)H->ns * sizeof(double));
  H->nt = nt;
  return 0;
}

long rw_heat_data(rw_problem prob, const double **times, const double **values)
{
  heat *H = heat_of(prob);
  if (times) *times = H ? H->dtimes : NULL;
  if (values) *values = H ? H->dvals : NULL;
  return H ? H->nt : 0;
}

int rw_heat_record_begin(rw_problem prob, long capacity)
{
  HEAT_GET(H, prob);
  RW_CHECK(capacity >= 1, RW_ERR_ARG, "heat: recording capacity %ld must be >= 1", capacity);
  RW_CALL(rw_heat_set_data(prob, 0, NULL, NULL));
  rw_free(&H->rtimes);
  rw_free(&H->rvals);
  RW_CALL(rw_calloc((size_t)capacity, sizeof(double), "heat recorded times", &H->rtimes));
  RW_CALL(
      rw_calloc((size_t)capacity * (size_t)H->ns, sizeof(double), "heat recorded data", &H->rvals));
  H->rcap = capacity;
  H->nrec = 0;
  H->recording = 1;
  return 0;
}

int rw_heat_record_monitor(void *pprob, long n, double t, N_Vector y)
{
  rw_problem prob = pprob;
  HEAT_GET(H, prob);
  (void)n;
  RW_CHECK(H->recording, RW_ERR_ARG, "heat: record monitor called outside a recording");
  RW_CHECK(H->nrec < H->rcap, RW_ERR_ARG, "heat: more than %ld samples recorded", H->rcap);
  RW_CALL(rw_heat_sample(prob, y, H->rvals + (size_t)H->nrec * (size_t)H->ns));
  H->rtimes[H->nrec++] = t;
  return 0;
}

int rw_heat_record_end(rw_problem prob)
{
  HEAT_GET(H, prob);
  RW_CHECK(H->recording, RW_ERR_ARG, "heat: rw_heat_record_end without rw_heat_record_begin");
  H->recording = 0;
  int ierr = rw_heat_set_data(prob, H->nrec, H->rtimes, H->rvals);
  rw_free(&H->rtimes);
  rw_free(&H->rvals);
  H->rcap = H->nrec = 0;
  RW_CALL(ierr);
  return 0;
}

int rw_heat_jvp_field(rw_problem prob, double t, N_Vector y, N_Vector dkappa, N_Vector out)
{
  HEAT_GET(H, prob);
  (void)t;
  /* f is bilinear in (kappa, u): the derivative is the operator with conductivity dkappa
   * (its ghosts mirrored like kappa's) applied to u (with its boundary values). */
  RW_CALL(heat_apply(H, dkappa, H->gb, H->ug, y, 0, 0.0, out));
  return 0;
}
