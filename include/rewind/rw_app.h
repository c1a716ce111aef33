/* The application kit: what every Rewind app shares, so that all of them read the same
 * keys, fail the same way and print the same summary.
 *
 *  - rw_app_main: MPI start-up, the deck (app keys + the common keys below), -help, the
 *    context, the error protocol, shutdown. Deck and set-up errors are reached identically
 *    by every rank: rank 0 reports, every rank exits non-zero (2 for the deck, 1 otherwise).
 *    An error inside the solve may be local to one rank: that rank reports it with its rank,
 *    the partial output is removed and MPI_Abort stops every rank. Output errors (agreed
 *    across ranks by the output layer) and step failures (global quantities) inside the solve
 *    are collective and exit cleanly.
 *  - common keys: stepper, t0, tf, dt, adjoint_mode, adjoint_store_stages,
 *    checkpoint_schedule, checkpoint_slots, checkpoint_ram, checkpoint_interval,
 *    checkpoint_disk, checkpoint_disk_slots, checkpoint_dir, checkpoint_keep,
 *    checkpoint_write_cost, checkpoint_read_cost, adaptive,
 *    rtol, atol, max_steps, output, output_every, log_level, progress.
 *  - rw_app_solve: the adjoint solve with the checkpoint budget checked first (collectively),
 *    a progress line on stderr (a terminal only, unless the deck says otherwise).
 *  - rw_app_write_stats / rw_app_summary: the run statistics in the output file and on
 *    stdout. */
#ifndef REWIND_RW_APP_H
#define REWIND_RW_APP_H

#include "rw_adjoint.h"
#include "rw_deck.h"
#include "rw_device.h"
#include "rw_output.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rw_app_s rw_app;

typedef struct {
  const char *name;        /* "rewind-grayscott" */
  const char *description; /* one line for -help */
  const rw_deck_key *keys; /* app-specific keys (the common keys are added) */
  int nkeys;
  const char *default_deck; /* embedded YAML */
  /* The app's work after the deck is read. Collective. */
  int (*run)(rw_app *app);
  /* 1 when the app's problem runs on a device (key `device`: cuda or emulated); the others
   * refuse those values with a deck error. */
  int device_ready;
} rw_app_info;

struct rw_app_s {
  const rw_app_info *info;
  rw_context ctx;
  rw_deck deck;
  rw_adjoint_options opt; /* from the common keys (monitor/progress set by the kit) */
  char stepper[32];
  char schedule[32];
  char output[4096];
  char checkpoint_dir[4096]; /* directory of the disk checkpoints */
  char run_id[32];           /* identity of the run in its checkpoint files */
  char restart_from[4096];   /* restart: directory of the killed run's checkpoints ("": none) */
  long output_every;
  long nsteps;          /* -1 when adaptive */
  int collective;       /* 0 while inside the solve */
  rw_output out;        /* open result file, or NULL */
  int progress;         /* progress line on */
  long noise_paths;     /* key noise_paths: noise paths averaged (1: one path) */
  int flush_subnormals; /* key flush_subnormals: rw_fp_flush_subnormals(1) on every rank */
  /* key `differentiate` (read by rw_app_solve): what the gradient is taken of. diff_p[k]
   * for named parameter k (k < 64); for a vector theta diff_p[0] stands for all of it. */
  int diff_y0, diff_field;
  unsigned char diff_p[64];
  double progress_last;
  rw_device device; /* key `device` (NULL: cpu); the context's device, destroyed at the end */
  /* a grid app's state grid, set before rw_app_solve (NULL: none): its process grid joins the
   * run's identity, since two splits of a grid can give every rank the same local length */
  rw_grid grid;
};

/* Runs the app; returns the process exit code. Calls MPI_Init/MPI_Finalize. */
int rw_app_main(int argc, char **argv, const rw_app_info *info);

/* Reads the key `differentiate` into app->diff_* and freezes in `prob` what is not listed
 * (rw_problem_set_active). rw_app_solve calls it; an app may call it earlier to check.
 * Returns RW_ERR_DECK naming the key, its source and the allowed inputs. Collective in effect
 * (every rank reads the same deck). */
int rw_app_differentiate(rw_app *app, rw_problem prob);

/* 1 when parameter k's derivative was computed and is reported (key `differentiate`). */
int rw_app_param_reported(rw_app *app, rw_problem prob, int k);

/* Opens the result file (app->output) and writes the app name, the effective deck and the
 * rank count as root attributes. Collective. */
int rw_app_open_output(rw_app *app);

/* The adjoint solve: checks the checkpoint budget first (every rank agrees), installs the
 * progress line, chains `monitor` (may be NULL), and marks the non-collective phase.
 * Collective. */
