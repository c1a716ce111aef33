/* The leapfrog stepper and its discrete adjoint (formulas in rw_leapfrog.h).
 *
 * Discrete adjoints of the central-difference (leapfrog) scheme for the wave equation are
 * the classic construction behind full-waveform-inversion gradients (Tarantola, Geophysics
 * 49(8), 1984; Plessix, Geophys. J. Int. 167, 2006, Sec. 3): the adjoint recursion is the
 * same leapfrog run backward in time, driven by the residuals. Here it is derived as the
 * exact transpose of the step as coded, so it holds for any problem with this layout.
 *
 * Workspace: F (the acceleration), W (the recomputed y_{n+1}), Wc (the cotangent of f) and, on
 * a device, G (|u^{n+1}| per node for the exact variant's range check), allocated at creation.
 * The adjoint step adds the VJP to lambda itself (no vector of its own). */
#include "rewind/rw_leapfrog.h"

#include "../../core/rw_device_impl.h"
#include "../rw_dev_bodies.h"
#include "../rw_leapfrog_update.h"
#include "../rw_stepper_impl.h"
#include "rewind/rw_kernels.h"

#include <math.h>
#include <stdio.h>

typedef struct {
  N_Vector F, W, Wc, G;
  /* exact (fixed-point) variant: every u is a multiple of inv = 2^-s with |u| <= range, and
   * the increment h^2 a is rounded to that grid (scale = 2^s); scale = 0: plain leapfrog */
  double scale, inv, range;
  MPI_Comm comm;
  rw_device dev; /* the state's device (rw_device.h), NULL on the CPU: node loops as bodies */
} rw_leapfrog;

/* One of the leapfrog's node loops on the device (rw_dev_bodies.h), over n items. */
static int rw_leapfrog_dev(const rw_leapfrog *lf, rw_body_lf *b, long n)
{
  b->scale = lf->scale, b->inv = lf->inv;
  RW_CALL(rw_device_run(lf->dev, RW_BODY_LF, b, sizeof *b, n, rw_body_host));
  return 0;
}

static int rw_leapfrog_create(rw_problem prob, double range, rw_stepper *out);

static void rw_leapfrog_free(rw_stepper st)
{
  rw_leapfrog *lf = st->content;
  if (!lf) return;
  rw_vec_destroy(&lf->F);
  rw_vec_destroy(&lf->W);
  rw_vec_destroy(&lf->Wc);
  rw_vec_destroy(&lf->G);
  rw_free(&st->content);
}

/* The increment h^2 a of one node: as computed, or rounded to the fixed-point grid. */
static inline double rw_leapfrog_incr(const rw_leapfrog *lf, double h2a)
{
  return lf->scale > 0.0 ? nearbyint(h2a * lf->scale) * lf->inv : h2a;
}

/* The plain leapfrog's update of nn nodes (rw_leapfrog_update_run, a = F's first component),
 * built for three ISAs: rw_leapfrog_update's operations, so the same bits. */
RW_SIMD_CLONES static void rw_leapfrog_plain(const double *y, const double *restrict a, double *o,
                                             double h2, long nn)
{
  rw_leapfrog_update_run(y, a, 2, o, h2, nn, 0);
}

/* The plain inverse step's update (rw_leapfrog_update_run's rev, a = F's first component). */
RW_SIMD_CLONES static void rw_leapfrog_reverse_plain(const double *y, const double *restrict a,
                                                     double *o, double h2, long nn)
{
  rw_leapfrog_update_run(y, a, 2, o, h2, nn, 1);
}

/* The adjoint step's pass before its VJP (rw_leapfrog_adjoint_step), built for three ISAs. */
RW_SIMD_CLONES static void rw_leapfrog_adj_pre(double *restrict l, double *restrict wc, double h2,
                                               long nn)
{
  for (long i = 0; i < nn; i++) {
    const double lu = l[2 * i], lv = l[2 * i + 1];
    wc[2 * i] = h2 * lu;
    wc[2 * i + 1] = 0.0;
    l[2 * i] = 2.0 * lu + lv;
    l[2 * i + 1] = -lu;
  }
}

/* y_out = (2 u - v + h^2 a, u) with a = F's first component. y_out may alias y_in: each node's
 * pair is read before it is written. This is the single code path of forward steps and
 * adjoint recomputation (bitwise deterministic). *bigp: the largest |u^{n+1}| here (on a
 * device only when the exact variant checks its range). */
