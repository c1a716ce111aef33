/* The 2-D acoustic wave problem (see rw_wave.h).
 *
 * Operators, with L the 5-point Laplacian (zero Dirichlet ghosts), u = y[2 m], m a node:
 *   f           = (c^2 L u + A s(t) delta_src, 0)
 *   (df/dy)^T w = (L (c^2 w_u), 0)               L is symmetric: a row's coefficients to its
 *                                                 neighbours are the same both ways and the
 *                                                 ghosts are zero
 *   (df/dA)^T w = sum_k s(t) w_u(x_k) / (hx hy)
 *   (df/dc)^T w = 2 c (L u) w_u                   (pointwise; the field is c itself)
 * Every operator is a gather stencil on a halo-exchanged scalar: each node's value comes from
 * the same arithmetic on the same numbers whatever the decomposition, so the state and field
 * gradients are bitwise independent of the rank count (only the global sums J and dJ/dA are
 * grouped by rank). The FWI gradient (Tarantola, Geophysics 49(8), 1984; Plessix, Geophys.
 * J. Int. 167, 2006) -- dJ/dc = sum_n h^2 2 c (L u^n) lambda_u^{n+1} -- falls out of these
 * operators and the leapfrog's discrete adjoint. */
#include "rewind/rw_wave.h"

#include "../../core/rw_device_impl.h"
#include "../rw_dev_bodies.h"
#include "../rw_leapfrog_update.h"
#include "rewind/rw_kernels.h"

#include <math.h>
#include <string.h>

static const double rw_wave_pi = 3.14159265358979323846;

typedef struct {
  rw_problem prob; /* back pointer: the field lives in the problem */
  rw_grid gs, gf;  /* state grid (2 components), field grid (1 component) */
  long start[3], count[3], gn[3];
  double hx, hy, ihx2, ihy2, lo[2];
  double freq;
  int nsrc, nrec;
  long *src_ij, *rec_ij;   /* global nodes, 2 per entry */
  long *src_loc, *rec_loc; /* local node index, -1 when not owned */
  double t0, dt;
  long nsteps;
  double *traces; /* [nrec][nsteps + 1] */
  N_Vector U;     /* scalar work field (on a device only) */
  double *gU;     /* its ghosted copy */
  double *arow;   /* a row of the acceleration (wave_leapfrog_step) */
  /* on a device (rw_device.h): gU is device memory, the loops device bodies
   * (rw_dev_bodies.h); sources and receivers are read and written an entry at a time */
  rw_device dev;
  int dev_err;
  size_t glen; /* gU's length */
} rw_wave;

typedef enum { WAVE_SET, WAVE_ADD, WAVE_FIELD, WAVE_LF } wave_mode;

typedef struct {
  const rw_wave *w;
  wave_mode mode;
  const double *c;  /* field (WAVE_SET, WAVE_FIELD, WAVE_LF) */
  const double *wv; /* cotangent (WAVE_FIELD); WAVE_LF: the state y_n */
  double h2, s;     /* WAVE_LF: the step's h^2 and the sources' value */
  int reverse;      /* WAVE_LF: the inverse step (u^n is y's second component) */
} wave_kctx;

/* A wave device body: over the box [lo, hi) for the Laplacian's modes, over every owned node
 * (lo = hi = NULL) for the component copies. */
static int wave_dev(const rw_wave *w, int mode, const double *gv, const double *c, const double *wv,
                    const double *x, double *out, const long lo[3], const long hi[3])
{
  rw_body_wave b;
  memset(&b, 0, sizeof b);
  long n = 1;
  for (int d = 0; d < 3; d++) {
    b.g.gn[d] = w->gn[d], b.g.cnt[d] = w->count[d];
    b.lo[d] = lo ? lo[d] : 0, b.cnt[d] = lo ? hi[d] - lo[d] : w->count[d];
    n *= b.cnt[d];
  }
  b.g.ghost = 1, b.g.dim = 2, b.g.ncomp = 1;
  b.ax = w->ihx2, b.ay = w->ihy2, b.mode = mode;
  b.gv = gv, b.c = c, b.wv = wv, b.x = x, b.out = out;
  RW_CALL(rw_device_run(w->dev, RW_BODY_WAVE, &b, sizeof b, n, rw_body_host));
  return 0;
}

