/* rewind-neuralode: neural ODEs dh/dt = MLP(h[, t]; theta) - c h on batches of trajectories
 * distributed over MPI ranks, with the discrete adjoint of the chosen stepper for
 * dL/dtheta, L = 1/(B D) sum_i |h_i(T) - target_i|^2.
 *
 *   mpirun -n 2 rewind-neuralode [deck.yaml|deck.opts] [-key value ...]
 *
 * mode train (the embedded default deck): learns a trajectory data set generated in the app
 * (the cubic spiral of torchdiffeq's demo, or a Lotka-Volterra orbit): pairs (y(s), y(s+T))
 * along the true trajectory, mini-batches of B pairs, Adam. Prints and writes the loss per
 * epoch (/train/loss), the trained weights (/model/theta, and theta_out in the reference
 * format), and the learned and the true trajectory from the data's start (/trajectory/model,
 * /trajectory/true) for tools/rewind_neuralode_plot.py.
 *
 * mode gradient: one loss and dL/dtheta for weights and a problem given in the shared
 * reference format (theta_file, problem_file; the architecture from the weights file, B, D,
 * T, y0 and the targets from the problem file), written to /gradient/dJdtheta; with
 * compare_gradient the relative difference to a reference gradient file is printed.
 *
 * Every stepper, adjoint mode and checkpoint key of the app kit applies to each gradient.
 *
 * At start-up, deck errors (exit 2 on every rank): an output (output, theta_out, gradient_out
 * or their '.partial' files) that is the same file as an input or another output, and a key
 * the user set that the mode ignores. The input files are read on rank 0 and broadcast.
 * theta_out and gradient_out are written after the HDF5 result is complete, so a failure to
 * write them (reported with its key and errno's text, exit 1) loses nothing. */
#include "app_default_deck.h"
#include "rewind/rw_app.h"
#include "rewind/rw_blas.h"
#include "rewind/rw_neuralode.h"
#include "rewind/rw_neuralode_io.h"
#include "rewind/rw_revheun.h"
#include "rewind/rw_sde.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rw_deck_key keys[] = {
    {"mode", RW_KEY_ENUM, "train", NULL, 0, 0, 0, "train,gradient", 0,
     "train: fit the data set with Adam; gradient: one loss and dL/dtheta"},
    {"stepper", RW_KEY_ENUM, "rk4", NULL, 0, 0, 0,
     "euler,heun,ssprk3,rk4,rk38,dopri5,revheun,em,sheun", 0,
     "explicit Runge-Kutta time stepper, revheun (reversible Heun: a partner state and an "
     "exact inverse step, for adjoint_mode reversible), or for a neural SDE em (Euler-Maruyama, "
     "Ito) or sheun (stochastic Heun, Stratonovich)"},
    {"noise_amplitude", RW_KEY_REAL, "0.0", NULL, 0, 1e300, 0, NULL, 0,
     "neural SDE: sigma in dh = (MLP(h) - c h) dt + sigma dW (additive noise; needs stepper em, "
     "sheun or revheun; em and sheun need it > 0)"},
    {"noise_seed", RW_KEY_INT, "1", NULL, 0, 1e18, 0, NULL, 0,
     "neural SDE: the seed of the Brownian paths (the gradient is pathwise, for this seed)"},
    {"theta_file", RW_KEY_STRING, "", NULL, 0, 0, 0, NULL, 0,
     "weights in the reference format (NODEMLP1) or a result file of this app (HDF5, "
     "/model); the architecture then comes from it (empty: the keys widths, activation, "
     "time_input, damping and Glorot weights from seed)"},
    {"problem_file", RW_KEY_STRING, "", NULL, 0, 0, 0, NULL, 0,
     "mode gradient: B, D, T, y0 and targets in the reference format (NODEPRB1); empty: the "
     "first mini-batch of the data set"},
    {"compare_gradient", RW_KEY_STRING, "", NULL, 0, 0, 0, NULL, 0,
     "mode gradient: a reference dL/dtheta (NODEGRD1) to compare with (relative 2-norm)"},
    {"gradient_out", RW_KEY_STRING, "", NULL, 0, 0, 0, NULL, 0,
     "mode gradient: also write dL/dtheta to this file in the reference format (NODEGRD1)"},
    {"theta_out", RW_KEY_STRING, "", NULL, 0, 0, 0, NULL, 0,
     "write the (trained) weights to this file in the reference format (NODEMLP1)"},
    {"widths", RW_KEY_REAL_ARRAY, "2,32,32,2", NULL, 1, 1e6, 0, NULL, RW_MLP_MAX_LAYERS + 1,
     "layer widths d_0,...,d_L (d_L = state dimension; d_0 = d_L, +1 with time_input)"},
    {"activation", RW_KEY_ENUM, "tanh", NULL, 0, 0, 0, "identity,tanh,softplus,relu", 0,
     "activation of the hidden layers"},
    {"time_input", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0,
     "append t as the last input of the MLP"},
    {"damping", RW_KEY_REAL, "0.0", NULL, 0, 1e300, 0, NULL, 0, "c in dh/dt = MLP(h) - c h"},
    {"seed", RW_KEY_INT, "1", NULL, 0, 4e18, 0, NULL, 0,
     "seed of the initial weights and of the mini-batch draws"},
    {"blas_threads", RW_KEY_INT, "1", NULL, 1, 1024, 0, NULL, 0,
     "OpenBLAS threads per rank (ranks are the first way to use cores)"},
    {"data", RW_KEY_ENUM, "spiral", NULL, 0, 0, 0, "spiral,lotkavolterra", 0,
     "training data: spiral (y' = (y^3) A, A = [[-0.1, 2], [-2, -0.1]] as a row-vector map, "
     "from (2, 0)) or lotkavolterra (x' = 1.5x - xy, y' = xy - 3y, from (1, 1))"},
    {"data_span", RW_KEY_REAL, "10.0", "time", 0, 1e6, 1, NULL, 0,
     "length of the true trajectory the pairs are drawn from"},
    {"data_points", RW_KEY_INT, "512", NULL, 1, 1e9, 0, NULL, 0,
     "start points of the pairs, evenly spaced over [0, data_span]"},
    {"batch", RW_KEY_INT, "64", NULL, 1, 1e9, 0, NULL, 0,
     "mini-batch size B (trajectories per gradient, distributed over ranks)"},
    {"epochs", RW_KEY_INT, "150", NULL, 0, 1e9, 0, NULL, 0,
     "passes over the data set (data_points / batch mini-batches each)"},
    {"learning_rate", RW_KEY_REAL, "0.01", NULL, 0, 1e300, 1, NULL, 0, "Adam step size"},
    {"adam_beta1", RW_KEY_REAL, "0.9", NULL, 0, 1, 0, NULL, 0, "Adam first-moment decay"},
    {"adam_beta2", RW_KEY_REAL, "0.999", NULL, 0, 1, 0, NULL, 0, "Adam second-moment decay"},
    {"adam_eps", RW_KEY_REAL, "1e-8", NULL, 0, 1e300, 1, NULL, 0, "Adam denominator floor"},
    {"print_every", RW_KEY_INT, "10", "epochs", 0, 1e9, 0, NULL, 0,
     "print the loss every k epochs (0: first and last only)"},
    {"tf", RW_KEY_REAL, "0.5", "time", -1e300, 1e300, 0, NULL, 0,
     "horizon T of each pair (mode gradient with problem_file: T of the file)"},
    {"dt", RW_KEY_REAL, "0.05", "time", 0, 1e300, 1, NULL, 0, "step size"},
    {"output", RW_KEY_STRING, "rewind-neuralode.h5", NULL, 0, 0, 0, NULL, 0,
     "HDF5 result file (written as <output>.partial, renamed when complete)"},
};

