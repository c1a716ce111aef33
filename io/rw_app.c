/* The application kit (see rw_app.h). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* realpath */
#include "rewind/rw_app.h"

#include "rewind/rw_sde.h"
#include "rewind/rw_store.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const rw_deck_key rw_app_common_keys[] = {
    {"stepper", RW_KEY_ENUM, "rk4", NULL, 0, 0, 0, "euler,heun,ssprk3,rk4,rk38,dopri5", 0,
     "explicit Runge-Kutta method"},
    {"t0", RW_KEY_REAL, "0.0", "time", -1e300, 1e300, 0, NULL, 0, "initial time"},
    {"tf", RW_KEY_REAL, "1.0", "time", -1e300, 1e300, 0, NULL, 0, "final time T (> t0)"},
    {"dt", RW_KEY_REAL, "0.01", "time", 0, 1e300, 1, NULL, 0,
     "step size (adaptive: the first trial step); the last step is shortened to land on tf"},
    {"adjoint_mode", RW_KEY_ENUM, "store", NULL, 0, 0, 0, "store,checkpoint,reversible,backsolve",
     0,
     "store: keep every state in RAM; checkpoint: keep checkpoint_slots (or checkpoint_ram) "
     "states and recompute the rest as checkpoint_schedule says; reversible: rebuild each state "
     "by the stepper's inverse step (leapfrog); backsolve: rebuild it by a step of size -dt "
     "(Runge-Kutta); both check the rebuilt states against anchors (drift_*)"},
    {"drift_tol", RW_KEY_REAL, "1e-6", NULL, 0, 1e300, 1, NULL, 0,
     "reversible/backsolve: largest relative drift ||y_rebuilt - y_anchor|| / ||y_anchor|| "
     "accepted for a segment between anchors (the absolute ||y_rebuilt - y_anchor|| where the "
     "anchor is 0)"},
    {"drift_action", RW_KEY_ENUM, "fallback", NULL, 0, 0, 0, "fallback,abort,warn", 0,
     "reversible/backsolve, when a segment drifts past drift_tol: fallback = reverse it again "
     "from its anchor with checkpoints (exact gradient); abort = stop, no gradient; warn = keep "
     "the gradient and report the drift"},
    {"drift_interval", RW_KEY_INT, "0", "steps", 0, 1e12, 0, NULL, 0,
     "reversible/backsolve: steps between anchors (exact states kept for the drift checks); 0 = "
     "half the checkpoint budget (checkpoint_slots or checkpoint_ram) as evenly spaced anchors, "
     "the other half for the fallback"},
    {"differentiate", RW_KEY_STRING, "all", NULL, 0, 0, 0, NULL, 0,
     "what the gradient is taken of: all, or a comma-separated list of y0 (the initial state), "
     "params (every scalar parameter, or the neural ODE's theta), parameter names (e.g. D_u) "
     "and the parameter field's name; what is not listed is frozen: its VJPs are not computed "
     "and it is not reported"},
    {"adjoint_store_stages", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0,
     "snapshots hold the RK stages too: no recomputation when a step is reversed from its "
     "snapshot, s x the memory per snapshot"},
    {"checkpoint_schedule", RW_KEY_ENUM, "binomial", NULL, 0, 0, 0,
     "binomial,online,fixed,store_all", 0,
     "binomial: Revolve, fewest recomputations for the slots; online: unknown length "
     "(required with adaptive); fixed: every checkpoint_interval steps; store_all"},
    {"checkpoint_slots", RW_KEY_INT, "20", NULL, 1, 1e6, 0, NULL, 0,
     "RAM checkpoint slots, counting the one holding the initial state"},
    {"checkpoint_ram", RW_KEY_SIZE, "0", "bytes", 0, 1e18, 0, NULL, 0,
     "RAM budget for checkpoints per rank (e.g. 512MiB); when > 0 it sets the slots. On a "
     "device run it is the host tier: page-locked host RAM between the device-memory slots "
     "(checkpoint_device, or checkpoint_slots) and the disk, under the optimal three-tier "
     "schedule (binomial, fixed step)"},
    {"checkpoint_device", RW_KEY_SIZE, "0", "bytes", 0, 1e18, 0, NULL, 0,
     "device runs: device-memory budget for checkpoints per rank (the fastest tier); when > 0 "
     "it sets the slots there (else checkpoint_slots)"},
    {"checkpoint_ram_write_cost", RW_KEY_STRING, "auto", "steps", 0, 0, 0, NULL, 0,
     "device runs with a host tier: cost of copying one snapshot from the device to host RAM "
     "in units of one time step, or auto: measured at start-up"},
    {"checkpoint_ram_read_cost", RW_KEY_STRING, "auto", "steps", 0, 0, 0, NULL, 0,
     "device runs with a host tier: cost of copying one snapshot back to the device, or auto"},
    {"checkpoint_interval", RW_KEY_INT, "10", "steps", 1, 1e12, 0, NULL, 0,
     "fixed schedule: steps between checkpoints"},
    {"checkpoint_disk", RW_KEY_SIZE, "0", "bytes", 0, 1e18, 0, NULL, 0,
     "disk budget for checkpoints per rank (e.g. 200GiB), HDF5 files in checkpoint_dir; when "
     "> 0 the binomial schedule becomes the optimal two-level RAM + disk schedule and the "
     "online one writes a disk checkpoint every P steps (P from the costs)"},
    {"checkpoint_disk_slots", RW_KEY_INT, "0", NULL, 0, 1e6, 0, NULL, 0,
     "disk checkpoint slots (instead of checkpoint_disk)"},
    {"checkpoint_dir", RW_KEY_STRING, ".", NULL, 0, 0, 0, NULL, 0,
     "directory of the disk checkpoint files (one per rank); must exist and be writable"},
    {"checkpoint_keep", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0,
     "keep the disk checkpoint files after the run (they are removed otherwise)"},
    {"restart_from", RW_KEY_STRING, "", NULL, 0, 0, 0, NULL, 0,
     "continue a run that was killed during its forward sweep from the disk checkpoints it left "
     "in this directory (its checkpoint_dir; YAML: restart: {from: DIR}); the deck must be the "
     "same apart from output keys, and so must the rank count; the gradient equals an "
     "uninterrupted run's bit for bit"},
    {"checkpoint_write_cost", RW_KEY_STRING, "auto", "steps", 0, 0, 0, NULL, 0,
     "cost of writing one snapshot to disk in units of one time step, or auto: measured at "
     "start-up"},
    {"checkpoint_read_cost", RW_KEY_STRING, "auto", "steps", 0, 0, 0, NULL, 0,
     "cost of reading one snapshot from disk in units of one time step, or auto"},
    {"adaptive", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0,
     "adaptive step size with the embedded pair (dopri5); needs adjoint_mode checkpoint with "
     "checkpoint_schedule online"},
    {"rtol", RW_KEY_REAL, "1e-6", NULL, 0, 1, 1, NULL, 0, "adaptive: relative tolerance"},
    {"atol", RW_KEY_REAL, "1e-9", NULL, 0, 1e300, 0, NULL, 0, "adaptive: absolute tolerance"},
    {"max_steps", RW_KEY_INT, "10000000", "steps", 1, 1e12, 0, NULL, 0,
     "adaptive: most accepted steps before giving up"},
    {"output", RW_KEY_STRING, "rewind.h5", NULL, 0, 0, 0, NULL, 0,
     "HDF5 result file (written as <output>.partial, renamed when complete)"},
    {"output_every", RW_KEY_INT, "10", "steps", 0, 1e12, 0, NULL, 0,
     "write the state every k steps (0: final state only)"},
    {"log_level", RW_KEY_ENUM, "summary", NULL, 0, 0, 0, "quiet,summary,info", 0,
     "what to print on stdout"},
    {"progress", RW_KEY_ENUM, "auto", NULL, 0, 0, 0, "auto,on,off", 0,
     "progress line on stderr: auto = only when stderr is a terminal"},
    {"device", RW_KEY_ENUM, "cpu", NULL, 0, 0, 0, "cpu,cuda,emulated", 0,
     "where the state vectors and the problem's kernels live: cpu; cuda (one GPU per rank, the "
     "node-local rank modulo the visible GPUs); emulated (the GPU code run on the CPU with its "
     "memory guarded, for checking). Every solver app runs on a device, with noise too (the "
     "neural ODE's products through cuBLAS)"},
    {"device_mpi", RW_KEY_ENUM, "auto", NULL, 0, 0, 0, "auto,staged,direct", 0,
     "how the halos of a device run reach MPI: auto (from device memory when the MPI library "
     "reports CUDA support on every rank, else staged); staged (copied through page-locked host "
     "buffers); direct (device memory handed to MPI: needs a CUDA-aware MPI; on the emulated "
     "device it checks that path)"},
    {"flush_subnormals", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0,
     "flush subnormal numbers (below 2.2e-308) to zero on every rank's solver thread (x86 FTZ + "
     "DAZ): operations on them are tens of times slower, and diffusion tails decay into them "
     "(Gray-Scott 512^2: forward sweep 1.6x faster); results change only below 2.2e-308, and "
     "checkpointed and stored gradients still agree bit for bit"},
    {"noise_paths", RW_KEY_INT, "1", "paths", 1, 1e9, 0, NULL, 0,
     "stochastic forcing: J and every gradient are the means over this many noise paths, seeds "
     "noise_seed .. noise_seed + noise_paths - 1, solved one after another (needs noise)"},
};

int rw_app_deck_error(rw_app *app, const char *keys)
{
  char why[1024];
  snprintf(why, sizeof why, "%s", rw_error_message());
  char *nl = strchr(why, '\n');
  if (nl) *nl = '\0';
  char src[1024] = "";
  char buf[256];
  snprintf(buf, sizeof buf, "%s", keys);
  for (char *k = strtok(buf, ","); k; k = strtok(NULL, ",")) {
    size_t l = strlen(src);
    snprintf(src + l, sizeof src - l, "%s%s from %s", l ? ", " : "", k,
             rw_deck_source(app->deck, k));
  }
  return RW_ERROR(RW_ERR_DECK, "%s (%s)", why, src);
}

