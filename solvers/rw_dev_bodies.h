/* The device kernels of the grid and the problems, as element bodies: body(params, idx) does
 * the work of item idx. A CUDA thread runs one item (solvers/cuda/rw_cuda.cu, one generic
 * kernel that switches on the body's id); the emulated device runs the items in a host loop
 * (rw_device_run). So a GPU run and an emulated run execute the same code per item, and the
 * emulated device, whose memory faults outside its kernels, tests everything around them.
 *
 * Each body reproduces the arithmetic of the CPU row kernel it stands for, operation by
 * operation (the CUDA build contracts no multiply-add), so states and state adjoints equal
 * the CPU run's bit for bit; sums over nodes are written per node and reduced in the device's
 * fixed order (rw_kernels.h), so they differ from the CPU's in the last bits only. */
#ifndef REWIND_RW_DEV_BODIES_H
#define REWIND_RW_DEV_BODIES_H

#include "rewind/rw_kernels.h"
#include "rewind/rw_vector.h"

#include <stddef.h>

enum {
  RW_BODY_GRID_FILL = 1,     /* ghosted owned part = combination of owned vectors (+ keep) */
  RW_BODY_GRID_BOX,          /* box of a ghosted array <-> contiguous buffer */
  RW_BODY_GS_RHS,            /* Gray-Scott f on a box */
  RW_BODY_GS_VJP,            /* Gray-Scott (df/dy)^T w on a box, and per-node parameter terms */
  RW_BODY_GS_U2,             /* Gray-Scott u^2 per node (objective u2) and its gradient */
  RW_BODY_GRID_BC,           /* physical boundary ghosts (Dirichlet, Neumann) and their transpose */
  RW_BODY_GRID_ADD,          /* owned entries += the ghosted array's owned part (the transpose) */
  RW_BODY_HEAT_DIFFUSE,      /* heat: div(k grad u) (+ q s) on a box */
  RW_BODY_HEAT_KGRAD,        /* heat: the conductivity gradient gathered per node */
  RW_BODY_HEAT_KGHOST,       /* heat: a Dirichlet face's ghost-conductivity terms */
  RW_BODY_HEAT_WS,           /* heat: w s per node (the source parameter's terms) */
  RW_BODY_BG,                /* Burgers: f, (df/du)^T w, or the viscosity terms on a box */
  RW_BODY_BG_MISFIT,         /* Burgers: the terminal misfit's terms and gradient */
  RW_BODY_LF,                /* the leapfrog stepper's node updates */
  RW_BODY_WAVE,              /* wave: the Laplacian's three uses and the component copies */
  RW_BODY_NOISE,             /* noise: normals of a step and additive diffusion coefficients */
  RW_BODY_GS_RHS_COMB,       /* Gray-Scott: the fused stage (combination and stencil, interior) */
  RW_BODY_HEAT_DIFFUSE_COMB, /* heat: the fused stage (combination and stencil, interior) */
  RW_BODY_GS_JVP,            /* Gray-Scott: the tangent (df/dy) d + (df/dp) dp on a box */
  RW_BODY_NODE,              /* neural ODE: the MLP's element-wise steps around its products */
  RW_BODY_ENS,               /* ODE and SDE ensembles: a member's field, VJPs, JVP, objective */
  RW_BODY_COUNT
};
#include "../core/rw_device_impl.h"
#include "../core/rw_rng_body.h"
#if defined(__cplusplus)
static_assert(RW_BODY_COUNT == RW_BODY_ID_END, "RW_BODY_ID_END must follow the body ids");
#else
_Static_assert(RW_BODY_COUNT == RW_BODY_ID_END, "RW_BODY_ID_END must follow the body ids");
#endif

/* A ghosted array's geometry (rw_grid.h's layout). */
typedef struct {
  long gn[3];  /* ghosted dims */
  long cnt[3]; /* owned counts */
  int ghost, dim, ncomp;
} rw_body_geom;

static inline RW_HD size_t rw_body_gidx(const rw_body_geom *g, long i, long j, long k, int c)
{
  long gk = g->dim == 3 ? k + g->ghost : 0;
  return ((size_t)((gk * g->gn[1] + (j + g->ghost)) * g->gn[0] + (i + g->ghost))) *
             (size_t)g->ncomp +
         (size_t)c;
}

/* --- grid -------------------------------------------------------------------------------- */

/* The inputs of a fused stage (rw_grid_apply_comb_fused) as its interior body sees them: Y =
 * sum_j c_j x_j, formed by the body at every point it reads, and keep (may be NULL) to write Y
 * to at the body's own node. */
#define RW_FUSE_MAX 8
typedef struct {
  int n;
  double c[RW_FUSE_MAX];
  const double *x[RW_FUSE_MAX];
  double *keep;
} rw_body_comb;

#ifndef __CUDACC__
struct rw_grid_s;
/* The fused stage in progress on grid g (inside its interior kernel call) into *in (rw_grid.c). */
int rw_grid_comb_body(struct rw_grid_s *g, rw_body_comb *in);
#endif

typedef struct {
  rw_body_geom g;
  long lo[3], cnt[3]; /* the box of owned nodes filled (all of them, or a shell slab) */
  int n;
  double c[RW_LINCOMB_MAX];
  const double *x[RW_LINCOMB_MAX];
  double *gv, *keep;
} rw_body_grid_fill;

/* Item = entry m of the box (nodes x fastest, components innermost), owned index o:
 * gv[ghosted(o)] = sum_j c_j x_j[o] (rw_lincomb's rounding), keep too. */
static inline RW_HD void rw_body_grid_fill_run(const rw_body_grid_fill *p, long m)
{
  const int nc = p->g.ncomp, comp = (int)(m % nc);
  const long node = m / nc, i = p->lo[0] + node % p->cnt[0], r = node / p->cnt[0];
  const long j = p->lo[1] + r % p->cnt[1], k = p->lo[2] + r / p->cnt[1];
  const long o = ((k * p->g.cnt[1] + j) * p->g.cnt[0] + i) * nc + comp;
  const double v = rw_dk_lincomb(p->n, p->c, p->x, o);
  p->gv[rw_body_gidx(&p->g, i, j, k, comp)] = v;
  if (p->keep) p->keep[o] = v;
}

typedef struct {
  rw_body_geom g;
  long lo[3], cnt[3]; /* the box, local coordinates (ghosts reachable) */
  double *gv, *buf;
  int mode; /* 0: pack gv -> buf, 1: unpack buf -> gv, 2: add buf into gv */
} rw_body_grid_box;