/* ---- the training data: one true trajectory, sampled densely ---------------------------- */
typedef struct {
  int lv;
  long npts;      /* start points */
  double span, T; /* trajectory length, pair horizon */
  double *start;  /* npts x 2: y(s_j), s_j = j span / npts */
  double *end;    /* npts x 2: y(s_j + T) */
} dataset;

static void true_rhs(int lv, const double *y, double *f)
{
  if (lv) {
    f[0] = 1.5 * y[0] - y[0] * y[1];
    f[1] = y[0] * y[1] - 3.0 * y[1];
  } else { /* (y^3) A, A = [[-0.1, 2], [-2, -0.1]] */
    double a = y[0] * y[0] * y[0], b = y[1] * y[1] * y[1];
    f[0] = -0.1 * a - 2.0 * b;
    f[1] = 2.0 * a - 0.1 * b;
  }
}

/* y advanced by time dt with classic RK4 in 64 substeps (the data's own solver, far finer
 * than any model's steps). */
static void true_advance(int lv, double *y, double dt)
{
  double h = dt / 64.0;
  for (int s = 0; s < 64; s++) {
    double k[4][2], z[2];
    true_rhs(lv, y, k[0]);
    for (int c = 0; c < 2; c++)
      z[c] = y[c] + 0.5 * h * k[0][c];
    true_rhs(lv, z, k[1]);
    for (int c = 0; c < 2; c++)
      z[c] = y[c] + 0.5 * h * k[1][c];
    true_rhs(lv, z, k[2]);
    for (int c = 0; c < 2; c++)
      z[c] = y[c] + h * k[2][c];
    true_rhs(lv, z, k[3]);
    for (int c = 0; c < 2; c++)
      y[c] += h / 6.0 * (k[0][c] + 2.0 * k[1][c] + 2.0 * k[2][c] + k[3][c]);
  }
}

static void true_start(int lv, double *y)
{
  y[0] = lv ? 1.0 : 2.0;
  y[1] = lv ? 1.0 : 0.0;
}

static int dataset_create(rw_deck deck, double T, dataset *d)
{
  char kind[32];
  memset(d, 0, sizeof *d);
  RW_CALL(rw_deck_get_string(deck, "data", kind, sizeof kind));
  RW_CALL(rw_deck_get_real(deck, "data_span", &d->span));
  RW_CALL(rw_deck_get_int(deck, "data_points", &d->npts));
  d->lv = strcmp(kind, "lotkavolterra") == 0;
  d->T = T;
  RW_CALL(rw_calloc((size_t)d->npts * 2, sizeof(double), "training data", &d->start));
  RW_CALL(rw_calloc((size_t)d->npts * 2, sizeof(double), "training data", &d->end));
  double y[2];
  true_start(d->lv, y);
  for (long j = 0; j < d->npts; j++) {
    memcpy(d->start + 2 * j, y, sizeof y);
    double e[2] = {y[0], y[1]};
    true_advance(d->lv, e, T);
    memcpy(d->end + 2 * j, e, sizeof e);
    true_advance(d->lv, y, d->span / (double)d->npts);
  }
  return 0;
}

static void dataset_destroy(dataset *d)
{
  rw_free(&d->start);
  rw_free(&d->end);
}