/* The failure a device kernel callback recorded (and forgets it). */
static int wave_dev_error(rw_wave *w)
{
  int e = w->dev_err;
  w->dev_err = 0;
  return e;
}

/* o[k] += s for one entry k of a device or host array (a source's injection). */
static int wave_add_entry(const rw_wave *w, double *o, long k, double s)
{
  if (!w->dev) {
    o[k] += s;
    return 0;
  }
  double v = 0.0;
  RW_CALL(rw_device_copy(w->dev, &v, o + k, sizeof v, RW_COPY_D2H));
  v += s;
  RW_CALL(rw_device_copy(w->dev, o + k, &v, sizeof v, RW_COPY_H2D));
  return 0;
}

/* Entry k of a device or host array (a receiver's sample). */
static int wave_get_entry(const rw_wave *w, const double *u, long k, double *v)
{
  if (!w->dev) {
    *v = u[k];
    return 0;
  }
  RW_CALL(rw_device_copy(w->dev, v, u + k, sizeof *v, RW_COPY_D2H));
  return 0;
}

/* The rows of wave_kernel's modes: m nodes from ghosted index 0 of gv and owned node 0 of c,
 * wv and out (each mode a branch-free loop of its own, built for three ISAs so that the compiler
 * vectorises it; every node keeps the scalar form's operations in their order, so every width
 * gives the same bits). The kernel ran as one scalar loop that switched on its mode at every
 * node: 25 % of `rewind-wave -nx 801 -ny 801`'s time. */
#define WAVE_LAP(a, x, gx, ax, ay)                                                                 \
  ((((a)[(x)-1] - 2.0 * (a)[x]) + (a)[(x) + 1]) * (ax) +                                           \
   (((a)[(x) - (gx)] - 2.0 * (a)[x]) + (a)[(x) + (gx)]) * (ay))

RW_SIMD_CLONES static void wave_row_set(const double *restrict gv, const double *restrict c,
                                        double *restrict out, long m, ptrdiff_t gx, double ax,
                                        double ay)
{
  for (long i = 0; i < m; i++) {
    out[2 * i] = (c[i] * c[i]) * WAVE_LAP(gv, i, gx, ax, ay);
    out[2 * i + 1] = 0.0;
  }
}

RW_SIMD_CLONES static void wave_row_add(const double *restrict gv, double *restrict out, long m,
                                        ptrdiff_t gx, double ax, double ay)
{
  for (long i = 0; i < m; i++)
    out[2 * i] += WAVE_LAP(gv, i, gx, ax, ay);
}

RW_SIMD_CLONES static void wave_row_field(const double *restrict gv, const double *restrict c,
                                          const double *restrict wv, double *restrict out, long m,
                                          ptrdiff_t gx, double ax, double ay)
{
  for (long i = 0; i < m; i++)
    out[i] += 2.0 * c[i] * WAVE_LAP(gv, i, gx, ax, ay) * wv[2 * i];
}

/* The leapfrog step's rows (wave_leapfrog_step): the acceleration a = c^2 L into a row of its
 * own (wave_row_set's expression), then the stepper's own update (rw_leapfrog_update_run),
 * o = ((2 u - v) + h2 a, u), in place or not. */
RW_SIMD_CLONES static void wave_row_acc(const double *restrict gv, const double *restrict c,
                                        double *restrict a, long m, ptrdiff_t gx, double ax,
                                        double ay)
{
  for (long i = 0; i < m; i++)
    a[i] = (c[i] * c[i]) * WAVE_LAP(gv, i, gx, ax, ay);
}

RW_SIMD_CLONES static void wave_row_lf(const double *y, const double *restrict a, double *o,
                                       double h2, long m, int reverse)
{
  if (reverse)
    rw_leapfrog_update_run(y, a, 1, o, h2, m, 1);
  else
    rw_leapfrog_update_run(y, a, 1, o, h2, m, 0);
}

/* The 5-point Laplacian of the ghosted scalar gv at the nodes of [lo, hi), row by row
 * (wave_row_*):
 *  WAVE_SET:   out[2m] = c_m^2 L_m,  out[2m+1] = 0    (out: a state vector)
 *  WAVE_ADD:   out[2m] += L_m                          (out: a state vector)
 *  WAVE_FIELD: out[m] += 2 c_m L_m wv[2m]             (out: a field vector)
 *  WAVE_LF:    out = the leapfrog step of the state y_n = wv with a_m = c_m^2 L_m, plus the
 *              sources' value s at their nodes, in source order (wave_rhs's sums) */
