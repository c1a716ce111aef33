/* Euler-Maruyama and stochastic Heun steppers with their discrete adjoints (formulas in
 * rw_sde.h). Vector operations only; the noise comes from the problem
 * (rw_problem_noise_increment), keyed by the step index the driver sets. The forward step and
 * the adjoint's recomputation of the predictor share sde_predict, so recomputation is bitwise
 * deterministic. */
#include "rewind/rw_sde.h"

#include "../rw_stepper_impl.h"

#include <stdio.h>
#include <string.h>

typedef enum { RW_SDE_EM, RW_SDE_HEUN } rw_sde_kind;

typedef struct {
  rw_sde_kind kind;
  N_Vector dW, Z;       /* the step's increment; a noise work vector (refinement) */
  N_Vector F0, G0, T0;  /* f, g and g dW at (t, y_n) */
  N_Vector F1, G1, T1;  /* the same at (t + h, Yt) (Heun) */
  N_Vector Yt, A, W, D; /* predictor; its adjoint; VJP weights of f and g */
} rw_sde;

static void rw_sde_free(rw_stepper st)
{
  rw_sde *s = st->content;
  if (!s) return;
  N_Vector *v[] = {&s->dW, &s->Z,  &s->F0, &s->G0, &s->T0, &s->F1,
                   &s->G1, &s->T1, &s->Yt, &s->A,  &s->W,  &s->D};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    rw_vec_destroy(v[i]);
  rw_free(&st->content);
}

/* dW = the increment of the step the driver indexed. */
static int sde_noise(rw_stepper st, double h)
{
  rw_sde *s = st->content;
  long n = rw_stepper_current_index(st);
  RW_CHECK(n >= 0, RW_ERR_ARG,
           "stepper '%s': no step index for this call; an SDE step draws the noise of step n, "
           "so the caller must call rw_stepper_set_step_index(st, n) before every step, trial "
           "step and adjoint step",
           st->name);
  RW_CALL(rw_problem_noise_increment(st->prob, n, h, s->dW, s->Z));
  return 0;
}

/* F0 = f(t, y), G0 = g(t, y), T0 = G0 dW and, when Yt is not NULL, the predictor
 * Yt = y + h F0 + T0 (the Euler-Maruyama step itself). */
static int sde_predict(rw_stepper st, double t, double h, N_Vector y, N_Vector Yt)
{
  rw_sde *s = st->content;
  RW_CALL(rw_problem_rhs(st->prob, t, y, s->F0));
  RW_CALL(rw_problem_diffusion(st->prob, t, y, s->G0));
  N_VProd(s->G0, s->dW, s->T0);
  if (Yt) {
    double c[3] = {1.0, h, 1.0};
    N_Vector v[3] = {y, s->F0, s->T0};
    /* SUNDIALS allows z == X[0], so Yt may be y */
    RW_CALL_SUNDIALS(N_VLinearCombination(3, c, v, Yt));
  }
  return 0;
}

static int rw_em_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                      N_Vector *stages, double *q)
{
  if (stages) rw_vec_copy(y_in, stages[0]);
  RW_CALL(sde_noise(st, h));
  if (q && rw_problem_has_running(st->prob)) {
    double r = 0.0;
    RW_CALL(rw_problem_running_local(st->prob, t, y_in, &r));
    *q += h * r;
  }
  RW_CALL(sde_predict(st, t, h, y_in, y_out));
  return 0;
}

static int rw_em_adjoint_step(rw_stepper st, double t, double h, N_Vector y_n, N_Vector *stages,
                              N_Vector lambda, double *pbar)
{
  rw_sde *s = st->content;
  N_Vector y = stages ? stages[0] : y_n;
  RW_CALL(sde_noise(st, h));
  N_VScale(h, lambda, s->W);
  N_VProd(s->dW, lambda, s->D);
  RW_CALL(rw_problem_vjp(st->prob, t, y, s->W, lambda, pbar));
  RW_CALL(rw_problem_diffusion_vjp(st->prob, t, y, s->D, lambda, pbar));
  RW_CALL(rw_problem_running_grad(st->prob, t, y, h, lambda, pbar));
  return 0;
}

static int rw_heun_step(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out,
                        N_Vector *stages, double *q)
{
  rw_sde *s = st->content;
  N_Vector Yt = stages ? stages[1] : s->Yt;
  if (stages) rw_vec_copy(y_in, stages[0]);
  RW_CALL(sde_noise(st, h));
  RW_CALL(sde_predict(st, t, h, y_in, Yt));
  RW_CALL(rw_problem_rhs(st->prob, t + h, Yt, s->F1));
  RW_CALL(rw_problem_diffusion(st->prob, t + h, Yt, s->G1));
  N_VProd(s->G1, s->dW, s->T1);
  if (q && rw_problem_has_running(st->prob)) {
    double r0 = 0.0, r1 = 0.0;
    RW_CALL(rw_problem_running_local(st->prob, t, y_in, &r0));
    RW_CALL(rw_problem_running_local(st->prob, t + h, Yt, &r1));
    double dq = 0.5 * h * r0 + 0.5 * h * r1;
    *q += dq;
  }
  double c[5] = {1.0, 0.5 * h, 0.5 * h, 0.5, 0.5};
  N_Vector v[5] = {y_in, s->F0, s->F1, s->T0, s->T1};
  RW_CALL_SUNDIALS(N_VLinearCombination(5, c, v, y_out));
  return 0;
}