/* Item = entry m of the buffer: box nodes x fastest, components innermost (rw_grid_face's
 * order). */
static inline RW_HD void rw_body_grid_box_run(const rw_body_grid_box *p, long m)
{
  const int nc = p->g.ncomp;
  const long node = m / nc, i = node % p->cnt[0], r = node / p->cnt[0];
  const long j = r % p->cnt[1], k = r / p->cnt[1];
  const size_t x = rw_body_gidx(&p->g, p->lo[0] + i, p->lo[1] + j, p->lo[2] + k, (int)(m % nc));
  if (p->mode == 0)
    p->buf[m] = p->gv[x];
  else if (p->mode == 1)
    p->gv[x] = p->buf[m];
  else
    p->gv[x] += p->buf[m];
}

typedef struct {
  rw_body_geom g;
  int d, side, bc, adjoint; /* dimension, side (0 low), RW_BC_DIRICHLET or _NEUMANN, transpose */
  int e1, e2;               /* the face's two other dimensions */
  long n1, n2, last;        /* owned counts along e1, e2; last owned index along d */
  size_t st[3], base;       /* strides of a ghosted array, index of owned node (0, 0, 0) */
  double dval[8];           /* Dirichlet value per component */
  double *gv;
} rw_body_grid_bc;

/* Item = (layer m - 1, face node, component), components fastest: rw_grid_bc's ghost fill
 * (Dirichlet value or the mirror u[-m] = u[m]) or its transpose (mirror += ghost, ghost = 0).
 * Within one side every item writes its own ghost and reads or adds to its own mirror. */
static inline RW_HD void rw_body_grid_bc_run(const rw_body_grid_bc *p, long idx)
{
  const int nc = p->g.ncomp, c = (int)(idx % nc);
  long r = idx / nc;
  const long a1 = r % p->n1;
  r /= p->n1;
  const long a2 = r % p->n2, m = r / p->n2 + 1;
  const size_t x = p->base + (size_t)a2 * p->st[p->e2] + (size_t)a1 * p->st[p->e1];
  const long pg = p->side == 0 ? -m : p->last + m, pq = p->side == 0 ? m : p->last - m;
  double *ghost = p->gv + (ptrdiff_t)x + (ptrdiff_t)pg * (ptrdiff_t)p->st[p->d];
  double *mirror = p->gv + (ptrdiff_t)x + (ptrdiff_t)pq * (ptrdiff_t)p->st[p->d];
  if (!p->adjoint) {
    ghost[c] = p->bc == 1 ? p->dval[c] : mirror[c]; /* 1: RW_BC_DIRICHLET */
  } else {
    if (p->bc == 2) mirror[c] += ghost[c]; /* 2: RW_BC_NEUMANN */
    ghost[c] = 0.0;
  }
}

typedef struct {
  rw_body_geom g;
  const double *gv;
  double *out;
} rw_body_grid_add;

/* Item = owned entry o: out[o] += gv[ghosted(o)]. */
static inline RW_HD void rw_body_grid_add_run(const rw_body_grid_add *p, long o)
{
  const int nc = p->g.ncomp;
  const long node = o / nc, i = node % p->g.cnt[0], r = node / p->g.cnt[0];
  const long j = r % p->g.cnt[1], k = r / p->g.cnt[1];
  p->out[o] += p->gv[rw_body_gidx(&p->g, i, j, k, (int)(o % nc))];
}

/* --- Gray-Scott ---------------------------------------------------------------------------- */

typedef struct {
  rw_body_geom g;
  long lo[3], cnt[3];             /* the box of owned nodes */
  double Du, Dv, ga, gk, ih2, nd; /* gs_coef */
  size_t sy, sz;                  /* strides of y and z in the ghosted array */
  const double *gv;               /* ghosted input (state for f, w for the VJP) */
  const double *y;                /* VJP: owned state */
  double *out;                    /* owned output (NULL: VJP not written) */
  int add;                        /* VJP: out += instead of out = */
  double *terms;                  /* VJP: 4 x nodes per-node parameter terms (NULL: none) */
  long nodes;                     /* owned nodes (the stride of terms) */
} rw_body_gs;

/* Item = node of the box: f_u, f_v as gs_rhs_row2/3 compute them. */
static inline RW_HD void rw_body_gs_rhs_run(const rw_body_gs *p, long m)
{
  const long i = p->lo[0] + m % p->cnt[0], r = m / p->cnt[0];
  const long j = p->lo[1] + r % p->cnt[1], k = p->lo[2] + r / p->cnt[1];
  const double *a = p->gv + rw_body_gidx(&p->g, i, j, k, 0);
  const size_t sy = p->sy, sz = p->sz, o = (size_t)(((k * p->g.cnt[1] + j) * p->g.cnt[0] + i) * 2);
  double u = a[0], v = a[1], uvv = u * v * v;
  double tu = a[-2] + a[2] + a[-(ptrdiff_t)sy] + a[sy];
  double tv = a[-1] + a[3] + a[1 - (ptrdiff_t)sy] + a[1 + sy];
  if (p->g.dim == 3) {
    tu += a[-(ptrdiff_t)sz] + a[sz];
    tv += a[1 - (ptrdiff_t)sz] + a[1 + sz];
  }
  p->out[o] = p->Du * ((tu - p->nd * u) * p->ih2) - uvv + p->ga * (1.0 - u);
  p->out[o + 1] = p->Dv * ((tv - p->nd * v) * p->ih2) + uvv - p->gk * v;
}

/* Item = node of the box: (df/dy) d (+ (df/dp) dp), as gs_jvp_kernel computes it, d ghosted in
 * gv, the state ghosted in gy. */
typedef struct {
  rw_body_geom g;
  long lo[3], cnt[3];
  double p[4], dp[4]; /* D_u, D_v, gamma, kappa and their tangents */
  int has_dp;
  double ih2;
  size_t sy, sz;
  const double *gv, *gy;
  double *out;
} rw_body_gs_jvp;

static inline RW_HD double rw_body_gs_lap(const rw_body_gs_jvp *p, const double *a, size_t x)
{
  double t = a[x - 2] + a[x + 2] + a[x - p->sy] + a[x + p->sy];
  if (p->g.dim == 3) t += a[x - p->sz] + a[x + p->sz];
  return (t - 2.0 * p->g.dim * a[x]) * p->ih2;
}

