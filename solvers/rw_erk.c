/* Explicit Runge-Kutta stepper from a Butcher tableau, with its discrete adjoint.
 * The formulas are in rw_stepper.h. Workspace: stage inputs Y[s], stage slopes K[s], stage
 * adjoints Ybar[s] and one Kbar, each set allocated the first time a path needs it
 * (rw_erk_need): a problem that takes whole steps as one sweep (rw_problem_step_wave and its
 * adjoint waves) keeps its stages in the sweep's own buffers and never needs them. Allocated at
 * creation, those 3 s + 1 state vectors (13 for RK4) were mostly never written, so mostly not
 * resident, but they were address space the node had to grant, and they hid from the solve's
 * allocator window (peak_alloc_bytes) the four a recomputing problem does use. */
#include "rewind/rw_grid.h"
#include "rw_stepper_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RW_ERK_MAX_STAGES 16

typedef struct {
  int s; /* stages actually evaluated (trailing stages with b = 0 dropped) */
  double c[RW_ERK_MAX_STAGES], a[RW_ERK_MAX_STAGES * RW_ERK_MAX_STAGES], b[RW_ERK_MAX_STAGES];
  N_Vector *Y, *K, *Ybar, Kbar;
  /* Embedded pair (adaptive stepping): d_i = b_i - bhat_i over all `full` stages; the
   * stages past s (FSAL) are evaluated only for the error estimate. */
  int full, embedded_order, order;
  double cfull[RW_ERK_MAX_STAGES], afull[RW_ERK_MAX_STAGES * RW_ERK_MAX_STAGES],
      d[RW_ERK_MAX_STAGES];
  N_Vector *Kx, err, w, tmp;
  /* scratch for linear combinations */
  double coef[RW_ERK_MAX_STAGES + 1];
  N_Vector vecs[RW_ERK_MAX_STAGES + 1];
  int need_k; /* the caller reads the slopes K after the step (no wave) */
} rw_erk;

/* The workspace sets, allocated on first use (rw_erk_need). */
enum { RW_ERK_Y = 1, RW_ERK_K = 2, RW_ERK_BAR = 4 };

/* Allocates the sets in `what` that are not there yet (Y: the stage inputs, K: the slopes,
 * BAR: the stage adjoints and Kbar), as clones of tmpl (a state vector of the step at hand, so
 * no template of its own is allocated). Once allocated a set stays until the stepper is
 * destroyed, so a run's later steps allocate nothing. */
static int rw_erk_need(rw_erk *e, int what, N_Vector tmpl)
{
  if ((what & RW_ERK_Y) && !e->Y) RW_CALL(rw_vec_clone_array(tmpl, e->s, &e->Y));
  if ((what & RW_ERK_K) && !e->K) RW_CALL(rw_vec_clone_array(tmpl, e->s, &e->K));
  if ((what & RW_ERK_BAR) && !e->Ybar) RW_CALL(rw_vec_clone_array(tmpl, e->s, &e->Ybar));
  if ((what & RW_ERK_BAR) && !e->Kbar) RW_CALL(rw_vec_clone(tmpl, &e->Kbar));
  return 0;
}

static void rw_erk_free(rw_stepper st)
{
  rw_erk *e = st->content;
  if (!e) return;
  rw_vec_destroy_array(&e->Y, e->s);
  rw_vec_destroy_array(&e->K, e->s);
  rw_vec_destroy_array(&e->Ybar, e->s);
  rw_vec_destroy(&e->Kbar);
  rw_vec_destroy_array(&e->Kx, e->full - e->s);
  rw_vec_destroy(&e->err);
  rw_vec_destroy(&e->w);
  rw_vec_destroy(&e->tmp);
  rw_free(&st->content);
}

