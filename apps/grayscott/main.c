/* rewind-grayscott: Gray-Scott reaction-diffusion (Pearson 1993) on a periodic square or cube
 * distributed over MPI ranks, with the discrete adjoint: dJ/d(D_u, D_v, gamma, kappa) and
 * dJ/d(u0, v0) as fields.
 *
 *   mpirun -n 4 rewind-grayscott [deck.yaml|deck.opts] [-key value ...]
 *
 * With no deck, the embedded default deck (default.yaml) runs the set-up of PETSc's TSAdjoint
 * tutorial src/ts/tutorials/advection-diffusion-reaction/ex5adj.c (128 x 128, RK4, dt 0.5,
 * 500 steps, J = u + v at node (63, 63) at T), so users can compare. Writes an HDF5 file:
 * the initial and final states (/state/initial, /state/final: one dataset per component u,
 * v), snapshots every output_every steps (/snapshots/NNNNNN), dJ/d(u0, v0) (/gradient/dJdy0),
 * the scalar gradients and the run statistics, and prints a summary on stdout. The keys
 * every app shares (stepper, time grid, adjoint and checkpoint settings, output) come from
 * the app kit (rw_app.h). */
#include "app_default_deck.h"
#include "rewind/rw_app.h"
#include "rewind/rw_grayscott.h"
#include "rewind/rw_stability.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const rw_deck_key keys[] = {
    RW_APP_PROCESS_GRID_KEY,
    {"stepper", RW_KEY_ENUM, "rk4", NULL, 0, 0, 0, "euler,heun,ssprk3,rk4,rk38,dopri5,em,sheun", 0,
     "time stepper: explicit Runge-Kutta, or with noise_amplitude > 0 an SDE stepper: em "
     "(Euler-Maruyama, Ito) or sheun (stochastic Heun, Stratonovich)"},
    {"N", RW_KEY_INT, "128", "nodes", 4, 1e6, 0, NULL, 0,
     "grid nodes per dimension (N x N, or N^3 with dim 3)"},
    {"dim", RW_KEY_INT, "2", NULL, 2, 3, 0, NULL, 0, "spatial dimension: 2 (square) or 3 (cube)"},
    {"L", RW_KEY_REAL, "2.5", "length", 0, 1e300, 1, NULL, 0,
     "side of the periodic domain [0, L)^dim; node i sits at i L / N"},
    {"D_u", RW_KEY_REAL, "8e-5", NULL, 0, 1e300, 0, NULL, 0, "diffusivity of u"},
    {"D_v", RW_KEY_REAL, "4e-5", NULL, 0, 1e300, 0, NULL, 0, "diffusivity of v"},
    {"gamma", RW_KEY_REAL, "0.024", NULL, -1e300, 1e300, 0, NULL, 0, "feed rate gamma"},
    {"kappa", RW_KEY_REAL, "0.06", NULL, -1e300, 1e300, 0, NULL, 0, "kill rate kappa"},
    {"objective", RW_KEY_ENUM, "point", NULL, 0, 0, 0, "point,u2", 0,
     "point: J = u + v at objective_node at T; u2: J = integral of u(T)^2"},
    {"objective_node", RW_KEY_REAL_ARRAY, NULL, NULL, 0, 1e9, 0, NULL, 3,
     "point objective: global node indices i,j[,k] (default N/2-1 in each dimension)"},
    {"tf", RW_KEY_REAL, "250.0", "time", -1e300, 1e300, 0, NULL, 0, "final time T (> t0)"},
    {"dt", RW_KEY_REAL, "0.5", "time", 0, 1e300, 1, NULL, 0,
     "step size; the last step is shortened to land on tf"},
    {"output", RW_KEY_STRING, "rewind-grayscott.h5", NULL, 0, 0, 0, NULL, 0,
     "HDF5 result file (written as <output>.partial, renamed when complete)"},
    {"output_every", RW_KEY_INT, "50", "steps", 0, 1e12, 0, NULL, 0,
     "write a snapshot of (u, v) every k steps (0: initial and final state only)"},
    {"noise_amplitude", RW_KEY_REAL, "0.0", NULL, 0, 1e300, 0, NULL, 0,
     "sigma of additive space-time white noise sigma dW(x, t) on the species noise_species: "
     "each node's increment over a step dt has variance sigma^2 dt / h^dim; 0 = deterministic, "
     "> 0 needs stepper em or sheun (not differentiated)"},
    {"noise_seed", RW_KEY_INT, "0", NULL, 0, 1e18, 0, NULL, 0,
     "seed of the noise (Philox key); the gradient is pathwise, for this seed's path"},
    {"noise_species", RW_KEY_ENUM, "uv", NULL, 0, 0, 0, "uv,u,v", 0,
     "species the noise forces: uv (both, independent), u or v"},
    {"stability_check", RW_KEY_ENUM, "error", NULL, 0, 0, 0, "error,warn,off", 0,
     "dt above the stepper's explicit stability limit (diffusion 4 dim max(D_u, D_v) / h^2 "
     "plus the linear reaction rates): error refuses to run, warn runs and says by how much"},
};