int rw_app_process_grid(rw_app *app, int dim, int procs[3])
{
  char v[64];
  const int size = rw_context_size(app->ctx);
  procs[0] = procs[1] = procs[2] = 0;
  RW_CALL(rw_deck_get_string(app->deck, "process_grid", v, sizeof v));
  if (strcmp(v, "auto") == 0) return 0;
  long c[3] = {1, 1, 1}, prod = 1;
  int k = 0, ok = 1;
  const char *q = v;
  while (ok && k < 3) { /* counts separated by 'x' */
    char *end = NULL;
    if (*q < '0' || *q > '9') {
      ok = 0;
      break;
    }
    c[k] = strtol(q, &end, 10);
    ok = c[k] >= 1 && c[k] <= size;
    prod *= ok ? c[k] : 1;
    k++;
    if (*end == '\0') break;
    ok = ok && *end == 'x' && k < 3;
    q = end + 1;
  }
  RW_CHECK(ok && k == dim && prod == size, RW_ERR_DECK,
           "key 'process_grid' (from %s) is '%s'; allowed: auto, or %s with each count >= 1 and "
           "their product the rank count %d (x first)",
           rw_deck_source(app->deck, "process_grid"), v, dim == 3 ? "PxQxR" : "PxQ", size);
  for (int d = 0; d < dim; d++)
    procs[d] = (int)c[d];
  return 0;
}

/* The noise keys of the grid apps (rw_app.h): noise_amplitude > 0 needs an SDE stepper (a deck
 * error naming both keys); an SDE stepper with amplitude 0 is the deterministic scheme.
 *   app        the app (deck, stepper name)
 *   prob       gets the noise (rw_problem_set_noise: seed, amplitude, refinement 1)
 *   sde        out: 1 when the stepper is em or sheun
 *   amplitude  out: noise_amplitude;  seed  out: noise_seed
 * Not collective (every rank reads the same deck and fails alike). */
int rw_app_noise(rw_app *app, rw_problem prob, int *sde, double *amplitude, long *seed)
{
  double amp = 0.0;
  long sd = 0;
  RW_CHECK(app && prob && sde && amplitude && seed, RW_ERR_ARG, "rw_app_noise: NULL argument");
  RW_CALL(rw_deck_get_real(app->deck, "noise_amplitude", &amp));
  RW_CALL(rw_deck_get_int(app->deck, "noise_seed", &sd));
  *sde = rw_sde_method_known(app->stepper);
  if (amp > 0.0 && !*sde) {
    (void)RW_ERROR(RW_ERR_DECK,
                   "noise_amplitude = %g turns on the space-time white noise, which needs an SDE "
                   "stepper (%s); stepper '%s' is deterministic: use stepper em or sheun, or "
                   "noise_amplitude 0",
                   amp, rw_sde_method_names(), app->stepper);
    return rw_app_deck_error(app, "noise_amplitude,stepper");
  }
  RW_CALL(rw_problem_set_noise(prob, (uint64_t)sd, amp, 1));
  *amplitude = amp;
  *seed = sd;
  return 0;
}

/* The deck's stepper for prob: SDE (em, sheun) or explicit Runge-Kutta. Collective. */
int rw_app_create_stepper(rw_app *app, rw_problem prob, rw_stepper *out)
{
  RW_CHECK(app && prob && out, RW_ERR_ARG, "rw_app_create_stepper: NULL argument");
  if (rw_sde_method_known(app->stepper)) return rw_stepper_create_sde(prob, app->stepper, out);
  return rw_stepper_create_erk(prob, rw_tableau_find(app->stepper), out);
}

/* The tableau whose stability interval bounds the deck's stepper: em -> euler, sheun -> heun
 * (their drift steps), else the stepper's own (NULL if it has none). Not collective. */
const rw_tableau *rw_app_stability_tableau(rw_app *app)
{
  if (strcmp(app->stepper, "em") == 0) return rw_tableau_find("euler");
  if (strcmp(app->stepper, "sheun") == 0) return rw_tableau_find("heun");
  return rw_tableau_find(app->stepper);
}

/* ---- the files a run reads and writes -------------------------------------------------- */

/* A file the run reads or writes, for the comparisons of rw_app_check_paths. */
typedef struct {
  const char *key;  /* deck key ("output", ...), or NULL for a deck file */
  const char *what; /* NULL, or which file of the key it is ("the temporary file", that is the
                     * value + ".partial", "the XDMF sidecar", ...) */
  int writes;
  char path[4200];
  char canon[PATH_MAX + 4200];
  int exists;
  struct stat sb;
} rw_app_file;

/* The canonical form of a path: realpath() where the file exists, else the realpath of its
 * directory and its last name, else the path as given. */
static void rw_app_file_canon(rw_app_file *f)
{
  char buf[PATH_MAX], dir[4200];
  f->exists = stat(f->path, &f->sb) == 0;
  if (realpath(f->path, buf)) {
    snprintf(f->canon, sizeof f->canon, "%s", buf);
    return;
  }
  snprintf(dir, sizeof dir, "%s", f->path);
  char *slash = strrchr(dir, '/');
  const char *base = f->path;
  if (slash) {
    base = f->path + (slash - dir) + 1;
    if (slash == dir)
      dir[1] = '\0';
    else
      *slash = '\0';
  } else {
    snprintf(dir, sizeof dir, ".");
  }
  if (realpath(dir, buf))
    snprintf(f->canon, sizeof f->canon, "%s/%s", strcmp(buf, "/") ? buf : "", base);
  else
    snprintf(f->canon, sizeof f->canon, "%s", f->path);
}

/* The key's value as the run uses it: app->output for "output" (read by the kit), else the
 * deck's string ("" when it cannot be read). */
static void rw_app_key_value(rw_app *app, const char *key, char *v, size_t len)
{
  if (!strcmp(key, "output"))
    snprintf(v, len, "%s", app->output);
  else if (rw_deck_get_string(app->deck, key, v, len))
    v[0] = '\0';
}

/* "key 'theta_out' = 'x.bin' (from command line)", "the temporary file 'r.h5.partial' of key
 * 'output' = 'r.h5' (from ...)" or "the deck file 'd.yaml'". */
static void rw_app_file_name(rw_app *app, const rw_app_file *f, char *out, size_t len)
{
  if (!f->key) {
    snprintf(out, len, "the deck file '%s'", f->path);
    return;
  }
  char v[4096];
  rw_app_key_value(app, f->key, v, sizeof v);
  if (f->what)
    snprintf(out, len, "%s '%s' of key '%s' = '%s' (from %s)", f->what, f->path, f->key, v,
             rw_deck_source(app->deck, f->key));
  else
    snprintf(out, len, "key '%s' = '%s' (from %s)", f->key, v, rw_deck_source(app->deck, f->key));
}

/* The error for an output (in `files`) that the disk checkpoints could overwrite: a file in
 * the directory of the run's disk checkpoints (restart_from, else checkpoint_dir with a disk
 * tier) named like them ('rewind-ckpt-*'), which the run reads, writes and removes. 0 when
 * there is none. Rank 0. */
static int rw_app_checkpoint_clash(rw_app *app, const rw_app_file *files, int n)
{
  const rw_adjoint_options *o = &app->opt;
  const char *key = app->restart_from[0]                     ? "restart_from"
                    : o->disk_slots > 0 || o->disk_bytes > 0 ? "checkpoint_dir"
                                                             : NULL;
  char dir[4096], cdir[PATH_MAX];
  if (!key) return 0;
  rw_app_key_value(app, key, dir, sizeof dir);
  if (!realpath(dir, cdir)) snprintf(cdir, sizeof cdir, "%s", dir);
  size_t dl = strlen(cdir);
  if (dl > 0 && cdir[dl - 1] == '/') dl--;
  for (int i = 0; i < n; i++) {
    const char *c = files[i].canon;
    if (!files[i].writes || strncmp(c, cdir, dl) || c[dl] != '/' || strchr(c + dl + 1, '/') ||
        strncmp(c + dl + 1, "rewind-ckpt-", 12))
      continue;
    char name[4600];
    rw_app_file_name(app, &files[i], name, sizeof name);
    return RW_ERROR(RW_ERR_DECK,
                    "%s is in the directory of the disk checkpoints, key '%s' = '%s' (from %s), "
                    "and named like them ('rewind-ckpt-*'): the run %s those files; give '%s' "
                    "another file name",
                    name, key, dir, rw_deck_source(app->deck, key),
                    app->restart_from[0] ? "reads, rewrites and removes" : "writes and removes",
                    files[i].key);
  }
  return 0;
}

/* Refuses, before anything is read or written, an output of the run that is the same file as
 * another output or as an input, since the run would overwrite what it reads, or one result
 * would replace another. The outputs are `output` and the keys `outs`, each with the temporary
 * '<name>.partial' it is written as; the inputs are the keys `ins` and every deck file read
 * (rw_deck_file). Paths are compared by realpath() (where the file does not exist yet: its
 * directory's realpath and its name) and, where both exist, by device and inode (hard links,
 * symbolic links). An output named like the disk checkpoints in their directory
 * ('rewind-ckpt-*' in restart_from, or in checkpoint_dir with a disk tier) is refused too.
 * Keys with an empty value are skipped. Relative paths are taken from rank 0's working
 * directory, where the files are read and the result is written (rw_output_create). The kit
 * checks `output` against the deck files and the checkpoints itself before the app's run; an
 * app with files of its own calls this with their keys.
 *   outs  nouts deck keys naming files the run writes (may be NULL when nouts is 0)
 *   ins   nins deck keys naming files the run reads (may be NULL when nins is 0)
 * Rank 0 decides; every rank returns the same RW_ERR_DECK naming both files, their keys and
 * paths. Collective. */