/* Stage slopes for the step from y over [t, t+h], and the stage inputs in keep[i] when keep is
 * not NULL; adds the local running-cost quadrature h sum b_i r(Y_i) to *q. Each stage input
 * Y_i = y + h sum_j a_ij K_j is formed by rw_problem_rhs_comb, which lets a grid problem form
 * it inside its halo copy (no vector of its own written and read back) and keeps a copy only
 * where one is wanted: the stored stages of a step, the adjoint's recomputation (e->Y), the
 * running cost. Y_0 is a bitwise copy of y. This is the single code path for forward steps and
 * adjoint recomputation. The adjoint needs the stage inputs only, so it asks for
 * `slopes_only_before_last` and the last slope K_s (which feeds y_{n+1} alone) is not
 * evaluated: one right-hand side fewer per reversed step. */
static int rw_erk_stages(rw_stepper st, double t, double h, N_Vector y, double *q,
                         int slopes_only_before_last, N_Vector *keep)
{
  rw_erk *e = st->content;
  int running = rw_problem_has_running(st->prob) && q;
  double dq = 0.0;
  RW_CALL(rw_erk_need(e, RW_ERK_Y | RW_ERK_K, y));
  if (running && !keep) keep = e->Y; /* the running cost reads the stage inputs */
  for (int i = 0; i < e->s; i++) {
    int n = 0;
    e->coef[n] = 1.0;
    e->vecs[n++] = y;
    for (int j = 0; j < i; j++) {
      double aij = e->a[i * RW_ERK_MAX_STAGES + j];
      if (aij != 0.0) {
        e->coef[n] = h * aij;
        e->vecs[n++] = e->K[j];
      }
    }
    double ti = t + e->c[i] * h;
    if (slopes_only_before_last && i == e->s - 1) {
      if (n == 1)
        rw_vec_copy(y, keep[i]);
      else
        RW_CALL_SUNDIALS(N_VLinearCombination(n, e->coef, e->vecs, keep[i]));
      break;
    }
    RW_CALL(rw_problem_rhs_comb(st->prob, ti, n, e->coef, e->vecs, keep ? keep[i] : NULL, e->Y[i],
                                e->K[i]));
    if (running && e->b[i] != 0.0) {
      double r = 0.0;
      RW_CALL(rw_problem_running_local(st->prob, ti, keep[i], &r));
      dq += h * e->b[i] * r;
    }
  }
  /* The step's increment is added once, so a trial step (adaptive stepping) that accumulates
   * into a fresh 0 and is then added gives the same bits as a direct step. */
  if (running) *q += dq;
  return 0;
}

/* The step as one sweep of the problem's (rw_problem_step_wave): the plan holds exactly the
 * combinations rw_erk_stages and the update below form, the stage inputs written to keep[i]
 * when keep is not NULL (stored stages), and the problem adds the running cost's quadrature in
 * rw_erk_stages' order, so the bits are the same. y_out NULL (no_out in the plan): the stage
 * inputs alone (the adjoint's recomputation: rw_erk_stages with slopes_only_before_last).
 * *done = 0 when the problem does not take it. rw_erk_plan builds the plan, stage times in ts. */
static void rw_erk_plan(const rw_erk *e, double t, double h, N_Vector *keep, int no_out,
                        rw_stage_plan *P_, double *ts)
{
  rw_stage_plan P;
  memset(&P, 0, sizeof P);
  P.s = e->s;
  for (int i = 0; i < e->s; i++) {
    int n = 0;
    P.c[i][n] = 1.0, P.x[i][n++] = -1;
    for (int j = 0; j < i; j++) {
      double aij = e->a[i * RW_ERK_MAX_STAGES + j];
      if (aij != 0.0) P.c[i][n] = h * aij, P.x[i][n++] = j;
    }
    P.n[i] = n;
    ts[i] = t + e->c[i] * h;
  }
  int n = 0;
  P.cb[n] = 1.0, P.xb[n++] = -1;
  for (int i = 0; i < e->s; i++)
    if (e->b[i] != 0.0) P.cb[n] = h * e->b[i], P.xb[n++] = i;
  P.nb = n;
  P.ncap = 0, P.cap = NULL, P.capv = NULL;
  for (int i = 0; i < RW_WAVE_MAX_STAGES; i++)
    P.keep[i] = keep && i < e->s ? keep[i] : NULL;
  P.no_out = no_out;
  *P_ = P;
}

