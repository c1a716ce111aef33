/* The reversible Heun stepper (formulas in rw_revheun.h). Every operation goes through the
 * inner problem on views of the partnered state's two halves, and through N_Vector
 * operations, so it runs on distributed states like the RK steppers. Forward steps and the
 * adjoint's recomputation share rw_revheun_advance (bitwise deterministic). */
#include "rewind/rw_revheun.h"

#include "../rw_stepper_impl.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  rw_problem inner;
  N_Vector y, yh, o, oh; /* views: input and output halves */
  N_Vector F0, F1, W, A, G;
  /* SDE form (the inner problem has noise): dW the step's increment, G0, G1 the diffusion
   * times dW at yhat_n and yhat+, T a temporary */
  int sde;
  N_Vector dW, G0, G1, T;
} rw_revheun;

static void rw_revheun_point(N_Vector v, N_Vector lo, N_Vector hi)
{
  double *x = rw_vec_data(v);
  rw_vec_view_point(lo, x);
  rw_vec_view_point(hi, x + rw_vec_local_length(v) / 2);
}

static void rw_revheun_free(rw_stepper st)
{
  rw_revheun *r = st->content;
  if (!r) return;
  rw_vec_view_destroy(&r->y);
  rw_vec_view_destroy(&r->yh);
  rw_vec_view_destroy(&r->o);
  rw_vec_view_destroy(&r->oh);
  rw_vec_destroy(&r->F0);
  rw_vec_destroy(&r->F1);
  rw_vec_destroy(&r->W);
  rw_vec_destroy(&r->A);
  rw_vec_destroy(&r->G);
  rw_vec_destroy(&r->dW);
  rw_vec_destroy(&r->G0);
  rw_vec_destroy(&r->G1);
  rw_vec_destroy(&r->T);
  rw_free(&st->content);
}

/* SDE form: dW = the increment of step n (the stepper's index) of the inner problem's noise. */
static int rw_revheun_noise(rw_stepper st, double h)
{
  rw_revheun *r = st->content;
  long n = rw_stepper_step_index(st);
  RW_CHECK(n >= 0, RW_ERR_ARG,
           "reversible Heun with noise: the step's index is not set; the driver must call "
           "rw_stepper_set_step_index(st, n) before every step, reverse step and adjoint step");
  RW_CALL(rw_problem_noise_increment(r->inner, n, h, r->dW, r->T));
  return 0;
}

/* out = g(t, x) * dW elementwise (the diffusion is diagonal). */
static int rw_revheun_gdw(rw_revheun *r, double t, N_Vector x, N_Vector out)
{
  RW_CALL(rw_problem_diffusion(r->inner, t, x, out));
  N_VProd(out, r->dW, out);
  return 0;
}

/* From (y, yh) (the views r->y, r->yh): F0 = f(t, yh), W = yhat+ = 2 y - yh + h F0 (+ G0 =
 * g(t, yh) dW with noise), and, when want_F1, F1 = f(t + h, W) (and G1 = g(t + h, W) dW). */
static int rw_revheun_advance(rw_revheun *r, double t, double h, int want_F1)
{
  RW_CALL(rw_problem_rhs(r->inner, t, r->yh, r->F0));
  if (r->sde) {
    RW_CALL(rw_revheun_gdw(r, t, r->yh, r->G0));
    double c[4] = {2.0, -1.0, h, 1.0};
    N_Vector v[4] = {r->y, r->yh, r->F0, r->G0};
    RW_CALL_SUNDIALS(N_VLinearCombination(4, c, v, r->W));
  } else {
    double c[3] = {2.0, -1.0, h};
    N_Vector v[3] = {r->y, r->yh, r->F0};
    RW_CALL_SUNDIALS(N_VLinearCombination(3, c, v, r->W));
  }
  if (want_F1) {
    RW_CALL(rw_problem_rhs(r->inner, t + h, r->W, r->F1));
    if (r->sde) RW_CALL(rw_revheun_gdw(r, t + h, r->W, r->G1));
  }
  return 0;
}

