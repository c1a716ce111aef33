/* rewind-ode: forward run, objective and adjoint sensitivities for an ensemble of small ODEs
 * (Van der Pol or Lotka-Volterra), distributed over MPI ranks by ensemble member.
 *
 *   mpirun -n 2 rewind-ode [deck.yaml|deck.opts] [-key value ...]
 *
 * With no deck, the embedded default deck (default.yaml) runs. Writes an HDF5 file (the
 * trajectory, final state, dJ/dp for each named parameter, dJ/dy0, the effective deck and the
 * run statistics) and prints a summary on stdout. */
#include "ode_default_deck.h"
#include "rewind/rw_adjoint.h"
#include "rewind/rw_deck.h"
#include "rewind/rw_ode_problems.h"
#include "rewind/rw_output.h"
#include "rewind/rw_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define APP "rewind-ode"

static const rw_deck_key keys[] = {
    {"problem", RW_KEY_ENUM, "vanderpol", NULL, 0, 0, 0, "vanderpol,lotkavolterra", 0, "ODE model"},
    {"mu", RW_KEY_REAL, "1.0", NULL, -1e6, 1e6, 0, NULL, 0, "Van der Pol damping mu"},
    {"alpha", RW_KEY_REAL, "1.5", NULL, -1e6, 1e6, 0, NULL, 0, "Lotka-Volterra prey growth"},
    {"beta", RW_KEY_REAL, "1.0", NULL, -1e6, 1e6, 0, NULL, 0, "Lotka-Volterra predation"},
    {"gamma", RW_KEY_REAL, "3.0", NULL, -1e6, 1e6, 0, NULL, 0, "Lotka-Volterra predator death"},
    {"delta", RW_KEY_REAL, "1.0", NULL, -1e6, 1e6, 0, NULL, 0, "Lotka-Volterra predator growth"},
    {"ensemble", RW_KEY_INT, "8", NULL, 1, 1e9, 0, NULL, 0,
     "number of ensemble members (distributed over ranks)"},
    {"ensemble_spread", RW_KEY_REAL, "0.1", NULL, -1e6, 1e6, 0, NULL, 0,
     "member e starts at y0 + e * spread * (1, 0)"},
    {"y0", RW_KEY_REAL_ARRAY, "2.0,0.0", NULL, -1e12, 1e12, 0, NULL, 2,
     "initial state (x, y) of member 0"},
    {"t0", RW_KEY_REAL, "0.0", "time", -1e300, 1e300, 0, NULL, 0, "initial time"},
    {"tf", RW_KEY_REAL, "10.0", "time", -1e300, 1e300, 0, NULL, 0, "final time T (> t0)"},
    {"dt", RW_KEY_REAL, "0.01", "time", 0, 1e300, 1, NULL, 0,
     "step size; the last step is shortened to land on tf"},
    {"stepper", RW_KEY_ENUM, "rk4", NULL, 0, 0, 0, "euler,heun,ssprk3,rk4,rk38,dopri5", 0,
     "explicit Runge-Kutta method"},
    {"objective_terminal_weight", RW_KEY_REAL, "1.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "wT in J = wT/2 sum |y(T) - target|^2 + wR/2 int sum |y|^2 dt"},
    {"objective_running_weight", RW_KEY_REAL, "0.0", NULL, -1e300, 1e300, 0, NULL, 0,
     "wR in J (running cost weight)"},
    {"target", RW_KEY_REAL_ARRAY, "0.0,0.0", NULL, -1e300, 1e300, 0, NULL, 2,
     "terminal target (x, y)"},
    {"adjoint_mode", RW_KEY_ENUM, "store", NULL, 0, 0, 0, "store,checkpoint", 0,
     "store: keep every state in RAM; checkpoint: keep checkpoint_slots (or checkpoint_ram) "
     "states and recompute the rest as checkpoint_schedule says"},
    {"adjoint_store_stages", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0,
     "store mode: store the RK stages too (no recomputation in the adjoint, s x the memory)"},
    {"checkpoint_schedule", RW_KEY_ENUM, "binomial", NULL, 0, 0, 0,
     "binomial,online,fixed,store_all", 0,
     "binomial: Revolve, fewest recomputations for the slots; online: unknown length "
     "(required with adaptive); fixed: every checkpoint_interval steps; store_all"},
    {"checkpoint_slots", RW_KEY_INT, "20", NULL, 1, 1e6, 0, NULL, 0,
     "RAM checkpoint slots, counting the one holding the initial state"},
    {"checkpoint_ram", RW_KEY_SIZE, "0", "bytes", 0, 1e18, 0, NULL, 0,
     "RAM budget for checkpoints per rank (e.g. 512MiB); when > 0 it sets the slots"},
    {"checkpoint_interval", RW_KEY_INT, "10", "steps", 1, 1e12, 0, NULL, 0,
     "fixed schedule: steps between checkpoints"},
    {"adaptive", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0,
     "adaptive step size with the embedded pair (dopri5; dt is the first trial step); needs "
     "adjoint_mode checkpoint with checkpoint_schedule online"},
    {"rtol", RW_KEY_REAL, "1e-6", NULL, 0, 1, 1, NULL, 0, "adaptive: relative tolerance"},
    {"atol", RW_KEY_REAL, "1e-9", NULL, 0, 1e300, 0, NULL, 0, "adaptive: absolute tolerance"},
    {"max_steps", RW_KEY_INT, "10000000", "steps", 1, 1e12, 0, NULL, 0,
     "adaptive: most accepted steps before giving up"},
    {"output", RW_KEY_STRING, "rewind-ode.h5", NULL, 0, 0, 0, NULL, 0,
     "HDF5 result file (written as <output>.partial, renamed when complete)"},
    {"output_every", RW_KEY_INT, "10", "steps", 0, 1e12, 0, NULL, 0,
     "write the state every k steps (0: final state only)"},
    {"log_level", RW_KEY_ENUM, "summary", NULL, 0, 0, 0, "quiet,summary,info", 0,
     "what to print on stdout"},
};

typedef struct {
  rw_output out;
  long every, nsteps;
  double tf;
} monitor_ctx;

static int monitor(void *c, long n, double t, N_Vector y)
{
  monitor_ctx *m = c;
  if (m->every > 0 && (n % m->every == 0 || n == m->nsteps || t == m->tf))
    RW_CALL(rw_output_series_append(m->out, "/trajectory/y", t, y));
  return 0;
}

static void fmt_bytes(size_t b, char *buf, size_t len)
{
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int i = 0;
  while (v >= 1024.0 && i < 4)
    v /= 1024.0, i++;
  snprintf(buf, len, i ? "%.2f %s" : "%.0f %s", v, u[i]);
}

/* Everything after the deck is parsed. Returns a Rewind error code; collective. */
static int run(rw_context ctx, rw_deck deck, int *collective)
{
  int ierr = 0;
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector y = NULL, dJdy0 = NULL;
  rw_output out = NULL;
  char model[32], method[32], outpath[4096], level[16], yaml[16384];
  double y0[2] = {0}, target[2] = {0}, dJdp[8] = {0}, J = 0.0;
  int n2 = 2, nt = 2, store_stages = 0;
  long every = 0, ensemble = 1;
  rw_ode_config cfg;
  rw_adjoint_options opt;
  rw_adjoint_stats stats;

  RW_TRY(rw_deck_get_string(deck, "problem", model, sizeof model));
  RW_TRY(rw_deck_get_string(deck, "stepper", method, sizeof method));
  RW_TRY(rw_deck_get_string(deck, "output", outpath, sizeof outpath));
  RW_TRY(rw_deck_get_string(deck, "log_level", level, sizeof level));
  RW_TRY(rw_deck_get_int(deck, "ensemble", &ensemble));
  RW_TRY(rw_deck_get_int(deck, "output_every", &every));
  RW_TRY(rw_deck_get_real_array(deck, "y0", y0, &n2));
  RW_TRY(rw_deck_get_real_array(deck, "target", target, &nt));
  RW_TRY(rw_deck_get_bool(deck, "adjoint_store_stages", &store_stages));
  rw_context_set_log_level(ctx, strcmp(level, "quiet") == 0  ? RW_LOG_QUIET
                                : strcmp(level, "info") == 0 ? RW_LOG_INFO
                                                             : RW_LOG_SUMMARY);
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
  rw_adjoint_options_default(&opt);
  RW_TRY(rw_deck_get_real(deck, "t0", &opt.t0));
  RW_TRY(rw_deck_get_real(deck, "tf", &opt.tf));
  RW_TRY(rw_deck_get_real(deck, "dt", &opt.dt));
  opt.store_stages = store_stages;
  char mode[32], sched[32];
  long slots = 0, interval = 0;
  RW_TRY(rw_deck_get_string(deck, "adjoint_mode", mode, sizeof mode));
  RW_TRY(rw_deck_get_string(deck, "checkpoint_schedule", sched, sizeof sched));
  RW_TRY(rw_deck_get_int(deck, "checkpoint_slots", &slots));
  RW_TRY(rw_deck_get_int(deck, "checkpoint_interval", &interval));
  RW_TRY(rw_deck_get_size(deck, "checkpoint_ram", &opt.ram_bytes));
  RW_TRY(rw_deck_get_bool(deck, "adaptive", &opt.adaptive));
  RW_TRY(rw_deck_get_real(deck, "rtol", &opt.rtol));
  RW_TRY(rw_deck_get_real(deck, "atol", &opt.atol));
  RW_TRY(rw_deck_get_int(deck, "max_steps", &opt.max_steps));
  opt.mode = strcmp(mode, "checkpoint") == 0 ? RW_ADJOINT_CHECKPOINT : RW_ADJOINT_STORE;
  opt.schedule = strcmp(sched, "online") == 0      ? RW_SCHEDULE_ONLINE
                 : strcmp(sched, "fixed") == 0     ? RW_SCHEDULE_FIXED
                 : strcmp(sched, "store_all") == 0 ? RW_SCHEDULE_STORE_ALL
                                                   : RW_SCHEDULE_BINOMIAL;
  opt.ram_slots = (int)slots;
  opt.interval = interval;
  long nsteps = -1;
  double last;
  ierr = rw_time_grid(opt.t0, opt.tf, opt.dt, &nsteps, &last);
  if (ierr) {
    char why[512];
    snprintf(why, sizeof why, "%s", rw_error_message());
    char *nl = strchr(why, '\n');
    if (nl) *nl = '\0';
    ierr = RW_ERROR(RW_ERR_DECK, "%s (keys t0 from %s, tf from %s, dt from %s)", why,
                    rw_deck_source(deck, "t0"), rw_deck_source(deck, "tf"),
                    rw_deck_source(deck, "dt"));
    goto cleanup;
  }
  if (opt.adaptive) {
    nsteps = -1; /* unknown until tf is reached */
    RW_CHECK_GOTO(strcmp(method, "dopri5") == 0, RW_ERR_DECK,
                  "key 'adaptive' is true but stepper = '%s' has no error estimate; use "
                  "stepper dopri5 (from %s)",
                  method, rw_deck_source(deck, "adaptive"));
    RW_CHECK_GOTO(opt.mode == RW_ADJOINT_CHECKPOINT && opt.schedule == RW_SCHEDULE_ONLINE,
                  RW_ERR_DECK,
                  "key 'adaptive' is true: the number of steps is unknown in advance, so set "
                  "adjoint_mode: checkpoint and checkpoint_schedule: online");
  }

  RW_TRY(rw_ode_problem_create(ctx, &cfg, &prob));
  for (int k = 0; k < rw_problem_nparams(prob); k++)
    RW_TRY(rw_deck_get_real(deck, rw_problem_param_name(prob, k), &rw_problem_params(prob)[k]));
  RW_TRY(rw_stepper_create_erk(prob, rw_tableau_find(method), &st));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_problem_new_state(prob, &dJdy0));
  RW_TRY(rw_ode_initial_state(prob, y));

  /* Output opens before the run: an unwritable path fails in seconds, not after the run. */
  RW_TRY(rw_output_create(rw_context_comm(ctx), outpath, &out));
  RW_TRY(rw_deck_to_yaml(deck, yaml, sizeof yaml));
  RW_TRY(rw_output_attr_string(out, "/", "app", APP));
  RW_TRY(rw_output_attr_string(out, "/", "deck", yaml));
  RW_TRY(rw_output_attr_string(out, "/", "problem", model));
  RW_TRY(rw_output_attr_string(out, "/", "stepper", method));
  RW_TRY(rw_output_attr_long(out, "/", "ranks", rw_context_size(ctx)));
  monitor_ctx mctx = {out, every, nsteps, opt.tf};
  opt.monitor = monitor;
  opt.monitor_ctx = &mctx;

  rw_log(ctx, RW_LOG_INFO, "%s: %s, %ld members on %d ranks, %s, %ld steps of %g\n", APP, model,
         ensemble, rw_context_size(ctx), method, nsteps, opt.dt);
  if (opt.mode == RW_ADJOINT_CHECKPOINT && opt.ram_bytes > 0) {
    /* Check the budget here, where every rank agrees, rather than inside the solve. */
    unsigned long long snap = rw_vec_bytes(y);
    int nslots = 0;
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &snap, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                              rw_context_comm(ctx)));
    ierr = rw_store_slots_for_budget(opt.ram_bytes, (size_t)snap, &nslots);
    if (ierr) {
      char why[512];
      snprintf(why, sizeof why, "%s", rw_error_message());
      char *nl = strchr(why, '\n');
      if (nl) *nl = '\0';
      ierr = RW_ERROR(RW_ERR_BUDGET, "key 'checkpoint_ram' (from %s): %s",
                      rw_deck_source(deck, "checkpoint_ram"), why);
      goto cleanup;
    }
  }
  /* Inside the solve an error may hit one rank only (out of memory, a failing callback). */
  *collective = 0;
  RW_TRY(rw_adjoint_solve(prob, st, &opt, y, &J, dJdp, dJdy0, &stats));
  *collective = 1;

  int np = rw_problem_nparams(prob);
  char names[256] = "";
  RW_TRY(rw_output_vector(out, "/state/y_final", y));
  RW_TRY(rw_output_attr_double(out, "/state/y_final", "t", opt.tf));
  RW_TRY(rw_output_array(out, "/gradient/dJdp", dJdp, np));
  for (int k = 0; k < np; k++) {
    char an[64];
    snprintf(an, sizeof an, "dJ/d%s", rw_problem_param_name(prob, k));
    RW_TRY(rw_output_attr_double(out, "/gradient", an, dJdp[k]));
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? "," : "",
             rw_problem_param_name(prob, k));
  }
  RW_TRY(rw_output_attr_string(out, "/gradient/dJdp", "names", names));
  RW_TRY(rw_output_vector(out, "/gradient/dJdy0", dJdy0));
  RW_TRY(rw_output_attr_double(out, "/", "objective", J));
  RW_TRY(rw_output_group(out, "/stats"));
  RW_TRY(rw_output_attr_long(out, "/stats", "steps", stats.steps));
  RW_TRY(rw_output_attr_long(out, "/stats", "rhs_forward", stats.rhs_forward));
  RW_TRY(rw_output_attr_long(out, "/stats", "rhs_backward", stats.rhs_backward));
  RW_TRY(rw_output_attr_long(out, "/stats", "recomputed_steps", stats.recomputed_steps));
  RW_TRY(rw_output_attr_long(out, "/stats", "advances", stats.advances));
  RW_TRY(rw_output_attr_long(out, "/stats", "optimal_advances", stats.optimal_advances));
  RW_TRY(rw_output_attr_long(out, "/stats", "checkpoint_slots", stats.ram_slots));
  RW_TRY(rw_output_attr_long(out, "/stats", "rejected_steps", stats.rejected));
  RW_TRY(rw_output_attr_long(out, "/stats", "checkpoint_bytes_ram", (long)stats.checkpoint_bytes));
  RW_TRY(rw_output_attr_double(out, "/stats", "time_forward", stats.time_forward));
  RW_TRY(rw_output_attr_double(out, "/stats", "time_backward", stats.time_backward));
  RW_TRY(rw_output_close(&out, 1));

  /* Summary. Memory figures are the maximum over ranks. */
  unsigned long long mem[2] = {stats.checkpoint_bytes, stats.peak_alloc_bytes};
  RW_CALL_MPI(
      MPI_Allreduce(MPI_IN_PLACE, mem, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, rw_context_comm(ctx)));
  char b1[32], b2[32];
  fmt_bytes((size_t)mem[0], b1, sizeof b1);
  fmt_bytes((size_t)mem[1], b2, sizeof b2);
  rw_log(ctx, RW_LOG_SUMMARY, "%s: %s (%ld members, %d ranks), %s, %ld steps, T = %g\n", APP, model,
         ensemble, rw_context_size(ctx), method, stats.steps, opt.tf);
  rw_log(ctx, RW_LOG_SUMMARY, "  objective J        = %.15e\n", J);
  for (int k = 0; k < np; k++)
    rw_log(ctx, RW_LOG_SUMMARY, "  dJ/d%-13s = %.15e\n", rw_problem_param_name(prob, k), dJdp[k]);
  rw_log(ctx, RW_LOG_SUMMARY, "  |dJ/dy0|_2        = %.6e\n", sqrt(N_VDotProd(dJdy0, dJdy0)));
  if (opt.mode == RW_ADJOINT_STORE)
    rw_log(ctx, RW_LOG_SUMMARY,
           "  adjoint mode store%s: recomputed steps 0 (optimum 0), rhs evaluations %ld "
           "forward, %ld backward\n",
           store_stages ? " (stages)" : "", stats.rhs_forward, stats.rhs_backward);
  else
    rw_log(ctx, RW_LOG_SUMMARY,
           "  adjoint mode checkpoint (%s, %d slots): recomputed steps %ld, advances %ld "
           "(binomial optimum t(l,c) = %ld), restores %ld, rhs evaluations %ld forward, %ld "
           "backward\n",
           sched, stats.ram_slots, stats.recomputed_steps, stats.advances, stats.optimal_advances,
           stats.restores, stats.rhs_forward, stats.rhs_backward);
  if (opt.adaptive)
    rw_log(ctx, RW_LOG_SUMMARY, "  adaptive: %ld accepted steps, %ld rejected (rtol %g, atol %g)\n",
           stats.accepted, stats.rejected, opt.rtol, opt.atol);
  rw_log(ctx, RW_LOG_SUMMARY,
         "  checkpoints: RAM %s per rank (peak), disk 0 B; peak allocated %s\n", b1, b2);
  rw_log(ctx, RW_LOG_SUMMARY, "  time: forward %.3f s, backward %.3f s\n", stats.time_forward,
         stats.time_backward);
  rw_log(ctx, RW_LOG_SUMMARY, "  output: %s\n", outpath);