static int rw_erk_wave(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                       N_Vector *keep, double *q, int *done)
{
  rw_erk *e = st->content;
  rw_stage_plan P;
  double ts[RW_WAVE_MAX_STAGES];
  *done = 0;
  if (e->s > RW_WAVE_MAX_STAGES || !rw_problem_has_step_wave(st->prob)) return 0;
  rw_erk_plan(e, t, h, keep, y_out == NULL, &P, ts);
  RW_CALL(rw_problem_step_wave(st->prob, ts, &P, y_in, y_out, q, done));
  return 0;
}

static int rw_erk_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                       N_Vector *stages, double *q)
{
  rw_erk *e = st->content;
  if (!e->need_k) {
    int done = 0;
    RW_CALL(rw_erk_wave(st, t, h, y_in, y_out, stages, rw_problem_has_running(st->prob) ? q : NULL,
                        &done));
    if (done) return 0;
  }
  RW_CALL(rw_erk_stages(st, t, h, y_in, q, 0, stages));
  int n = 0;
  e->coef[n] = 1.0;
  e->vecs[n++] = y_in;
  for (int i = 0; i < e->s; i++)
    if (e->b[i] != 0.0) {
      e->coef[n] = h * e->b[i];
      e->vecs[n++] = e->K[i];
    }
  /* SUNDIALS allows z == X[0] in N_VLinearCombination, so y_out may alias y_in. */
  RW_CALL_SUNDIALS(N_VLinearCombination(n, e->coef, e->vecs, y_out));
  return 0;
}

/* The adjoint step as one sweep of the problem's (rw_problem_adjoint_wave): the plan's stage
 * k is the method's stage i = s - 1 - k, with exactly the combination the loop below forms
 * (h b_i lambda, then h a_ji Ybar_j for j > i in order), the stored stage Y_i as its aux
 * vector (none when Y is NULL) and h b_i for the running cost's gradient; its update is the
 * loop's last combination (lambda, Ybar_0, ..., Ybar_{s-1}). rw_erk_adjoint_plan builds it and
 * returns 0 (no plan: the caller steps stage by stage) when a stage does not influence
 * y_{n+1} (its adjoint is then 0, not a VJP); *done = 0 when the problem does not take it. */
static int rw_erk_adjoint_plan(const rw_erk *e, double t, double h, N_Vector *Y, rw_stage_plan *P_,
                               double *ts, double *hb)
{
  const int s = e->s;
  rw_stage_plan P;
  memset(&P, 0, sizeof P);
  P.s = s;
  for (int k = 0; k < s; k++) {
    const int i = s - 1 - k;
    int n = 0;
    if (e->b[i] != 0.0) P.c[k][n] = h * e->b[i], P.x[k][n++] = -1;
    for (int j = i + 1; j < s; j++) {
      double aji = e->a[j * RW_ERK_MAX_STAGES + i];
      if (aji != 0.0) P.c[k][n] = h * aji, P.x[k][n++] = s - 1 - j;
    }
    if (n == 0) return 0;
    P.n[k] = n;
    P.aux[k] = Y ? Y[i] : NULL;
    ts[k] = t + e->c[i] * h;
    hb[k] = e->b[i] != 0.0 ? h * e->b[i] : 0.0;
  }
  P.cb[0] = 1.0, P.xb[0] = -1;
  for (int i = 0; i < s; i++)
    P.cb[i + 1] = 1.0, P.xb[i + 1] = s - 1 - i;
  P.nb = s + 1;
  *P_ = P;
  return 1;
}

static int rw_erk_adjoint_wave(rw_stepper st, double t, double h, N_Vector *Y, N_Vector lambda,
                               double *pbar, int *done)
{
  rw_erk *e = st->content;
  rw_stage_plan P;
  double ts[RW_WAVE_MAX_STAGES], hb[RW_WAVE_MAX_STAGES];
  *done = 0;
  if (e->s > RW_WAVE_MAX_STAGES || !rw_problem_has_adjoint_wave(st->prob)) return 0;
  if (!rw_erk_adjoint_plan(e, t, h, Y, &P, ts, hb)) return 0;
  RW_CALL(rw_problem_adjoint_wave(st->prob, ts, &P, hb, lambda, pbar, done));
  return 0;
}