/* ---- the model --------------------------------------------------------------------------- */
typedef struct {
  rw_app *app;
  rw_mlp_arch arch;
  double *theta; /* P values (from the file, or Glorot from seed) */
  long P;
  rw_problem prob;
  rw_problem pair; /* revheun: the partnered problem the solve runs on (state (h, h^)) */
  rw_stepper st;
  N_Vector y, dJdy0;
  N_Vector Y, L; /* revheun: the partnered state and its adjoint */
  double *grad;
} model;

static int arch_from_deck(rw_app *app, rw_mlp_arch *a)
{
  double w[RW_MLP_MAX_LAYERS + 1];
  int n = RW_MLP_MAX_LAYERS + 1, ti = 0;
  char act[32];
  memset(a, 0, sizeof *a);
  RW_CALL(rw_deck_get_real_array(app->deck, "widths", w, &n));
  RW_CHECK(n >= 2, RW_ERR_DECK, "key 'widths' (from %s) needs at least two widths (d_0,d_1)",
           rw_deck_source(app->deck, "widths"));
  a->nlayers = n - 1;
  for (int l = 0; l < n; l++) {
    RW_CHECK(w[l] == floor(w[l]), RW_ERR_DECK, "key 'widths' (from %s): %g is not an integer",
             rw_deck_source(app->deck, "widths"), w[l]);
    a->widths[l] = (int)w[l];
  }
  RW_CALL(rw_deck_get_string(app->deck, "activation", act, sizeof act));
  a->activation = (rw_activation)rw_activation_parse(act);
  RW_CALL(rw_deck_get_bool(app->deck, "time_input", &ti));
  a->time_input = ti;
  RW_CALL(rw_deck_get_real(app->deck, "damping", &a->damping));
  if (rw_mlp_check(a, "keys widths, time_input")) return rw_app_deck_error(app, "widths");
  return 0;
}

/* The architecture and theta: from theta_file (read on rank 0, broadcast: every rank gets the
 * same weights, or the same error), or from the keys with Glorot weights. Collective. */
static int model_weights(rw_app *app, model *m)
{
  char path[4096];
  RW_CALL(rw_deck_get_string(app->deck, "theta_file", path, sizeof path));
  if (path[0]) { /* an HDF5 result of this app (by its signature), or the reference format */
    if (rw_mlp_load(rw_context_comm(app->ctx), path, 0, &m->arch, &m->theta, &m->P))
      return rw_app_deck_error(app, "theta_file");
    return 0;
  }
  long seed;
  RW_CALL(arch_from_deck(app, &m->arch));
  RW_CALL(rw_deck_get_int(app->deck, "seed", &seed));
  m->P = rw_mlp_nparams(&m->arch);
  RW_CALL(rw_calloc((size_t)m->P, sizeof(double), "MLP weights", &m->theta));
  rw_mlp_init_theta(&m->arch, (unsigned long)seed, m->theta);
  return 0;
}

static int model_create(rw_app *app, model *m, long batch)
{
  RW_CALL(rw_neuralode_create(app->ctx, &m->arch, batch, &m->prob));
  memcpy(rw_problem_params(m->prob), m->theta, (size_t)m->P * sizeof(double));
  {
    /* the noise first: reversible Heun takes its SDE form when the problem has noise */
    long seed = 1;
    double amp = 0.0;
    RW_CALL(rw_deck_get_int(app->deck, "noise_seed", &seed));
    RW_CALL(rw_deck_get_real(app->deck, "noise_amplitude", &amp));
    RW_CALL(rw_problem_set_noise(m->prob, (uint64_t)seed, amp, 1));
  }
  if (strcmp(app->stepper, "revheun") == 0) {
    RW_CALL(rw_problem_create_partnered(m->prob, &m->pair));
    RW_CALL(rw_stepper_create_revheun(m->pair, &m->st));
    RW_CALL(rw_problem_new_state(m->pair, &m->Y));
    RW_CALL(rw_problem_new_state(m->pair, &m->L));
  } else if (rw_sde_method_known(app->stepper)) {
    RW_CALL(rw_stepper_create_sde(m->prob, app->stepper, &m->st));
  } else {
    RW_CALL(rw_stepper_create_erk(m->prob, rw_tableau_find(app->stepper), &m->st));
  }
  RW_CALL(rw_problem_new_state(m->prob, &m->y));
  RW_CALL(rw_problem_new_state(m->prob, &m->dJdy0));
  RW_CALL(rw_calloc((size_t)m->P, sizeof(double), "dL/dtheta", &m->grad));
  return 0;
}

static void model_destroy(model *m)
{
  rw_vec_destroy(&m->y);
  rw_vec_destroy(&m->dJdy0);
  rw_vec_destroy(&m->Y);
  rw_vec_destroy(&m->L);
  rw_stepper_destroy(&m->st);
  rw_problem_destroy(&m->pair);
  rw_problem_destroy(&m->prob);
  rw_free(&m->theta);
  rw_free(&m->grad);
}

/* Loads this rank's rows of a global batch (y0 and targets, B x D) into the problem (y0 into
 * a device's memory on a device run). */
static int model_load(model *m, const double *y0, const double *targets)
{
  long first, count;
  int D = rw_mlp_dim(&m->arch);
  rw_neuralode_local_batch(m->prob, &first, &count);
  memcpy(rw_neuralode_targets(m->prob), targets + first * D, (size_t)(count * D) * sizeof(double));
  return rw_vec_from_host(m->y, y0 + first * D);
}

/* Loss and gradient at the loaded batch: J, m->grad, m->dJdy0 (y is left at y(T)). With
 * revheun the solve runs on the partnered state (y0, y0). */
