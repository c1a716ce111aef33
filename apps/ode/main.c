/* rewind-ode: forward run, objective and adjoint sensitivities for an ensemble of small ODEs
 * (Van der Pol or Lotka-Volterra), distributed over MPI ranks by ensemble member, or of scalar
 * SDE paths (Ornstein-Uhlenbeck, geometric Brownian motion) with the SDE steppers em and sheun
 * and pathwise gradients for the noise of `noise_seed`.
 *
 *   mpirun -n 2 rewind-ode [deck.yaml|deck.opts] [-key value ...]
 *
 * With no deck, the embedded default deck (default.yaml) runs. Writes an HDF5 file (the
 * trajectory, final state, dJ/dp for each named parameter, dJ/dy0, the effective deck and the
 * run statistics) and prints a summary on stdout. The keys every app shares (stepper, time
 * grid, adjoint and checkpoint settings, output) come from the app kit (rw_app.h). */
#include "ode_default_deck.h"
#include "rewind/rw_app.h"
#include "rewind/rw_ode_problems.h"
#include "rewind/rw_revheun.h"
#include "rewind/rw_sde.h"
#include "rewind/rw_sde_problems.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const rw_deck_key keys[] = {
    {"stepper", RW_KEY_ENUM, "rk4", NULL, 0, 0, 0,
     "euler,heun,ssprk3,rk4,rk38,dopri5,revheun,em,sheun", 0,
     "time stepper: explicit Runge-Kutta, or revheun (reversible Heun: carries a partner state "
     "and has an exact inverse step, for adjoint_mode reversible); for the SDE problems em "
     "(Euler-Maruyama, Ito) or sheun (stochastic Heun, Stratonovich)"},
    {"problem", RW_KEY_ENUM, "vanderpol", NULL, 0, 0, 0, "vanderpol,lotkavolterra,ou,gbm", 0,
     "model: ODEs vanderpol, lotkavolterra; SDEs ou (Ornstein-Uhlenbeck dY = -theta Y dt + sigma "
     "dW), gbm (geometric Brownian motion dY = mu Y dt + sigma Y dW), one scalar path per "
     "ensemble member"},
    {"mu", RW_KEY_REAL, "1.0", NULL, -1e6, 1e6, 0, NULL, 0,
     "Van der Pol damping mu; gbm drift rate mu"},
    {"theta", RW_KEY_REAL, "1.0", NULL, -1e6, 1e6, 0, NULL, 0, "ou mean-reversion rate theta"},
    {"sigma", RW_KEY_REAL, "0.5", NULL, -1e6, 1e6, 0, NULL, 0, "ou / gbm noise intensity sigma"},
    {"noise_seed", RW_KEY_INT, "0", NULL, 0, 1e18, 0, NULL, 0,
     "SDE problems: the seed of the Brownian paths (the gradient is pathwise, for this seed)"},
    {"noise_amplitude", RW_KEY_REAL, "1.0", NULL, -1e6, 1e6, 0, NULL, 0,
     "SDE problems: a fixed factor on every Brownian increment (not differentiated)"},
    {"alpha", RW_KEY_REAL, "1.5", NULL, -1e6, 1e6, 0, NULL, 0, "Lotka-Volterra prey growth"},
    {"beta", RW_KEY_REAL, "1.0", NULL, -1e6, 1e6, 0, NULL, 0, "Lotka-Volterra predation"},
    {"gamma", RW_KEY_REAL, "3.0", NULL, -1e6, 1e6, 0, NULL, 0, "Lotka-Volterra predator death"},
    {"delta", RW_KEY_REAL, "1.0", NULL, -1e6, 1e6, 0, NULL, 0, "Lotka-Volterra predator growth"},
    {"ensemble", RW_KEY_INT, "8", NULL, 1, 1e9, 0, NULL, 0,
     "number of ensemble members (distributed over ranks)"},
    {"ensemble_spread", RW_KEY_REAL, "0.1", NULL, -1e6, 1e6, 0, NULL, 0,
     "member e starts at y0 + e * spread * (1, 0)"},
    {"y0", RW_KEY_REAL_ARRAY, "2.0,0.0", NULL, -1e12, 1e12, 0, NULL, 2,
     "initial state (x, y) of member 0 (SDE problems: the first value)"},
    {"tf", RW_KEY_REAL, "10.0", "time", -1e300, 1e300, 0, NULL, 0, "final time T (> t0)"},
    {"objective_terminal_weight", RW_KEY_REAL, "1.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "wT in J = wT/2 sum |y(T) - target|^2 + wR/2 int sum |y|^2 dt"},
    {"objective_running_weight", RW_KEY_REAL, "0.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "wR in J (running cost weight)"},
    {"target", RW_KEY_REAL_ARRAY, "0.0,0.0", NULL, -1e300, 1e300, 0, NULL, 2,
     "terminal target (x, y) (SDE problems: the first value)"},
    {"output", RW_KEY_STRING, "rewind-ode.h5", NULL, 0, 0, 0, NULL, 0,
     "HDF5 result file (written as <output>.partial, renamed when complete)"},
};

typedef struct {
  rw_app *app;
  N_Vector view; /* revheun: the y half of the partnered state */
} monitor_ctx;

static int monitor(void *c, long n, double t, N_Vector y)
{
  monitor_ctx *m = c;
  rw_app *app = m->app;
  if (m->view) {
    rw_vec_view_point(m->view, rw_vec_data(y));
    y = m->view;
  }
  long every = app->output_every;
  if (every > 0 && (n % every == 0 || n == app->nsteps || t == app->opt.tf))
    RW_CALL(rw_output_series_append(app->out, "/trajectory/y", t, y));
  return 0;
}

static int run(rw_app *app)
{
  int ierr = 0;
  rw_deck deck = app->deck;
  rw_problem prob = NULL, pair = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL, dJdy0 = NULL, Y = NULL, L = NULL;
  monitor_ctx mctx = {app, NULL};
  char model[32];
  double y0[2] = {0}, target[2] = {0}, dJdp[8] = {0}, J = 0.0;
  int n2 = 2, nt = 2;
  long ensemble = 1;
  rw_ode_config cfg;
  rw_adjoint_stats stats;

  RW_TRY(rw_deck_get_string(deck, "problem", model, sizeof model));
  RW_TRY(rw_deck_get_int(deck, "ensemble", &ensemble));
  if (ensemble < rw_context_size(app->ctx)) { /* the same answer on every rank */
    (void)RW_ERROR(RW_ERR_DECK,
                   "key 'ensemble' = %ld is fewer than the %d ranks; every rank integrates at "
                   "least one member: ensemble >= %d, or at most %ld rank%s",
                   ensemble, rw_context_size(app->ctx), rw_context_size(app->ctx), ensemble,
                   ensemble == 1 ? "" : "s");
    ierr = rw_app_deck_error(app, "ensemble");
    goto cleanup;
  }
  RW_TRY(rw_deck_get_real_array(deck, "y0", y0, &n2));
  RW_TRY(rw_deck_get_real_array(deck, "target", target, &nt));
  RW_CHECK_GOTO(n2 == 2 && nt == 2, RW_ERR_DECK,
                "keys 'y0' and 'target' need two values (x,y); got %d and %d", n2, nt);
  memset(&cfg, 0, sizeof cfg);
  cfg.model = model;
  cfg.ensemble = ensemble;
  cfg.y0[0] = y0[0], cfg.y0[1] = y0[1];
  cfg.target[0] = target[0], cfg.target[1] = target[1];
  RW_TRY(rw_deck_get_real(deck, "ensemble_spread", &cfg.spread));
  RW_TRY(rw_deck_get_real(deck, "objective_terminal_weight", &cfg.terminal_weight));
  RW_TRY(rw_deck_get_real(deck, "objective_running_weight", &cfg.running_weight));

  int sde = strcmp(model, "ou") == 0 || strcmp(model, "gbm") == 0;
  if (sde != rw_sde_method_known(app->stepper)) {
    (void)RW_ERROR(RW_ERR_DECK,
                   sde ? "problem '%s' is an SDE and stepper '%s' an ODE stepper; use an SDE "
                         "stepper (%s)"
                       : "problem '%s' is an ODE and stepper '%s' an SDE stepper; use an ODE "
                         "stepper (not %s)",
                   model, app->stepper, rw_sde_method_names());
    ierr = rw_app_deck_error(app, "problem,stepper");
    goto cleanup;
  }
  if (sde) {
    rw_sde_config scfg = {.model = model,
                          .paths = ensemble,
                          .y0 = y0[0],
                          .spread = cfg.spread,
                          .target = target[0],
                          .terminal_weight = cfg.terminal_weight,
                          .running_weight = cfg.running_weight};
    long seed = 0;
    double amp = 1.0;
    RW_TRY(rw_deck_get_int(deck, "noise_seed", &seed));
    RW_TRY(rw_deck_get_real(deck, "noise_amplitude", &amp));
    RW_TRY(rw_sde_problem_create(app->ctx, &scfg, &prob));
    RW_TRY(rw_problem_set_noise(prob, (uint64_t)seed, amp, 1));
  } else {
    RW_TRY(rw_ode_problem_create(app->ctx, &cfg, &prob));
  }
  for (int k = 0; k < rw_problem_nparams(prob); k++)
    RW_TRY(rw_deck_get_real(deck, rw_problem_param_name(prob, k), &rw_problem_params(prob)[k]));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_problem_new_state(prob, &dJdy0));
  if (sde)
    RW_TRY(rw_sde_initial_state(prob, y));
  else
    RW_TRY(rw_ode_initial_state(prob, y));
  if (sde) {
    RW_TRY(rw_stepper_create_sde(prob, app->stepper, &st));
  } else if (strcmp(app->stepper, "revheun") == 0) {
    /* reversible Heun: the solve runs on (y, yhat), both starting at y0 */
    RW_TRY(rw_problem_create_partnered(prob, &pair));
    RW_TRY(rw_stepper_create_revheun(pair, &st));
    RW_TRY(rw_problem_new_state(pair, &Y));
    RW_TRY(rw_problem_new_state(pair, &L));
    RW_TRY(rw_vec_view_create(y, &mctx.view));
    RW_TRY(rw_revheun_initial_state(y, Y));
  } else {
    RW_TRY(rw_stepper_create_erk(prob, rw_tableau_find(app->stepper), &st));
  }

  /* Output opens before the run: an unwritable path fails in seconds, not after the run. */
  RW_TRY(rw_app_open_output(app));
  RW_TRY(rw_output_attr_string(app->out, "/", "problem", model));
  rw_log(app->ctx, RW_LOG_INFO, "%s: %s, %ld members on %d ranks, %s\n", app->info->name, model,
         ensemble, rw_context_size(app->ctx), app->stepper);
  if (pair) {
    RW_TRY(rw_app_solve(app, pair, st, Y, monitor, &mctx, &J, dJdp, L, &stats));
    rw_vec_view_point(mctx.view, rw_vec_data(Y)); /* y(T): the y half of (y, yhat) */
    rw_vec_copy(mctx.view, y);
    RW_TRY(rw_revheun_initial_adjoint(L, dJdy0));
  } else {
    RW_TRY(rw_app_solve(app, prob, st, y, monitor, &mctx, &J, dJdp, dJdy0, &stats));
  }

  RW_TRY(rw_output_vector(app->out, "/state/y_final", y));
  RW_TRY(rw_output_attr_double(app->out, "/state/y_final", "t", app->opt.tf));
  if (app->diff_y0) RW_TRY(rw_output_vector(app->out, "/gradient/dJdy0", dJdy0));
  RW_TRY(rw_app_finish(app, prob, J, dJdp, dJdy0, &stats));
cleanup:
  rw_vec_destroy(&y);
  rw_vec_destroy(&dJdy0);
  rw_vec_destroy(&Y);
  rw_vec_destroy(&L);
  rw_vec_view_destroy(&mctx.view);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&pair);
  rw_problem_destroy(&prob);
  return ierr;
}

int main(int argc, char **argv)
{
  static const rw_app_info info = {
      "rewind-ode",
      "Van der Pol / Lotka-Volterra ensembles with adjoint sensitivities",
      keys,
      (int)(sizeof keys / sizeof keys[0]),
      rw_ode_default_deck,
      run,
      1};
  return rw_app_main(argc, argv, &info);
}