/* The backward step of a checkpointed sweep (no stored stages) as one sweep of the problem's
 * (rw_problem_backward_wave): the recomputation's plan (rw_erk_wave's with y_out NULL, nothing
 * kept) and the adjoint's (rw_erk_adjoint_wave's without stored stages), so the same bits. */
static int rw_erk_backward_wave(rw_stepper st, double t, double h, N_Vector y_n, N_Vector lambda,
                                double *pbar, int *done)
{
  rw_erk *e = st->content;
  rw_stage_plan Pf, Pa;
  double tf[RW_WAVE_MAX_STAGES], ta[RW_WAVE_MAX_STAGES], hb[RW_WAVE_MAX_STAGES];
  *done = 0;
  if (e->s > RW_WAVE_MAX_STAGES || !rw_problem_has_backward_wave(st->prob)) return 0;
  if (!rw_erk_adjoint_plan(e, t, h, NULL, &Pa, ta, hb)) return 0;
  rw_erk_plan(e, t, h, NULL, 1, &Pf, tf);
  RW_CALL(rw_problem_backward_wave(st->prob, tf, ta, &Pf, y_n, &Pa, hb, lambda, pbar, done));
  return 0;
}

static int rw_erk_adjoint_step(rw_stepper st, double t, double h, N_Vector y_n, N_Vector *stages,
                               N_Vector lambda, double *pbar)
{
  rw_erk *e = st->content;
  N_Vector *Y = NULL;
  N_Vector Yw[RW_ERK_MAX_STAGES];
  if (stages) {
    Y = stages;
  } else {
    int done = 0; /* the recomputation and the adjoint in one sweep, where the problem can */
    RW_CALL(rw_erk_backward_wave(st, t, h, y_n, lambda, pbar, &done));
    if (done) return 0;
    /* The stage inputs alone, in one sweep where the problem can. The first is 1 y_n (exact)
     * in an explicit method: the sweep reads y_n where it lies instead of a copy written to
     * memory and read back (a state vector less of traffic per step). */
    N_Vector *into = st->lent; /* the caller's stage vectors where lent, else our own */
    if (!into) {
      RW_CALL(rw_erk_need(e, RW_ERK_Y, y_n));
      into = e->Y;
    }
    for (int i = 0; i < e->s; i++)
      Yw[i] = i == 0 ? NULL : into[i];
    RW_CALL(rw_erk_wave(st, t, h, y_n, NULL, Yw, NULL, &done));
    if (done)
      Yw[0] = y_n, Y = Yw;
    else { /* stage by stage: into our own Y, which rw_erk_stages' work needs anyway */
      RW_CALL(rw_erk_need(e, RW_ERK_Y, y_n));
      RW_CALL(rw_erk_stages(st, t, h, y_n, NULL, 1, e->Y));
      Y = e->Y;
    }
  }
  {
    int done = 0;
    RW_CALL(rw_erk_adjoint_wave(st, t, h, Y, lambda, pbar, &done));
    if (done) return 0;
  }
  RW_CALL(rw_erk_need(e, RW_ERK_BAR, lambda));
  for (int i = e->s - 1; i >= 0; i--) {
    int n = 0;
    if (e->b[i] != 0.0) {
      e->coef[n] = h * e->b[i];
      e->vecs[n++] = lambda;
    }
    for (int j = i + 1; j < e->s; j++) {
      double aji = e->a[j * RW_ERK_MAX_STAGES + i];
      if (aji != 0.0) {
        e->coef[n] = h * aji;
        e->vecs[n++] = e->Ybar[j];
      }
    }
    if (n == 0) { /* this stage does not influence y_{n+1} */
      N_VConst(0.0, e->Ybar[i]);
      continue;
    }
    double ti = t + e->c[i] * h;
    /* Ybar_i = f_y(Y_i)^T Kbar_i, Kbar_i = the combination above, formed by the problem */
    RW_CALL(
        rw_problem_vjp_comb(st->prob, ti, Y[i], n, e->coef, e->vecs, e->Kbar, e->Ybar[i], pbar));
    if (e->b[i] != 0.0)
      RW_CALL(rw_problem_running_grad(st->prob, ti, Y[i], h * e->b[i], e->Ybar[i], pbar));
  }
  int n = 0;
  e->coef[n] = 1.0;
  e->vecs[n++] = lambda;
  for (int i = 0; i < e->s; i++) {
    e->coef[n] = 1.0;
    e->vecs[n++] = e->Ybar[i];
  }
  RW_CALL_SUNDIALS(N_VLinearCombination(n, e->coef, e->vecs, lambda));
  return 0;
}