static int rw_revheun_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                           N_Vector *stages, double *q)
{
  rw_revheun *r = st->content;
  if (stages) rw_vec_copy(y_in, stages[0]);
  if (r->sde) RW_CALL(rw_revheun_noise(st, h));
  rw_revheun_point(y_in, r->y, r->yh);
  RW_CALL(rw_revheun_advance(r, t, h, 1));
  if (q && rw_problem_has_running(r->inner)) {
    double r0 = 0.0, r1 = 0.0;
    RW_CALL(rw_problem_running_local(r->inner, t, r->yh, &r0));
    RW_CALL(rw_problem_running_local(r->inner, t + h, r->W, &r1));
    *q += 0.5 * h * r0 + 0.5 * h * r1;
  }
  rw_revheun_point(y_out, r->o, r->oh);
  double c[5] = {1.0, 0.5 * h, 0.5 * h, 0.5, 0.5};
  N_Vector v[5] = {r->y, r->F0, r->F1, r->G0, r->G1};
  /* y+ may alias y_n (y_out == y_in): a linear combination may write its first input */
  RW_CALL_SUNDIALS(N_VLinearCombination(r->sde ? 5 : 3, c, v, r->o));
  rw_vec_copy(r->W, r->oh);
  return 0;
}

static int rw_revheun_reverse(rw_stepper st, double t, double h, N_Vector y_next, N_Vector y_prev)
{
  rw_revheun *r = st->content;
  if (r->sde) RW_CALL(rw_revheun_noise(st, h));
  rw_revheun_point(y_next, r->y, r->yh); /* (y+, yhat+) */
  rw_revheun_point(y_prev, r->o, r->oh);
  RW_CALL(rw_problem_rhs(r->inner, t + h, r->yh, r->F1));
  if (r->sde) RW_CALL(rw_revheun_gdw(r, t + h, r->yh, r->G1));
  double c[4] = {2.0, -1.0, -h, -1.0};
  N_Vector v[4] = {r->y, r->yh, r->F1, r->G1};
  RW_CALL_SUNDIALS(N_VLinearCombination(r->sde ? 4 : 3, c, v, r->oh));
  RW_CALL(rw_problem_rhs(r->inner, t, r->oh, r->F0));
  if (r->sde) RW_CALL(rw_revheun_gdw(r, t, r->oh, r->G0));
  double c2[5] = {1.0, -0.5 * h, -0.5 * h, -0.5, -0.5};
  N_Vector v2[5] = {r->y, r->F0, r->F1, r->G0, r->G1};
  RW_CALL_SUNDIALS(N_VLinearCombination(r->sde ? 5 : 3, c2, v2, r->o));
  return 0;
}

static int rw_revheun_adjoint_step(rw_stepper st, double t, double h, N_Vector y_n,
                                   N_Vector *stages, N_Vector lambda, double *pbar)
{
  rw_revheun *r = st->content;
  if (stages) y_n = stages[0];
  if (r->sde) RW_CALL(rw_revheun_noise(st, h));
  rw_revheun_point(y_n, r->y, r->yh);
  RW_CALL(rw_revheun_advance(r, t, h, 0)); /* W = yhat+ */
  rw_revheun_point(lambda, r->o, r->oh);   /* (ly, lh) */
  RW_CALL(rw_problem_running_grad(r->inner, t + h, r->W, 0.5 * h, r->oh, pbar));
  /* a = lh + J1^T (h/2 ly) (+ D1 (dW ly / 2): the diffusion's VJP at yhat+) */
  N_VScale(0.5 * h, r->o, r->G);
  rw_vec_copy(r->oh, r->A);
  RW_CALL(rw_problem_vjp(r->inner, t + h, r->W, r->G, r->A, pbar));
  if (r->sde) {
    N_VProd(r->o, r->dW, r->T);
    N_VScale(0.5, r->T, r->T);
    RW_CALL(rw_problem_diffusion_vjp(r->inner, t + h, r->W, r->T, r->A, pbar));
    /* T = dW (ly / 2 + a): what g(t, yhat_n) dW feeds, for the diffusion's VJP at yhat_n */
    N_VLinearSum(0.5, r->o, 1.0, r->A, r->T);
    N_VProd(r->T, r->dW, r->T);
  }
  /* W0 = (h/2) ly + h a (into G) */
  N_VLinearSum(0.5 * h, r->o, h, r->A, r->G);
  /* ly <- ly + 2 a;  lh <- -a + J0^T W0 (+ D0 T) + (h/2) dr/dy(t, yhat_n) */
  N_VLinearSum(1.0, r->o, 2.0, r->A, r->o);
  N_VScale(-1.0, r->A, r->oh);
  RW_CALL(rw_problem_vjp(r->inner, t, r->yh, r->G, r->oh, pbar));
  if (r->sde) RW_CALL(rw_problem_diffusion_vjp(r->inner, t, r->yh, r->T, r->oh, pbar));
  RW_CALL(rw_problem_running_grad(r->inner, t, r->yh, 0.5 * h, r->oh, pbar));
  return 0;
}