int rw_app_check_paths(rw_app *app, const char *const *outs, int nouts, const char *const *ins,
                       int nins)
{
  rw_app_file *f = NULL;
  int n = 0, ierr = 0, ndeck = 0;
  RW_CHECK(app && nouts >= 0 && nins >= 0 && (outs || !nouts) && (ins || !nins), RW_ERR_ARG,
           "rw_app_check_paths: bad arguments");
  if (rw_context_rank(app->ctx) == 0) {
    while (rw_deck_file(app->deck, ndeck))
      ndeck++;
    RW_TRY(rw_calloc((size_t)(2 * (nouts + 1) + 2 + nins + ndeck), sizeof *f, "path checks", &f));
    for (int k = -1; k < nouts; k++) {
      const char *key = k < 0 ? "output" : outs[k];
      char v[4096];
      rw_app_key_value(app, key, v, sizeof v);
      if (!v[0]) continue;
      for (int partial = 0; partial < 2; partial++, n++) {
        f[n].key = key;
        f[n].writes = 1;
        f[n].what = partial ? "the temporary file" : NULL;
        snprintf(f[n].path, sizeof f[n].path, partial ? "%s.partial" : "%s", v);
      }
      if (k >= 0) continue;
      /* the result's XDMF sidecar: written by the grid apps, removed as stale by the others */
      char side[4096];
      rw_output_sidecar_path(v, side, sizeof side);
      for (int partial = 0; partial < 2; partial++, n++) {
        f[n].key = key;
        f[n].writes = 1;
        f[n].what = partial ? "the temporary XDMF sidecar" : "the XDMF sidecar";
        snprintf(f[n].path, sizeof f[n].path, partial ? "%s.partial" : "%s", side);
      }
    }
    for (int k = 0; k < nins; k++) {
      rw_app_key_value(app, ins[k], f[n].path, sizeof f[n].path);
      if (f[n].path[0]) f[n++].key = ins[k];
    }
    for (int k = 0; k < ndeck; k++, n++)
      snprintf(f[n].path, sizeof f[n].path, "%s", rw_deck_file(app->deck, k));
    for (int i = 0; i < n; i++)
      rw_app_file_canon(&f[i]);
    for (int i = 0; i < n && !ierr; i++)
      for (int j = i + 1; j < n && !ierr; j++) {
        if (!f[i].writes && !f[j].writes) continue;
        if (f[i].key && f[j].key && !strcmp(f[i].key, f[j].key)) continue;
        int same = !strcmp(f[i].canon, f[j].canon) ||
                   (f[i].exists && f[j].exists && f[i].sb.st_dev == f[j].sb.st_dev &&
                    f[i].sb.st_ino == f[j].sb.st_ino);
        if (!same) continue;
        /* name the output first; an output against an input is the worse case */
        const rw_app_file *a = f[i].writes ? &f[i] : &f[j], *b = a == &f[i] ? &f[j] : &f[i];
        char na[4600], nb[4600];
        rw_app_file_name(app, a, na, sizeof na);
        rw_app_file_name(app, b, nb, sizeof nb);
        if (b->writes)
          ierr = RW_ERROR(RW_ERR_DECK,
                          "%s is the same file as %s: one output would overwrite the other; give "
                          "'%s' and '%s' different file names",
                          na, nb, a->key, b->key);
        else
          ierr = RW_ERROR(RW_ERR_DECK,
                          "%s is the same file as %s, which the run reads: writing it would "
                          "overwrite or replace the input; give '%s' another file name",
                          na, nb, a->key);
      }
    if (!ierr) ierr = rw_app_checkpoint_clash(app, f, n);
  }
cleanup:
  rw_free(&f);
  return rw_error_agree(rw_context_comm(app->ctx), ierr);
}