static inline RW_HD void rw_body_gs_jvp_run(const rw_body_gs_jvp *p, long m)
{
  const long i = p->lo[0] + m % p->cnt[0], r = m / p->cnt[0];
  const long j = p->lo[1] + r % p->cnt[1], k = p->lo[2] + r / p->cnt[1];
  const size_t x = rw_body_gidx(&p->g, i, j, k, 0);
  const size_t o = (size_t)(((k * p->g.cnt[1] + j) * p->g.cnt[0] + i) * 2);
  const double Du = p->p[0], Dv = p->p[1], ga = p->p[2], ka = p->p[3];
  const double *gy = p->gy, *gv = p->gv;
  double u = gy[x], v = gy[x + 1], a = gv[x], b = gv[x + 1];
  double fu = Du * rw_body_gs_lap(p, gv, x) - (v * v + ga) * a - 2.0 * u * v * b;
  double fv = Dv * rw_body_gs_lap(p, gv, x + 1) + v * v * a + (2.0 * u * v - ga - ka) * b;
  if (p->has_dp) {
    fu += p->dp[0] * rw_body_gs_lap(p, gy, x) + p->dp[2] * (1.0 - u);
    fv += p->dp[1] * rw_body_gs_lap(p, gy, x + 1) - (p->dp[2] + p->dp[3]) * v;
  }
  p->out[o] = fu;
  p->out[o + 1] = fv;
}

/* The fused stage (rw_grid_apply_comb_fused): the interior box's right-hand side with the
 * stage combination Y = sum_j c_j x_j formed at each stencil point from the owned inputs (every
 * neighbour of an interior node is owned) instead of read from a ghosted copy, and Y at the node
 * itself written to keep. The same sums in the same order as the fill body and
 * rw_body_gs_rhs_run, so the same bits, with one pass over memory instead of two. */
typedef struct {
  rw_body_gs b; /* b.gv unused */
  rw_body_comb in;
} rw_body_gs_comb;

static inline RW_HD void rw_body_gs_rhs_comb_run(const rw_body_gs_comb *q, long m)
{
  const rw_body_gs *p = &q->b;
  const long i = p->lo[0] + m % p->cnt[0], r = m / p->cnt[0];
  const long j = p->lo[1] + r % p->cnt[1], k = p->lo[2] + r / p->cnt[1];
  const long o = ((k * p->g.cnt[1] + j) * p->g.cnt[0] + i) * 2;
  const long sy = 2 * p->g.cnt[0], sz = 2 * p->g.cnt[0] * p->g.cnt[1]; /* owned strides */
#define RW_Y(off) rw_dk_lincomb(q->in.n, q->in.c, q->in.x, o + (off))
  double u = RW_Y(0), v = RW_Y(1), uvv = u * v * v;
  double tu = RW_Y(-2) + RW_Y(2) + RW_Y(-sy) + RW_Y(sy);
  double tv = RW_Y(-1) + RW_Y(3) + RW_Y(1 - sy) + RW_Y(1 + sy);
  if (p->g.dim == 3) {
    tu += RW_Y(-sz) + RW_Y(sz);
    tv += RW_Y(1 - sz) + RW_Y(1 + sz);
  }
#undef RW_Y
  if (q->in.keep) q->in.keep[o] = u, q->in.keep[o + 1] = v;
  p->out[o] = p->Du * ((tu - p->nd * u) * p->ih2) - uvv + p->ga * (1.0 - u);
  p->out[o + 1] = p->Dv * ((tv - p->nd * v) * p->ih2) + uvv - p->gk * v;
}

/* Item = node of the box: (df/dy)^T w as gs_vjp_node computes it, and the node's four
 * parameter terms u L w_u, v L w_v, w_u (1 - u) - w_v v, -(w_v v). */
static inline RW_HD void rw_body_gs_vjp_run(const rw_body_gs *p, long m)
{
  const long i = p->lo[0] + m % p->cnt[0], r = m / p->cnt[0];
  const long j = p->lo[1] + r % p->cnt[1], k = p->lo[2] + r / p->cnt[1];
  const double *gw = p->gv + rw_body_gidx(&p->g, i, j, k, 0);
  const long node = (k * p->g.cnt[1] + j) * p->g.cnt[0] + i;
  const size_t sy = p->sy, sz = p->sz, o = (size_t)node * 2;
  double u = p->y[o], v = p->y[o + 1], wu = gw[0], wv = gw[1], vv = v * v, uv2 = 2.0 * u * v;
  double tu = gw[-2] + gw[2] + gw[-(ptrdiff_t)sy] + gw[sy];
  double tv = gw[-1] + gw[3] + gw[1 - (ptrdiff_t)sy] + gw[1 + sy];
  if (p->g.dim == 3) {
    tu += gw[-(ptrdiff_t)sz] + gw[sz];
    tv += gw[1 - (ptrdiff_t)sz] + gw[1 + sz];
  }
  double lu = (tu - p->nd * wu) * p->ih2, lv = (tv - p->nd * wv) * p->ih2;
  if (p->out) {
    double fu = (vv * wv - (vv + p->ga) * wu) + p->Du * lu;
    double fv = ((uv2 - p->gk) * wv - uv2 * wu) + p->Dv * lv;
    p->out[o] = p->add ? p->out[o] + fu : fu;
    p->out[o + 1] = p->add ? p->out[o + 1] + fv : fv;
  }
  if (p->terms) {
    p->terms[node] = u * lu;
    p->terms[p->nodes + node] = v * lv;
    p->terms[2 * p->nodes + node] = wu * (1.0 - u) - wv * v;
    p->terms[3 * p->nodes + node] = -(wv * v);
  }
}

typedef struct {
  const double *y;
  double *terms; /* u^2 per node (NULL: not written) */
  double *grad;  /* (2 vol u, 0) per node (NULL: not written) */
  double vol;
} rw_body_gs_u2;

static inline RW_HD void rw_body_gs_u2_run(const rw_body_gs_u2 *p, long m)
{
  const double u = p->y[2 * m];
  if (p->terms) p->terms[m] = u * u;
  if (p->grad) {
    p->grad[2 * m] = 2.0 * p->vol * u;
    p->grad[2 * m + 1] = 0.0;
  }
}

/* --- Heat ------------------------------------------------------------------------------------ */

