/* rewind-burgers: the 2-D viscous Burgers equation u_t + (u^2/2)_x + (u^2/2)_y = nu lap u on a
 * periodic square, distributed over MPI ranks, with initial-condition sensitivity: the
 * gradient field dJ/du0 of J = 1/2 integral (u(T) - u_target)^2 dx, u_target = the initial
 * profile moved by target_shift, and dJ/dnu.
 *
 *   mpirun -n 4 rewind-burgers [deck.yaml|deck.opts] [-key value ...]
 *
 * The model and its discretisation are in rw_burgers.h; any explicit RK stepper integrates
 * it (key `stepper`). Writes an HDF5 file: the initial state, the target, snapshots every
 * output_every steps, the final state, dJ/du0 (/gradient/dJdy0/u), dJ/dnu and the run
 * statistics, and prints a summary on stdout. */
#include "app_default_deck.h"
#include "rewind/rw_app.h"
#include "rewind/rw_burgers.h"
#include "rewind/rw_stability.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const rw_deck_key keys[] = {
    RW_APP_PROCESS_GRID_KEY,
    {"N", RW_KEY_INT, "64", "nodes", 3, 1e6, 0, NULL, 0, "grid nodes per dimension (N x N)"},
    {"L", RW_KEY_REAL, "1.0", "length", 0, 1e300, 1, NULL, 0,
     "side of the periodic domain [0, L)^2; node i sits at i L / N"},
    {"nu", RW_KEY_REAL, "0.02", NULL, 0, 1e300, 0, NULL, 0, "viscosity nu (>= 0; a parameter)"},
    {"profile_offset", RW_KEY_REAL, "0.5", NULL, -1e300, 1e300, 0, NULL, 0,
     "u0 = offset + amplitude exp(-|x - center|^2 / (2 width^2)) (periodic distance)"},
    {"profile_amplitude", RW_KEY_REAL, "1.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "height of the initial bump"},
    {"profile_center", RW_KEY_REAL_ARRAY, "0.35,0.35", "length", -1e300, 1e300, 0, NULL, 2,
     "centre (x, y) of the initial bump"},
    {"profile_width", RW_KEY_REAL, "0.08", "length", 0, 1e300, 1, NULL, 0,
     "width of the initial bump"},
    {"target_shift", RW_KEY_REAL_ARRAY, "0.1,0.1", "length", -1e300, 1e300, 0, NULL, 2,
     "u_target = u0 moved by this shift (x, y)"},
    {"tf", RW_KEY_REAL, "0.5", "time", -1e300, 1e300, 0, NULL, 0, "final time T (> t0)"},
    {"dt", RW_KEY_REAL, "0.002", "time", 0, 1e300, 1, NULL, 0,
     "step size; the last step is shortened to land on tf"},
    {"output", RW_KEY_STRING, "rewind-burgers.h5", NULL, 0, 0, 0, NULL, 0,
     "HDF5 result file (written as <output>.partial, renamed when complete)"},
    {"output_every", RW_KEY_INT, "25", "steps", 0, 1e12, 0, NULL, 0,
     "write a snapshot of u every k steps (0: none)"},
    {"stability_check", RW_KEY_ENUM, "error", NULL, 0, 0, 0, "error,warn,off", 0,
     "dt above the stepper's explicit stability limit (diffusion 8 nu / h^2 plus advection "
     "2 max|u0| / h): error refuses to run, warn runs and says by how much"},
};

/* The forward sweep stops early when max |u| is not finite or above this factor times
 * max(1, max |u0|) (viscous Burgers keeps max |u| <= max |u0|); tested every few steps. */
#define BLOWUP_FACTOR 1e6
#define BLOWUP_EVERY  10

static const char *const comps[] = {"u"};

typedef struct {
  rw_app *app;
  rw_grid grid;
  double bound; /* blow-up bound on max |u| */
} monitor_ctx;