/* Reads the common keys into app->opt and checks what depends on several keys. */
static int rw_app_read_common(rw_app *app)
{
  rw_deck deck = app->deck;
  rw_adjoint_options *opt = &app->opt;
  char mode[32], level[16], prog[8];
  long slots = 0, interval = 0;
  int store_stages = 0;
  rw_adjoint_options_default(opt);
  char devname[16];
  RW_CALL(rw_deck_get_string(deck, "device", devname, sizeof devname));
  if (strcmp(devname, "cpu") != 0) {
    if (!app->info->device_ready) {
      RW_ERROR(RW_ERR_DECK, "device = %s: %s does not run on a device; use device: cpu", devname,
               app->info->name);
      return rw_app_deck_error(app, "device");
    }
    rw_device_kind kind = strcmp(devname, "cuda") == 0 ? RW_DEVICE_CUDA : RW_DEVICE_EMULATED;
    int ierr =
        rw_error_agree(rw_context_comm(app->ctx), rw_device_create(app->ctx, kind, &app->device));
    if (ierr) {
      char why[512];
      snprintf(why, sizeof why, "%s", rw_error_message());
      why[strcspn(why, "\n")] = '\0';
      RW_ERROR(RW_ERR_DECK, "device = %s: %s", devname, why);
      return rw_app_deck_error(app, "device");
    }
    rw_context_set_device(app->ctx, app->device);
    char mpimode[16];
    RW_CALL(rw_deck_get_string(deck, "device_mpi", mpimode, sizeof mpimode));
    rw_device_mpi m = !strcmp(mpimode, "staged")   ? RW_DEVICE_MPI_STAGED
                      : !strcmp(mpimode, "direct") ? RW_DEVICE_MPI_DIRECT
                                                   : RW_DEVICE_MPI_AUTO;
    if (rw_device_set_mpi(app->device, rw_context_comm(app->ctx), m)) {
      char why[512];
      snprintf(why, sizeof why, "%s", rw_error_message());
      why[strcspn(why, "\n")] = '\0';
      RW_ERROR(RW_ERR_DECK, "device_mpi = %s (from %s): %s", mpimode,
               rw_deck_source(deck, "device_mpi"), why);
      return rw_app_deck_error(app, "device_mpi");
    }
    rw_log(app->ctx, RW_LOG_SUMMARY, "device: %s (rank 0); %s\n", rw_device_name(app->device),
           rw_device_mpi_mode(app->device));
  } else {
    RW_CHECK(!strcmp(rw_deck_source(deck, "device_mpi"), "default"), RW_ERR_DECK,
             "key 'device_mpi' (from %s) says how a device run's halos reach MPI, but device: cpu "
             "(from %s); drop it, or set device: cuda (or emulated)",
             rw_deck_source(deck, "device_mpi"), rw_deck_source(deck, "device"));
  }
  RW_CALL(rw_deck_get_string(deck, "stepper", app->stepper, sizeof app->stepper));
  RW_CALL(rw_deck_get_real(deck, "t0", &opt->t0));
  RW_CALL(rw_deck_get_real(deck, "tf", &opt->tf));
  RW_CALL(rw_deck_get_real(deck, "dt", &opt->dt));
  RW_CALL(rw_deck_get_string(deck, "adjoint_mode", mode, sizeof mode));
  char daction[16];
  RW_CALL(rw_deck_get_real(deck, "drift_tol", &opt->drift_tol));
  RW_CALL(rw_deck_get_string(deck, "drift_action", daction, sizeof daction));
  RW_CALL(rw_deck_get_int(deck, "drift_interval", &opt->drift_interval));
  opt->drift_action = strcmp(daction, "abort") == 0  ? RW_DRIFT_ABORT
                      : strcmp(daction, "warn") == 0 ? RW_DRIFT_WARN
                                                     : RW_DRIFT_FALLBACK;
  RW_CALL(rw_deck_get_bool(deck, "adjoint_store_stages", &store_stages));
  RW_CALL(rw_deck_get_string(deck, "checkpoint_schedule", app->schedule, sizeof app->schedule));
  RW_CALL(rw_deck_get_int(deck, "checkpoint_slots", &slots));
  RW_CALL(rw_deck_get_int(deck, "checkpoint_interval", &interval));
  RW_CALL(rw_deck_get_size(deck, "checkpoint_ram", &opt->ram_bytes));
  long dslots = 0;
  char costs[2][64];
  RW_CALL(rw_deck_get_size(deck, "checkpoint_disk", &opt->disk_bytes));
  RW_CALL(rw_deck_get_int(deck, "checkpoint_disk_slots", &dslots));
  RW_CALL(
      rw_deck_get_string(deck, "checkpoint_dir", app->checkpoint_dir, sizeof app->checkpoint_dir));
  RW_CALL(rw_deck_get_bool(deck, "checkpoint_keep", &opt->disk_keep));
  RW_CALL(rw_deck_get_string(deck, "restart_from", app->restart_from, sizeof app->restart_from));
  size_t device_bytes = 0;
  char hcosts[2][64];
  RW_CALL(rw_deck_get_size(deck, "checkpoint_device", &device_bytes));
  RW_CALL(rw_deck_get_string(deck, "checkpoint_write_cost", costs[0], sizeof costs[0]));
  RW_CALL(rw_deck_get_string(deck, "checkpoint_read_cost", costs[1], sizeof costs[1]));
  RW_CALL(rw_deck_get_string(deck, "checkpoint_ram_write_cost", hcosts[0], sizeof hcosts[0]));
  RW_CALL(rw_deck_get_string(deck, "checkpoint_ram_read_cost", hcosts[1], sizeof hcosts[1]));
  const char *cost_key[4] = {"checkpoint_write_cost", "checkpoint_read_cost",
                             "checkpoint_ram_write_cost", "checkpoint_ram_read_cost"};
  char *cost_text[4] = {costs[0], costs[1], hcosts[0], hcosts[1]};
  double *cost[4] = {&opt->write_cost, &opt->read_cost, &opt->host_write_cost,
                     &opt->host_read_cost};
  for (int i = 0; i < 4; i++) {
    char *end = NULL;
    *cost[i] = -1.0;
    if (strcmp(cost_text[i], "auto") == 0) continue;
    *cost[i] = strtod(cost_text[i], &end);
    RW_CHECK(end != cost_text[i] && *end == '\0' && isfinite(*cost[i]) && *cost[i] >= 0.0,
             RW_ERR_DECK,
             "key '%s' = '%s' (from %s): expected auto or a number >= 0 (the cost of one %s "
             "transfer in units of one time step)",
             cost_key[i], cost_text[i], rw_deck_source(deck, cost_key[i]),
             i < 2 ? "disk" : "device-host");
  }
  /* Tiers: on a device run the RAM-store slots are device memory (checkpoint_device or
   * checkpoint_slots) and checkpoint_ram is the host tier; on the CPU there is no device tier. */
  if (app->device) {
    opt->host_bytes = opt->ram_bytes;
    opt->ram_bytes = device_bytes;
  } else {
    RW_CHECK(device_bytes == 0, RW_ERR_DECK,
             "key 'checkpoint_device' (from %s) sets a device-memory budget, but device: cpu "
             "(from %s); use checkpoint_ram for a CPU run, or device: cuda",
             rw_deck_source(deck, "checkpoint_device"), rw_deck_source(deck, "device"));
  }
  RW_CHECK(dslots == 0 || opt->disk_bytes == 0, RW_ERR_DECK,
           "keys checkpoint_disk (from %s) and checkpoint_disk_slots (from %s) both set: give one",
           rw_deck_source(deck, "checkpoint_disk"), rw_deck_source(deck, "checkpoint_disk_slots"));
  opt->disk_slots = (int)dslots;
  opt->disk_dir = app->checkpoint_dir;
  RW_CALL(rw_deck_get_bool(deck, "adaptive", &opt->adaptive));
  RW_CALL(rw_deck_get_real(deck, "rtol", &opt->rtol));
  RW_CALL(rw_deck_get_real(deck, "atol", &opt->atol));
  RW_CALL(rw_deck_get_int(deck, "max_steps", &opt->max_steps));
  RW_CALL(rw_deck_get_string(deck, "output", app->output, sizeof app->output));
  /* A result path that is the deck file (or a disk checkpoint) is refused before anything is
   * written: the run would overwrite its own input. */
  RW_CALL(rw_app_check_paths(app, NULL, 0, NULL, 0));
  /* An unwritable result path is refused now, not when the finished run renames its file. */
  if (rw_output_check_path(rw_context_comm(app->ctx), app->output))
    return rw_app_deck_error(app, "output");
  RW_CALL(rw_deck_get_int(deck, "output_every", &app->output_every));
  RW_CALL(rw_deck_get_string(deck, "log_level", level, sizeof level));
  RW_CALL(rw_deck_get_string(deck, "progress", prog, sizeof prog));
  RW_CALL(rw_deck_get_int(deck, "noise_paths", &app->noise_paths));
  {
    int flush = 0;
    RW_CALL(rw_deck_get_bool(deck, "flush_subnormals", &flush));
    if (rw_fp_flush_subnormals(flush)) return rw_app_deck_error(app, "flush_subnormals");
    app->flush_subnormals = flush;
  }
  rw_context_set_log_level(app->ctx, strcmp(level, "quiet") == 0  ? RW_LOG_QUIET
                                     : strcmp(level, "info") == 0 ? RW_LOG_INFO
                                                                  : RW_LOG_SUMMARY);
  app->progress = strcmp(prog, "on") == 0 ? 1 : strcmp(prog, "off") == 0 ? 0 : isatty(2);
  if (rw_context_rank(app->ctx) != 0) app->progress = 0;
  app->diff_y0 = app->diff_field = 1; /* key differentiate, read by rw_app_solve */
  memset(app->diff_p, 1, sizeof app->diff_p);
  opt->store_stages = store_stages;
  opt->mode = strcmp(mode, "checkpoint") == 0   ? RW_ADJOINT_CHECKPOINT
              : strcmp(mode, "reversible") == 0 ? RW_ADJOINT_REVERSIBLE
              : strcmp(mode, "backsolve") == 0  ? RW_ADJOINT_BACKSOLVE
                                                : RW_ADJOINT_STORE;
  if (opt->mode == RW_ADJOINT_REVERSIBLE || opt->mode == RW_ADJOINT_BACKSOLVE) {
    RW_CHECK(!store_stages, RW_ERR_DECK,
             "key 'adjoint_store_stages' (from %s) is true, but adjoint_mode: %s (from %s) "
             "stores no states to hold stages with; it applies to store and checkpoint modes",
             rw_deck_source(deck, "adjoint_store_stages"), mode,
             rw_deck_source(deck, "adjoint_mode"));
    RW_CHECK(!opt->adaptive, RW_ERR_DECK,
             "key 'adaptive' (from %s) is true, but adjoint_mode: %s (from %s) runs a fixed step; "
             "adaptive stepping needs adjoint_mode: checkpoint with checkpoint_schedule: online",
             rw_deck_source(deck, "adaptive"), mode, rw_deck_source(deck, "adjoint_mode"));
  }
  opt->schedule = strcmp(app->schedule, "online") == 0      ? RW_SCHEDULE_ONLINE
                  : strcmp(app->schedule, "fixed") == 0     ? RW_SCHEDULE_FIXED
                  : strcmp(app->schedule, "store_all") == 0 ? RW_SCHEDULE_STORE_ALL
                                                            : RW_SCHEDULE_BINOMIAL;
  /* Budget keys the mode would ignore are refused when the user set them, as the disk keys
   * are: store mode keeps every state whatever the budget says. */
  int ram_set = rw_deck_user_set(deck, "checkpoint_ram") && (opt->ram_bytes || opt->host_bytes);
  if (opt->mode == RW_ADJOINT_STORE) {
    const char *bk = rw_deck_user_set(deck, "checkpoint_slots") ? "checkpoint_slots"
                     : ram_set                                  ? "checkpoint_ram"
                                                                : NULL;
    RW_CHECK(!bk, RW_ERR_DECK,
             "key '%s' (from %s) sets a checkpoint budget, but adjoint_mode: store (from %s) "
             "keeps every state whatever the budget; use adjoint_mode: checkpoint to stay "
             "within it, or leave the key out",
             bk, rw_deck_source(deck, bk), rw_deck_source(deck, "adjoint_mode"));
  }
  /* The fixed and store_all schedules choose their own slot count (every interval-th state,
   * every state): a slot count given for them would be ignored. */
  RW_CHECK(!(opt->mode == RW_ADJOINT_CHECKPOINT &&
             (!strcmp(app->schedule, "fixed") || !strcmp(app->schedule, "store_all")) &&
             rw_deck_user_set(deck, "checkpoint_slots")),
           RW_ERR_DECK,
           "key 'checkpoint_slots' (from %s) is ignored by checkpoint_schedule: %s (from %s), "
           "which keeps %s; leave it out (checkpoint_ram still bounds the memory), or use "
           "checkpoint_schedule: binomial for a slot count",
           rw_deck_source(deck, "checkpoint_slots"), app->schedule,
           rw_deck_source(deck, "checkpoint_schedule"),
           strcmp(app->schedule, "fixed") ? "every state" : "every checkpoint_interval-th state");
  /* On the CPU the RAM budget sets the slots (on a device it is the host tier beside them). */
  RW_CHECK(app->device || !(rw_deck_user_set(deck, "checkpoint_slots") && ram_set), RW_ERR_DECK,
           "keys checkpoint_slots (from %s) and checkpoint_ram (from %s) both set: give one (the "
           "RAM budget sets the slots when it is given)",
           rw_deck_source(deck, "checkpoint_slots"), rw_deck_source(deck, "checkpoint_ram"));
  /* A slot count the user gave beats a RAM budget from the app's default deck (a deck file or
   * the command line overrides the default deck, key by key, and these two keys say one
   * thing). */
  if (!app->device && rw_deck_user_set(deck, "checkpoint_slots") &&
      !rw_deck_user_set(deck, "checkpoint_ram"))
    opt->ram_bytes = 0;
  opt->ram_slots = (int)slots;
  opt->interval = interval;
  double last;
  if (rw_time_grid(opt->t0, opt->tf, opt->dt, &app->nsteps, &last))
    return rw_app_deck_error(app, "t0,tf,dt");
  if (opt->disk_slots > 0 || opt->disk_bytes > 0) {
    const char *dk = opt->disk_bytes > 0 ? "checkpoint_disk" : "checkpoint_disk_slots";
    int rebuild = opt->mode == RW_ADJOINT_REVERSIBLE || opt->mode == RW_ADJOINT_BACKSOLVE;
    RW_CHECK(rebuild || (opt->mode == RW_ADJOINT_CHECKPOINT &&
                         ((opt->schedule == RW_SCHEDULE_BINOMIAL && !opt->adaptive) ||
                          opt->schedule == RW_SCHEDULE_ONLINE)),
             RW_ERR_DECK,
             "key '%s' (from %s) asks for disk checkpoints: they need adjoint_mode: checkpoint "
             "with checkpoint_schedule: binomial (fixed step) or online (fixed or adaptive step), "
             "or adjoint_mode reversible or backsolve (anchors on disk)",
             dk, rw_deck_source(deck, dk));
  }
  if (opt->host_bytes > 0) {
    RW_CHECK(opt->mode == RW_ADJOINT_CHECKPOINT && opt->schedule == RW_SCHEDULE_BINOMIAL &&
                 !opt->adaptive,
             RW_ERR_DECK,
             "key 'checkpoint_ram' (from %s) asks for a host checkpoint tier on this device run: "
             "it needs adjoint_mode: checkpoint with checkpoint_schedule: binomial and a fixed "
             "step (the three-tier schedule); set checkpoint_device for the device-memory "
             "budget and leave checkpoint_ram at 0 otherwise",
             rw_deck_source(deck, "checkpoint_ram"));
  }
  if (app->restart_from[0]) {
    RW_CHECK(opt->disk_slots > 0 || opt->disk_bytes > 0, RW_ERR_DECK,
             "key 'restart_from' = '%s' (from %s): a restart continues from disk checkpoints, and "
             "this deck asks for none (set checkpoint_disk or checkpoint_disk_slots as the run "
             "that stopped did)",
             app->restart_from, rw_deck_source(deck, "restart_from"));
    struct stat sb;
    int bad = stat(app->restart_from, &sb) != 0 ? 2 : !S_ISDIR(sb.st_mode);
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, rw_context_comm(app->ctx)));
    RW_CHECK(!bad, RW_ERR_DECK,
             "key 'restart_from' = '%s' (from %s): %s; give the checkpoint_dir of the run that "
             "stopped",
             app->restart_from, rw_deck_source(deck, "restart_from"),
             bad == 2 ? "no such directory" : "not a directory (a file is there)");
    RW_CHECK(opt->schedule == RW_SCHEDULE_BINOMIAL || opt->schedule == RW_SCHEDULE_ONLINE,
             RW_ERR_DECK,
             "key 'restart_from' = '%s' (from %s): restarts continue runs with disk checkpoints "
             "under the binomial or online schedule (checkpoint_schedule: %s here)",
             app->restart_from, rw_deck_source(deck, "restart_from"), app->schedule);
    opt->restart_dir = app->restart_from;
  }
  if (opt->adaptive) {
    app->nsteps = -1;
    RW_CHECK(strcmp(app->stepper, "dopri5") == 0, RW_ERR_DECK,
             "key 'adaptive' is true but stepper = '%s' (from %s) has no error estimate; use "
             "stepper dopri5",
             app->stepper, rw_deck_source(deck, "stepper"));
    RW_CHECK(opt->mode == RW_ADJOINT_CHECKPOINT && opt->schedule == RW_SCHEDULE_ONLINE, RW_ERR_DECK,
             "key 'adaptive' is true: the number of steps is unknown in advance, so set "
             "adjoint_mode: checkpoint and checkpoint_schedule: online");
  }
  return 0;
}