static void wave_kernel(void *kc, rw_grid g, const double *gv, double *out, const long lo[3],
                        const long hi[3])
{
  (void)g;
  const wave_kctx *k = kc;
  const rw_wave *w = k->w;
  if (w->dev) {
    int mode = k->mode == WAVE_SET   ? RW_WAVE_SET
               : k->mode == WAVE_ADD ? RW_WAVE_ADD
                                     : RW_WAVE_FIELD;
    int e = wave_dev(w, mode, gv, k->c, k->wv, NULL, out, lo, hi);
    if (e && !w->dev_err) ((rw_wave *)w)->dev_err = e;
    return;
  }
  const ptrdiff_t gx = (ptrdiff_t)w->gn[0];
  const long nx = w->count[0], m = hi[0] - lo[0];
  const double ax = w->ihx2, ay = w->ihy2;
  for (long j = lo[1]; j < hi[1]; j++) {
    const size_t s = rw_grid_gidx(w->gn, 1, 2, lo[0], j, 0, 1, 0);
    const long o = j * nx + lo[0];
    switch (k->mode) {
    case WAVE_SET:
      wave_row_set(gv + s, k->c + o, out + 2 * o, m, gx, ax, ay);
      break;
    case WAVE_ADD:
      wave_row_add(gv + s, out + 2 * o, m, gx, ax, ay);
      break;
    case WAVE_FIELD:
      wave_row_field(gv + s, k->c + o, k->wv + 2 * o, out + o, m, gx, ax, ay);
      break;
    case WAVE_LF:
      wave_row_acc(gv + s, k->c + o, w->arow, m, gx, ax, ay);
      for (int q = 0; q < w->nsrc; q++)
        if (w->src_loc[q] >= o && w->src_loc[q] < o + m) w->arow[w->src_loc[q] - o] += k->s;
      wave_row_lf(k->wv + 2 * o, w->arow, out + 2 * o, k->h2, m, k->reverse);
      break;
    }
  }
}

/* The Laplacian's input written straight into the ghosted array's rows (rw_grid_apply_fill) on
 * the CPU: u = the first component of the interleaved state x, or c^2 times it (the state
 * VJP's). Extracting it into U first and copying U into the ghosted array made two passes of
 * their own (memmove 18 % of `rewind-wave -nx 801 -ny 801`). The same values, so the same bits
 * as through U. */
typedef struct {
  const double *x, *c; /* c NULL: u itself */
} wave_fill_ctx;

RW_SIMD_CLONES static void wave_fill_u(const double *restrict x, double *restrict row, long len)
{
  for (long m = 0; m < len; m++)
    row[m] = x[2 * m];
}

RW_SIMD_CLONES static void wave_fill_c2(const double *restrict x, const double *restrict c,
                                        double *restrict row, long len)
{
  for (long m = 0; m < len; m++)
    row[m] = (c[m] * c[m]) * x[2 * m];
}

static void wave_fill(void *fctx, size_t o, double *restrict row, size_t len)
{
  const wave_fill_ctx *f = fctx;
  if (f->c)
    wave_fill_c2(f->x + 2 * o, f->c + o, row, (long)len);
  else
    wave_fill_u(f->x + 2 * o, row, (long)len);
}

/* out = the wave kernel on u of the state v (c2: on c^2 u); on a device through U (u or
 * c^2 u formed there by the device bodies). */
static int wave_apply_u(rw_wave *w, N_Vector v, const double *c2, N_Vector out, wave_kctx *k)
{
  if (!w->dev) {
    wave_fill_ctx f = {rw_vec_data(v), c2};
    RW_CALL(rw_grid_apply_fill_fused(w->gf, wave_fill, &f, w->gU, out, wave_kernel, k));
    return 0;
  }
  RW_CALL(wave_dev(w, c2 ? RW_WAVE_C2X : RW_WAVE_FIRST, NULL, c2, NULL, rw_vec_data(v),
                   rw_vec_data(w->U), NULL, NULL));
  RW_CALL(rw_grid_apply(w->gf, w->U, w->gU, out, wave_kernel, k));
  RW_CALL(wave_dev_error(w));
  return 0;
}