static int rw_leapfrog_update(const rw_leapfrog *lf, double h, N_Vector y_in, N_Vector F,
                              N_Vector y_out, double *bigp)
{
  const double *y = rw_vec_data(y_in), *a = rw_vec_data(F);
  double *o = rw_vec_data(y_out), h2 = h * h, big = 0.0;
  sunindextype nn = rw_vec_local_length(y_in) / 2;
  if (lf->dev) { /* |u^{n+1}| per node into G's first half when the range is checked */
    double *bg = lf->scale > 0.0 ? rw_vec_data(lf->G) : NULL;
    rw_body_lf b = {RW_LF_UPDATE, h2, 0.0, 0.0, y, a, o, bg, NULL, NULL, NULL};
    RW_CALL(rw_leapfrog_dev(lf, &b, (long)nn));
    if (bg) RW_CALL(rw_device_reduce(lf->dev, RW_DK_MAXABS, bg, NULL, (long)nn, &big));
    *bigp = big;
    return 0;
  }
  if (lf->scale > 0.0) /* the exact variant: the increment rounded, the range watched */
    for (sunindextype i = 0; i < nn; i++) {
      double u = y[2 * i], v = y[2 * i + 1];
      double un = (2.0 * u - v) + rw_leapfrog_incr(lf, h2 * a[2 * i]);
      o[2 * i] = un;
      o[2 * i + 1] = u;
      big = fmax(big, fabs(un));
    }
  else /* the plain one: nothing else a node (a call to fmax per node was 11 % of rewind-wave) */
    rw_leapfrog_plain(y, a, o, h2, (long)nn);
  *bigp = big;
  return 0;
}

/* Exact variant: every rank learns whether some |u| left the range (one reduction per step),
 * so all of them stop together with the same message. */
static int rw_leapfrog_check_range(const rw_leapfrog *lf, double big, double t)
{
  if (lf->scale <= 0.0) return 0;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_DOUBLE, MPI_MAX, lf->comm));
  RW_CHECK(big <= lf->range, RW_ERR_STEP,
           "exact (fixed-point) leapfrog: |u| reached %.6g at t = %g, beyond the range %.6g the "
           "fixed-point grid was sized for (its arithmetic would no longer be exact); raise "
           "leapfrog_exact_range",
           big, t, lf->range);
  return 0;
}

/* y_out = the step from y_in: the problem's one-sweep leapfrog_step for the plain variant on the
 * CPU where it has one, else its rhs into F and the update (check: the exact variant's range
 * check on the new state). */
static int rw_leapfrog_advance(rw_stepper st, rw_leapfrog *lf, double t, double h, N_Vector y_in,
                               N_Vector y_out, int check)
{
  int done = 0;
  if (lf->scale <= 0.0 && !lf->dev)
    RW_CALL(rw_problem_leapfrog_step(st->prob, t, h * h, 0, y_in, y_out, &done));
  if (done) return 0;
  RW_CALL(rw_problem_rhs(st->prob, t, y_in, lf->F));
  double big = 0.0;
  RW_CALL(rw_leapfrog_update(lf, h, y_in, lf->F, y_out, &big));
  if (check) RW_CALL(rw_leapfrog_check_range(lf, big, t + h));
  return 0;
}

static int rw_leapfrog_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                            N_Vector *stages, double *q)
{
  rw_leapfrog *lf = st->content;
  if (stages) rw_vec_copy(y_in, stages[0]);
  RW_CALL(rw_leapfrog_advance(st, lf, t, h, y_in, y_out, 1));
  if (q && rw_problem_has_running(st->prob)) {
    double r = 0.0;
    RW_CALL(rw_problem_running_local(st->prob, t + h, y_out, &r));
    *q += h * r;
  }
  return 0;
}