int rw_app_open_output(rw_app *app)
{
  char *yaml = NULL;
  int ierr = 0;
  RW_CALL(rw_output_create(rw_context_comm(app->ctx), app->output, &app->out));
  RW_TRY(rw_calloc(65536, 1, "deck text", &yaml));
  RW_TRY(rw_deck_to_yaml(app->deck, yaml, 65536));
  RW_TRY(rw_output_attr_string(app->out, "/", "app", app->info->name));
  RW_TRY(rw_output_attr_string(app->out, "/", "deck", yaml));
  RW_TRY(rw_output_attr_string(app->out, "/", "stepper", app->stepper));
  RW_TRY(rw_output_attr_long(app->out, "/", "ranks", rw_context_size(app->ctx)));
cleanup:
  rw_free(&yaml);
  return ierr;
}

int rw_app_close_output(rw_app *app)
{
  RW_CALL(rw_output_close(&app->out, 1));
  return 0;
}

/* The progress line: at most every half second, overwritten in place. */
static void rw_app_progress(void *c, int phase, long step, double t, long recomputed)
{
  rw_app *app = c;
  double now = rw_wtime();
  if (now - app->progress_last < 0.5) return;
  app->progress_last = now;
  if (phase == 0)
    fprintf(stderr, "\r%s: forward  step %ld%s%ld  t = %-12.6g recomputed %ld   ", app->info->name,
            step, app->nsteps > 0 ? "/" : "", app->nsteps > 0 ? app->nsteps : 0L, t, recomputed);
  else
    fprintf(stderr, "\r%s: backward %ld steps to go  t = %-12.6g recomputed %ld   ",
            app->info->name, step, t, recomputed);
  fflush(stderr);
}

/* The run's identity for its checkpoint files: a hash of the app, the effective deck
 * (without the keys that only say where results go, how they are shown, or where the
 * checkpoints are) and the decomposition (the rank count, a grid app's process grid and every
 * rank's local length).
 * The deck lines hashed go to `deck` (len bytes) and the decomposition in words to `decomp`,
 * for the files to record (a refused restart names what differs). Collective. */
static int rw_app_run_id(rw_app *app, N_Vector y, rw_adjoint_options *opt, char *deck, size_t len,
                         char *decomp, size_t dlen)
{
  int ierr = 0, size = rw_context_size(app->ctx);
  char *yaml = NULL;
  long long *lens = NULL;
  RW_TRY(rw_calloc(65536, 1, "deck text", &yaml));
  RW_TRY(rw_calloc((size_t)size, sizeof *lens, "decomposition", &lens));
  RW_TRY(rw_deck_to_yaml(app->deck, yaml, 65536));
  uint64_t h = rw_fnv1a(RW_FNV1A_INIT, app->info->name, strlen(app->info->name));
  static const char *skip[] = {"output:",          "output_every:",   "progress:",    "log_level:",
                               "checkpoint_keep:", "checkpoint_dir:", "restart_from:"};
  size_t used = 0;
  deck[0] = '\0';
  for (char *line = strtok(yaml, "\n"); line; line = strtok(NULL, "\n")) {
    const char *l = line + strspn(line, " ");
    int ignore = 0;
    for (size_t i = 0; i < sizeof skip / sizeof *skip; i++)
      if (strncmp(l, skip[i], strlen(skip[i])) == 0) ignore = 1;
    if (ignore) continue;
    h = rw_fnv1a(h, line, strlen(line) + 1);
    if (used + strlen(l) + 2 < len) used += (size_t)snprintf(deck + used, len - used, "%s\n", l);
  }
  long long mine = (long long)rw_vec_local_length(y);
  RW_TRY_MPI(
      MPI_Allgather(&mine, 1, MPI_LONG_LONG, lens, 1, MPI_LONG_LONG, rw_context_comm(app->ctx)));
  h = rw_fnv1a(h, &size, sizeof size);
  h = rw_fnv1a(h, lens, (size_t)size * sizeof *lens);
  size_t du = (size_t)snprintf(decomp, dlen, "%d ranks", size);
  if (app->grid) { /* the split itself: slabs and a 2 x 2 split of n x n have equal lengths */
    int dims[3], coords[3];
    rw_grid_topology(app->grid, dims, coords);
    h = rw_fnv1a(h, dims, sizeof dims);
    du += (size_t)snprintf(decomp + du, dlen - du, ", process grid %d x %d x %d", dims[0], dims[1],
                           dims[2]);
  }
  du += (size_t)snprintf(decomp + du, dlen - du, ", local lengths");
  for (int r = 0; r < size && du + 24 < dlen; r++)
    du += (size_t)snprintf(decomp + du, dlen - du, " %lld", lens[r]);
  snprintf(app->run_id, sizeof app->run_id, "%016llx", (unsigned long long)h);
  opt->run_id = app->run_id;
  opt->run_deck = deck;
  opt->run_decomposition = decomp;
cleanup:
  rw_free(&yaml);
  rw_free(&lens);
  return ierr;
}

/* The key `differentiate`: sets app->diff_* and tells the problem what is frozen. The deck
 * is the same on every rank, so an error here is met by all of them. */
int rw_app_differentiate(rw_app *app, rw_problem prob)
{
  char val[1024], allowed[1024];
  int np = rw_problem_nparams(prob), named = rw_problem_params_named(prob);
  const char *field = rw_problem_field(prob) ? rw_problem_field_name(prob) : NULL;
  RW_CALL(rw_deck_get_string(app->deck, "differentiate", val, sizeof val));
  snprintf(allowed, sizeof allowed, "all, y0%s", np > 0 ? ", params" : "");
  if (np > 0 && !named)
    snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), ", theta");
  for (int k = 0; named && k < np; k++)
    snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), ", %s",
             rw_problem_param_name(prob, k));
  if (field) snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), ", %s", field);
  app->diff_y0 = app->diff_field = 0;
  memset(app->diff_p, 0, sizeof app->diff_p);
  int any = 0;
  for (char *tok = strtok(val, ",[] \t"); tok; tok = strtok(NULL, ",[] \t")) {
    int k = named ? rw_problem_param_index(prob, tok) : -1;
    any = 1;
    if (strcmp(tok, "all") == 0) {
      app->diff_y0 = 1, app->diff_field = field != NULL;
      memset(app->diff_p, 1, sizeof app->diff_p);
    } else if (strcmp(tok, "y0") == 0) {
      app->diff_y0 = 1;
    } else if (np > 0 && (strcmp(tok, "params") == 0 || (!named && strcmp(tok, "theta") == 0))) {
      memset(app->diff_p, 1, sizeof app->diff_p);
    } else if (k >= 0 && k < (int)sizeof app->diff_p) {
      app->diff_p[k] = 1;
    } else if (field && strcmp(tok, field) == 0) {
      app->diff_field = 1;
    } else {
      (void)RW_ERROR(RW_ERR_DECK,
                     "key 'differentiate': '%s' is not an input of this problem; allowed: %s "
                     "(comma-separated)",
                     tok, allowed);
      return rw_app_deck_error(app, "differentiate");
    }
  }
  if (!any) {
    (void)RW_ERROR(RW_ERR_DECK, "key 'differentiate' is empty; allowed: %s (comma-separated)",
                   allowed);
    return rw_app_deck_error(app, "differentiate");
  }
  int params = 0;
  for (int k = 0; k < np && k < (int)sizeof app->diff_p; k++)
    params = params || app->diff_p[k];
  rw_problem_set_active(prob, params, app->diff_field);
  return 0;
}

int rw_app_param_reported(rw_app *app, rw_problem prob, int k)
{
  if (k < 0 || k >= rw_problem_nparams(prob)) return 0;
  if (!rw_problem_params_named(prob)) return app->diff_p[0];
  return k < (int)sizeof app->diff_p && app->diff_p[k];
}