cleanup:
  if (out && *collective) {
    rw_output_close(&out, 0); /* removes the partial file on every rank's behalf */
  } else if (out) {
    char partial[4200];
    snprintf(partial, sizeof partial, "%s.partial", rw_output_path(out));
    remove(partial); /* no collective close possible: other ranks may be elsewhere */
  }
  rw_vec_destroy(&y);
  rw_vec_destroy(&dJdy0);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  return ierr;
}

int main(int argc, char **argv)
{
  int ierr, rank, code = 0;
  rw_context ctx = NULL;
  rw_deck deck = NULL;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ierr = rw_deck_create(MPI_COMM_WORLD, APP, keys, (int)(sizeof keys / sizeof keys[0]),
                        rw_ode_default_deck, argc, argv, &deck);
  if (ierr) {
    /* Deck errors are found identically on every rank: report once, exit on all ranks. */
    if (rank == 0) fprintf(stderr, "%s: error: %s\n", APP, rw_error_message());
    code = 2;
    goto done;
  }
  if (rw_deck_help_requested(deck)) {
    if (rank == 0) rw_deck_print_help(deck, stdout);
    goto done;
  }
  int collective = 1, size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ierr = rw_context_create(MPI_COMM_WORLD, &ctx);
  if (!ierr) ierr = run(ctx, deck, &collective);
  if (ierr && collective) {
    /* Set-up and output errors are reached by every rank alike: report once, exit 1. */
    if (rank == 0) fprintf(stderr, "%s: error: %s\n", APP, rw_error_message());
    code = 1;
  } else if (ierr) {
    /* An error inside the solve may be local to this rank while the others wait in a
     * collective call: report it with the rank and stop every rank. */
    fprintf(stderr, "%s: error on rank %d: %s\n", APP, rank, rw_error_message());
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    code = 1;
  }
done:
  rw_context_destroy(&ctx);
  rw_deck_destroy(&deck);
  MPI_Finalize();
  return code;
}