static int model_solve(rw_app *app, model *m, double *J, rw_adjoint_stats *stats)
{
  if (!m->pair)
    return rw_app_solve(app, m->prob, m->st, m->y, NULL, NULL, J, m->grad, m->dJdy0, stats);
  RW_CALL(rw_revheun_initial_state(m->y, m->Y));
  RW_CALL(rw_app_solve(app, m->pair, m->st, m->Y, NULL, NULL, J, m->grad, m->L, stats));
  return rw_revheun_initial_adjoint(m->L, m->dJdy0);
}

/* Writes the files of theta_out (the weights) and, with `gradient`, gradient_out (dL/dtheta) on
 * rank 0, after the result file is complete, so that a file that cannot be written loses
 * nothing: each is tried, and a failure names its key and says that the result file holds
 * the numbers. Every rank learns the outcome. Collective. */
static int save_files(rw_app *app, model *m, int gradient)
{
  static const char *out_keys[2] = {"theta_out", "gradient_out"};
  char msg[2400] = "";
  int first = 0;
  for (int k = 0; k < (gradient ? 2 : 1); k++) {
    char path[4096];
    RW_CALL(rw_deck_get_string(app->deck, out_keys[k], path, sizeof path));
    if (!path[0]) continue;
    int ierr = 0;
    if (rw_context_rank(app->ctx) == 0)
      ierr = rw_mlp_file_write(path, k, &m->arch, k ? m->grad : rw_problem_params(m->prob));
    ierr = rw_error_agree(rw_context_comm(app->ctx), ierr);
    if (!ierr) continue;
    char line[1024];
    snprintf(line, sizeof line, "%s", rw_error_message());
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    size_t l = strlen(msg);
    snprintf(msg + l, sizeof msg - l, "%skey '%s' (from %s): %s", l ? "; " : "", out_keys[k],
             rw_deck_source(app->deck, out_keys[k]), line);
    if (!first) first = ierr;
    rw_error_clear();
  }
  if (first)
    return RW_ERROR(first, "%s; the result file '%s' is complete and holds %s", msg, app->output,
                    gradient ? "/model/theta and /gradient/dJdtheta"
                             : "the trained weights (/model/theta)");
  return 0;
}

static int write_model(rw_app *app, model *m)
{
  RW_CALL(rw_output_array(app->out, "/model/theta", rw_problem_params(m->prob), m->P));
  double w[RW_MLP_MAX_LAYERS + 1];
  for (int l = 0; l <= m->arch.nlayers; l++)
    w[l] = m->arch.widths[l];
  RW_CALL(rw_output_array(app->out, "/model/widths", w, m->arch.nlayers + 1));
  RW_CALL(rw_output_attr_string(app->out, "/model/theta", "activation",
                                rw_activation_name(m->arch.activation)));
  RW_CALL(rw_output_attr_long(app->out, "/model/theta", "time_input", m->arch.time_input));
  RW_CALL(rw_output_attr_double(app->out, "/model/theta", "damping", m->arch.damping));
  return 0;
}

/* ---- mode gradient ------------------------------------------------------------------------ */
static int compare_reference(rw_app *app, model *m, double *reldiff)
{
  char path[4096];
  rw_mlp_arch ra;
  double *ref = NULL;
  long P = 0;
  int ierr = 0;
  *reldiff = -1.0;
  RW_CALL(rw_deck_get_string(app->deck, "compare_gradient", path, sizeof path));
  if (!path[0]) return 0;
  if (rw_mlp_load(rw_context_comm(app->ctx), path, 1, &ra, &ref, &P))
    return rw_app_deck_error(app, "compare_gradient");
  RW_CHECK_GOTO(P == m->P && !memcmp(ra.widths, m->arch.widths, sizeof ra.widths), RW_ERR_DECK,
                "key 'compare_gradient': '%s' is the gradient of another architecture (%ld "
                "parameters; this model has %ld)",
                path, P, m->P);
  double d2 = 0.0, r2 = 0.0;
  for (long k = 0; k < P; k++) {
    double d = m->grad[k] - ref[k];
    d2 += d * d;
    r2 += ref[k] * ref[k];
  }
  *reldiff = r2 > 0.0 ? sqrt(d2 / r2) : sqrt(d2);
  RW_TRY(rw_output_attr_double(app->out, "/", "reference_gradient_reldiff", *reldiff));
  RW_TRY(rw_output_attr_string(app->out, "/", "reference_gradient", path));
cleanup:
  rw_free(&ref);
  return ierr;
}