static int rw_leapfrog_adjoint_step(rw_stepper st, double t, double h, N_Vector y_n,
                                    N_Vector *stages, N_Vector lambda, double *pbar)
{
  rw_leapfrog *lf = st->content;
  if (stages) y_n = stages[0];
  /* The running cost of this step was evaluated on y_{n+1}: recompute it (same code as the
   * forward step) and add its gradient to the incoming adjoint. */
  if (rw_problem_has_running(st->prob)) {
    /* not checked: the forward step checked this state */
    RW_CALL(rw_leapfrog_advance(st, lf, t, h, y_n, lf->W, 0));
    RW_CALL(rw_problem_running_grad(st->prob, t + h, lf->W, h, lambda, pbar));
  }
  /* One pass forms the cotangent wc = (h^2 lu, 0) and overwrites lambda with its own part of
   * dJ/dy_n, (2 lu + lv, -lu); the VJP then adds g to lambda itself. A VJP that adds g_u in
   * one addition (rw_wave's) gives the bits of (2 lu + lv) + g_u, up to the sign of a zero
   * sum. The VJP into a zeroed G, then a pass adding G, cost a clear and two more passes
   * over the state each step (`rewind-wave -nx 801 -ny 801`: 5.7 % in the clear alone). */
  double *l = rw_vec_data(lambda), *wc = rw_vec_data(lf->Wc), h2 = h * h;
  sunindextype nn = rw_vec_local_length(lambda) / 2;
  if (lf->dev) {
    rw_body_lf b = {RW_LF_ADJ, h2, 0.0, 0.0, NULL, NULL, NULL, NULL, l, wc, NULL};
    RW_CALL(rw_leapfrog_dev(lf, &b, (long)nn));
  } else {
    rw_leapfrog_adj_pre(l, wc, h2, (long)nn);
  }
  RW_CALL(rw_problem_vjp(st->prob, t, y_n, lf->Wc, lambda, pbar));
  return 0;
}

/* The inverse step: from y_{n+1} = (u^{n+1}, u^n),
 *   u^{n-1} = (2 u^n - u^{n+1}) + h^2 a(t, (u^n, .)),   y_n = (u^n, u^{n-1}),
 * with the acceleration evaluated on a state whose first component is u^n (the second is
 * filled with u^{n+1} and must not matter: see rw_leapfrog.h). Same association as the
 * forward update, so the rebuilt u^{n-1} differs from the true one only by the rounding of
 * these two operations. */
static int rw_leapfrog_reverse(rw_stepper st, double t, double h, N_Vector y_next, N_Vector y_prev)
{
  rw_leapfrog *lf = st->content;
  const double *y = rw_vec_data(y_next);
  double *z = rw_vec_data(lf->W), h2 = h * h;
  sunindextype nn = rw_vec_local_length(y_next) / 2;
  int done = 0; /* the plain variant on the CPU: the problem's one sweep where it has one */
  if (lf->scale <= 0.0 && !lf->dev)
    RW_CALL(rw_problem_leapfrog_step(st->prob, t, h2, 1, y_next, y_prev, &done));
  if (done) return 0;
  if (lf->dev) {
    rw_body_lf b = {RW_LF_SWAP, h2, 0.0, 0.0, y, NULL, NULL, NULL, NULL, NULL, z};
    RW_CALL(rw_leapfrog_dev(lf, &b, (long)nn));
    RW_CALL(rw_problem_rhs(st->prob, t, lf->W, lf->F));
    b.mode = RW_LF_REVERSE, b.a = rw_vec_data(lf->F), b.o = rw_vec_data(y_prev);
    RW_CALL(rw_leapfrog_dev(lf, &b, (long)nn));
    return 0;
  }
  for (sunindextype i = 0; i < nn; i++) {
    z[2 * i] = y[2 * i + 1];
    z[2 * i + 1] = y[2 * i];
  }
  RW_CALL(rw_problem_rhs(st->prob, t, lf->W, lf->F));
  const double *a = rw_vec_data(lf->F);
  double *o = rw_vec_data(y_prev);
  if (lf->scale <= 0.0) { /* plain: the shared loop (rw_leapfrog_update_run), vectorised */
    rw_leapfrog_reverse_plain(y, a, o, h2, (long)nn);
    return 0;
  }
  for (sunindextype i = 0; i < nn; i++) {
    double un = y[2 * i + 1], u1 = y[2 * i];
    o[2 * i] = un;
    o[2 * i + 1] = (2.0 * un - u1) + rw_leapfrog_incr(lf, h2 * a[2 * i]);
  }
  return 0;
}

int rw_stepper_create_leapfrog(rw_problem prob, rw_stepper *out)
{
  RW_CALL(rw_leapfrog_create(prob, 0.0, out));
  return 0;
}