int rw_app_solve(rw_app *app, rw_problem prob, rw_stepper st, N_Vector y, rw_monitor_fn monitor,
                 void *mctx, double *J, double *dJdp, N_Vector dJdy0, rw_adjoint_stats *stats)
{
  rw_adjoint_options opt = app->opt;
  RW_CALL(rw_app_differentiate(app, prob));
  if (opt.mode == RW_ADJOINT_REVERSIBLE || opt.mode == RW_ADJOINT_BACKSOLVE) {
    rw_reverse_kind want =
        opt.mode == RW_ADJOINT_REVERSIBLE ? RW_REVERSE_INVERSE : RW_REVERSE_BACKWARD;
    rw_reverse_kind have = rw_stepper_reverse_kind(st);
    if (have != want) {
      (void)RW_ERROR(
          RW_ERR_DECK, "adjoint_mode %s needs a stepper with %s, and stepper '%s' has %s; %s",
          opt.mode == RW_ADJOINT_REVERSIBLE ? "reversible" : "backsolve",
          want == RW_REVERSE_INVERSE ? "an exact inverse step" : "a backward (negative-size) step",
          rw_stepper_name(st),
          have == RW_REVERSE_INVERSE    ? "an exact inverse step"
          : have == RW_REVERSE_BACKWARD ? "only a backward (negative-size) step, no exact inverse"
                                        : "no reverse step",
          /* a stepper with no reverse step at all (the SDE steppers) takes neither memory-free
           * mode, whichever was asked: the advice is a checkpointing one */
          have != RW_REVERSE_INVERSE && have != RW_REVERSE_BACKWARD
              ? "use a checkpointing adjoint_mode (checkpoint or store) with this stepper"
          : want == RW_REVERSE_INVERSE ? "use adjoint_mode backsolve with a Runge-Kutta stepper"
                                       : "use adjoint_mode reversible with this stepper");
      return rw_app_deck_error(app, "adjoint_mode,stepper");
    }
    if (opt.ram_bytes > 0) {
      unsigned long long snap = rw_vec_bytes(y);
      int nslots = 0;
      RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &snap, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                                rw_context_comm(app->ctx)));
      if (rw_store_slots_for_budget(opt.ram_bytes, (size_t)snap, &nslots))
        return rw_app_deck_error(app, "checkpoint_ram");
    }
  }
  if (opt.mode == RW_ADJOINT_CHECKPOINT && opt.ram_bytes > 0) {
    /* Check the budget here, where every rank agrees, rather than inside the solve. */
    size_t per = opt.store_stages ? (size_t)rw_stepper_num_stage_vectors(st) : 1;
    unsigned long long snap = per * rw_vec_bytes(y);
    int nslots = 0;
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &snap, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                              rw_context_comm(app->ctx)));
    if (rw_store_slots_for_budget_named(app->device ? "checkpoint_device" : "checkpoint_ram",
                                        opt.ram_bytes, (size_t)snap, &nslots))
      return rw_app_deck_error(app, app->device ? "checkpoint_device" : "checkpoint_ram");
  }
  if (opt.mode == RW_ADJOINT_CHECKPOINT && opt.host_bytes > 0) {
    size_t per = opt.store_stages ? (size_t)rw_stepper_num_stage_vectors(st) : 1;
    unsigned long long snap = per * rw_vec_bytes(y);
    int nslots = 0;
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &snap, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                              rw_context_comm(app->ctx)));
    if (rw_store_slots_for_budget_named("checkpoint_ram (the host tier)", opt.host_bytes,
                                        (size_t)snap, &nslots))
      return rw_app_deck_error(app, "checkpoint_ram");
  }
  if (opt.mode == RW_ADJOINT_CHECKPOINT && opt.disk_bytes > 0) {
    size_t per = opt.store_stages ? (size_t)rw_stepper_num_stage_vectors(st) : 1;
    unsigned long long snap = per * rw_vec_bytes(y);
    int nslots = 0;
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &snap, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                              rw_context_comm(app->ctx)));
    if (rw_store_slots_for_budget_named("checkpoint_disk", opt.disk_bytes, (size_t)snap, &nslots))
      return rw_app_deck_error(app, "checkpoint_disk");
  }
  char *deck = NULL, decomp[1024];
  if (opt.mode == RW_ADJOINT_CHECKPOINT && (opt.disk_bytes > 0 || opt.disk_slots > 0)) {
    RW_CALL(rw_calloc(65536, 1, "deck text", &deck));
    int e = rw_app_run_id(app, y, &opt, deck, 65536, decomp, sizeof decomp);
    if (e) {
      rw_free(&deck);
      return rw_error_push(e, __func__, __FILE__, __LINE__);
    }
  }
  opt.monitor = monitor;
  opt.monitor_ctx = mctx;
  if (app->progress) {
    opt.progress = rw_app_progress;
    opt.progress_ctx = app;
  }
  uint64_t nseed = 0;
  double namp = 0.0;
  long nref = 1;
  rw_problem_get_noise(prob, &nseed, &namp, &nref);
  if (app->noise_paths > 1 &&
      !(rw_problem_has_noise(prob) && rw_sde_method_known(rw_stepper_name(st)) && namp != 0.0)) {
    (void)RW_ERROR(RW_ERR_DECK,
                   "noise_paths %ld averages noise paths, and this run has no noise (%s); set "
                   "noise_paths 1, or turn the noise on (noise_amplitude > 0 with an SDE "
                   "stepper)",
                   app->noise_paths, rw_problem_name(prob));
    rw_free(&deck);
    return rw_app_deck_error(app, "noise_paths");
  }
  app->collective = 0;
  int ierr = rw_adjoint_solve_ensemble(prob, st, &opt, app->noise_paths, y, J, dJdp, dJdy0, stats);
  rw_free(&deck);
  /* Some errors inside the solve are reached by every rank alike: output failures (the
   * output layer agrees them across ranks), budget failures (found before the first step from
   * sizes every rank agrees on) and step failures (a non-finite objective or
   * error norm, adaptive limits: global quantities) and deck errors met inside (a refused
   * restart, agreed by the store). Those exit cleanly; any other error may
   * be local to one rank and takes the MPI_Abort path. */
  if (!ierr || ierr == RW_ERR_IO || ierr == RW_ERR_STEP || ierr == RW_ERR_BUDGET ||
      ierr == RW_ERR_DECK || ierr == RW_ERR_DRIFT)
    app->collective = 1;
  if (ierr && app->progress) fprintf(stderr, "\n");
  if (ierr == RW_ERR_STEP && strcmp(app->stepper, "revheun") == 0) {
    /* "reduce dt" does not cure this stepper's weak stability on a dissipative problem */
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", rw_error_message());
    msg[strcspn(msg, "\n")] = '\0'; /* the message, without the trace below it */
    return RW_ERROR(ierr,
                    "%s (stepper revheun, reversible Heun, is only weakly stable on dissipative "
                    "problems and can blow up at any dt: use heun, rk4 or dopri5 with a "
                    "checkpointing adjoint_mode there)",
                    msg);
  }
  if (ierr) return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  if (app->progress) fprintf(stderr, "\r%*s\r", 78, "");
  return 0;
}

int rw_app_write_results(rw_app *app, rw_problem prob, double J, const double *dJdp,
                         const rw_adjoint_stats *st)
{
  rw_output out = app->out;
  int np = rw_problem_nparams(prob);
  RW_CALL(rw_output_attr_double(out, "/", "objective", J));
  if (np > 0 && !rw_problem_params_named(prob) && rw_app_param_reported(app, prob, 0)) {
    /* one parameter vector theta (any length): the array and its norm */
    double n2 = 0.0;
    for (int k = 0; k < np; k++)
      n2 += dJdp[k] * dJdp[k];
    RW_CALL(rw_output_array(out, "/gradient/dJdtheta", dJdp, np));
    RW_CALL(rw_output_attr_double(out, "/gradient/dJdtheta", "norm2", sqrt(n2)));
  } else if (np > 0 && rw_problem_params_named(prob)) {
    /* the differentiated parameters only (key differentiate), in the problem's order */
    char names[1024] = "";
    double sel[64];
    int m = 0;
    /* the group holds the attributes even when no field or dJ/dy0 dataset made it */
    RW_CALL(rw_output_group(out, "/gradient"));
    for (int k = 0; k < np; k++) {
      if (!rw_app_param_reported(app, prob, k)) continue;
      char an[80];
      snprintf(an, sizeof an, "dJ/d%s", rw_problem_param_name(prob, k));
      RW_CALL(rw_output_attr_double(out, "/gradient", an, dJdp[k]));
      size_t l = strlen(names);
      snprintf(names + l, sizeof names - l, "%s%s", m ? "," : "", rw_problem_param_name(prob, k));
      sel[m++] = dJdp[k];
    }
    if (m > 0) {
      RW_CALL(rw_output_array(out, "/gradient/dJdp", sel, m));
      RW_CALL(rw_output_attr_string(out, "/gradient/dJdp", "names", names));
    }
  }
  RW_CALL(rw_output_group(out, "/stats"));
  struct {
    const char *name;
    long v;
  } longs[] = {{"steps", st->steps},
               {"rhs_forward", st->rhs_forward},
               {"rhs_backward", st->rhs_backward},
               {"recomputed_steps", st->recomputed_steps},
               {"advances", st->advances},
               {"optimal_advances", st->optimal_advances},
               {"restores", st->restores},
               {"checkpoint_slots", st->ram_slots},
               {"checkpoint_bytes_ram", (long)st->checkpoint_bytes},
               {"checkpoint_bytes_disk", (long)st->disk_bytes},
               {"checkpoint_disk_slots", st->disk_slots},
               {"checkpoint_host_slots", st->host_slots},
               {"checkpoint_bytes_host", (long)st->host_bytes},
               {"host_writes", st->host_writes},
               {"host_reads", st->host_reads},
               {"disk_writes", st->disk_writes},
               {"disk_reads", st->disk_reads},
               {"accepted_steps", st->accepted},
               {"rejected_steps", st->rejected}};
  for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++)
    RW_CALL(rw_output_attr_long(out, "/stats", longs[i].name, longs[i].v));
  RW_CALL(rw_output_attr_double(out, "/stats", "time_forward", st->time_forward));
  RW_CALL(rw_output_attr_double(out, "/stats", "time_backward", st->time_backward));
  if (st->disk_slots > 0) {
    RW_CALL(rw_output_attr_double(out, "/stats", "checkpoint_write_cost", st->write_cost));
    RW_CALL(rw_output_attr_double(out, "/stats", "checkpoint_read_cost", st->read_cost));
    RW_CALL(rw_output_attr_double(out, "/stats", "schedule_cost", st->schedule_cost));
    if (st->disk_period > 0)
      RW_CALL(rw_output_attr_long(out, "/stats", "disk_period", st->disk_period));
  }
  if (st->restart_step >= 0) {
    RW_CALL(rw_output_attr_long(out, "/stats", "restart_step", st->restart_step));
    RW_CALL(rw_output_attr_string(out, "/stats", "restart_from", app->restart_from));
  }
  static const char *modes[] = {"store", "checkpoint", "reversible", "backsolve"};
  RW_CALL(rw_output_attr_string(out, "/stats", "adjoint_mode", modes[app->opt.mode]));
  if (app->opt.mode == RW_ADJOINT_REVERSIBLE || app->opt.mode == RW_ADJOINT_BACKSOLVE) {
    static const char *actions[] = {"fallback", "abort", "warn"};
    struct {
      const char *name;
      long v;
    } dl[] = {{"anchors", st->anchors},
              {"anchor_interval", st->anchor_interval},
              {"fallback_slots", st->fallback_slots},
              {"drift_segments", st->drift_segments},
              {"drift_fallbacks", st->drift_fallbacks},
              {"fallback_steps", st->fallback_steps},
              {"rebuilt_steps", st->rebuilt_steps}};
    for (size_t i = 0; i < sizeof dl / sizeof dl[0]; i++)
      RW_CALL(rw_output_attr_long(out, "/stats", dl[i].name, dl[i].v));
    RW_CALL(rw_output_attr_double(out, "/stats", "drift_max", st->drift_max));
    RW_CALL(rw_output_attr_double(out, "/stats", "drift_mean", st->drift_mean));
    RW_CALL(rw_output_attr_double(out, "/stats", "drift_accepted_max", st->drift_accepted_max));
    RW_CALL(rw_output_attr_double(out, "/stats", "drift_tol", app->opt.drift_tol));
    RW_CALL(rw_output_attr_string(out, "/stats", "drift_action", actions[app->opt.drift_action]));
  }
  return 0;
}