/* The blow-up test and snapshots of the first forward sweep. */
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
  double dJdp[1] = {0.0}, J = 0.0, L = 1.0;
  double rho = 0.0, limit = INFINITY, y0max = 0.0;
  char smode[8];
  long N = 0;
  int nc = 2, ns = 2;
  rw_burgers_config cfg;
  rw_adjoint_stats stats;
  memset(&cfg, 0, sizeof cfg);

  RW_TRY(rw_deck_get_int(deck, "N", &N));
  RW_TRY(rw_deck_get_real(deck, "L", &L));
  RW_TRY(rw_deck_get_real(deck, "nu", &cfg.nu));
  RW_TRY(rw_deck_get_real(deck, "profile_offset", &cfg.offset));
  RW_TRY(rw_deck_get_real(deck, "profile_amplitude", &cfg.amplitude));
  RW_TRY(rw_deck_get_real(deck, "profile_width", &cfg.width));
  RW_TRY(rw_deck_get_real_array(deck, "profile_center", cfg.center, &nc));
  RW_TRY(rw_deck_get_real_array(deck, "target_shift", cfg.shift, &ns));
  RW_CHECK_GOTO(nc == 2 && ns == 2, RW_ERR_DECK,
                "keys 'profile_center' (from %s) and 'target_shift' (from %s) need two values "
                "x,y; got %d and %d",
                rw_deck_source(deck, "profile_center"), rw_deck_source(deck, "target_shift"), nc,
                ns);
  cfg.n[0] = cfg.n[1] = N;
  cfg.hi[0] = cfg.hi[1] = L;
  RW_TRY(rw_app_process_grid(app, 2, cfg.procs));
  /* Grid errors (too many ranks for N) are the deck's: every rank reaches them alike. */
  if ((ierr = rw_burgers_problem_create(app->ctx, &cfg, &prob)) != 0) {
    ierr = rw_app_deck_error(app, "N,L,profile_width,process_grid");
    goto cleanup;
  }
  RW_TRY(rw_problem_new_state(prob, &y)); /* the stability check reads max|u0| */
  RW_TRY(rw_burgers_initial_state(prob, y));
  rw_grid grid = rw_burgers_grid(prob);
  app->grid = grid;
  /* Explicit stability, before anything is written (adaptive steps find their own size). */
  RW_TRY(rw_deck_get_string(deck, "stability_check", smode, sizeof smode));
  RW_TRY(rw_burgers_eigen_bound(prob, y, &rho));
  RW_TRY(rw_stability_check_dt(app->ctx, rw_tableau_find(app->stepper), app->opt.dt,
                               app->opt.tf - app->opt.t0, rw_deck_source(deck, "dt"), rho,
                               "4 nu (1/hx^2 + 1/hy^2) + max|u0| (1/hx + 1/hy)",
                               app->opt.adaptive || strcmp(smode, "off") == 0 ? RW_STABILITY_OFF
                               : strcmp(smode, "warn") == 0                   ? RW_STABILITY_WARN
                                                                              : RW_STABILITY_ERROR,
                               &limit));
  RW_TRY(rw_stepper_create_erk(prob, rw_tableau_find(app->stepper), &st));
  RW_TRY(rw_problem_new_state(prob, &dJdy0));
  RW_TRY(rw_state_max_abs(y, &y0max));

  /* Output opens before the run: an unwritable path fails in seconds, not after the run. */
  RW_TRY(rw_app_open_output(app));
  RW_TRY(rw_output_attr_string(app->out, "/", "problem", "burgers"));
  RW_TRY(rw_output_attr_long(app->out, "/", "N", N));
  RW_TRY(rw_output_attr_double(app->out, "/", "L", L));
  RW_TRY(rw_output_attr_double(app->out, "/", "stability_limit_dt", limit));
  RW_TRY(rw_output_grid_field(app->out, "/state/initial", grid, y, comps, 1));
  RW_TRY(rw_output_attr_double(app->out, "/state/initial", "t", app->opt.t0));
  RW_TRY(rw_output_grid_field(app->out, "/target", grid, rw_burgers_target(prob), comps, 1));
  {
    int dims[3], coords[3];
    rw_grid_topology(grid, dims, coords);
    double umax = fabs(cfg.offset) + fabs(cfg.amplitude), h = L / (double)N;
    rw_log(app->ctx, RW_LOG_SUMMARY,
           "%s: %ld x %ld periodic grid on %d x %d ranks, h = %g, nu = %g (cell Reynolds number "
           "%.2g), %s, dt = %g (stability limit %.4g), J = 1/2 |u(T) - u0(x - (%g, %g))|^2\n",
           app->info->name, N, N, dims[0], dims[1], h, cfg.nu,
           cfg.nu > 0.0 ? umax * h / cfg.nu : INFINITY, app->stepper, app->opt.dt, limit,
           cfg.shift[0], cfg.shift[1]);
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
      "rewind-burgers",
      "2-D viscous Burgers equation with initial-condition sensitivity dJ/du0",
      keys,
      (int)(sizeof keys / sizeof keys[0]),
      rw_app_default_deck,
      run,
      1};
  return rw_app_main(argc, argv, &info);
}