static int run_gradient(rw_app *app, model *m, const dataset *data)
{
  int ierr = 0;
  char path[4096];
  rw_node_problem_file pf;
  memset(&pf, 0, sizeof pf);
  long batch = 0;
  RW_TRY(rw_deck_get_string(app->deck, "problem_file", path, sizeof path));
  if (path[0]) {
    if (rw_node_problem_load(rw_context_comm(app->ctx), path, &pf)) {
      ierr = rw_app_deck_error(app, "problem_file");
      goto cleanup;
    }
    RW_CHECK_GOTO(pf.D == rw_mlp_dim(&m->arch), RW_ERR_DECK,
                  "key 'problem_file': '%s' has state dimension D = %ld, the model d_L = %d", path,
                  pf.D, rw_mlp_dim(&m->arch));
    const char *src = rw_deck_source(app->deck, "tf");
    int set = rw_deck_user_set(app->deck, "tf"); /* the user's own tf */
    RW_CHECK_GOTO(!set || app->opt.tf == app->opt.t0 + pf.T, RW_ERR_DECK,
                  "key 'tf' = %g (from %s) differs from T = %g of problem_file '%s'; leave tf "
                  "out",
                  app->opt.tf, src, pf.T, path);
    app->opt.tf = app->opt.t0 + pf.T;
    batch = pf.B;
  } else {
    RW_CHECK_GOTO(rw_mlp_dim(&m->arch) == 2, RW_ERR_DECK,
                  "the built-in data set is 2-D, the model's state dimension is %d; give a "
                  "problem_file",
                  rw_mlp_dim(&m->arch));
    RW_TRY(rw_deck_get_int(app->deck, "batch", &batch));
    if (batch > data->npts) batch = data->npts;
    pf.B = batch, pf.D = 2, pf.T = data->T;
    pf.y0 = data->start, pf.targets = data->end; /* the first `batch` pairs */
  }
  { /* every rank integrates at least one trajectory (the same answer on every rank) */
    const int size = rw_context_size(app->ctx);
    if (batch < size) {
      if (path[0])
        (void)RW_ERROR(RW_ERR_DECK,
                       "key 'problem_file': '%s' holds B = %ld trajectories, fewer than the %d "
                       "ranks; every rank needs at least one: run on at most %ld rank%s",
                       path, batch, size, batch, batch == 1 ? "" : "s");
      else
        (void)RW_ERROR(
            RW_ERR_DECK,
            "key 'batch' gives %ld trajectories (at most data_points), fewer than the "
            "%d ranks; every rank needs at least one: batch >= %d, or at most %ld rank%s",
            batch, size, size, batch, batch == 1 ? "" : "s");
      ierr = rw_app_deck_error(app, path[0] ? "problem_file" : "batch,data_points");
      goto cleanup;
    }
  }
  RW_TRY(model_create(app, m, batch));
  RW_TRY(model_load(m, pf.y0, pf.targets));
  RW_TRY(rw_app_open_output(app));
  RW_TRY(write_model(app, m));
  double J = 0.0, rel = -1.0;
  rw_adjoint_stats stats;
  RW_TRY(model_solve(app, m, &J, &stats));
  RW_TRY(compare_reference(app, m, &rel));
  if (app->diff_y0) RW_TRY(rw_output_vector(app->out, "/gradient/dJdy0", m->dJdy0));
  RW_TRY(rw_output_attr_double(app->out, "/", "loss", J));
  RW_TRY(rw_app_finish(app, m->prob, J, m->grad, m->dJdy0, &stats));
  rw_log(app->ctx, RW_LOG_SUMMARY, "  loss L = J = %.15e (mean squared error at T = %g)\n", J,
         app->opt.tf - app->opt.t0);
  if (rel >= 0.0)
    rw_log(app->ctx, RW_LOG_SUMMARY, "  reference gradient: |dL/dtheta - ref|_2 / |ref|_2 = %.3e\n",
           rel);
  RW_TRY(save_files(app, m, 1));
cleanup:
  if (path[0]) rw_node_problem_free(&pf);
  return ierr;
}

/* ---- mode train ---------------------------------------------------------------------------- */
/* splitmix64: the mini-batch draws, the same on every rank. */
static uint64_t mix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

typedef struct {
  double lr, b1, b2, eps;
  double *mom, *vel;
  long t;
} adam;

/* One Adam step (Kingma & Ba 2015, Algorithm 1) on theta, replicated on every rank (the
 * gradient is identical on every rank). */
static void adam_step(adam *a, double *theta, const double *g, long P)
{
  a->t++;
  double c1 = 1.0 - pow(a->b1, (double)a->t), c2 = 1.0 - pow(a->b2, (double)a->t);
  for (long k = 0; k < P; k++) {
    a->mom[k] = a->b1 * a->mom[k] + (1.0 - a->b1) * g[k];
    a->vel[k] = a->b2 * a->vel[k] + (1.0 - a->b2) * g[k] * g[k];
    theta[k] -= a->lr * (a->mom[k] / c1) / (sqrt(a->vel[k] / c2) + a->eps);
  }
}

/* The learned and the true trajectory from the data's start over [0, data_span], 100
 * points, on a batch-of-one problem sharing theta (rank 0 holds it). */
static int write_trajectories(rw_app *app, model *m, const dataset *d)
{
  int ierr = 0;
  model one;
  memset(&one, 0, sizeof one);
  one.arch = m->arch;
  one.P = m->P;
  N_Vector yt = NULL;
  RW_TRY(rw_calloc((size_t)m->P, sizeof(double), "MLP weights", &one.theta));
  memcpy(one.theta, rw_problem_params(m->prob), (size_t)m->P * sizeof(double));
  RW_TRY(model_create(app, &one, 1));
  RW_TRY(rw_vec_clone(one.y, &yt));
  double y[2];
  true_start(d->lv, y);
  long first, count;
  rw_neuralode_local_batch(one.prob, &first, &count);
  if (count) RW_TRY(rw_vec_from_host(one.y, y));
  if (one.pair) RW_TRY(rw_revheun_initial_state(one.y, one.Y)); /* (h, h^) = (y0, y0) */
  rw_adjoint_options o;
  rw_adjoint_options_default(&o);
  o.dt = app->opt.dt;
  int K = 100;
  for (int k = 0; k <= K; k++) {
    double t = d->span * k / K, J;
    if (count) RW_TRY(rw_vec_from_host(yt, y));
    RW_TRY(rw_output_series_append(app->out, "/trajectory/true", t, yt));
    RW_TRY(rw_output_series_append(app->out, "/trajectory/model", t, one.y));
    if (k == K) break;
    o.t0 = t;
    o.tf = d->span * (k + 1) / K;
    if (one.pair) { /* the partnered state's first half is h */
      RW_TRY(rw_forward_solve(one.pair, one.st, &o, one.Y, &J, NULL));
      N_Vector h = NULL; /* h is the partnered state's first half */
      RW_TRY(rw_vec_view_create(one.y, &h));
      rw_vec_view_point(h, rw_vec_data(one.Y));
      rw_vec_copy(h, one.y);
      rw_vec_view_destroy(&h);
    } else {
      RW_TRY(rw_forward_solve(one.prob, one.st, &o, one.y, &J, NULL));
    }
    true_advance(d->lv, y, o.tf - o.t0);
  }
cleanup:
  rw_vec_destroy(&yt);
  model_destroy(&one);
  return ierr;
}