static void rw_fmt_bytes(size_t b, char *buf, size_t len)
{
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int i = 0;
  while (v >= 1024.0 && i < 4)
    v /= 1024.0, i++;
  snprintf(buf, len, i ? "%.2f %s" : "%.0f %s", v, u[i]);
}

int rw_app_summary(rw_app *app, rw_problem prob, double J, const double *dJdp, N_Vector dJdy0,
                   const rw_adjoint_stats *st)
{
  rw_context ctx = app->ctx;
  /* mem[3]: the process's peak resident set so far (rw_peak_rss, 0 if unknown). It
   * holds what the allocator's count (mem[1], the solve's own window) leaves out: the problem's
   * fields and the app's vectors made before the solve, MPI's and HDF5's buffers, and the shared
   * libraries' pages (about 30 MiB with PETSc's dependencies, the same on every rank). */
  unsigned long long mem[4] = {st->checkpoint_bytes, st->peak_alloc_bytes, st->disk_bytes,
                               rw_peak_rss()};
  RW_CALL_MPI(
      MPI_Allreduce(MPI_IN_PLACE, mem, 4, MPI_UNSIGNED_LONG_LONG, MPI_MAX, rw_context_comm(ctx)));
  double ny0 = dJdy0 ? sqrt(N_VDotProd(dJdy0, dJdy0)) : 0.0;
  N_Vector fb = rw_problem_field_adjoint(prob);
  /* Subnormal entries of the gradient fields: where they are, the sweeps computed on them too
   * (x86's slow path); a hint names flush_subnormals when they are more than 0.1 % */
  double subn[2] = {0.0, 0.0}; /* subnormal entries, entries (host vectors only) */
  if (!app->flush_subnormals) {
    N_Vector gv[2] = {dJdy0, fb};
    for (int k = 0; k < 2; k++) {
      if (!gv[k] || rw_vec_device(gv[k])) continue;
      const double *d = rw_vec_data(gv[k]);
      long n = (long)rw_vec_local_length(gv[k]), c = 0;
      for (long i = 0; i < n; i++)
        c += d[i] != 0.0 && fabs(d[i]) < DBL_MIN;
      subn[0] += (double)c, subn[1] += (double)n;
    }
    RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, subn, 2, MPI_DOUBLE, MPI_SUM, rw_context_comm(ctx)));
  }
  double nf = fb ? sqrt(N_VDotProd(fb, fb)) : 0.0;
  char b1[32], b2[32], b3[32], brss[96] = "";
  if (mem[3] > 0) {
    char b[32];
    rw_fmt_bytes((size_t)mem[3], b, sizeof b);
    snprintf(brss, sizeof brss, "; process peak resident %s (largest rank)", b);
  }
  rw_fmt_bytes((size_t)mem[0], b1, sizeof b1);
  rw_fmt_bytes((size_t)mem[1], b2, sizeof b2);
  rw_fmt_bytes((size_t)mem[2], b3, sizeof b3);
  rw_log(ctx, RW_LOG_SUMMARY, "%s: %s on %d ranks, %s, %ld steps, T = %g\n", app->info->name,
         rw_problem_name(prob), rw_context_size(ctx), app->stepper, st->steps, app->opt.tf);
  if (app->noise_paths > 1) {
    uint64_t seed = 0;
    double amp = 0.0;
    long refine = 1;
    rw_problem_get_noise(prob, &seed, &amp, &refine);
    rw_log(ctx, RW_LOG_SUMMARY,
           "  ensemble of %ld noise paths (seeds %llu .. %llu): J and the gradients are their "
           "means; the final state is the last path's\n",
           app->noise_paths, (unsigned long long)seed,
           (unsigned long long)(seed + (uint64_t)app->noise_paths - 1));
  }
  rw_log(ctx, RW_LOG_SUMMARY, "  %-18s = %.15e\n", "objective J", J);
  int np = rw_problem_nparams(prob);
  char frozen[1024] = "";
  if (np > 0 && !rw_problem_params_named(prob)) {
    if (rw_app_param_reported(app, prob, 0)) {
      double n2 = 0.0;
      for (int k = 0; k < np; k++)
        n2 += dJdp[k] * dJdp[k];
      char label[96];
      snprintf(label, sizeof label, "|dJ/dtheta|_2 (%d)", np);
      rw_log(ctx, RW_LOG_SUMMARY, "  %-18s = %.15e\n", label, sqrt(n2));
    } else {
      snprintf(frozen, sizeof frozen, "theta");
    }
  }
  for (int k = 0; rw_problem_params_named(prob) && k < np; k++) {
    if (!rw_app_param_reported(app, prob, k)) {
      size_t l = strlen(frozen);
      snprintf(frozen + l, sizeof frozen - l, "%s%s", l ? ", " : "",
               rw_problem_param_name(prob, k));
      continue;
    }
    char label[96];
    snprintf(label, sizeof label, "dJ/d%s", rw_problem_param_name(prob, k));
    rw_log(ctx, RW_LOG_SUMMARY, "  %-18s = %.15e\n", label, dJdp[k]);
  }
  if (dJdy0 && app->diff_y0) rw_log(ctx, RW_LOG_SUMMARY, "  %-18s = %.6e\n", "|dJ/dy0|_2", ny0);
  if (fb && app->diff_field) {
    char label[96];
    snprintf(label, sizeof label, "|dJ/d%s|_2", rw_problem_field_name(prob));
    rw_log(ctx, RW_LOG_SUMMARY, "  %-18s = %.6e\n", label, nf);
  }
  if (dJdy0 && !app->diff_y0) {
    size_t l = strlen(frozen);
    snprintf(frozen + l, sizeof frozen - l, "%sy0", l ? ", " : "");
  }
  if (fb && !app->diff_field) {
    size_t l = strlen(frozen);
    snprintf(frozen + l, sizeof frozen - l, "%s%s", l ? ", " : "", rw_problem_field_name(prob));
  }
  if (frozen[0])
    rw_log(ctx, RW_LOG_SUMMARY, "  %-18s   %s (key differentiate)\n", "not differentiated", frozen);
  if (app->opt.mode == RW_ADJOINT_STORE)
    rw_log(ctx, RW_LOG_SUMMARY,
           "  adjoint mode store%s: recomputed steps 0 (optimum 0), rhs evaluations %ld "
           "forward, %ld backward\n",
           app->opt.store_stages ? " (stages)" : "", st->rhs_forward, st->rhs_backward);
  else if (app->opt.mode == RW_ADJOINT_REVERSIBLE || app->opt.mode == RW_ADJOINT_BACKSOLVE) {
    const rw_adjoint_options *o = &app->opt;
    rw_log(ctx, RW_LOG_SUMMARY,
           "  adjoint mode %s: %ld states rebuilt; %ld anchors%s every %ld steps + %d fallback "
           "slots (store mode would hold %ld states; binomial checkpointing in these %ld slots "
           "would recompute %ld steps); rhs evaluations %ld forward, %ld backward\n",
           o->mode == RW_ADJOINT_REVERSIBLE ? "reversible" : "backsolve", st->rebuilt_steps,
           st->anchors, st->disk_slots > 0 ? " on disk" : "", st->anchor_interval,
           st->fallback_slots, st->steps, st->anchors + st->fallback_slots,
           st->optimal_advances - (st->steps - 1), st->rhs_forward, st->rhs_backward);
    rw_log(ctx, RW_LOG_SUMMARY,
           "  drift: max %.3e, mean %.3e over %ld segments (drift_tol %.3g, drift_action %s); "
           "%ld segments fell back, %ld steps recomputed\n",
           st->drift_max, st->drift_mean, st->drift_segments, o->drift_tol,
           o->drift_action == RW_DRIFT_ABORT  ? "abort"
           : o->drift_action == RW_DRIFT_WARN ? "warn"
                                              : "fallback",
           st->drift_fallbacks, st->fallback_steps);
    if (!(st->drift_accepted_max <= o->drift_tol))
      rw_log(ctx, RW_LOG_SUMMARY,
             "  WARNING: drift %.3e above drift_tol %.3g was accepted (drift_action warn): the "
             "gradient may be off by about that much or more\n",
             st->drift_accepted_max, o->drift_tol);
  } else
    rw_log(ctx, RW_LOG_SUMMARY,
           "  adjoint mode checkpoint (%s, %d slots%s): recomputed steps %ld, advances %ld "
           "(%s t(l,c) = %ld%s), restores %ld, rhs evaluations %ld forward, %ld backward\n",
           app->schedule, st->ram_slots, app->opt.store_stages ? " with stages" : "",
           st->recomputed_steps, st->advances,
           st->disk_slots > 0 || st->host_slots > 0 ? "binomial optimum for the RAM slots alone"
                                                    : "binomial optimum",
           st->optimal_advances,
           st->disk_slots > 0 || st->host_slots > 0
               ? "; the tiers' slots add to those, and the schedule minimises time with their "
                 "costs"
           : st->restart_step >= 0 ? "; of the whole run, not only the steps after the restart"
                                   : "",
           st->restores, st->rhs_forward, st->rhs_backward);
  if (app->opt.adaptive)
    rw_log(ctx, RW_LOG_SUMMARY, "  adaptive: %ld accepted steps, %ld rejected (rtol %g, atol %g)\n",
           st->accepted, st->rejected, app->opt.rtol, app->opt.atol);
  if (st->disk_slots == 0 && app->opt.mode == RW_ADJOINT_CHECKPOINT &&
      (app->opt.disk_slots > 0 || app->opt.disk_bytes > 0))
    rw_log(ctx, RW_LOG_SUMMARY,
           "  disk tier: unused: with a disk write costing %.3g steps and a read %.3g%s, the "
           "optimal schedule keeps every checkpoint in RAM\n",
           st->write_cost, st->read_cost, st->costs_measured ? " (measured)" : "");
  if (st->disk_slots > 0)
    rw_log(ctx, RW_LOG_SUMMARY,
           "  disk tier: %d slots in %s, %ld writes, %ld reads (%.2f s, %.2f s on rank 0); costs "
           "in steps: write %.3g, read %.3g%s; schedule cost %.6g\n",
           st->disk_slots, app->restart_from[0] ? app->restart_from : app->checkpoint_dir,
           st->disk_writes, st->disk_reads, st->time_disk_write, st->time_disk_read, st->write_cost,
           st->read_cost,
           st->costs_measured     ? " (measured)"
           : app->restart_from[0] ? " (of the run restarted)"
                                  : "",
           st->schedule_cost);
  if (st->host_slots > 0)
    rw_log(ctx, RW_LOG_SUMMARY,
           "  host tier: %d slots of page-locked host RAM, %ld writes, %ld reads (%ld read ahead, "
           "%ld from the staging copy; %.2f s, %.2f s on rank 0); costs in steps: write %.3g, "
           "read %.3g%s; schedule cost %.6g\n",
           st->host_slots, st->host_writes, st->host_reads, st->host_prefetched,
           st->host_from_staging, st->time_host_write, st->time_host_read, st->host_write_cost,
           st->host_read_cost, st->costs_measured ? " (measured)" : "", st->schedule_cost);
  else if (app->opt.mode == RW_ADJOINT_CHECKPOINT && app->opt.host_bytes > 0)
    rw_log(ctx, RW_LOG_SUMMARY,
           "  host tier: unused: with a copy to the host costing %.3g steps and back %.3g%s, the "
           "optimal schedule keeps its checkpoints elsewhere\n",
           app->opt.host_write_cost, app->opt.host_read_cost,
           st->costs_measured ? " (measured)" : "");
  if (st->disk_period > 0)
    rw_log(
        ctx, RW_LOG_SUMMARY,
        "  online disk period: a disk checkpoint every %ld steps (%ld chosen from the costs%s)\n",
        st->disk_period, st->disk_period_chosen,
        st->disk_period > st->disk_period_chosen ? "; doubled when the disk slots filled" : "");
  if (st->restart_step > 0)
    rw_log(ctx, RW_LOG_SUMMARY,
           "  restart: resumed from the disk checkpoint of step %ld in %s (the first %ld steps "
           "were not taken again; result snapshots before it are not in this file)\n",
           st->restart_step, app->restart_from, st->restart_skipped);
  else if (st->restart_step == 0)
    rw_log(ctx, RW_LOG_SUMMARY,
           "  restart: resumed from the disk checkpoint of step 0 in %s (no later one was "
           "complete on every rank)\n",
           app->restart_from);
  if (app->device) { /* the slots hold device vectors: device memory, not host RAM */
    char b4[32];
    rw_fmt_bytes(rw_device_peak_bytes(app->device), b4, sizeof b4);
    char b5[32], b6[32], b7[32], staging[128] = "";
    rw_fmt_bytes(st->host_bytes, b5, sizeof b5);
    rw_fmt_bytes(st->host_staging_bytes, b6, sizeof b6);
    rw_fmt_bytes(st->disk_staging_bytes, b7, sizeof b7);
    int at = 0;
    if (st->host_staging_bytes > 0)
      at = snprintf(staging, sizeof staging, " + %s host-tier staging", b6);
    if (st->disk_staging_bytes > 0 && at >= 0 && (size_t)at < sizeof staging)
      snprintf(staging + at, sizeof staging - (size_t)at, " + %s disk-tier staging", b7);
    rw_log(ctx, RW_LOG_SUMMARY,
           "  checkpoints: device memory %s%s per rank, host RAM %s per rank, disk %s per rank; "
           "device memory peak %s (rank 0), host allocations peak %s per rank%s\n",
           b1, staging, b5, b3, b4, b2, brss);
  } else {
    rw_log(ctx, RW_LOG_SUMMARY,
           "  checkpoints: RAM %s per rank, disk %s per rank; peak allocated %s per rank%s\n", b1,
           b3, b2, brss);
  }
  rw_log(ctx, RW_LOG_SUMMARY, "  time: forward %.3f s, backward %.3f s%s\n", st->time_forward,
         st->time_backward, app->flush_subnormals ? " (subnormals flushed to zero)" : "");
  if (subn[1] > 0.0 && subn[0] > 1e-3 * subn[1])
    rw_log(ctx, RW_LOG_SUMMARY,
           "  note: %.0f of the gradient's %.0f entries (%.2g %%) are subnormal (below 2.2e-308),"
           " which the CPU computes tens of times slower; flush_subnormals: true flushes them "
           "to zero and may make the sweeps much faster\n",
           subn[0], subn[1], 100.0 * subn[0] / subn[1]);
  rw_log(ctx, RW_LOG_SUMMARY, "  output: %s\n", app->output);
  return 0;
}

