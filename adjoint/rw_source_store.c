/* State source "stored" (store mode): the forward sweep keeps y_0 .. y_{N-1} (or, with
 * store_stages, the stage inputs of every step), all allocated before the first step; the
 * backward sweep reads them back. No recomputation: the reference every other mode is
 * compared with. */
#include "rewind/rw_device.h"
#include "rw_adjoint_impl.h"

typedef struct {
  rw_state_source base;
  int per;      /* vectors per step: 1, or the stepper's stage vectors */
  int nvec;     /* vectors allocated: N per */
  size_t bytes; /* bytes of one step's snapshot on this rank */
  N_Vector *traj;
} rw_store_source;

static int store_alloc(rw_state_source *src, N_Vector y)
{
  rw_store_source *m = (rw_store_source *)src;
  /* Every snapshot before the time loop: a budget problem shows at start-up. */
  m->nvec = (int)(src->N * m->per);
  if (!rw_vec_device(y)) { /* a host trajectory larger than the node's memory: refused here */
    char what[160];
    snprintf(what, sizeof what, "store mode (every %s of %ld steps kept)",
             m->per > 1 ? "stage input" : "state", src->N);
    RW_CALL(rw_mem_check_available(rw_vec_comm(y), (size_t)m->nvec * rw_vec_bytes(y), what,
                                   "use checkpoint mode (adjoint_mode checkpoint), whose RAM "
                                   "budget (checkpoint_ram) bounds it"));
  }
  RW_CALL(rw_vec_clone_array_slots(y, m->nvec, &m->traj)); /* each written whole */
  m->bytes = (size_t)m->per * rw_vec_bytes(y);
  return 0;
}

static int store_forward(rw_state_source *src, N_Vector y, double *q)
{
  RW_CALL(rw_source_forward_steps(src, src->st, src->opt, src->N, y, q));
  return 0;
}

/* With store_stages (states are kept by store_home): step n fills its stage vectors. */
static int store_record(rw_state_source *src, long n, N_Vector y, N_Vector **stages)
{
  rw_store_source *m = (rw_store_source *)src;
  (void)y;
  *stages = &m->traj[n * m->per];
  return 0;
}

/* States only: y_n lives in traj[n] from the step that makes it (rw_source_forward_steps). */
static N_Vector store_home(rw_state_source *src, long n)
{
  rw_store_source *m = (rw_store_source *)src;
  return src->opt->store_stages ? NULL : m->traj[n];
}

static int store_fetch(rw_state_source *src, long n, rw_adjoint_state *adj, rw_fetch *out)
{
  rw_store_source *m = (rw_store_source *)src;
  (void)adj;
  out->y = m->traj[n * m->per];
  out->stages = src->opt->store_stages ? &m->traj[n * m->per] : NULL;
  return 0;
}

static int store_stats(rw_state_source *src, rw_adjoint_stats *s)
{
  rw_store_source *m = (rw_store_source *)src;
  s->snapshots = src->N;
  s->snapshot_bytes = m->bytes;
  s->checkpoint_bytes = (size_t)src->N * m->bytes;
  s->advances = src->N - 1;
  s->optimal_advances = src->N - 1;
  s->peak_slots = (int)src->N;
  return 0;
}

static void store_destroy(rw_state_source *src)
{
  rw_store_source *m = (rw_store_source *)src;
  if (!m) return;
  rw_vec_destroy_array(&m->traj, m->nvec);
  rw_free(&m);
}

static const rw_state_source_ops rw_store_source_ops = {.alloc = store_alloc,
                                                        .forward = store_forward,
                                                        .record = store_record,
                                                        .home = store_home,
                                                        .fetch = store_fetch,
                                                        .stats = store_stats,
                                                        .destroy = store_destroy};

int rw_source_store_create(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                           N_Vector y, rw_adjoint_stats *s, rw_state_source **out)
{
  long N = 0;
  double last;
  (void)y;
  RW_CHECK(!opt->restart_dir, RW_ERR_ARG,
           "restart_from '%s': store mode keeps no disk checkpoints to restart from",
           opt->restart_dir);
  RW_CHECK(!opt->adaptive, RW_ERR_ARG,
           "adaptive stepping runs in checkpoint mode under the online schedule (the number "
           "of steps is unknown until tf); store mode needs a fixed or replayed grid");
  RW_CALL(rw_grid_setup(opt, &N, &last));
  int per = opt->store_stages ? rw_stepper_num_stage_vectors(st) : 1;
  RW_CHECK(N <= (1L << 40) / per, RW_ERR_BUDGET, "store mode cannot hold %ld steps", N);
  rw_store_source *m = NULL;
  RW_CALL(rw_calloc(1, sizeof *m, "store mode", &m));
  m->base = (rw_state_source){
      .ops = &rw_store_source_ops, .prob = prob, .st = st, .opt = opt, .N = N, .s = s};
  m->per = per;
  *out = &m->base;
  return 0;
}