/* Backward reconstruction: the same method over [t + h, t] (step size -h), through the code of
 * a forward step. */
static int rw_erk_reverse(rw_stepper st, double t, double h, N_Vector y_next, N_Vector y_prev)
{
  RW_CALL(rw_erk_step(st, t + h, -h, y_next, y_prev, NULL, NULL));
  return 0;
}

int rw_stepper_create_erk(rw_problem prob, const rw_tableau *tab, rw_stepper *out)
{
  int ierr = 0;
  rw_stepper st = NULL;
  N_Vector tmpl = NULL;
  RW_CHECK(prob && tab && out, RW_ERR_ARG, "rw_stepper_create_erk: NULL argument");
  *out = NULL;
  /* A user's own tableau may leave fields out: a missing name gets one, a missing array or
   * an embedded pair without its order is refused (instead of read through NULL, or the pair
   * silently ignored). */
  const char *name = tab->name ? tab->name : "custom";
  RW_CHECK(tab->stages >= 1 && tab->stages <= RW_ERK_MAX_STAGES, RW_ERR_ARG,
           "tableau '%s': %d stages; between 1 and %d are supported", name, tab->stages,
           RW_ERK_MAX_STAGES);
  RW_CHECK(tab->c && tab->a && tab->b, RW_ERR_ARG,
           "tableau '%s' has no %s: c[stages], a[stages * stages] and b[stages] are required", name,
           !tab->c   ? "c"
           : !tab->a ? "a"
                     : "b");
  RW_CHECK(!tab->bhat || tab->embedded_order >= 1, RW_ERR_ARG,
           "tableau '%s' has an embedded method (bhat) but embedded_order = %d; give the "
           "embedded method's order (>= 1), which sets the step-size controller's exponent",
           name, tab->embedded_order);
  for (int i = 0; i < tab->stages; i++)
    for (int j = i; j < tab->stages; j++)
      RW_CHECK(tab->a[i * tab->stages + j] == 0.0, RW_ERR_ARG,
               "tableau '%s' is not explicit: a[%d][%d] = %g", name, i, j,
               tab->a[i * tab->stages + j]);
  RW_CALL(rw_calloc(1, sizeof *st, "stepper", &st));
  snprintf(st->name, sizeof st->name, "%s", name);
  st->prob = prob;
  st->ops.step = rw_erk_step;
  st->ops.adjoint_step = rw_erk_adjoint_step;
  st->ops.destroy = rw_erk_free;
  st->ops.reverse = rw_erk_reverse;
  st->ops.reverse_kind = RW_REVERSE_BACKWARD;
  rw_erk *e = NULL;
  RW_TRY(rw_calloc(1, sizeof *e, "explicit RK workspace", &e));
  st->content = e;
  /* Trailing stages with b_i = 0 (Dormand-Prince's FSAL stage) only feed the error
   * estimate: a fixed-step method does not evaluate them. */
  int s = tab->stages;
  while (s > 1 && tab->b[s - 1] == 0.0)
    s--;
  e->s = s;
  for (int i = 0; i < s; i++) {
    e->c[i] = tab->c[i];
    e->b[i] = tab->b[i];
    for (int j = 0; j < s; j++)
      e->a[i * RW_ERK_MAX_STAGES + j] = tab->a[i * tab->stages + j];
  }
  st->nstage_vectors = s;
  e->order = tab->order;
  e->full = tab->stages;
  if (tab->bhat) {
    e->embedded_order = tab->embedded_order;
    for (int i = 0; i < tab->stages; i++) {
      e->cfull[i] = tab->c[i];
      e->d[i] = tab->b[i] - tab->bhat[i];
      for (int j = 0; j < tab->stages; j++)
        e->afull[i * RW_ERK_MAX_STAGES + j] = tab->a[i * tab->stages + j];
    }
  }
  if (tab->bhat) { /* an adaptive run's error estimate reads the slopes at every step */
    RW_TRY(rw_problem_new_state(prob, &tmpl));
    RW_TRY(rw_vec_clone_array(tmpl, e->full - e->s, &e->Kx));
    RW_TRY(rw_vec_clone(tmpl, &e->err));
    RW_TRY(rw_vec_clone(tmpl, &e->w));
    RW_TRY(rw_vec_clone(tmpl, &e->tmp));
    RW_TRY(rw_erk_need(e, RW_ERK_Y | RW_ERK_K | RW_ERK_BAR, tmpl));
    rw_vec_destroy(&tmpl);
  }
  *out = st;
  return 0;
cleanup:
  rw_vec_destroy(&tmpl);
  rw_stepper_destroy(&st);
  return ierr;
}