typedef struct {
  rw_body_geom g;
  long lo[3], cnt[3];    /* the box of owned nodes */
  size_t sd[3];          /* strides of a ghosted array per dimension */
  double c[3];           /* 1 / (2 h_d^2) */
  const double *gk, *gu; /* ghosted conductivity and state (or w for the gradient gather) */
  const double *src;     /* owned source shape (NULL: none) */
  double q;
  double *out; /* owned output */
  /* a boundary face's ghost terms (RW_BODY_HEAT_KGHOST): mode 0, the ghost conductivity's
   * term of the conductivity gradient (gk = ghosted w, gu = ghosted u); mode 1, a Neumann
   * face's term of the state adjoint (gk = ghosted conductivity, gu = ghosted w) */
  int d, mode;
  long toward; /* +1 low side, -1 high side: the mirror node one layer inside */
  long out_s;  /* owned stride along d */
} rw_body_heat;

static inline RW_HD long rw_body_heat_node(const rw_body_heat *p, long m, long *i, long *j, long *k)
{
  *i = p->lo[0] + m % p->cnt[0];
  const long r = m / p->cnt[0];
  *j = p->lo[1] + r % p->cnt[1];
  *k = p->lo[2] + r / p->cnt[1];
  return (*k * p->g.cnt[1] + *j) * p->g.cnt[0] + *i;
}

/* Item = node of the box: f = div(k grad u) (+ q s) as heat_row_body computes it. */
static inline RW_HD void rw_body_heat_diffuse_run(const rw_body_heat *p, long m)
{
  long i, j, k;
  const long o = rw_body_heat_node(p, m, &i, &j, &k);
  const size_t x = rw_body_gidx(&p->g, i, j, k, 0);
  const double *gk = p->gk + x, *gu = p->gu + x;
  const ptrdiff_t s0 = (ptrdiff_t)p->sd[0], s1 = (ptrdiff_t)p->sd[1], s2 = (ptrdiff_t)p->sd[2];
  double ui = gu[0], ki = gk[0], fi = 0.0;
  fi += p->c[0] * ((ki + gk[-s0]) * (gu[-s0] - ui) + (ki + gk[s0]) * (gu[s0] - ui));
  fi += p->c[1] * ((ki + gk[-s1]) * (gu[-s1] - ui) + (ki + gk[s1]) * (gu[s1] - ui));
  if (p->g.dim == 3)
    fi += p->c[2] * ((ki + gk[-s2]) * (gu[-s2] - ui) + (ki + gk[s2]) * (gu[s2] - ui));
  p->out[o] = p->src ? fi + p->q * p->src[o] : fi;
}

/* The fused stage's interior box (rw_grid_apply_comb_fused): as rw_body_heat_diffuse_run with
 * u = sum_j c_j x_j formed at every point it reads (owned strides), u at the node to keep. */
typedef struct {
  rw_body_heat b; /* b.gu unused */
  rw_body_comb in;
} rw_body_heat_comb;

static inline RW_HD void rw_body_heat_diffuse_comb_run(const rw_body_heat_comb *q, long m)
{
  const rw_body_heat *p = &q->b;
  long i, j, k;
  const long o = rw_body_heat_node(p, m, &i, &j, &k);
  const double *gk = p->gk + rw_body_gidx(&p->g, i, j, k, 0);
  const ptrdiff_t s0 = (ptrdiff_t)p->sd[0], s1 = (ptrdiff_t)p->sd[1], s2 = (ptrdiff_t)p->sd[2];
  const long t1 = p->g.cnt[0], t2 = p->g.cnt[0] * p->g.cnt[1]; /* owned strides */
#define RW_U(off) rw_dk_lincomb(q->in.n, q->in.c, q->in.x, o + (off))
  double ui = RW_U(0), ki = gk[0], fi = 0.0;
  fi += p->c[0] * ((ki + gk[-s0]) * (RW_U(-1) - ui) + (ki + gk[s0]) * (RW_U(1) - ui));
  fi += p->c[1] * ((ki + gk[-s1]) * (RW_U(-t1) - ui) + (ki + gk[s1]) * (RW_U(t1) - ui));
  if (p->g.dim == 3)
    fi += p->c[2] * ((ki + gk[-s2]) * (RW_U(-t2) - ui) + (ki + gk[s2]) * (RW_U(t2) - ui));
#undef RW_U
  if (q->in.keep) q->in.keep[o] = ui;
  p->out[o] = p->src ? fi + p->q * p->src[o] : fi;
}

/* Item = owned node: out += the conductivity gradient gathered as heat_kgrad_body does, with
 * gk standing for the ghosted w and gu for the ghosted state. */
static inline RW_HD void rw_body_heat_kgrad_run(const rw_body_heat *p, long m)
{
  long i, j, k;
  const long o = rw_body_heat_node(p, m, &i, &j, &k);
  const size_t x = rw_body_gidx(&p->g, i, j, k, 0);
  const double *gw = p->gk + x, *gu = p->gu + x;
  const ptrdiff_t s0 = (ptrdiff_t)p->sd[0], s1 = (ptrdiff_t)p->sd[1], s2 = (ptrdiff_t)p->sd[2];
  double wi = gw[0], ui = gu[0], g = 0.0;
  g += p->c[0] * ((wi - gw[-s0]) * (gu[-s0] - ui) + (wi - gw[s0]) * (gu[s0] - ui));
  g += p->c[1] * ((wi - gw[-s1]) * (gu[-s1] - ui) + (wi - gw[s1]) * (gu[s1] - ui));
  if (p->g.dim == 3)
    g += p->c[2] * ((wi - gw[-s2]) * (gu[-s2] - ui) + (wi - gw[s2]) * (gu[s2] - ui));
  p->out[o] += g;
}

/* Item = node of a boundary face (the box), its term given to the node one layer inside:
 * mode 0, the ghost conductivity's term of the conductivity gradient (heat_vjp_comb_field's
 * boundary loop); mode 1, a Neumann ghost's term of the state adjoint (heat_neumann_ghosts). */
static inline RW_HD void rw_body_heat_kghost_run(const rw_body_heat *p, long m)
{
  long i, j, k;
  const long o = rw_body_heat_node(p, m, &i, &j, &k);
  const size_t x = rw_body_gidx(&p->g, i, j, k, 0);
  const ptrdiff_t s = (ptrdiff_t)p->sd[p->d], g = (ptrdiff_t)x - p->toward * s;
  if (p->mode == 1) {
    p->out[o + p->toward * p->out_s] += p->c[p->d] * (p->gk[x] + p->gk[g]) * p->gu[x];
    return;
  }
  const double ug = p->gu[g];
  p->out[o + p->toward * p->out_s] += p->c[p->d] * p->gk[x] * (ug - p->gu[x]);
}

