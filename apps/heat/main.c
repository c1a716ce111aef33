/* rewind-heat: diffusion u_t = div(kappa(x) grad u) + q s(x) on a distributed 2-D or 3-D
 * grid, with the sensitivity of a sensor misfit to the conductivity field kappa(x).
 *
 *   mpirun -n 4 rewind-heat [deck.yaml] [-key value ...]
 *
 * The run: (1) a forward run with the "true" conductivity (a Gaussian bump over a background)
 * records u at the sensors at every step: that is the data, linearly interpolated in time;
 * (2) the forward and adjoint solve from kappa_init (uniform), J = 1/2 sum_s int (u(x_s, t) -
 * d_s(t))^2 dt; (3) output: kappa, kappa_true, u(T), dJ/dkappa and dJ/dy0 as grid fields,
 * snapshots of u every output_every steps, the sensor data, dJ/dsource and the statistics,
 * and the summary on stdout. With no deck the embedded default deck (default.yaml) runs. */
#include "app_default_deck.h"
#include "rewind/rw_app.h"
#include "rewind/rw_heat.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HEAT_MAX_COORDS (3 * 1024)

static const rw_deck_key keys[] = {
    RW_APP_PROCESS_GRID_KEY,
    {"stepper", RW_KEY_ENUM, "rk4", NULL, 0, 0, 0, "euler,heun,ssprk3,rk4,rk38,dopri5,em,sheun", 0,
     "time stepper: explicit Runge-Kutta, or with noise_amplitude > 0 an SDE stepper: em "
     "(Euler-Maruyama, Ito) or sheun (stochastic Heun, Stratonovich)"},
    {"dim", RW_KEY_INT, "2", NULL, 2, 3, 0, NULL, 0, "space dimension (2 or 3)"},
    {"n", RW_KEY_INT, "64", "nodes", 3, 1e6, 0, NULL, 0, "grid nodes per dimension"},
    {"length", RW_KEY_REAL, "1.0", NULL, 0, 1e300, 1, NULL, 0,
     "domain [0, length] in every dimension"},
    {"boundary", RW_KEY_ENUM, "dirichlet", NULL, 0, 0, 0, "dirichlet,neumann,periodic", 0,
     "boundary condition on every side (Dirichlet: u = boundary_value one node outside)"},
    {"boundary_value", RW_KEY_REAL, "0.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "Dirichlet boundary value u_b"},
    {"kappa_init", RW_KEY_REAL, "0.01", NULL, 0, 1e300, 1, NULL, 0,
     "uniform conductivity the gradient is taken at"},
    {"kappa_true_background", RW_KEY_REAL, "0.01", NULL, 0, 1e300, 1, NULL, 0,
     "true conductivity (makes the data): background"},
    {"kappa_true_amplitude", RW_KEY_REAL, "0.01", NULL, -1e300, 1e300, 0, NULL, 0,
     "true conductivity: amplitude of the Gaussian bump"},
    {"kappa_true_center", RW_KEY_REAL_ARRAY, "0.35,0.6,0.5", NULL, -1e300, 1e300, 0, NULL, 3,
     "true conductivity: centre of the bump (dim values)"},
    {"kappa_true_width", RW_KEY_REAL, "0.12", NULL, 0, 1e300, 1, NULL, 0,
     "true conductivity: width (standard deviation) of the bump"},
    {"u0_background", RW_KEY_REAL, "0.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "initial state: background"},
    {"u0_amplitude", RW_KEY_REAL, "1.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "initial state: amplitude of the Gaussian"},
    {"u0_center", RW_KEY_REAL_ARRAY, "0.5,0.5,0.5", NULL, -1e300, 1e300, 0, NULL, 3,
     "initial state: centre of the Gaussian (dim values)"},
    {"u0_width", RW_KEY_REAL, "0.2", NULL, 0, 1e300, 1, NULL, 0,
     "initial state: width of the Gaussian"},
    {"source_amplitude", RW_KEY_REAL, "0.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "source amplitude q (the scalar parameter 'source') in u_t = div(kappa grad u) + q s(x)"},
    {"source_center", RW_KEY_REAL_ARRAY, "0.5,0.5,0.5", NULL, -1e300, 1e300, 0, NULL, 3,
     "source shape s(x): centre (dim values)"},
    {"source_width", RW_KEY_REAL, "0.1", NULL, 0, 1e300, 1, NULL, 0, "source shape: width"},
    {"sensors", RW_KEY_INT, "9", NULL, 1, RW_HEAT_MAX_SENSORS, 0, NULL, 0,
     "number of sensors on a regular sub-grid (ignored when sensor_coords is set)"},
    {"sensor_coords", RW_KEY_REAL_ARRAY, NULL, NULL, -1e300, 1e300, 0, NULL, HEAT_MAX_COORDS,
     "explicit sensor coordinates x1,y1[,z1],x2,... (snapped to the nearest node)"},
    {"noise_amplitude", RW_KEY_REAL, "0.0", NULL, 0, 1e300, 0, NULL, 0,
     "sigma of additive space-time white noise sigma dW(x, t): each node's increment over a "
     "step dt has variance sigma^2 dt / h^dim (twice that per dimension in which a Neumann "
     "node is on the boundary); 0 = deterministic, > 0 needs stepper em or sheun; the data run "
     "uses the same noise path (not differentiated)"},
    {"noise_seed", RW_KEY_INT, "0", NULL, 0, 1e18, 0, NULL, 0,
     "seed of the noise (Philox key); the gradient is pathwise, for this seed's path"},
    {"tf", RW_KEY_REAL, "1.0", "time", -1e300, 1e300, 0, NULL, 0, "final time T (> t0)"},
    {"dt", RW_KEY_REAL, "2.5e-3", "time", 0, 1e300, 1, NULL, 0,
     "step size; must not exceed the explicit stability limit h^2 / (2 dim kappa_max)"},
    {"output", RW_KEY_STRING, "rewind-heat.h5", NULL, 0, 0, 0, NULL, 0,
     "HDF5 result file (written as <output>.partial, renamed when complete)"},
    {"output_every", RW_KEY_INT, "50", "steps", 0, 1e12, 0, NULL, 0,
     "snapshot of u every k steps (0: none)"},
};

static const char *const u_name[] = {"u"};

typedef struct {
  rw_app *app;
  rw_problem prob;
} monitor_ctx;

/* Snapshots of u every output_every steps and at the end. Collective. */
static int monitor(void *c, long n, double t, N_Vector y)
{
  monitor_ctx *m = c;
  rw_app *app = m->app;
  long every = app->output_every;
  if (every > 0 && (n % every == 0 || n == app->nsteps || t == app->opt.tf))
    RW_CALL(rw_output_grid_snapshot(app->out, rw_heat_grid(m->prob), t, y, u_name));
  return 0;
}

/* Reads an array key that needs (at least) dim values. */
static int get_point(rw_app *app, const char *key, int dim, double x[3])
{
  int n = 3;
  RW_CALL(rw_deck_get_real_array(app->deck, key, x, &n));
  RW_CHECK(n >= dim, RW_ERR_DECK, "key '%s' (from %s) has %d values; %d needed (one per dimension)",
           key, rw_deck_source(app->deck, key), n, dim);
  return 0;
}

/* Forward run with `ktrue` recording the sensor data on the fixed grid of dt, then J at
 * kappa_true against those data (the floor that the time interpolation of the data leaves).
 * The problem's kappa is restored. Collective. */
static int make_data(rw_app *app, rw_problem prob, rw_stepper st, N_Vector u0, N_Vector ktrue,
                     double *Jtrue)
{
  int ierr = 0;
  N_Vector y = NULL, ksave = NULL, kappa = rw_problem_field(prob);
  rw_adjoint_options ro = app->opt;
  long N;
  double last;
  ro.adaptive = 0;
  ro.mode = RW_ADJOINT_STORE;
  ro.progress = NULL;
  RW_CALL(rw_time_grid(ro.t0, ro.tf, ro.dt, &N, &last));
  RW_CALL(rw_vec_clone(u0, &y));
  RW_TRY(rw_vec_clone(kappa, &ksave));
  rw_vec_copy(kappa, ksave);
  rw_vec_copy(ktrue, kappa);
  RW_TRY(rw_heat_record_begin(prob, N + 1));
  ro.monitor = rw_heat_record_monitor;
  ro.monitor_ctx = prob;
  rw_vec_copy(u0, y);
  app->collective = 0;
  RW_TRY(rw_forward_solve(prob, st, &ro, y, Jtrue, NULL));
  RW_TRY(rw_heat_record_end(prob));
  ro.monitor = NULL;
  rw_vec_copy(u0, y);
  RW_TRY(rw_forward_solve(prob, st, &ro, y, Jtrue, NULL));
  app->collective = 1;
cleanup:
  if (ksave) rw_vec_copy(ksave, kappa);
  rw_vec_destroy(&y);
  rw_vec_destroy(&ksave);
  return ierr;
}

static int run(rw_app *app)
{
  int ierr = 0;
  rw_deck deck = app->deck;
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL, u0 = NULL, dJdy0 = NULL, ktrue = NULL;
  double *coords = NULL, *xs = NULL;
  long dim = 2, n = 64, nsens = 9;
  double length = 1.0, kinit = 0.01, kb, ka, kw, u0b, u0a, u0w, q, J = 0.0, Jtrue = 0.0,
         dJdp[1] = {0.0};
  double kc[3] = {0}, u0c[3] = {0}, sc[3] = {0};
  char bc[16];
  rw_heat_config cfg;
  rw_adjoint_stats stats;

  RW_TRY(rw_deck_get_int(deck, "dim", &dim));
  RW_TRY(rw_deck_get_int(deck, "n", &n));
  RW_TRY(rw_deck_get_real(deck, "length", &length));
  RW_TRY(rw_deck_get_string(deck, "boundary", bc, sizeof bc));
  RW_TRY(rw_deck_get_real(deck, "kappa_init", &kinit));
  RW_TRY(rw_deck_get_real(deck, "kappa_true_background", &kb));
  RW_TRY(rw_deck_get_real(deck, "kappa_true_amplitude", &ka));
  RW_TRY(rw_deck_get_real(deck, "kappa_true_width", &kw));
  RW_TRY(get_point(app, "kappa_true_center", (int)dim, kc));
  RW_TRY(rw_deck_get_real(deck, "u0_background", &u0b));
  RW_TRY(rw_deck_get_real(deck, "u0_amplitude", &u0a));
  RW_TRY(rw_deck_get_real(deck, "u0_width", &u0w));
  RW_TRY(get_point(app, "u0_center", (int)dim, u0c));
  RW_TRY(rw_deck_get_real(deck, "source_amplitude", &q));
  RW_TRY(get_point(app, "source_center", (int)dim, sc));
  RW_TRY(rw_deck_get_int(deck, "sensors", &nsens));

  memset(&cfg, 0, sizeof cfg);
  cfg.dim = (int)dim;
  cfg.bc = strcmp(bc, "periodic") == 0  ? RW_BC_PERIODIC
           : strcmp(bc, "neumann") == 0 ? RW_BC_NEUMANN
                                        : RW_BC_DIRICHLET;
  RW_TRY(rw_deck_get_real(deck, "boundary_value", &cfg.boundary_value));
  RW_TRY(rw_deck_get_real(deck, "source_width", &cfg.source_width));
  for (int d = 0; d < 3; d++) {
    cfg.n[d] = d < dim ? n : 1;
    cfg.length[d] = length;
    cfg.source_center[d] = sc[d];
  }
  cfg.nsensors = (int)nsens;
  int is_set = 0;
  RW_TRY(rw_deck_is_set(deck, "sensor_coords", &is_set));
  if (is_set) {
    int nc = HEAT_MAX_COORDS;
    RW_TRY(rw_calloc(HEAT_MAX_COORDS, sizeof(double), "sensor coordinates", &coords));
    RW_TRY(rw_deck_get_real_array(deck, "sensor_coords", coords, &nc));
    RW_CHECK_GOTO(nc > 0 && nc % dim == 0, RW_ERR_DECK,
                  "key 'sensor_coords' (from %s) has %d values: a multiple of dim = %ld needed",
                  rw_deck_source(deck, "sensor_coords"), nc, dim);
    cfg.nsensors = nc / (int)dim;
    cfg.sensor_coords = coords;
  }
  RW_TRY(rw_app_process_grid(app, cfg.dim, cfg.procs));
  ierr = rw_heat_problem_create(app->ctx, &cfg, &prob);
  if (ierr) {
    ierr = rw_app_deck_error(app, is_set ? "sensor_coords,dim,length,process_grid"
                                         : "dim,n,sensors,process_grid");
    goto cleanup;
  }
  rw_problem_params(prob)[0] = q;
  /* kappa_true must stay positive; dt within the explicit stability limit of both runs:
   * checked on the one field it needs, before the states and the stepper's work vectors are
   * allocated and filled (3-D n = 300 with the default dt: refused in 2.2 s, it took 5.5). */
  RW_TRY(rw_problem_new_state(prob, &ktrue));
  RW_TRY(rw_heat_fill_gaussian(prob, ktrue, kb, ka, kc, kw));
  double kmin, kmax, imin, imax;
  N_VConst(kinit, rw_problem_field(prob));
  RW_TRY(rw_heat_kappa_range(prob, &imin, &imax));
  rw_vec_copy(ktrue, rw_problem_field(prob));
  RW_TRY(rw_heat_kappa_range(prob, &kmin, &kmax));
  N_VConst(kinit, rw_problem_field(prob));
  RW_CHECK_GOTO(kmin > 0.0, RW_ERR_DECK,
                "the true conductivity reaches %g: kappa must be > 0 everywhere (check "
                "kappa_true_background = %g and kappa_true_amplitude = %g)",
                kmin, kb, ka);
  kmax = fmax(kmax, imax);
  double limit = rw_heat_stability_limit(prob, kmax), h[3];
  rw_grid_spacing(rw_heat_grid(prob), h);
  /* a spacing so small that the limit underflows (to 0 or a subnormal): no dt would do, so say
   * what would (an infinite limit, from a huge spacing, takes any dt) */
  RW_CHECK_GOTO(app->opt.adaptive || !(limit < DBL_MIN), RW_ERR_DECK,
                "the grid spacing h = %g (keys length = %g and n = %ld, from %s and %s) gives an "
                "explicit stability limit h^2 / (2 dim kappa_max) of %g, too small for any step "
                "dt > 0; use a longer length or fewer nodes",
                h[0], length, n, rw_deck_source(deck, "length"), rw_deck_source(deck, "n"), limit);
  RW_CHECK_GOTO(app->opt.adaptive || app->opt.dt <= limit, RW_ERR_DECK,
                "dt = %g (from %s) exceeds the explicit stability limit h^2 / (2 dim kappa_max) "
                "= %.6g for h = %g, dim = %ld, kappa_max = %g; use dt <= %.6g, a coarser grid "
                "or a smaller conductivity",
                app->opt.dt, rw_deck_source(deck, "dt"), limit, h[0], dim, kmax, limit);
  int sde = 0;
  long seed = 0;
  double amp = 0.0;
  RW_TRY(rw_app_noise(app, prob, &sde, &amp, &seed));
  RW_TRY(rw_app_create_stepper(app, prob, &st));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_problem_new_state(prob, &u0));
  RW_TRY(rw_problem_new_state(prob, &dJdy0));
  RW_TRY(rw_heat_fill_gaussian(prob, u0, u0b, u0a, u0c, u0w));

  /* Output opens before the runs: an unwritable path fails in seconds. */
  RW_TRY(rw_app_open_output(app));
  char gridtxt[64];
  snprintf(gridtxt, sizeof gridtxt, dim == 3 ? "%ld x %ld x %ld" : "%ld x %ld", n, n, n);
  rw_log(app->ctx, RW_LOG_SUMMARY,
         "%s: %ld-D %s grid, %s boundary, %d sensors, dt = %g (stability limit %.4g), "
         "kappa_init = %g, kappa_true in [%g, %g]\n",
         app->info->name, dim, gridtxt, bc, rw_heat_num_sensors(prob), app->opt.dt, limit, kinit,
         kmin, kmax);
  if (amp > 0.0) {
    double vol = 1.0;
    for (int d = 0; d < dim; d++)
      vol *= h[d];
    rw_log(app->ctx, RW_LOG_SUMMARY,
           "  noise: space-time white noise, amplitude sigma = %g, seed %ld: node increment "
           "sigma h^(-%ld/2) sqrt(dt) z, std %.4g per step of %g%s; the data run follows the same "
           "path\n",
           amp, seed, dim, amp * sqrt(app->opt.dt / vol), app->opt.dt,
           cfg.bc == RW_BC_NEUMANN ? " (x sqrt(2) per boundary dimension at Neumann sides)" : "");
  } else if (sde) {
    rw_log(app->ctx, RW_LOG_SUMMARY,
           "  noise: none (noise_amplitude 0): %s is the deterministic %s scheme\n", app->stepper,
           strcmp(app->stepper, "em") == 0 ? "Euler" : "Heun");
  }
  RW_TRY(rw_output_attr_double(app->out, "/", "noise_amplitude", amp));
  RW_TRY(rw_output_attr_long(app->out, "/", "noise_seed", seed));
  RW_TRY(make_data(app, prob, st, u0, ktrue, &Jtrue));
  /* kappa_true and u0 are written now and let go: the solve holds two states less */
  rw_grid g = rw_heat_grid(prob);
  const char *const kn[] = {"kappa"}, *const ktn[] = {"kappa_true"}, *const u0n[] = {"u0"},
                    *const gkn[] = {"dJdkappa"};
  RW_TRY(rw_output_grid_field(app->out, "/fields", g, ktrue, ktn, 1));
  RW_TRY(rw_output_grid_field(app->out, "/fields", g, u0, u0n, 1));
  rw_vec_copy(u0, y);
  rw_vec_destroy(&u0);
  rw_vec_destroy(&ktrue);
  monitor_ctx mctx = {app, prob};
  app->grid = g;
  RW_TRY(rw_app_solve(app, prob, st, y, monitor, &mctx, &J, dJdp, dJdy0, &stats));

  RW_TRY(rw_output_grid_field(app->out, "/fields", g, rw_problem_field(prob), kn, 1));
  RW_TRY(rw_output_grid_field(app->out, "/state", g, y, u_name, 1));
  RW_TRY(rw_output_attr_double(app->out, "/state/u", "t", app->opt.tf));
  if (app->diff_field)
    RW_TRY(rw_output_grid_field(app->out, "/gradient", g, rw_problem_field_adjoint(prob), gkn, 1));
  if (app->diff_y0) RW_TRY(rw_output_grid_field(app->out, "/gradient/dJdy0", g, dJdy0, u_name, 1));
  const double *dtimes, *dvals;
  int ns = rw_heat_num_sensors(prob);
  long nt = rw_heat_data(prob, &dtimes, &dvals);
  RW_TRY(rw_output_array(app->out, "/sensors/times", dtimes, nt));
  RW_TRY(rw_output_array(app->out, "/sensors/data", dvals, nt * ns));
  RW_TRY(rw_output_attr_long(app->out, "/sensors/data", "rows_times", nt));
  RW_TRY(rw_output_attr_long(app->out, "/sensors/data", "columns_sensors", ns));
  RW_TRY(rw_calloc((size_t)ns * 3, sizeof(double), "sensor positions", &xs));
  for (int s = 0; s < ns; s++)
    rw_heat_sensor(prob, s, NULL, xs + 3 * s);
  RW_TRY(rw_output_array(app->out, "/sensors/coords", xs, 3L * ns));
  RW_TRY(rw_output_attr_double(app->out, "/", "objective_at_kappa_true", Jtrue));
  RW_TRY(rw_output_attr_double(app->out, "/", "stability_limit_dt", limit));
  RW_TRY(rw_app_finish(app, prob, J, dJdp, dJdy0, &stats));
  rw_log(app->ctx, RW_LOG_SUMMARY,
         "  J at kappa_true   = %.6e (data interpolated linearly between steps)\n", Jtrue);
cleanup:
  rw_free(&coords);
  rw_free(&xs);
  rw_vec_destroy(&y);
  rw_vec_destroy(&u0);
  rw_vec_destroy(&dJdy0);
  rw_vec_destroy(&ktrue);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  return ierr;
}

int main(int argc, char **argv)
{
  static const rw_app_info info = {"rewind-heat",
                                   "diffusion with a conductivity field kappa(x): sensor misfit "
                                   "and its gradient dJ/dkappa",
                                   keys,
                                   (int)(sizeof keys / sizeof keys[0]),
                                   rw_app_default_deck,
                                   run,
                                   1};
  return rw_app_main(argc, argv, &info);
}