int rw_app_finish(rw_app *app, rw_problem prob, double J, const double *dJdp, N_Vector dJdy0,
                  const rw_adjoint_stats *st)
{
  RW_CALL(rw_app_write_results(app, prob, J, dJdp, st));
  RW_CALL(rw_app_close_output(app));
  RW_CALL(rw_app_summary(app, prob, J, dJdp, dJdy0, st));
  return 0;
}

int rw_app_main(int argc, char **argv, const rw_app_info *info)
{
  int ierr = 0, rank = 0, size = 1, code = 0;
  rw_app app;
  rw_deck_key *keys = NULL;
  memset(&app, 0, sizeof app);
  app.info = info;
  app.collective = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int nc = (int)(sizeof rw_app_common_keys / sizeof rw_app_common_keys[0]);
  int nk = info->nkeys + nc;
  ierr = rw_calloc((size_t)nk, sizeof *keys, "deck key table", &keys);
  if (!ierr) {
    /* App keys first: an app may override a common key's default by listing it. */
    int n = 0;
    for (int i = 0; i < info->nkeys; i++)
      keys[n++] = info->keys[i];
    for (int i = 0; i < nc; i++) {
      int dup = 0;
      for (int j = 0; j < info->nkeys; j++)
        dup = dup || strcmp(info->keys[j].name, rw_app_common_keys[i].name) == 0;
      if (!dup) keys[n++] = rw_app_common_keys[i];
    }
    nk = n;
    ierr = rw_deck_create(MPI_COMM_WORLD, info->name, keys, nk, info->default_deck, argc, argv,
                          &app.deck);
  }
  if (ierr) {
    if (rank == 0) fprintf(stderr, "%s: error: %s\n", info->name, rw_error_message());
    code = 2;
    goto done;
  }
  if (rw_deck_help_requested(app.deck)) {
    if (rank == 0) {
      printf("%s: %s\n", info->name, info->description);
      rw_deck_print_help(app.deck, stdout);
    }
    goto done;
  }
  ierr = rw_context_create(MPI_COMM_WORLD, &app.ctx);
  if (!ierr) ierr = rw_app_read_common(&app);
  if (!ierr) ierr = info->run(&app);
  if (ierr && app.collective) {
    if (rank == 0) fprintf(stderr, "%s: error: %s\n", info->name, rw_error_message());
    if (app.out) rw_output_close(&app.out, 0);
    code = ierr == RW_ERR_DECK ? 2 : 1;
  } else if (ierr) {
    fprintf(stderr, "%s: error on rank %d: %s\n", info->name, rank, rw_error_message());
    if (app.out) {
      char partial[4200];
      snprintf(partial, sizeof partial, "%s.partial", rw_output_path(app.out));
      remove(partial);
    }
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    code = 1;
  }
done:
  rw_device_destroy(&app.device);
  rw_context_destroy(&app.ctx);
  rw_deck_destroy(&app.deck);
  rw_free(&keys);
  if (rw_output_unsafe()) { /* see rw_output_unsafe: MPI_Finalize would crash in HDF5 */
    fflush(NULL);
    _exit(code ? code : 1);
  }
  MPI_Finalize();
  return code;
}