int rw_stepper_create_leapfrog_exact(rw_problem prob, double range, rw_stepper *out)
{
  RW_CHECK(isfinite(range) && range > 0.0, RW_ERR_ARG,
           "exact leapfrog: the range of |u| must be a finite number > 0 (got %g)", range);
  RW_CALL(rw_leapfrog_create(prob, range, out));
  return 0;
}

double rw_leapfrog_exact_resolution(rw_stepper st)
{
  const rw_leapfrog *lf = st->content;
  return lf && lf->scale > 0.0 ? lf->inv : 0.0;
}

void rw_leapfrog_exact_round(rw_stepper st, N_Vector y)
{
  const rw_leapfrog *lf = st->content;
  if (!lf || lf->scale <= 0.0) return;
  double *d = rw_vec_data(y);
  if (lf->dev) {
    rw_body_lf b = {RW_LF_ROUND, 0.0, 0.0, 0.0, NULL, NULL, d, NULL, NULL, NULL, NULL};
    if (rw_leapfrog_dev(lf, &b, (long)rw_vec_local_length(y)) != 0) /* a lost device */
      fprintf(stderr, "leapfrog: rounding on the device failed: %s\n", rw_error_message());
    return;
  }
  for (sunindextype i = 0; i < rw_vec_local_length(y); i++)
    d[i] = nearbyint(d[i] * lf->scale) * lf->inv;
}

static int rw_leapfrog_create(rw_problem prob, double range, rw_stepper *out)
{
  int ierr = 0;
  rw_stepper st = NULL;
  N_Vector tmpl = NULL;
  RW_CHECK(prob && out, RW_ERR_ARG, "rw_stepper_create_leapfrog: NULL argument");
  *out = NULL;
  RW_CHECK(rw_problem_local_length(prob) % 2 == 0, RW_ERR_ARG,
           "leapfrog stepper: problem '%s' has %ld local state entries; the state must hold two "
           "interleaved components per node (u^n, u^{n-1})",
           rw_problem_name(prob), (long)rw_problem_local_length(prob));
  RW_CALL(rw_calloc(1, sizeof *st, "stepper", &st));
  snprintf(st->name, sizeof st->name, "leapfrog");
  st->prob = prob;
  st->ops.step = rw_leapfrog_step;
  st->ops.adjoint_step = rw_leapfrog_adjoint_step;
  st->ops.destroy = rw_leapfrog_free;
  st->ops.reverse = rw_leapfrog_reverse;
  st->ops.reverse_kind = RW_REVERSE_INVERSE;
  st->nstage_vectors = 1;
  rw_leapfrog *lf = NULL;
  RW_TRY(rw_calloc(1, sizeof *lf, "leapfrog workspace", &lf));
  st->content = lf;
  RW_TRY(rw_problem_new_state(prob, &tmpl));
  RW_TRY(rw_vec_clone(tmpl, &lf->F));
  RW_TRY(rw_vec_clone(tmpl, &lf->W));
  RW_TRY(rw_vec_clone(tmpl, &lf->Wc));
  lf->dev = rw_vec_device(lf->F);
  if (lf->dev) RW_TRY(rw_vec_clone(tmpl, &lf->G));
  rw_vec_destroy(&tmpl);
  lf->comm = rw_context_comm(rw_problem_context(prob));
  if (range > 0.0) {
    /* s fraction bits with 2^(53 - s) >= 16 range: 2u - v (|.| <= 3 range) and the sum with an
     * increment of at most range stay below 2^53 grid units, so they are exact. */
    int e = 0;
    (void)frexp(range, &e); /* range < 2^e */
    int bits = 53 - 4 - e;
    RW_CHECK_GOTO(bits >= 8, RW_ERR_ARG,
                  "exact leapfrog: range %g leaves %d fraction bits; at most about 2^41 is usable",
                  range, bits);
    lf->scale = ldexp(1.0, bits);
    lf->inv = ldexp(1.0, -bits);
    lf->range = range;
    snprintf(st->name, sizeof st->name, "leapfrog_exact");
  }
  *out = st;
  return 0;
cleanup:
  rw_vec_destroy(&tmpl);
  rw_stepper_destroy(&st);
  return ierr;
}