/* Item = owned node: out = ghosted w times the source shape (the source's parameter terms). */
static inline RW_HD void rw_body_heat_ws_run(const rw_body_heat *p, long m)
{
  long i, j, k;
  const long o = rw_body_heat_node(p, m, &i, &j, &k);
  p->out[o] = p->gu[rw_body_gidx(&p->g, i, j, k, 0)] * p->src[o];
}

/* --- Noise ----------------------------------------------------------------------------------- */

typedef struct {
  int mode;              /* 0 flat normals, 1 grid normals, 2 per-component constants,
                            3 heat's diffusion (Neumann half cells) */
  uint64_t seed, first;  /* mode 0: out[m] = normal(first + m) */
  uint32_t c1hi, c2, c3; /* the counter's stage, step and stream words (rw_rng_body.h) */
  double *out;
  long cnt[3], start[3], n[3]; /* owned box, its global start, global nodes per dimension */
  int ncomp, nnoisy, dim, neumann;
  int comp_on[2]; /* mode 1: component c's noisy index c' (-1: no noise, entry 0) */
  double cval[2]; /* mode 2: the constant of component c; mode 3: gscale, sqrt(2) */
} rw_body_noise;

#ifndef __CUDACC__
/* Runs noise body *b (its mode, box and output set) over n items for noise step `step` of
 * (seed, stream RW_RNG_STREAM_FORCING, stage 0), after the range checks rw_rng.c's fills make
 * (step, and `index_end`, one past the largest global index drawn). rw_problem.c. */
int rw_noise_device_run(rw_device dev, rw_body_noise *b, uint64_t seed, uint64_t step, long n,
                        uint64_t index_end);
#endif

/* Item = owned entry m (node-major, components innermost). Mode 1: the node's global number
 * g = ((start2 + k) n1 + start1 + j) n0 + start0 + i draws index g nnoisy + c' (the CPU fills'
 * rows, gs_noise_fill / heat_noise_fill); mode 3 repeats heat_diffusion's products in order. */
static inline RW_HD void rw_body_noise_run(const rw_body_noise *p, long m)
{
  if (p->mode == 0) {
    p->out[m] = rw_rng_normal_at(p->seed, p->c1hi, p->c2, p->c3, p->first + (uint64_t)m);
    return;
  }
  const long c = m % p->ncomp, node = m / p->ncomp;
  if (p->mode == 2) {
    p->out[m] = p->cval[c];
    return;
  }
  const long i = node % p->cnt[0], j = (node / p->cnt[0]) % p->cnt[1],
             k = node / (p->cnt[0] * p->cnt[1]);
  if (p->mode == 3) {
    double g = p->cval[0];
    const double r2 = p->cval[1];
    if (p->neumann) {
      const long gj = p->start[1] + j, gk = p->start[2] + k, gi = p->start[0] + i;
      if (gj == 0 || gj == p->n[1] - 1) g *= r2;
      if (p->dim == 3 && (gk == 0 || gk == p->n[2] - 1)) g *= r2;
      if (gi == 0) g *= r2;
      if (gi == p->n[0] - 1) g *= r2;
    }
    p->out[m] = g;
    return;
  }
  const int on = p->comp_on[c];
  if (on < 0) {
    p->out[m] = 0.0;
    return;
  }
  const uint64_t g =
      (uint64_t)(((p->start[2] + k) * p->n[1] + p->start[1] + j) * p->n[0] + p->start[0] + i);
  p->out[m] =
      rw_rng_normal_at(p->seed, p->c1hi, p->c2, p->c3, g * (uint64_t)p->nnoisy + (uint64_t)on);
}

/* --- Burgers ---------------------------------------------------------------------------------- */

typedef struct {
  rw_body_geom g;
  long lo[3], cnt[3]; /* the box of owned nodes */
  double ihx2, ihy2, i4hx, i4hy, i2hx, i2hy, nu;
  int mode;         /* 0: f, 1: out += (df/du)^T w, 2: terms = w L u, 3: the tangent */
  double dnu;       /* mode 3: the viscosity's tangent */
  const double *gu; /* mode 3: ghosted state */
  const double *gv; /* ghosted input (u for f and the nu terms, w for the VJP, v for mode 3) */
  const double *u;  /* VJP: owned state */
  const double *w;  /* nu terms: owned cotangent */
  double *out;      /* owned output (f, the VJP, or the nu terms) */
} rw_body_bg;

/* Item = node of the box, as bg_kernel computes it (modes BG_RHS, BG_VJPY, BG_NU, BG_JVP per
 * node). */
static inline RW_HD void rw_body_bg_run(const rw_body_bg *p, long mm)
{
  const long i = p->lo[0] + mm % p->cnt[0], j = p->lo[1] + mm / p->cnt[0];
  const size_t s = rw_body_gidx(&p->g, i, j, 0, 0), gx = (size_t)p->g.gn[0];
  const double *gv = p->gv;
  double c = gv[s], e = gv[s + 1], wst = gv[s - 1], n = gv[s + gx], so = gv[s - gx];
  double lap = ((wst - 2.0 * c) + e) * p->ihx2 + ((so - 2.0 * c) + n) * p->ihy2;
  const long m = j * p->g.cnt[0] + i;
  if (p->mode == 0)
    p->out[m] = -(e * e - wst * wst) * p->i4hx - (n * n - so * so) * p->i4hy + p->nu * lap;
  else if (p->mode == 1)
    p->out[m] += p->u[m] * ((e - wst) * p->i2hx + (n - so) * p->i2hy) + p->nu * lap;
  else if (p->mode == 2)
    p->out[m] = p->w[m] * lap;
  else { /* bg_kernel's BG_JVP, operation by operation */
    const double *gu = p->gu;
    double lapu = ((gu[s - 1] - 2.0 * gu[s]) + gu[s + 1]) * p->ihx2 +
                  ((gu[s - gx] - 2.0 * gu[s]) + gu[s + gx]) * p->ihy2;
    p->out[m] = -(gu[s + 1] * e - gu[s - 1] * wst) * p->i2hx -
                (gu[s + gx] * n - gu[s - gx] * so) * p->i2hy + p->nu * lap + p->dnu * lapu;
  }
}