double rw_wave_ricker(double f, double t)
{
  double a = rw_wave_pi * f * (t - 1.2 / f);
  a *= a;
  return (1.0 - 2.0 * a) * exp(-a);
}

static int wave_rhs(void *content, double t, N_Vector y, const double *p, N_Vector f)
{
  rw_wave *w = content;
  wave_kctx k = {w, WAVE_SET, rw_vec_data(rw_problem_field(w->prob)), NULL, 0.0, 0.0, 0};
  RW_CALL(wave_apply_u(w, y, NULL, f, &k));
  double *fo = rw_vec_data(f), s = p[0] * rw_wave_ricker(w->freq, t) / (w->hx * w->hy);
  for (int q = 0; q < w->nsrc; q++)
    if (w->src_loc[q] >= 0) RW_CALL(wave_add_entry(w, fo, 2 * w->src_loc[q], s));
  return 0;
}

/* The plain leapfrog's step in one sweep on the CPU (rw_problem_ops.leapfrog_step): u written
 * into the halo array (wave_fill), then per row the acceleration and the update (WAVE_LF), so
 * that the acceleration is never a state vector of its own (wave_rhs writes (a, 0) and the
 * stepper reads it back): the same values, so the same bits. The inverse step (reverse) reads
 * u^n from y's second component, as the stepper's swapped state hands it to wave_rhs. */
static int wave_leapfrog_step(void *content, double t, const double *p, double h2, int reverse,
                              N_Vector y, N_Vector y_out, int *done)
{
  rw_wave *w = content;
  *done = 0;
  if (w->dev) return 0;
  const double s = p[0] * rw_wave_ricker(w->freq, t) / (w->hx * w->hy);
  wave_kctx k = {w, WAVE_LF, rw_vec_data(rw_problem_field(w->prob)), rw_vec_data(y), h2,
                 s, reverse};
  wave_fill_ctx f = {rw_vec_data(y) + (reverse ? 1 : 0), NULL};
  RW_CALL(rw_grid_apply_fill_fused(w->gf, wave_fill, &f, w->gU, y_out, wave_kernel, &k));
  *done = 1;
  return 0;
}

static int wave_vjp_y(void *content, double t, N_Vector y, const double *p, N_Vector wv,
                      N_Vector out)
{
  (void)t, (void)y, (void)p;
  rw_wave *w = content;
  wave_kctx k = {w, WAVE_ADD, NULL, NULL, 0.0, 0.0, 0};
  RW_CALL(wave_apply_u(w, wv, rw_vec_data(rw_problem_field(w->prob)), out, &k));
  return 0;
}

static int wave_vjp_p(void *content, double t, N_Vector y, const double *p, N_Vector wv,
                      double *out)
{
  (void)y, (void)p;
  rw_wave *w = content;
  const double *x = rw_vec_data(wv);
  double s = rw_wave_ricker(w->freq, t) / (w->hx * w->hy);
  for (int q = 0; q < w->nsrc; q++)
    if (w->src_loc[q] >= 0) {
      double v = 0.0;
      RW_CALL(wave_get_entry(w, x, 2 * w->src_loc[q], &v));
      out[0] += s * v;
    }
  return 0;
}

static int wave_vjp_field(void *content, double t, N_Vector y, const double *p, N_Vector field,
                          N_Vector wv, N_Vector out)
{
  (void)t, (void)p;
  rw_wave *w = content;
  wave_kctx k = {w, WAVE_FIELD, rw_vec_data(field), rw_vec_data(wv), 0.0, 0.0, 0};
  RW_CALL(wave_apply_u(w, y, NULL, out, &k));
  return 0;
}

static int wave_jvp(void *content, double t, N_Vector y, const double *p, N_Vector v,
                    const double *dp, N_Vector out)
{
  (void)y, (void)p;
  rw_wave *w = content;
  wave_kctx k = {w, WAVE_SET, rw_vec_data(rw_problem_field(w->prob)), NULL, 0.0, 0.0, 0};
  RW_CALL(wave_apply_u(w, v, NULL, out, &k));
  if (dp) {
    double *o = rw_vec_data(out), s = dp[0] * rw_wave_ricker(w->freq, t) / (w->hx * w->hy);
    for (int q = 0; q < w->nsrc; q++)
      if (w->src_loc[q] >= 0) RW_CALL(wave_add_entry(w, o, 2 * w->src_loc[q], s));
  }
  return 0;
}