int rw_stepper_destroy(rw_stepper *pst)
{
  if (!pst || !*pst) return 0;
  if ((*pst)->ops.destroy) (*pst)->ops.destroy(*pst);
  rw_free(pst);
  return 0;
}

const char *rw_stepper_name(rw_stepper st) { return st->name; }
int rw_stepper_num_stage_vectors(rw_stepper st) { return st->nstage_vectors; }

int rw_stepper_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                    N_Vector *stages, double *q)
{
  RW_CHECK(isfinite(h) && h > 0.0, RW_ERR_ARG, "stepper '%s': step size %g must be > 0", st->name,
           h);
  int ierr = st->ops.step(st, t, h, y_in, y_out, stages, q);
  st->indexed = 0; /* an index is good for one call */
  RW_CALL(ierr);
  return 0;
}

void rw_stepper_set_step_index(rw_stepper st, long n)
{
  st->step_index = n;
  st->indexed = n >= 0;
}

long rw_stepper_step_index(rw_stepper st) { return rw_stepper_current_index(st); }

int rw_stepper_adjoint_step(rw_stepper st, double t, double h, N_Vector y_n, N_Vector *stages,
                            N_Vector lambda, double *pbar)
{
  RW_CHECK(st->ops.adjoint_step, RW_ERR_NOT_IMPLEMENTED, "stepper '%s' has no adjoint step",
           st->name);
  int ierr = st->ops.adjoint_step(st, t, h, y_n, stages, lambda, pbar);
  st->indexed = 0;
  st->lent = NULL; /* a loan is good for one call */
  RW_CALL(ierr);
  return 0;
}

void rw_stepper_lend_stage_vectors(rw_stepper st, N_Vector *v) { st->lent = v; }

const char *rw_reverse_kind_name(rw_reverse_kind k)
{
  return k == RW_REVERSE_INVERSE ? "inverse" : k == RW_REVERSE_BACKWARD ? "backward" : "none";
}

rw_reverse_kind rw_stepper_reverse_kind(rw_stepper st)
{
  return st->ops.reverse ? st->ops.reverse_kind : RW_REVERSE_NONE;
}