static int run_train(rw_app *app, model *m, const dataset *d)
{
  int ierr = 0;
  long batch, epochs, every, seed;
  adam opt = {0};
  double *loss = NULL, *bx = NULL, *bt = NULL;
  RW_CHECK(rw_mlp_dim(&m->arch) == 2, RW_ERR_DECK,
           "mode train learns the built-in 2-D data set; the model's state dimension is %d "
           "(widths, or theta_file)",
           rw_mlp_dim(&m->arch));
  RW_CALL(rw_deck_get_int(app->deck, "batch", &batch));
  RW_CALL(rw_deck_get_int(app->deck, "epochs", &epochs));
  RW_CALL(rw_deck_get_int(app->deck, "print_every", &every));
  RW_CALL(rw_deck_get_int(app->deck, "seed", &seed));
  RW_CALL(rw_deck_get_real(app->deck, "learning_rate", &opt.lr));
  RW_CALL(rw_deck_get_real(app->deck, "adam_beta1", &opt.b1));
  RW_CALL(rw_deck_get_real(app->deck, "adam_beta2", &opt.b2));
  RW_CALL(rw_deck_get_real(app->deck, "adam_eps", &opt.eps));
  RW_CHECK(batch <= d->npts, RW_ERR_DECK,
           "key 'batch' = %ld (from %s) is larger than data_points = %ld", batch,
           rw_deck_source(app->deck, "batch"), d->npts);
  RW_CHECK(batch >= rw_context_size(app->ctx), RW_ERR_DECK,
           "key 'batch' = %ld (from %s) is fewer than the %d ranks; every rank needs at least one "
           "trajectory: batch >= %d, or at most %ld rank%s",
           batch, rw_deck_source(app->deck, "batch"), rw_context_size(app->ctx),
           rw_context_size(app->ctx), batch, batch == 1 ? "" : "s");
  long iters = d->npts / batch; /* mini-batches per epoch */
  RW_TRY(model_create(app, m, batch));
  RW_TRY(rw_app_differentiate(app, m->prob));
  RW_CHECK_GOTO(rw_problem_params_active(m->prob), RW_ERR_DECK,
                "mode train learns theta, so key 'differentiate' (from %s) must list theta, "
                "params or all",
                rw_deck_source(app->deck, "differentiate"));
  RW_TRY(rw_calloc((size_t)m->P, sizeof(double), "Adam moments", &opt.mom));
  RW_TRY(rw_calloc((size_t)m->P, sizeof(double), "Adam moments", &opt.vel));
  RW_TRY(rw_calloc((size_t)(epochs > 0 ? epochs : 1), sizeof(double), "loss history", &loss));
  RW_TRY(rw_calloc((size_t)batch * 2, sizeof(double), "mini-batch", &bx));
  RW_TRY(rw_calloc((size_t)batch * 2, sizeof(double), "mini-batch", &bt));
  RW_TRY(rw_app_open_output(app));
  uint64_t s = (uint64_t)seed ^ 0x5eedULL;
  double J = 0.0, t0 = MPI_Wtime();
  rw_adjoint_stats stats;
  memset(&stats, 0, sizeof stats);
  rw_log(app->ctx, RW_LOG_SUMMARY,
         "rewind-neuralode: training on %s data, %ld pairs, batch %ld on %d ranks, %ld "
         "parameters, %s\n",
         d->lv ? "Lotka-Volterra" : "spiral", d->npts, batch, rw_context_size(app->ctx), m->P,
         app->stepper);
  for (long e = 0; e < epochs; e++) {
    double sum = 0.0;
    for (long it = 0; it < iters; it++) {
      for (long i = 0; i < batch; i++) {
        long j = (long)(mix(&s) % (uint64_t)d->npts);
        memcpy(bx + 2 * i, d->start + 2 * j, 2 * sizeof(double));
        memcpy(bt + 2 * i, d->end + 2 * j, 2 * sizeof(double));
      }
      RW_TRY(model_load(m, bx, bt));
      RW_TRY(model_solve(app, m, &J, &stats));
      sum += J;
      adam_step(&opt, rw_problem_params(m->prob), m->grad, m->P);
    }
    loss[e] = sum / (double)iters;
    if (e == 0 || e == epochs - 1 || (every > 0 && (e + 1) % every == 0))
      rw_log(app->ctx, RW_LOG_SUMMARY, "  epoch %5ld  loss %.6e  (%.1f s)\n", e + 1, loss[e],
             MPI_Wtime() - t0);
  }
  double elapsed = MPI_Wtime() - t0;
  if (epochs > 0) {
    RW_TRY(rw_output_array(app->out, "/train/loss", loss, epochs));
    RW_TRY(rw_output_attr_double(app->out, "/train/loss", "seconds", elapsed));
    RW_TRY(rw_output_attr_long(app->out, "/train/loss", "batches_per_epoch", iters));
  }
  RW_TRY(write_model(app, m));
  RW_TRY(write_trajectories(app, m, d));
  /* the loss and gradient of the trained weights on the last mini-batch */
  RW_TRY(model_load(m, bx, bt));
  RW_TRY(model_solve(app, m, &J, &stats));
  RW_TRY(rw_output_attr_double(app->out, "/", "loss", J));
  RW_TRY(rw_app_finish(app, m->prob, J, m->grad, m->dJdy0, &stats));
  if (epochs > 0)
    rw_log(app->ctx, RW_LOG_SUMMARY,
           "  training: %ld epochs x %ld batches in %.1f s; loss %.4e -> %.4e (%.1fx lower)\n",
           epochs, iters, elapsed, loss[0], loss[epochs - 1], loss[0] / loss[epochs - 1]);
  RW_TRY(save_files(app, m, 0));
cleanup:
  rw_free(&opt.mom);
  rw_free(&opt.vel);
  rw_free(&loss);
  rw_free(&bx);
  rw_free(&bt);
  return ierr;
}