int rw_app_solve(rw_app *app, rw_problem prob, rw_stepper st, N_Vector y, rw_monitor_fn monitor,
                 void *mctx, double *J, double *dJdp, N_Vector dJdy0, rw_adjoint_stats *stats);

/* Writes the statistics to /stats and the objective and scalar gradients to /gradient
 * (dataset dJdp with attribute names, one attribute dJ/d<name> each). Collective. */
int rw_app_write_results(rw_app *app, rw_problem prob, double J, const double *dJdp,
                         const rw_adjoint_stats *st);

/* Closes the result file successfully (rename from .partial). Collective. */
int rw_app_close_output(rw_app *app);

/* Prints the summary on rank 0 (objective, every dJ/dp, |dJ/dy0|, schedule counts against
 * the optimum, checkpoint bytes, times). Collective (reductions). */
int rw_app_summary(rw_app *app, rw_problem prob, double J, const double *dJdp, N_Vector dJdy0,
                   const rw_adjoint_stats *st);

/* The end of every app's run: rw_app_write_results, rw_app_close_output, rw_app_summary.
 * Collective. */
int rw_app_finish(rw_app *app, rw_problem prob, double J, const double *dJdp, N_Vector dJdy0,
                  const rw_adjoint_stats *st);

/* Turns the current error into a deck error naming `keys` and where they came from. */
int rw_app_deck_error(rw_app *app, const char *keys);

/* Refuses an output that is the same file as an input or another output, before anything is
 * read or written (see rw_app.c): the outputs are `output` and the keys `outs` (nouts of
 * them), each with its '<name>.partial'; the inputs are the keys `ins` (nins) and every deck
 * file. Compared by realpath and by device and inode, relative paths from rank 0's working
 * directory; an output named like the disk checkpoints in their directory is refused too.
 * rw_app_main checks `output` itself; an app that reads or writes files of its own calls this
 * with their keys. Returns RW_ERR_DECK naming both files, their keys and paths, on every rank.
 * Collective. */
int rw_app_check_paths(rw_app *app, const char *const *outs, int nouts, const char *const *ins,
                       int nins);

/* --- The process grid of the grid apps (rewind-grayscott, -heat, -burgers, -wave), whose key
 * tables list RW_APP_PROCESS_GRID_KEY. ---
 *
 * Reads `process_grid` for a dim-D grid into procs (rw_grid_config.procs): "auto" gives all 0
 * (the grid's own split: slabs along the slowest dimension when the wave fits them, else a
 * balanced split slowest dimension first); "PxQ" (2-D) or "PxQxR" (3-D) gives the ranks per
 * dimension, x first, as PETSc's -da_processors_x/y/z do. A value with another number of
 * counts, a count under 1 or a product other than the rank count is a deck error naming the
 * key, its source, the value and what is allowed. Collective only in the error protocol (every
 * rank reads the same deck). */
#define RW_APP_PROCESS_GRID_KEY                                                                    \
  {                                                                                                \
    "process_grid", RW_KEY_STRING, "auto", NULL, 0, 0, 0, NULL, 0,                                 \
        "ranks per dimension, x first: auto (slabs when the whole-step sweep fits them, else a "   \
        "balanced split), or PxQ in 2-D, PxQxR in 3-D, their product the rank count"               \
  }
int rw_app_process_grid(rw_app *app, int dim, int procs[3]);

/* --- Noise (issue 12) for the grid apps (rewind-grayscott, rewind-heat), whose key tables
 * list `noise_amplitude` (real >= 0, default 0), `noise_seed` (integer >= 0) and a `stepper`
 * key that admits the SDE steppers em and sheun. ---
 *
 * Reads noise_amplitude and noise_seed and sets them on `prob` (rw_problem_set_noise,
 * refinement 1). noise_amplitude > 0 needs an SDE stepper: with another stepper it is a deck
 * error naming both keys. An SDE stepper with noise_amplitude 0 is accepted: the
 * deterministic Euler (em) or Heun (sheun) scheme. Sets *sde to 1 when app->stepper is an SDE
 * stepper, *amplitude and *seed to the values read. Collective only in the error protocol
 * (every rank reads the same deck). */
int rw_app_noise(rw_app *app, rw_problem prob, int *sde, double *amplitude, long *seed);

/* The stepper the deck names: an SDE stepper (rw_stepper_create_sde) for em and sheun, else
 * the explicit Runge-Kutta stepper of that tableau. Collective. */
int rw_app_create_stepper(rw_app *app, rw_problem prob, rw_stepper *out);

/* The Butcher tableau of the deterministic part of the deck's stepper, for explicit
 * stability checks: em -> euler, sheun -> heun (their drift is those schemes'), else the
 * stepper's own tableau (NULL when it has none). Not collective. */
const rw_tableau *rw_app_stability_tableau(rw_app *app);

#ifdef __cplusplus
}
#endif
#endif