typedef struct {
  const double *u, *ut;
  double *terms; /* (u - ut)^2 per node (NULL: not written) */
  double *grad;  /* a (u - ut) per node (NULL: not written) */
  double a;
} rw_body_bg_misfit;

static inline RW_HD void rw_body_bg_misfit_run(const rw_body_bg_misfit *p, long m)
{
  const double e = p->u[m] - p->ut[m];
  if (p->terms) p->terms[m] = e * e;
  if (p->grad) p->grad[m] = p->a * e;
}

/* --- ODE and SDE ensembles (rw_ode_problems.c, rw_sde_problems.c) ------------------------- */

/* Models; each member is a 2-vector (ODEs) or a scalar path (SDEs). */
enum { RW_ENS_VDP, RW_ENS_LV, RW_ENS_OU, RW_ENS_GBM };

/* What item e (member e) computes; "terms" are per-member values a sum over members reduces
 * (the CPU in member order, a device in its fixed order), laid out k * n + e for parameter k. */
enum {
  RW_ENS_RHS,    /* out = f(u) */
  RW_ENS_VJPY,   /* out += (df/du)^T w */
  RW_ENS_VJPP,   /* terms[k][e] = ((df/dp)^T w)_k, k < rw_ens_nterms (SDE: the drift's p0) */
  RW_ENS_JVP,    /* out = (df/du) w (+ (df/dp) dp when has_dp) */
  RW_ENS_MISFIT, /* terms[e] = |u - target|^2 */
  RW_ENS_TGRAD,  /* out = a (u - target) */
  RW_ENS_RGRAD,  /* out += a u */
  RW_ENS_DIFF,   /* SDE: out = g(u) (ou: sigma; gbm: sigma u) */
  RW_ENS_DIFFVJP /* SDE: out += (dg/du)^T w (gbm), terms[e] = (dg/dsigma)^T w */
};

typedef struct {
  int kind, mode, has_dp;
  long n;                           /* members on this rank */
  double p[4], dp[4], target[2], a; /* parameters, tangent, target, a scalar factor */
  const double *u, *w;              /* the state and the cotangent (or tangent) */
  double *out, *terms;
} rw_body_ens;

/* The parameters a model's field depends on (ODEs: all; SDEs: the drift's p0). */
static inline RW_HD int rw_ens_nterms(int kind) { return kind == RW_ENS_LV ? 4 : 1; }

/* ODE field of one member.
 *   vanderpol:     f = (v, mu (1 - x^2) v - x)
 *   lotkavolterra: f = (alpha x - beta x y, delta x y - gamma y) */
static inline RW_HD void rw_ens_ode_f(int kind, const double *p, const double *u, double *f)
{
  const double x = u[0], y = u[1];
  if (kind == RW_ENS_VDP) {
    f[0] = y;
    f[1] = p[0] * (1.0 - x * x) * y - x;
  } else {
    f[0] = p[0] * x - p[1] * x * y;
    f[1] = p[3] * x * y - p[2] * y;
  }
}

/* ODE Jacobian df/du of one member, row-major 2x2.
 * VdP: [[0, 1], [-2 mu x v - 1, mu (1 - x^2)]]
 * LV:  [[alpha - beta y, -beta x], [delta y, delta x - gamma]] */
