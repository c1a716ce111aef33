/* The leapfrog stepper and its discrete adjoint (formulas in rw_leapfrog.h).
 *
 * Discrete adjoints of the central-difference (leapfrog) scheme for the wave equation are
 * the classic construction behind full-waveform-inversion gradients (Tarantola, Geophysics
 * 49(8), 1984; Plessix, Geophys. J. Int. 167, 2006, Sec. 3): the adjoint recursion is the
 * same leapfrog run backward in time, driven by the residuals. Here it is derived as the
 * exact transpose of the step as coded, so it holds for any problem with this layout.
 *
 * Workspace: F (the acceleration), W (the recomputed y_{n+1}), Wc (the cotangent of f) and G
 * (its state VJP), allocated at creation. */
#include "rewind/rw_leapfrog.h"

#include "../rw_stepper_impl.h"

#include <stdio.h>

typedef struct {
  N_Vector F, W, Wc, G;
} rw_leapfrog;

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

/* y_out = (2 u - v + h^2 a, u) with a = F's first component. y_out may alias y_in: each node's
 * pair is read before it is written. This is the single code path of forward steps and
 * adjoint recomputation (bitwise deterministic). */
static void rw_leapfrog_update(double h, N_Vector y_in, N_Vector F, N_Vector y_out)
{
  const double *y = rw_vec_data(y_in), *a = rw_vec_data(F);
  double *o = rw_vec_data(y_out), h2 = h * h;
  sunindextype nn = rw_vec_local_length(y_in) / 2;
  for (sunindextype i = 0; i < nn; i++) {
    double u = y[2 * i], v = y[2 * i + 1];
    o[2 * i] = (2.0 * u - v) + h2 * a[2 * i];
    o[2 * i + 1] = u;
  }
}

static int rw_leapfrog_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                            N_Vector *stages, double *q)
{
  rw_leapfrog *lf = st->content;
  if (stages) rw_vec_copy(y_in, stages[0]);
  RW_CALL(rw_problem_rhs(st->prob, t, y_in, lf->F));
  rw_leapfrog_update(h, y_in, lf->F, y_out);
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
    RW_CALL(rw_problem_rhs(st->prob, t, y_n, lf->F));
    rw_leapfrog_update(h, y_n, lf->F, lf->W);
    RW_CALL(rw_problem_running_grad(st->prob, t + h, lf->W, h, lambda, pbar));
  }
  double *l = rw_vec_data(lambda), *wc = rw_vec_data(lf->Wc), h2 = h * h;
  sunindextype nn = rw_vec_local_length(lambda) / 2;
  for (sunindextype i = 0; i < nn; i++) {
    wc[2 * i] = h2 * l[2 * i];
    wc[2 * i + 1] = 0.0;
  }
  N_VConst(0.0, lf->G);
  RW_CALL(rw_problem_vjp_y(st->prob, t, y_n, lf->Wc, lf->G));
  RW_CALL(rw_problem_vjp_p(st->prob, t, y_n, lf->Wc, pbar));
  const double *g = rw_vec_data(lf->G);
  for (sunindextype i = 0; i < nn; i++) {
    double lu = l[2 * i], lv = l[2 * i + 1];
    l[2 * i] = (2.0 * lu + lv) + g[2 * i];
    l[2 * i + 1] = -lu + g[2 * i + 1];
  }
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
  for (sunindextype i = 0; i < nn; i++) {
    z[2 * i] = y[2 * i + 1];
    z[2 * i + 1] = y[2 * i];
  }
  RW_CALL(rw_problem_rhs(st->prob, t, lf->W, lf->F));
  const double *a = rw_vec_data(lf->F);
  double *o = rw_vec_data(y_prev);
  for (sunindextype i = 0; i < nn; i++) {
    double un = y[2 * i + 1], u1 = y[2 * i];
    o[2 * i] = un;
    o[2 * i + 1] = (2.0 * un - u1) + h2 * a[2 * i];
  }
  return 0;
}

int rw_stepper_create_leapfrog(rw_problem prob, rw_stepper *out)
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
  RW_TRY(rw_vec_clone(tmpl, &lf->G));
  rw_vec_destroy(&tmpl);
  *out = st;
  return 0;
cleanup:
  rw_vec_destroy(&tmpl);
  rw_stepper_destroy(&st);
  return ierr;
}