/* ---- start-up checks ------------------------------------------------------------------------ */

/* Refuses `key` when the user set it: it has no effect here (`why` says why). */
static int refuse_unused(rw_app *app, const char *key, const char *why)
{
  if (!rw_deck_user_set(app->deck, key)) return 0;
  return RW_ERROR(RW_ERR_DECK, "key '%s' (from %s) has no effect %s; leave it out", key,
                  rw_deck_source(app->deck, key), why);
}

/* Keys the user set that the mode ignores are refused, as a tf that differs from the problem
 * file's T is: the training keys in mode gradient, the mode-gradient keys in mode train, the
 * data set's keys when problem_file gives the batch, seed when theta_file gives the weights
 * in mode gradient. Defaults (the key table's, the embedded deck's) are never refused.
 * Not collective (every rank reads the same deck and decides alike). */
static int check_mode_keys(rw_app *app, int gradient)
{
  static const char *train_only[] = {"epochs",     "learning_rate", "adam_beta1",
                                     "adam_beta2", "adam_eps",      "print_every"};
  static const char *gradient_only[] = {"problem_file", "compare_gradient", "gradient_out"};
  static const char *data_keys[] = {"data", "data_span", "data_points", "batch"};
  char why[4400], theta[4096], problem[4096];
  RW_CALL(rw_deck_get_string(app->deck, "theta_file", theta, sizeof theta));
  RW_CALL(rw_deck_get_string(app->deck, "problem_file", problem, sizeof problem));
  if (gradient) {
    snprintf(why, sizeof why,
             "in mode gradient (mode from %s): it is a training key, used only by mode train",
             rw_deck_source(app->deck, "mode"));
    for (size_t k = 0; k < sizeof train_only / sizeof *train_only; k++)
      RW_CALL(refuse_unused(app, train_only[k], why));
    if (problem[0]) {
      snprintf(why, sizeof why,
               "with problem_file '%s': the batch (B, D, T, y0, targets) comes from that file, "
               "not from the built-in data set",
               problem);
      for (size_t k = 0; k < sizeof data_keys / sizeof *data_keys; k++)
        RW_CALL(refuse_unused(app, data_keys[k], why));
    }
    if (theta[0]) {
      snprintf(why, sizeof why,
               "in mode gradient with theta_file '%s': seed draws the initial weights, which "
               "come from that file, and the mini-batches of mode train",
               theta);
      RW_CALL(refuse_unused(app, "seed", why));
    }
  } else {
    snprintf(why, sizeof why, "in mode train (mode from %s): it is used only by mode gradient",
             rw_deck_source(app->deck, "mode"));
    for (size_t k = 0; k < sizeof gradient_only / sizeof *gradient_only; k++)
      RW_CALL(refuse_unused(app, gradient_only[k], why));
    /* A restart continues one gradient solve's forward sweep; training runs many of them
     * and keeps no optimiser state on disk, so there is nothing to continue. */
    char dir[4096];
    RW_CALL(rw_deck_get_string(app->deck, "restart_from", dir, sizeof dir));
    RW_CHECK(!dir[0], RW_ERR_DECK,
             "key 'restart_from' = '%s' (from %s): in mode train (mode from %s) a restart is "
             "not possible: it continues the forward sweep of one gradient solve (mode "
             "gradient), and training runs one per mini-batch with no optimiser state on disk; "
             "remove the killed run's files ('rewind-ckpt-*' there) and train again, from saved "
             "weights with theta_file if a run wrote them with theta_out",
             dir, rw_deck_source(app->deck, "restart_from"), rw_deck_source(app->deck, "mode"));
  }
  return 0;
}

/* With theta_file, the architecture comes from the file: the keys widths, activation,
 * time_input and damping, where the user set them, must agree with it (like tf with a
 * problem file). Not collective (every rank holds the same architecture and deck). */