static int rw_heun_adjoint_step(rw_stepper st, double t, double h, N_Vector y_n, N_Vector *stages,
                                N_Vector lambda, double *pbar)
{
  rw_sde *s = st->content;
  rw_problem prob = st->prob;
  N_Vector y = stages ? stages[0] : y_n, Yt = stages ? stages[1] : s->Yt;
  RW_CALL(sde_noise(st, h));
  if (!stages) RW_CALL(sde_predict(st, t, h, y, Yt));
  /* A = dJ/dYt = J_f1^T ((h/2) lambda) + G1' ((1/2) dW lambda) + (h/2) dr/dy(t + h, Yt) */
  N_VConst(0.0, s->A);
  N_VScale(0.5 * h, lambda, s->W);
  N_VProd(s->dW, lambda, s->D);
  N_VScale(0.5, s->D, s->D);
  RW_CALL(rw_problem_vjp(prob, t + h, Yt, s->W, s->A, pbar));
  RW_CALL(rw_problem_diffusion_vjp(prob, t + h, Yt, s->D, s->A, pbar));
  RW_CALL(rw_problem_running_grad(prob, t + h, Yt, 0.5 * h, s->A, pbar));
  /* through y_n: directly (lambda), through Yt (A), through f and g at (t, y_n) */
  N_VLinearSum(0.5 * h, lambda, h, s->A, s->W);
  N_VLinearSum(0.5, lambda, 1.0, s->A, s->D);
  N_VProd(s->D, s->dW, s->D);
  N_VLinearSum(1.0, lambda, 1.0, s->A, lambda);
  RW_CALL(rw_problem_vjp(prob, t, y, s->W, lambda, pbar));
  RW_CALL(rw_problem_diffusion_vjp(prob, t, y, s->D, lambda, pbar));
  RW_CALL(rw_problem_running_grad(prob, t, y, 0.5 * h, lambda, pbar));
  return 0;
}

int rw_sde_method_known(const char *name)
{
  return name && (strcmp(name, "em") == 0 || strcmp(name, "sheun") == 0);
}

const char *rw_sde_method_names(void) { return "em, sheun"; }

double rw_sde_strong_order(const char *method, int additive)
{
  if (!rw_sde_method_known(method)) return 0.0;
  if (strcmp(method, "em") == 0) return additive ? 1.0 : 0.5;
  return 1.0;
}

int rw_stepper_create_sde(rw_problem prob, const char *method, rw_stepper *out)
{
  int ierr = 0;
  rw_stepper st = NULL;
  N_Vector tmpl = NULL;
  RW_CHECK(prob && method && out, RW_ERR_ARG, "rw_stepper_create_sde: NULL argument");
  *out = NULL;
  RW_CHECK(rw_sde_method_known(method), RW_ERR_ARG, "unknown SDE method '%s'; known: %s", method,
           rw_sde_method_names());
  RW_CHECK(rw_problem_has_noise(prob), RW_ERR_ARG,
           "SDE stepper '%s': problem '%s' has no diffusion term (rw_problem_ops.diffusion); "
           "use an ODE stepper",
           method, rw_problem_name(prob));
  rw_sde_kind kind = strcmp(method, "em") == 0 ? RW_SDE_EM : RW_SDE_HEUN;
  RW_CALL(rw_calloc(1, sizeof *st, "stepper", &st));
  snprintf(st->name, sizeof st->name, "%s", method);
  st->prob = prob;
  st->ops.step = kind == RW_SDE_EM ? rw_em_step : rw_heun_step;
  st->ops.adjoint_step = kind == RW_SDE_EM ? rw_em_adjoint_step : rw_heun_adjoint_step;
  st->ops.destroy = rw_sde_free;
  st->nstage_vectors = kind == RW_SDE_EM ? 1 : 2;
  rw_sde *s = NULL;
  RW_TRY(rw_calloc(1, sizeof *s, "SDE stepper workspace", &s));
  st->content = s;
  s->kind = kind;
  RW_TRY(rw_problem_new_state(prob, &tmpl));
  N_Vector *v[] = {&s->dW, &s->Z,  &s->F0, &s->G0, &s->T0, &s->F1,
                   &s->G1, &s->T1, &s->Yt, &s->A,  &s->W,  &s->D};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    RW_TRY(rw_vec_clone(tmpl, v[i]));
  rw_vec_destroy(&tmpl);
  *out = st;
  return 0;
cleanup:
  rw_vec_destroy(&tmpl);
  rw_stepper_destroy(&st);
  return ierr;
}