/* Sample index of time t on the traces' grid, or an error naming t. */
static int wave_sample(const rw_wave *w, double t, long *n)
{
  double r = (t - w->t0) / w->dt;
  long k = lround(r);
  RW_CHECK(k >= 0 && k <= w->nsteps && fabs(r - (double)k) <= 1e-6, RW_ERR_ARG,
           "wave misfit: no trace sample at t = %.17g (samples at t0 + n dt, t0 = %g, dt = %g, "
           "n = 0..%ld): the time step must equal the traces' dt and divide tf - t0",
           t, w->t0, w->dt, w->nsteps);
  *n = k;
  return 0;
}

static int wave_running(void *content, double t, N_Vector y, const double *p, double *r)
{
  (void)p;
  rw_wave *w = content;
  long n = 0;
  RW_CALL(wave_sample(w, t, &n));
  const double *u = rw_vec_data(y);
  double s = 0.0;
  for (int q = 0; q < w->nrec; q++)
    if (w->rec_loc[q] >= 0) {
      double v = 0.0;
      RW_CALL(wave_get_entry(w, u, 2 * w->rec_loc[q], &v));
      double e = v - w->traces[(size_t)q * (size_t)(w->nsteps + 1) + (size_t)n];
      s += 0.5 * e * e;
    }
  *r = s;
  return 0;
}

static int wave_running_grad(void *content, double t, N_Vector y, const double *p, double wt,
                             N_Vector ry, double *rp)
{
  (void)p, (void)rp;
  rw_wave *w = content;
  long n = 0;
  RW_CALL(wave_sample(w, t, &n));
  const double *u = rw_vec_data(y);
  double *g = rw_vec_data(ry);
  for (int q = 0; q < w->nrec; q++)
    if (w->rec_loc[q] >= 0) {
      double v = 0.0;
      RW_CALL(wave_get_entry(w, u, 2 * w->rec_loc[q], &v));
      double e = v - w->traces[(size_t)q * (size_t)(w->nsteps + 1) + (size_t)n];
      RW_CALL(wave_add_entry(w, g, 2 * w->rec_loc[q], wt * e));
    }
  return 0;
}

static void wave_destroy(void *content)
{
  rw_wave *w = content;
  if (!w) return;
  rw_grid_destroy(&w->gs);
  rw_grid_destroy(&w->gf);
  rw_free(&w->src_ij);
  rw_free(&w->rec_ij);
  rw_free(&w->src_loc);
  rw_free(&w->rec_loc);
  rw_free(&w->traces);
  rw_free(&w->arow);
  rw_vec_destroy(&w->U);
  if (w->dev) rw_device_free(w->dev, &w->gU, w->glen * sizeof(double));
  rw_grid_ghosted_free(&w->gU);
  rw_free(&w);
}

/* Nearest node of position xy, or RW_ERR_ARG naming the position when outside the domain. */
static int wave_node(const rw_wave_config *cfg, const rw_wave *w, const char *what, int k,
                     const double *xy, long ij[2], long *loc)
{
  double h[2] = {w->hx, w->hy};
  for (int d = 0; d < 2; d++) {
    RW_CHECK(isfinite(xy[d]) && xy[d] >= cfg->lo[d] && xy[d] <= cfg->hi[d], RW_ERR_ARG,
             "%s %d at (%g, %g) lies outside the domain [%g, %g] x [%g, %g]", what, k + 1, xy[0],
             xy[1], cfg->lo[0], cfg->hi[0], cfg->lo[1], cfg->hi[1]);
    ij[d] = lround((xy[d] - cfg->lo[d]) / h[d]);
    if (ij[d] < 0) ij[d] = 0;
    if (ij[d] > cfg->n[d] - 1) ij[d] = cfg->n[d] - 1;
  }
  long l = rw_grid_local_index(w->gf, ij[0], ij[1], 0);
  *loc = l;
  return 0;
}