int rw_stepper_reverse_step(rw_stepper st, double t, double h, N_Vector y_next, N_Vector y_prev)
{
  RW_CHECK(st->ops.reverse, RW_ERR_NOT_IMPLEMENTED,
           "stepper '%s' cannot rebuild a state from the next one (no inverse step and no "
           "backward step)",
           st->name);
  RW_CHECK(isfinite(h) && h > 0.0, RW_ERR_ARG, "stepper '%s': step size %g must be > 0", st->name,
           h);
  RW_CHECK(y_next != y_prev, RW_ERR_ARG, "rw_stepper_reverse_step: y_prev must differ from y_next");
  int ierr = st->ops.reverse(st, t, h, y_next, y_prev);
  st->indexed = 0;
  RW_CALL(ierr);
  return 0;
}

int rw_stepper_is_adaptive(rw_stepper st, int *order)
{
  /* Only the explicit RK stepper carries an embedded pair; other steppers' content is not an
   * rw_erk. */
  rw_erk *e = st->ops.step == rw_erk_step ? st->content : NULL;
  if (order) *order = e ? e->embedded_order : 0;
  return e && e->embedded_order > 0;
}

/* Trial step with error estimate. y_out is computed by exactly the code of a fixed step (so
 * replaying an accepted step size reproduces it bit for bit); the stages past s (the FSAL
 * stage of Dormand-Prince) are then evaluated from the stages already known, and
 *   err = h sum_i (b_i - bhat_i) K_i,
 *   errnorm = sqrt(mean_i (err_i / (atol + rtol max(|y_in,i|, |y_out,i|)))^2)
 * (Hairer, Norsett & Wanner I, Sec. II.4), all with vector operations. */
int rw_stepper_try_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                        N_Vector *stages, double *q, double rtol, double atol, double *errnorm)
{
  rw_erk *e = st->ops.step == rw_erk_step ? st->content : NULL;
  RW_CHECK(e && e->embedded_order > 0, RW_ERR_ARG,
           "stepper '%s' has no embedded error estimate; adaptive stepping needs one (dopri5)",
           st->name);
  RW_CHECK(y_in != y_out, RW_ERR_ARG, "rw_stepper_try_step: y_out must differ from y_in");
  e->need_k = 1; /* the error estimate below reads the slopes */
  int ierr = rw_stepper_step(st, t, h, y_in, y_out, stages, q);
  e->need_k = 0;
  RW_CALL(ierr);
  for (int i = e->s; i < e->full; i++) {
    int n = 0;
    e->coef[n] = 1.0;
    e->vecs[n++] = y_in;
    for (int j = 0; j < i; j++) {
      double aij = e->afull[i * RW_ERK_MAX_STAGES + j];
      if (aij != 0.0) {
        e->coef[n] = h * aij;
        e->vecs[n++] = j < e->s ? e->K[j] : e->Kx[j - e->s];
      }
    }
    RW_CALL_SUNDIALS(N_VLinearCombination(n, e->coef, e->vecs, e->tmp));
    RW_CALL(rw_problem_rhs(st->prob, t + e->cfull[i] * h, e->tmp, e->Kx[i - e->s]));
  }
  int n = 0;
  for (int i = 0; i < e->full; i++)
    if (e->d[i] != 0.0) {
      e->coef[n] = h * e->d[i];
      e->vecs[n++] = i < e->s ? e->K[i] : e->Kx[i - e->s];
    }
  RW_CALL_SUNDIALS(N_VLinearCombination(n, e->coef, e->vecs, e->err));
  /* w = 1 / (atol + rtol max(|y_in|, |y_out|)), max(a, b) = (a + b + |a - b|) / 2 */
  N_VAbs(y_in, e->w);
  N_VAbs(y_out, e->tmp);
  N_VLinearSum(1.0, e->w, -1.0, e->tmp, e->Kbar);
  N_VAbs(e->Kbar, e->Kbar);
  N_VLinearSum(0.5, e->w, 0.5, e->tmp, e->w);
  N_VLinearSum(1.0, e->w, 0.5, e->Kbar, e->w);
  N_VScale(rtol, e->w, e->w);
  N_VAddConst(e->w, atol, e->w);
  N_VInv(e->w, e->w);
  *errnorm = N_VWrmsNorm(e->err, e->w);
  return 0;
}