static int check_arch_keys(rw_app *app, const rw_mlp_arch *a)
{
  char theta[4096], file[512], given[512] = "";
  const char *key = NULL;
  RW_CALL(rw_deck_get_string(app->deck, "theta_file", theta, sizeof theta));
  if (!theta[0]) return 0;
  if (rw_deck_user_set(app->deck, "widths")) {
    double w[RW_MLP_MAX_LAYERS + 1];
    int n = RW_MLP_MAX_LAYERS + 1, same;
    RW_CALL(rw_deck_get_real_array(app->deck, "widths", w, &n));
    same = n == a->nlayers + 1;
    for (int l = 0; same && l < n; l++)
      same = w[l] == a->widths[l];
    if (!same) {
      key = "widths";
      RW_CALL(rw_deck_get_string(app->deck, "widths", given, sizeof given));
    }
  }
  if (!key && rw_deck_user_set(app->deck, "activation")) {
    RW_CALL(rw_deck_get_string(app->deck, "activation", given, sizeof given));
    if (rw_activation_parse(given) != (int)a->activation) key = "activation";
  }
  if (!key && rw_deck_user_set(app->deck, "time_input")) {
    int ti = 0;
    RW_CALL(rw_deck_get_bool(app->deck, "time_input", &ti));
    if (!ti != !a->time_input) {
      key = "time_input";
      snprintf(given, sizeof given, "%s", ti ? "true" : "false");
    }
  }
  if (!key && rw_deck_user_set(app->deck, "damping")) {
    double c = 0.0;
    RW_CALL(rw_deck_get_real(app->deck, "damping", &c));
    if (c != a->damping) {
      key = "damping";
      snprintf(given, sizeof given, "%g", c);
    }
  }
  if (!key) return 0;
  int len = snprintf(file, sizeof file, "widths ");
  for (int l = 0; l <= a->nlayers && len < (int)sizeof file; l++)
    len += snprintf(file + len, sizeof file - (size_t)len, "%s%d", l ? "," : "", a->widths[l]);
  if (len < (int)sizeof file)
    snprintf(file + len, sizeof file - (size_t)len, ", activation %s, time_input %s, damping %g",
             rw_activation_name(a->activation), a->time_input ? "true" : "false", a->damping);
  return RW_ERROR(RW_ERR_DECK,
                  "key '%s' = %s (from %s) differs from the architecture of theta_file '%s' "
                  "(%s), which the run uses; leave %s out",
                  key, given, rw_deck_source(app->deck, key), theta, file, key);
}

static int run(rw_app *app)
{
  int ierr = 0;
  char mode[16];
  long threads = 1;
  model m;
  dataset d;
  memset(&m, 0, sizeof m);
  memset(&d, 0, sizeof d);
  m.app = app;
  RW_TRY(rw_deck_get_string(app->deck, "mode", mode, sizeof mode));
  {
    /* a neural SDE needs both an SDE stepper and noise, and noise needs an SDE stepper */
    double amp = 0.0;
    RW_TRY(rw_deck_get_real(app->deck, "noise_amplitude", &amp));
    int sde = rw_sde_method_known(app->stepper), rh = strcmp(app->stepper, "revheun") == 0;
    if (!rh && sde != (amp > 0.0)) {
      if (sde)
        (void)RW_ERROR(RW_ERR_DECK,
                       "stepper %s draws noise, and noise_amplitude is %g; set noise_amplitude > "
                       "0 for a neural SDE, or use an ODE stepper",
                       app->stepper, amp);
      else
        (void)RW_ERROR(RW_ERR_DECK,
                       "noise_amplitude %g asks for a neural SDE, and stepper %s is an ODE "
                       "stepper; use em, sheun or revheun, or noise_amplitude 0",
                       amp, app->stepper);
      ierr = rw_app_deck_error(app, "stepper,noise_amplitude");
      goto cleanup;
    }
  }
  RW_TRY(rw_deck_get_int(app->deck, "blas_threads", &threads));
  RW_TRY(rw_blas_set_threads((int)threads));
  {
    char line[160];
    rw_blas_describe(line, sizeof line);
    rw_log(app->ctx, RW_LOG_SUMMARY, "  BLAS: %s, %ld thread%s\n", line, threads,
           threads == 1 ? "" : "s");
    rw_log(app->ctx, RW_LOG_SUMMARY, "  small products: %s\n", rw_blas_small_describe(threads));
    /* said even when the hidden layers go to LIBXSMM: the JVP, wide layers with threads and a
     * build without LIBXSMM run on OpenBLAS */
    const char *advice = rw_blas_advice();
    if (advice && rw_context_rank(app->ctx) == 0) fprintf(stderr, "warning: %s\n", advice);
  }
  RW_TRY(check_mode_keys(app, strcmp(mode, "gradient") == 0));
  {
    /* an output that is an input or another output (the kit checked `output` against the
     * deck files) */
    static const char *const outs[] = {"theta_out", "gradient_out"};
    static const char *const ins[] = {"theta_file", "problem_file", "compare_gradient"};
    RW_TRY(rw_app_check_paths(app, outs, 2, ins, 3));
  }
  RW_TRY(model_weights(app, &m));
  RW_TRY(check_arch_keys(app, &m.arch));
  /* the files written at the end can be written: checked before any work */
  for (int k = 0; k < 2; k++) {
    const char *key = k ? "gradient_out" : "theta_out";
    char path[4096];
    RW_TRY(rw_deck_get_string(app->deck, key, path, sizeof path));
    if (path[0] && rw_output_check_path(rw_context_comm(app->ctx), path)) {
      ierr = rw_app_deck_error(app, key);
      goto cleanup;
    }
  }
  RW_TRY(dataset_create(app->deck, app->opt.tf - app->opt.t0, &d));
  if (strcmp(mode, "gradient") == 0)
    RW_TRY(run_gradient(app, &m, &d));
  else
    RW_TRY(run_train(app, &m, &d));
cleanup:
  model_destroy(&m);
  dataset_destroy(&d);
  return ierr;
}

int main(int argc, char **argv)
{
  static const rw_app_info info = {
      "rewind-neuralode",
      "neural ODEs (MLP vector fields, batches over ranks): training and dL/dtheta",
      keys,
      (int)(sizeof keys / sizeof keys[0]),
      rw_app_default_deck,
      run,
      1};
  return rw_app_main(argc, argv, &info);
}