int rw_wave_problem_create(rw_context ctx, const rw_wave_config *cfg, rw_problem *out)
{
  int ierr = 0;
  rw_wave *w = NULL;
  rw_problem prob = NULL;
  N_Vector c = NULL;
  RW_CHECK(cfg && out, RW_ERR_ARG, "rw_wave_problem_create: NULL argument");
  *out = NULL;
  RW_CHECK(cfg->n[0] >= 3 && cfg->n[1] >= 3, RW_ERR_ARG,
           "wave: grid %ld x %ld; at least 3 x 3 nodes are needed", cfg->n[0], cfg->n[1]);
  RW_CHECK(cfg->hi[0] > cfg->lo[0] && cfg->hi[1] > cfg->lo[1], RW_ERR_ARG,
           "wave: empty domain [%g, %g] x [%g, %g]", cfg->lo[0], cfg->hi[0], cfg->lo[1],
           cfg->hi[1]);
  RW_CHECK(cfg->velocity > 0.0 && cfg->freq > 0.0, RW_ERR_ARG,
           "wave: velocity (%g) and frequency (%g) must be > 0", cfg->velocity, cfg->freq);
  RW_CHECK(cfg->nsrc >= 1 && cfg->src && cfg->nrec >= 1 && cfg->rec, RW_ERR_ARG,
           "wave: at least one source and one receiver are needed (%d, %d given)", cfg->nsrc,
           cfg->nrec);
  RW_CHECK(cfg->nsteps >= 1 && cfg->dt > 0.0, RW_ERR_ARG,
           "wave: the traces need nsteps >= 1 (%ld) and dt > 0 (%g)", cfg->nsteps, cfg->dt);
  RW_CALL(rw_calloc(1, sizeof *w, "wave problem", &w));
  rw_grid_config gc;
  memset(&gc, 0, sizeof gc);
  gc.dim = 2;
  gc.n[0] = cfg->n[0], gc.n[1] = cfg->n[1], gc.n[2] = 1;
  gc.lo[0] = cfg->lo[0], gc.lo[1] = cfg->lo[1];
  gc.hi[0] = cfg->hi[0], gc.hi[1] = cfg->hi[1];
  gc.bc[0] = gc.bc[1] = gc.bc[2] = RW_BC_DIRICHLET;
  gc.ghost = 1;
  gc.ncomp = 2;
  for (int d = 0; d < 3; d++)
    gc.procs[d] = cfg->procs[d];
  RW_TRY(rw_grid_create(ctx, &gc, &w->gs));
  gc.ncomp = 1;
  int coords[3]; /* the field lies as the state: its split, not the field grid's own choice */
  rw_grid_topology(w->gs, gc.procs, coords);
  RW_TRY(rw_grid_create(ctx, &gc, &w->gf));
  long s2[3], c2[3];
  rw_grid_local_box(w->gf, w->start, w->count);
  rw_grid_local_box(w->gs, s2, c2);
  for (int d = 0; d < 3; d++)
    RW_CHECK_GOTO(s2[d] == w->start[d] && c2[d] == w->count[d], RW_ERR_INTERNAL,
                  "wave: state and field grids are decomposed differently");
  rw_grid_ghosted_dims(w->gf, w->gn);
  double h[3];
  rw_grid_spacing(w->gf, h);
  w->hx = h[0], w->hy = h[1];
  w->ihx2 = 1.0 / (h[0] * h[0]), w->ihy2 = 1.0 / (h[1] * h[1]);
  w->lo[0] = cfg->lo[0], w->lo[1] = cfg->lo[1];
  w->freq = cfg->freq;
  w->nsrc = cfg->nsrc, w->nrec = cfg->nrec;
  w->t0 = cfg->t0, w->dt = cfg->dt, w->nsteps = cfg->nsteps;
  RW_TRY(rw_calloc(2 * (size_t)w->nsrc, sizeof(long), "source nodes", &w->src_ij));
  RW_TRY(rw_calloc(2 * (size_t)w->nrec, sizeof(long), "receiver nodes", &w->rec_ij));
  RW_TRY(rw_calloc((size_t)w->nsrc, sizeof(long), "source nodes", &w->src_loc));
  RW_TRY(rw_calloc((size_t)w->nrec, sizeof(long), "receiver nodes", &w->rec_loc));
  for (int k = 0; k < w->nsrc; k++)
    RW_TRY(wave_node(cfg, w, "source", k, cfg->src + 2 * k, w->src_ij + 2 * k, &w->src_loc[k]));
  for (int k = 0; k < w->nrec; k++)
    RW_TRY(wave_node(cfg, w, "receiver", k, cfg->rec + 2 * k, w->rec_ij + 2 * k, &w->rec_loc[k]));
  RW_TRY(rw_calloc((size_t)w->nrec * (size_t)(w->nsteps + 1), sizeof(double), "receiver traces",
                   &w->traces));
  w->glen = rw_grid_ghosted_length(w->gf);
  w->dev = rw_context_device(ctx);
  if (w->dev) RW_TRY(rw_grid_new_field(w->gf, &w->U)); /* the CPU fills gU directly */
  if (w->dev)
    RW_TRY(rw_device_alloc(w->dev, w->glen * sizeof(double), &w->gU));
  else
    RW_TRY(rw_grid_ghosted_alloc(w->gf, w->glen, "wave halo work", &w->gU));
  if (!w->dev)
    RW_TRY(rw_calloc((size_t)w->count[0], sizeof(double), "wave acceleration row", &w->arow));
  int on_dev = w->dev != NULL;

  static const rw_problem_ops ops = {.rhs = wave_rhs,
                                     .vjp_y = wave_vjp_y,
                                     .vjp_p = wave_vjp_p,
                                     .jvp = wave_jvp,
                                     .running = wave_running,
                                     .running_grad = wave_running_grad,
                                     .vjp_field = wave_vjp_field,
                                     .leapfrog_step = wave_leapfrog_step,
                                     .destroy = wave_destroy};
  static const char *const names[] = {"amplitude"};
  RW_TRY(rw_problem_create(ctx, "wave", &ops, w, rw_grid_local_length(w->gs), 1, names, &prob));
  w->prob = prob;
  w = NULL; /* owned by the problem now */
  if (on_dev) rw_problem_set_device_ready(prob);
  rw_problem_params(prob)[0] = cfg->amplitude;
  RW_TRY(rw_grid_new_field(((rw_wave *)rw_problem_content(prob))->gf, &c));
  N_VConst(cfg->velocity, c);
  RW_TRY(rw_problem_set_field(prob, "velocity", c));
  c = NULL;
  *out = prob;
  return 0;
cleanup:
  rw_vec_destroy(&c);
  rw_problem_destroy(&prob);
  wave_destroy(w);
  return ierr;
}