/* The forward sweep stops early when max |u|, |v| is not finite or above this factor times
 * max(1, its initial value) (the exact solution stays in [0, 1]); tested every few steps. */
#define BLOWUP_FACTOR 1e6
#define BLOWUP_EVERY  10

static const char *const comps[] = {"u", "v"};

typedef struct {
  rw_app *app;
  rw_grid grid;
  double bound; /* blow-up bound on max |y| */
} monitor_ctx;

/* The blow-up test and snapshots of the first forward sweep (the driver never calls it
 * during recomputation). */
static int monitor(void *c, long n, double t, N_Vector y)
{
  monitor_ctx *m = c;
  long every = m->app->output_every;
  if (n % BLOWUP_EVERY == 0 || n == m->app->nsteps)
    RW_CALL(rw_state_check_blowup(y, m->bound, n, t, m->app->opt.dt));
  if (every > 0 && (n % every == 0 || n == m->app->nsteps))
    RW_CALL(rw_output_grid_snapshot(m->app->out, m->grid, t, y, comps));
  return 0;
}

static int run(rw_app *app)
{
  int ierr = 0;
  rw_deck deck = app->deck;
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL, dJdy0 = NULL;
  char objname[16];
  double node[3] = {-1, -1, -1}, dJdp[4] = {0}, J = 0.0;
  double rho = 0.0, limit = INFINITY, y0max = 0.0;
  char smode[8], species[8];
  int nnode = 3, sde = 0;
  long dim = 2, seed = 0;
  double amp = 0.0;
  rw_gs_config cfg;
  rw_adjoint_stats stats;

  rw_gs_config_default(&cfg);
  RW_TRY(rw_deck_get_int(deck, "N", &cfg.n));
  RW_TRY(rw_deck_get_int(deck, "dim", &dim));
  cfg.dim = (int)dim;
  RW_TRY(rw_deck_get_real(deck, "L", &cfg.length));
  RW_TRY(rw_deck_get_string(deck, "objective", objname, sizeof objname));
  RW_TRY(rw_gs_objective_from_name(objname, &cfg.objective));
  RW_TRY(rw_deck_get_string(deck, "noise_species", species, sizeof species));
  RW_TRY(rw_gs_noise_from_name(species, &cfg.noise));
  RW_TRY(rw_deck_get_real_array(deck, "objective_node", node, &nnode));
  if (nnode > 0) {
    RW_CHECK_GOTO(nnode == cfg.dim, RW_ERR_DECK,
                  "key 'objective_node' (from %s) has %d indices; dim = %d needs %d",
                  rw_deck_source(deck, "objective_node"), nnode, cfg.dim, cfg.dim);
    for (int d = 0; d < cfg.dim; d++) {
      RW_CHECK_GOTO(node[d] == floor(node[d]) && node[d] < (double)cfg.n, RW_ERR_DECK,
                    "key 'objective_node' (from %s): index %g must be an integer in 0..%ld "
                    "(N - 1)",
                    rw_deck_source(deck, "objective_node"), node[d], cfg.n - 1);
      cfg.point[d] = (long)node[d];
    }
  }
  RW_TRY(rw_app_process_grid(app, cfg.dim, cfg.procs));
  /* Grid errors (too many ranks for N) are the deck's: every rank reaches them alike. */
  if ((ierr = rw_gs_problem_create(app->ctx, &cfg, &prob)) != 0) {
    ierr = rw_app_deck_error(app, "N,dim,process_grid");
    goto cleanup;
  }
  for (int k = 0; k < rw_problem_nparams(prob); k++)
    RW_TRY(rw_deck_get_real(deck, rw_problem_param_name(prob, k), &rw_problem_params(prob)[k]));
  /* Explicit stability, before the states are allocated and anything is written (adaptive
   * steps find their own size): a deck's dt too large is told at once, also on a large grid. */
  RW_TRY(rw_deck_get_string(deck, "stability_check", smode, sizeof smode));
  RW_TRY(rw_gs_eigen_bound(prob, &rho));
  RW_TRY(rw_stability_check_dt(app->ctx, rw_app_stability_tableau(app), app->opt.dt,
                               app->opt.tf - app->opt.t0, rw_deck_source(deck, "dt"), rho,
                               "4 dim max(D_u, D_v) / h^2 + max(|gamma|, |gamma + kappa|)",
                               app->opt.adaptive || strcmp(smode, "off") == 0 ? RW_STABILITY_OFF
                               : strcmp(smode, "warn") == 0                   ? RW_STABILITY_WARN
                                                                              : RW_STABILITY_ERROR,
                               &limit));
  RW_TRY(rw_app_noise(app, prob, &sde, &amp, &seed));
  RW_TRY(rw_app_create_stepper(app, prob, &st));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_problem_new_state(prob, &dJdy0));
  RW_TRY(rw_gs_initial_state(prob, y));
  rw_grid grid = rw_gs_grid(prob);
  app->grid = grid;
  RW_TRY(rw_state_max_abs(y, &y0max));
  long pt[3];
  rw_gs_point(prob, pt);

  /* Output opens before the run: an unwritable path fails in seconds, not after the run. */
  RW_TRY(rw_app_open_output(app));
  RW_TRY(rw_output_attr_string(app->out, "/", "problem", "grayscott"));
  RW_TRY(rw_output_attr_string(app->out, "/", "objective", objname));
  RW_TRY(rw_output_attr_long(app->out, "/", "N", cfg.n));
  RW_TRY(rw_output_attr_long(app->out, "/", "dim", cfg.dim));
  RW_TRY(rw_output_attr_double(app->out, "/", "L", cfg.length));
  RW_TRY(rw_output_attr_double(app->out, "/", "stability_limit_dt", limit));
  RW_TRY(rw_output_attr_double(app->out, "/", "noise_amplitude", amp));
  RW_TRY(rw_output_attr_long(app->out, "/", "noise_seed", seed));
  RW_TRY(rw_output_attr_string(app->out, "/", "noise_species", species));
  if (cfg.objective == RW_GS_POINT) {
    RW_TRY(rw_output_attr_long(app->out, "/", "objective_node_i", pt[0]));
    RW_TRY(rw_output_attr_long(app->out, "/", "objective_node_j", pt[1]));
    if (cfg.dim == 3) RW_TRY(rw_output_attr_long(app->out, "/", "objective_node_k", pt[2]));
  }
  RW_TRY(rw_output_grid_field(app->out, "/state/initial", grid, y, comps, 1));
  RW_TRY(rw_output_attr_double(app->out, "/state/initial", "t", app->opt.t0));
  {
    int dims[3], coords[3];
    rw_grid_topology(grid, dims, coords);
    char shape[64];
    if (cfg.dim == 3)
      snprintf(shape, sizeof shape, "%ld^3", cfg.n);
    else
      snprintf(shape, sizeof shape, "%ld x %ld", cfg.n, cfg.n);
    char obj[96];
    if (cfg.objective == RW_GS_POINT && cfg.dim == 3)
      snprintf(obj, sizeof obj, "u + v at node (%ld, %ld, %ld)", pt[0], pt[1], pt[2]);
    else if (cfg.objective == RW_GS_POINT)
      snprintf(obj, sizeof obj, "u + v at node (%ld, %ld)", pt[0], pt[1]);
    else
      snprintf(obj, sizeof obj, "integral of u^2");
    char procs[64];
    if (cfg.dim == 3)
      snprintf(procs, sizeof procs, "%d x %d x %d", dims[0], dims[1], dims[2]);
    else
      snprintf(procs, sizeof procs, "%d x %d", dims[0], dims[1]);
    rw_log(app->ctx, RW_LOG_SUMMARY,
           "%s: %s grid on %s ranks, h = %g, J = %s at T = %g, dt = %g (stability limit %.4g "
           "with %s)\n",
           app->info->name, shape, procs, cfg.length / (double)cfg.n, obj, app->opt.tf, app->opt.dt,
           limit, app->stepper);
    double h = cfg.length / (double)cfg.n;
    if (amp > 0.0)
      rw_log(app->ctx, RW_LOG_SUMMARY,
             "  noise: space-time white noise on %s, amplitude sigma = %g, seed %ld: node "
             "increment sigma h^(-%d/2) sqrt(dt) z, std %.4g per step of %g\n",
             cfg.noise == RW_GS_NOISE_UV  ? "u and v"
             : cfg.noise == RW_GS_NOISE_U ? "u"
                                          : "v",
             amp, seed, cfg.dim, amp * sqrt(app->opt.dt / pow(h, cfg.dim)), app->opt.dt);
    else if (sde)
      rw_log(app->ctx, RW_LOG_SUMMARY,
             "  noise: none (noise_amplitude 0): %s is the deterministic %s scheme\n", app->stepper,
             strcmp(app->stepper, "em") == 0 ? "Euler" : "Heun");
  }
  monitor_ctx mctx = {app, grid, BLOWUP_FACTOR * fmax(1.0, y0max)};
  RW_TRY(rw_app_solve(app, prob, st, y, monitor, &mctx, &J, dJdp, dJdy0, &stats));

  RW_TRY(rw_output_grid_field(app->out, "/state/final", grid, y, comps, 1));
  RW_TRY(rw_output_attr_double(app->out, "/state/final", "t", app->opt.tf));
  if (app->diff_y0)
    RW_TRY(rw_output_grid_field(app->out, "/gradient/dJdy0", grid, dJdy0, comps, 1));
  RW_TRY(rw_app_finish(app, prob, J, dJdp, dJdy0, &stats));
cleanup:
  rw_vec_destroy(&y);
  rw_vec_destroy(&dJdy0);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  return ierr;
}

int main(int argc, char **argv)
{
  static const rw_app_info info = {
      "rewind-grayscott",
      "Gray-Scott reaction-diffusion (PETSc ex5adj set-up) with adjoint sensitivities",
      keys,
      (int)(sizeof keys / sizeof keys[0]),
      rw_app_default_deck,
      run,
      1};
  return rw_app_main(argc, argv, &info);
}