int rw_stepper_create_revheun(rw_problem partnered, rw_stepper *out)
{
  int ierr = 0;
  rw_stepper st = NULL;
  N_Vector tmpl = NULL;
  RW_CHECK(partnered && out, RW_ERR_ARG, "rw_stepper_create_revheun: NULL argument");
  *out = NULL;
  rw_problem inner = rw_problem_partner_inner(partnered);
  RW_CHECK(inner, RW_ERR_ARG,
           "reversible Heun stepper: problem '%s' is not a partnered problem (make one with "
           "rw_problem_create_partnered)",
           rw_problem_name(partnered));
  RW_CALL(rw_calloc(1, sizeof *st, "stepper", &st));
  snprintf(st->name, sizeof st->name, "revheun");
  st->prob = partnered;
  st->ops.step = rw_revheun_step;
  st->ops.adjoint_step = rw_revheun_adjoint_step;
  st->ops.destroy = rw_revheun_free;
  st->ops.reverse = rw_revheun_reverse;
  st->ops.reverse_kind = RW_REVERSE_INVERSE;
  st->nstage_vectors = 1;
  rw_revheun *r = NULL;
  RW_TRY(rw_calloc(1, sizeof *r, "reversible Heun workspace", &r));
  st->content = r;
  r->inner = inner;
  RW_TRY(rw_problem_new_state(inner, &tmpl));
  RW_TRY(rw_vec_view_create(tmpl, &r->y));
  RW_TRY(rw_vec_view_create(tmpl, &r->yh));
  RW_TRY(rw_vec_view_create(tmpl, &r->o));
  RW_TRY(rw_vec_view_create(tmpl, &r->oh));
  RW_TRY(rw_vec_clone(tmpl, &r->F0));
  RW_TRY(rw_vec_clone(tmpl, &r->F1));
  RW_TRY(rw_vec_clone(tmpl, &r->W));
  RW_TRY(rw_vec_clone(tmpl, &r->A));
  RW_TRY(rw_vec_clone(tmpl, &r->G));
  {
    uint64_t seed = 0;
    double amp = 0.0;
    long refine = 1;
    rw_problem_get_noise(inner, &seed, &amp, &refine);
    r->sde = rw_problem_has_noise(inner) && amp != 0.0;
  }
  if (r->sde) {
    RW_TRY(rw_vec_clone(tmpl, &r->dW));
    RW_TRY(rw_vec_clone(tmpl, &r->G0));
    RW_TRY(rw_vec_clone(tmpl, &r->G1));
    RW_TRY(rw_vec_clone(tmpl, &r->T));
  }
  rw_vec_destroy(&tmpl);
  *out = st;
  return 0;
cleanup:
  rw_vec_destroy(&tmpl);
  rw_stepper_destroy(&st);
  return ierr;
}

/* Views on the two halves of the partnered vector V (template t, one half's layout). */
static int rw_revheun_halves(N_Vector t, N_Vector V, N_Vector *lo, N_Vector *hi)
{
  *lo = *hi = NULL;
  int ierr = rw_vec_view_create(t, lo);
  if (!ierr) ierr = rw_vec_view_create(t, hi);
  if (ierr) {
    rw_vec_view_destroy(lo);
    return ierr;
  }
  rw_revheun_point(V, *lo, *hi);
  return 0;
}

/* Through views and vector operations, so the vectors may be device vectors. */
int rw_revheun_initial_state(N_Vector y0, N_Vector Y)
{
  N_Vector lo, hi;
  RW_CALL(rw_revheun_halves(y0, Y, &lo, &hi));
  rw_vec_copy(y0, lo);
  rw_vec_copy(y0, hi);
  rw_vec_view_destroy(&lo);
  rw_vec_view_destroy(&hi);
  return 0;
}

int rw_revheun_initial_adjoint(N_Vector L, N_Vector dJdy0)
{
  N_Vector lo, hi;
  RW_CALL(rw_revheun_halves(dJdy0, L, &lo, &hi));
  N_VLinearSum(1.0, lo, 1.0, hi, dJdy0); /* l_i + l_{n+i}, rounded once */
  rw_vec_view_destroy(&lo);
  rw_vec_view_destroy(&hi);
  return 0;
}