static rw_wave *wave_of(rw_problem prob)
{
  return prob && strcmp(rw_problem_name(prob), "wave") == 0 ? rw_problem_content(prob) : NULL;
}

rw_grid rw_wave_state_grid(rw_problem prob)
{
  rw_wave *w = wave_of(prob);
  return w ? w->gs : NULL;
}

rw_grid rw_wave_field_grid(rw_problem prob)
{
  rw_wave *w = wave_of(prob);
  return w ? w->gf : NULL;
}

int rw_wave_velocity_model(rw_problem prob, double background, double anomaly,
                           const double center[2], double radius, N_Vector c)
{
  rw_wave *w = wave_of(prob);
  RW_CHECK(w && c && center, RW_ERR_ARG, "rw_wave_velocity_model: not a wave problem or NULL");
  RW_CHECK(radius > 0.0, RW_ERR_ARG, "wave: anomaly radius %g must be > 0", radius);
  double *cv = rw_vec_data(c), *host = NULL;
  if (rw_vec_device(c)) { /* computed on the host, then copied to the device */
    RW_CALL(rw_calloc((size_t)rw_vec_local_length(c) + 1, sizeof(double), "velocity", &host));
    cv = host;
  }
  for (long j = 0; j < w->count[1]; j++)
    for (long i = 0; i < w->count[0]; i++) {
      double x = w->lo[0] + (double)(w->start[0] + i) * w->hx - center[0];
      double y = w->lo[1] + (double)(w->start[1] + j) * w->hy - center[1];
      cv[j * w->count[0] + i] =
          background + anomaly * exp(-(x * x + y * y) / (2.0 * radius * radius));
    }
  if (host) {
    int ierr = rw_vec_from_host(c, host);
    rw_free(&host);
    RW_CALL(ierr);
  }
  return 0;
}