static inline RW_HD void rw_ens_ode_jac(int kind, const double *p, const double *u, double J[4])
{
  const double x = u[0], y = u[1];
  if (kind == RW_ENS_VDP) {
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

/* ODE df/dp of one member, row-major 2 x np (LV columns: alpha beta gamma delta). */
static inline RW_HD void rw_ens_ode_dfdp(int kind, const double *u, double *D)
{
  const double x = u[0], y = u[1];
  if (kind == RW_ENS_VDP) {
    D[0] = 0.0;
    D[1] = (1.0 - x * x) * y;
  } else {
    D[0] = x, D[1] = -x * y, D[2] = 0.0, D[3] = 0.0;
    D[4] = 0.0, D[5] = 0.0, D[6] = -y, D[7] = x * y;
  }
}

/* Item = member e of model `kind` in mode `mode` (b's own, or the same values as constants: the
 * CPU's loops (rw_ensemble.c) pass constants, so each of their loops is compiled for one model
 * and mode), so the CPU and a device compute the same values bit for bit. */
#if defined(__CUDACC__)
#define RW_ENS_INLINE __forceinline__
#else
#define RW_ENS_INLINE inline __attribute__((always_inline))
#endif
static RW_ENS_INLINE RW_HD void rw_body_ens_item(const rw_body_ens *b, long e, const int kind,
                                                 const int mode)
{
  const int ode = kind == RW_ENS_VDP || kind == RW_ENS_LV, d = ode ? 2 : 1;
  const double *u = b->u ? b->u + d * e : NULL, *w = b->w ? b->w + d * e : NULL;
  double *o = b->out ? b->out + d * e : NULL;
  /* the SDE drift f = c u: c = -theta (ou) or mu (gbm) */
  const double c = kind == RW_ENS_OU ? -b->p[0] : b->p[0];
  switch (mode) {
  case RW_ENS_RHS:
    if (ode)
      rw_ens_ode_f(kind, b->p, u, o);
    else
      o[0] = c * u[0];
    break;
  case RW_ENS_VJPY:
    if (ode) {
      double J[4];
      rw_ens_ode_jac(kind, b->p, u, J);
      o[0] += J[0] * w[0] + J[2] * w[1];
      o[1] += J[1] * w[0] + J[3] * w[1];
    } else {
      o[0] += c * w[0];
    }
    break;
  case RW_ENS_VJPP:
    if (ode) {
      double D[8];
      const int np = rw_ens_nterms(kind);
      rw_ens_ode_dfdp(kind, u, D);
      for (int k = 0; k < np; k++)
        b->terms[k * b->n + e] = D[k] * w[0] + D[np + k] * w[1];
    } else { /* df/dp0 = -u (ou), u (gbm) */
      const double t = u[0] * w[0];
      b->terms[e] = kind == RW_ENS_OU ? -t : t;
    }
    break;
  case RW_ENS_JVP:
    if (ode) {
      double J[4], D[8];
      const int np = rw_ens_nterms(kind);
      rw_ens_ode_jac(kind, b->p, u, J);
      o[0] = J[0] * w[0] + J[1] * w[1];
      o[1] = J[2] * w[0] + J[3] * w[1];
      if (b->has_dp) {
        rw_ens_ode_dfdp(kind, u, D);
        for (int k = 0; k < np; k++) {
          o[0] += D[k] * b->dp[k];
          o[1] += D[np + k] * b->dp[k];
        }
      }
    } else {
      const double dc = b->has_dp ? (kind == RW_ENS_OU ? -b->dp[0] : b->dp[0]) : 0.0;
      o[0] = c * w[0] + dc * u[0];
    }
    break;
  case RW_ENS_MISFIT: {
    double s = 0.0;
    for (int i = 0; i < d; i++) {
      const double r = u[i] - b->target[i];
      s += r * r;
    }
    b->terms[e] = s;
    break;
  }
  case RW_ENS_TGRAD:
    for (int i = 0; i < d; i++)
      o[i] = b->a * (u[i] - b->target[i]);
    break;
  case RW_ENS_RGRAD:
    for (int i = 0; i < d; i++)
      o[i] += b->a * u[i];
    break;
  case RW_ENS_DIFF:
    o[0] = kind == RW_ENS_OU ? b->p[1] : b->p[1] * u[0];
    break;
  default: /* RW_ENS_DIFFVJP */
    if (kind == RW_ENS_GBM) {
      o[0] += b->p[1] * w[0];
      b->terms[e] = u[0] * w[0];
    } else {
      b->terms[e] = w[0];
    }
    break;
  }
}

static inline RW_HD void rw_body_ens_run(const rw_body_ens *b, long e)
{
  rw_body_ens_item(b, e, b->kind, b->mode);
}

/* --- Leapfrog stepper ---------------------------------------------------------------------------
 */

enum {
  RW_LF_UPDATE,  /* o = (2 u - v + incr(h^2 a), u), |u^{n+1}| into big */
  RW_LF_ADJ,     /* wc = (h^2 l_u, 0), l = (2 l_u + l_v, -l_u): the VJP then adds g to l */
  RW_LF_SWAP,    /* z = (y_v, y_u) */
  RW_LF_REVERSE, /* o = (y_v, (2 y_v - y_u) + incr(h^2 a)) */
  RW_LF_ROUND    /* entry i: o_i rounded to the fixed-point grid */
};

typedef struct {
  int mode;
  double h2, scale, inv; /* scale 0: plain leapfrog */
  const double *y, *a;
  double *o, *big, *l, *wc, *z;
} rw_body_lf;

/* The increment h^2 a of one node: as computed, or rounded to the fixed-point grid
 * (rw_leapfrog_incr). */
static inline RW_HD double rw_body_lf_incr(const rw_body_lf *p, double h2a)
{
  return p->scale > 0.0 ? nearbyint(h2a * p->scale) * p->inv : h2a;
}

/* Item = node i (entry i for RW_LF_ROUND), as the leapfrog's host loops compute it. */
static inline RW_HD void rw_body_lf_run(const rw_body_lf *p, long i)
{
  switch (p->mode) {
  case RW_LF_UPDATE: {
    const double u = p->y[2 * i], v = p->y[2 * i + 1];
    const double un = (2.0 * u - v) + rw_body_lf_incr(p, p->h2 * p->a[2 * i]);
    p->o[2 * i] = un;
    p->o[2 * i + 1] = u;
    if (p->big) p->big[i] = fabs(un);
    break;
  }
  case RW_LF_ADJ: {
    const double lu = p->l[2 * i], lv = p->l[2 * i + 1];
    p->wc[2 * i] = p->h2 * lu;
    p->wc[2 * i + 1] = 0.0;
    p->l[2 * i] = 2.0 * lu + lv;
    p->l[2 * i + 1] = -lu;
    break;
  }
  case RW_LF_SWAP:
    p->z[2 * i] = p->y[2 * i + 1];
    p->z[2 * i + 1] = p->y[2 * i];
    break;
  case RW_LF_REVERSE: {
    const double un = p->y[2 * i + 1], u1 = p->y[2 * i];
    p->o[2 * i] = un;
    p->o[2 * i + 1] = (2.0 * un - u1) + rw_body_lf_incr(p, p->h2 * p->a[2 * i]);
    break;
  }
  default:
    p->o[i] = nearbyint(p->o[i] * p->scale) * p->inv;
  }
}

/* --- Wave ---------------------------------------------------------------------------------------
 */

enum { RW_WAVE_SET, RW_WAVE_ADD, RW_WAVE_FIELD, RW_WAVE_FIRST, RW_WAVE_C2X };

typedef struct {
  rw_body_geom g;     /* the field grid's (1 component) */
  long lo[3], cnt[3]; /* the box of owned nodes (modes SET, ADD, FIELD) */
  double ax, ay;      /* 1/hx^2, 1/hy^2 */
  int mode;
  const double *gv;     /* ghosted scalar */
  const double *c, *wv; /* field, cotangent */
  const double *x;      /* a state (FIRST, C2X) */
  double *out;
} rw_body_wave;

/* Items: box nodes for SET, ADD and FIELD (wave_kernel's modes), all owned nodes for FIRST
 * (out_m = x_{2m}) and C2X (out_m = c_m^2 x_{2m}). */
static inline RW_HD void rw_body_wave_run(const rw_body_wave *p, long mm)
{
  if (p->mode == RW_WAVE_FIRST) {
    p->out[mm] = p->x[2 * mm];
    return;
  }
  if (p->mode == RW_WAVE_C2X) {
    p->out[mm] = (p->c[mm] * p->c[mm]) * p->x[2 * mm];
    return;
  }
  const long i = p->lo[0] + mm % p->cnt[0], j = p->lo[1] + mm / p->cnt[0];
  const size_t s = rw_body_gidx(&p->g, i, j, 0, 0), gx = (size_t)p->g.gn[0];
  const double *gv = p->gv;
  const double uc = gv[s];
  const double lap =
      ((gv[s - 1] - 2.0 * uc) + gv[s + 1]) * p->ax + ((gv[s - gx] - 2.0 * uc) + gv[s + gx]) * p->ay;
  const long m = j * p->g.cnt[0] + i;
  if (p->mode == RW_WAVE_SET) {
    p->out[2 * m] = (p->c[m] * p->c[m]) * lap;
    p->out[2 * m + 1] = 0.0;
  } else if (p->mode == RW_WAVE_ADD) {
    p->out[2 * m] += lap;
  } else {
    p->out[m] += 2.0 * p->c[m] * lap * p->wv[2 * m];
  }
}

/* --- Neural ODE (solvers/problems/rw_neuralode.c) ------------------------------------------ */

enum {
  RW_NODE_BIAS,     /* item (i, j) of n x m: z[i m + j] = x[j] (the bias row before a product) */
  RW_NODE_ACT,      /* item k: z[k] = act(z[k]) */
  RW_NODE_ACT_GRAD, /* item k: z[k] *= act'(z) from the activation x[k] = act(z) */
  RW_NODE_COLSUM,   /* item j < m: z[j] = sum_{i < n} x[i m + j], i ascending */
  RW_NODE_INPUT,    /* item (i, c) of n x (m + 1): z[i (m+1) + c] = c < m ? x[i m + c] : a */
  RW_NODE_AXPY,     /* item k: z[k] -= a x[k] (the damping) */
  RW_NODE_DIFF,     /* item k: z[k] = a (x[k] - y[k]) (the misfit and its gradient) */
  RW_NODE_WIDEN     /* item (i, c) of n x m2: z[i m2 + c] = c < m ? x[i m + c] : 0 */
};

typedef struct {
  int mode, act; /* act: rw_activation's code (0 identity, 1 tanh, 2 softplus, 3 relu) */
  long n;        /* rows */
  int m, m2;     /* widths */
  double a;
  const double *x, *y;
  double *z;
} rw_body_node;

/* One item of a neural-ODE element step; the activations and their derivatives are the CPU
 * loops' formulas (tanh on fused multiply-adds, as the CPU's AVX2 and AVX-512 paths). */
static inline RW_HD void rw_body_node_run(const rw_body_node *p, long k)
{
  switch (p->mode) {
  case RW_NODE_BIAS:
    p->z[k] = p->x[k % p->m];
    break;
  case RW_NODE_ACT: {
    const double v = p->z[k];
    if (p->act == 1)
      p->z[k] = rw_dk_tanh(v, 1);
    else if (p->act == 3)
      p->z[k] = v > 0.0 ? v : 0.0;
    else if (p->act == 2)
      p->z[k] = (v > 0.0 ? v : 0.0) + log1p(exp(-fabs(v)));
    break;
  }
  case RW_NODE_ACT_GRAD: {
    const double x = p->x[k];
    if (p->act == 1)
      p->z[k] *= 1.0 - x * x;
    else if (p->act == 3)
      p->z[k] = x > 0.0 ? p->z[k] : 0.0;
    else if (p->act == 2)
      p->z[k] *= -expm1(-x);
    break;
  }
  case RW_NODE_COLSUM: {
    double s = 0.0;
    for (long i = 0; i < p->n; i++)
      s += p->x[i * p->m + k];
    p->z[k] = s;
    break;
  }
  case RW_NODE_INPUT: {
    const long i = k / (p->m + 1), c = k % (p->m + 1);
    p->z[k] = c < p->m ? p->x[i * p->m + c] : p->a;
    break;
  }
  case RW_NODE_AXPY:
    p->z[k] -= p->a * p->x[k];
    break;
  case RW_NODE_DIFF:
    p->z[k] = p->a * (p->x[k] - p->y[k]);
    break;
  default: { /* RW_NODE_WIDEN */
    const long i = k / p->m2, c = k % p->m2;
    p->z[k] = c < p->m ? p->x[i * p->m + c] : 0.0;
  }
  }
}

/* Runs item idx of body `id`. */
static inline RW_HD void rw_body_run(int id, const void *params, long idx)
{
  switch (id) {
  case RW_BODY_GRID_FILL:
    rw_body_grid_fill_run((const rw_body_grid_fill *)params, idx);
    break;
  case RW_BODY_GRID_BOX:
    rw_body_grid_box_run((const rw_body_grid_box *)params, idx);
    break;
  case RW_BODY_GS_RHS:
    rw_body_gs_rhs_run((const rw_body_gs *)params, idx);
    break;
  case RW_BODY_GS_VJP:
    rw_body_gs_vjp_run((const rw_body_gs *)params, idx);
    break;
  case RW_BODY_GS_U2:
    rw_body_gs_u2_run((const rw_body_gs_u2 *)params, idx);
    break;
  case RW_BODY_GRID_BC:
    rw_body_grid_bc_run((const rw_body_grid_bc *)params, idx);
    break;
  case RW_BODY_GRID_ADD:
    rw_body_grid_add_run((const rw_body_grid_add *)params, idx);
    break;
  case RW_BODY_HEAT_DIFFUSE:
    rw_body_heat_diffuse_run((const rw_body_heat *)params, idx);
    break;
  case RW_BODY_HEAT_KGRAD:
    rw_body_heat_kgrad_run((const rw_body_heat *)params, idx);
    break;
  case RW_BODY_HEAT_KGHOST:
    rw_body_heat_kghost_run((const rw_body_heat *)params, idx);
    break;
  case RW_BODY_HEAT_WS:
    rw_body_heat_ws_run((const rw_body_heat *)params, idx);
    break;
  case RW_BODY_BG:
    rw_body_bg_run((const rw_body_bg *)params, idx);
    break;
  case RW_BODY_BG_MISFIT:
    rw_body_bg_misfit_run((const rw_body_bg_misfit *)params, idx);
    break;
  case RW_BODY_LF:
    rw_body_lf_run((const rw_body_lf *)params, idx);
    break;
  case RW_BODY_WAVE:
    rw_body_wave_run((const rw_body_wave *)params, idx);
    break;
  case RW_BODY_NOISE:
    rw_body_noise_run((const rw_body_noise *)params, idx);
    break;
  case RW_BODY_GS_RHS_COMB:
    rw_body_gs_rhs_comb_run((const rw_body_gs_comb *)params, idx);
    break;
  case RW_BODY_HEAT_DIFFUSE_COMB:
    rw_body_heat_diffuse_comb_run((const rw_body_heat_comb *)params, idx);
    break;
  case RW_BODY_GS_JVP:
    rw_body_gs_jvp_run((const rw_body_gs_jvp *)params, idx);
    break;
  case RW_BODY_NODE:
    rw_body_node_run((const rw_body_node *)params, idx);
    break;
  case RW_BODY_ENS:
    rw_body_ens_run((const rw_body_ens *)params, idx);
    break;
  default: /* unknown ids are refused by rw_device_run */
    break;
  }
}

/* The host loop's item runner for rw_device_run (the emulated device). */
static inline void rw_body_host(int id, const void *params, long idx)
{
  rw_body_run(id, params, idx);
}

#endif