int rw_wave_check_cfl(rw_problem prob, N_Vector c, double dt, const char *what)
{
  rw_wave *w = wave_of(prob);
  RW_CHECK(w && c, RW_ERR_ARG, "rw_wave_check_cfl: not a wave problem or NULL field");
  const double *cv = NULL;
  double *tmp = NULL; /* a device field's host copy */
  RW_CALL(rw_vec_host_read(c, &cv, &tmp));
  double cmax = 0.0, cmin = INFINITY;
  for (sunindextype m = 0; m < rw_vec_local_length(c); m++) {
    cmax = fmax(cmax, cv[m]);
    cmin = fmin(cmin, cv[m]);
  }
  rw_free(&tmp);
  double mm[2] = {cmax, -cmin};
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_DOUBLE, MPI_MAX,
                            rw_context_comm(rw_problem_context(prob))));
  cmax = mm[0], cmin = -mm[1];
  RW_CHECK(cmin > 0.0 && isfinite(cmax), RW_ERR_ARG,
           "wave: the %s has velocities in [%g, %g]; every velocity must be finite and > 0",
           what ? what : "velocity model", cmin, cmax);
  double s = sqrt(w->ihx2 + w->ihy2), cfl = cmax * dt * s, dtmax = 1.0 / (cmax * s);
  RW_CHECK(cfl <= 1.0, RW_ERR_ARG,
           "CFL condition violated: dt = %g with c_max = %g (%s) and hx = %g, hy = %g gives "
           "c_max dt sqrt(1/hx^2 + 1/hy^2) = %.4g > 1 (for hx = hy: c_max dt / h <= 1/sqrt(2)); "
           "the leapfrog is unstable: use dt <= %.6g",
           dt, cmax, what ? what : "velocity model", w->hx, w->hy, cfl, dtmax);
  return 0;
}

int rw_wave_record_traces(rw_problem prob, long n, N_Vector y)
{
  rw_wave *w = wave_of(prob);
  RW_CHECK(w && y, RW_ERR_ARG, "rw_wave_record_traces: not a wave problem or NULL state");
  RW_CHECK(n >= 0 && n <= w->nsteps, RW_ERR_ARG, "wave traces: sample %ld outside 0..%ld", n,
           w->nsteps);
  const double *u = rw_vec_data(y);
  for (int q = 0; q < w->nrec; q++)
    if (w->rec_loc[q] >= 0)
      RW_CALL(wave_get_entry(w, u, 2 * w->rec_loc[q],
                             &w->traces[(size_t)q * (size_t)(w->nsteps + 1) + (size_t)n]));
  return 0;
}

int rw_wave_finish_traces(rw_problem prob)
{
  rw_wave *w = wave_of(prob);
  RW_CHECK(w, RW_ERR_ARG, "rw_wave_finish_traces: not a wave problem");
  /* Zero the samples of receivers owned elsewhere, then sum: one owner per receiver. */
  size_t ns = (size_t)(w->nsteps + 1);
  for (int q = 0; q < w->nrec; q++)
    if (w->rec_loc[q] < 0) memset(w->traces + (size_t)q * ns, 0, ns * sizeof(double));
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, w->traces, (int)((size_t)w->nrec * ns), MPI_DOUBLE,
                            MPI_SUM, rw_context_comm(rw_problem_context(prob))));
  return 0;
}

double *rw_wave_traces(rw_problem prob, int *nrec, long *nsamples)
{
  rw_wave *w = wave_of(prob);
  if (!w) return NULL;
  if (nrec) *nrec = w->nrec;
  if (nsamples) *nsamples = w->nsteps + 1;
  return w->traces;
}

void rw_wave_source_node(rw_problem prob, int k, long ij[2])
{
  rw_wave *w = wave_of(prob);
  ij[0] = w->src_ij[2 * k], ij[1] = w->src_ij[2 * k + 1];
}

void rw_wave_receiver_node(rw_problem prob, int k, long ij[2])
{
  rw_wave *w = wave_of(prob);
  ij[0] = w->rec_ij[2 * k], ij[1] = w->rec_ij[2 * k + 1];
}
