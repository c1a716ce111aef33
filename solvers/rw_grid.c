/* Distributed structured grids: Cartesian decomposition, non-blocking face halo exchange
 * with boundary conditions, its exact transpose, and overlapped stencil application. */
#include "rewind/rw_grid.h"

#include "../core/rw_device_impl.h"
#include "rw_dev_bodies.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#define RW_STREAM_WIDE 1
#endif
#include <stdio.h>
#include <string.h>

/* A choice made by measurement (rw_wave_tune_pick): a 3-D wave's rows per tile (the rule's
 * tiles, none, or tiles between the two) or a 2-D wave's layers per window. The nc candidates,
 * the best time of each so far, the sweeps timed, the one chosen. */
#define RW_WAVE_TUNE_MAX 3
typedef struct {
  long cand[RW_WAVE_TUNE_MAX], chosen;
  double best[RW_WAVE_TUNE_MAX];
  int runs, nc;
} rw_wave_tuner;
/* What a tuner measures: sweeps of one kind (a plain step, one keeping or only recomputing its
 * stages, an adjoint step, a pair: rw_grid_erk_wave_pair) and one plan shape: the stage count,
 * the kernels, which stages keep or read stored vectors and how deep, the plan's tune_class
 * (which gradients its kernels form). Two plans of different work timed by one tuner made it
 * choose by the mix: in the stage bench the adjoint steps with every gradient and with dJ/dy0
 * only alternate every 10 steps, and the candidate that happened to time a cheap dJ/dy0 step
 * won (heat 128^3 on an Intel Xeon VM: 64-row tiles kept, 41 ms an every-gradient step against
 * 31 in the rule's 22). Fields zeroed before they are set, so keys compare with memcmp. */
typedef struct {
  int kind, s, no_out, tune_class, aux_ahead, aux_reach_set, ninj, ncap;
  unsigned aux_mask, keep_mask;
  int aux_reach[RW_WAVE_MAX_STAGES];
  rw_grid_kernel_fn kernel, side;
} rw_wave_tune_key;
#define RW_WAVE_TUNERS 16 /* plan shapes measured apart; the least recently used is replaced */
typedef struct {
  rw_wave_tune_key key;
  rw_wave_tuner t;
  unsigned long used; /* the grid's tuner clock at the last use; 0: free */
} rw_wave_tune_slot;

struct rw_grid_s {
  rw_context ctx;
  rw_grid_config cfg;
  MPI_Comm cart;
  int dims[3], coords[3], nbr[3][2]; /* nbr[d][0] low, [d][1] high (MPI_PROC_NULL at edges) */
  long start[3], count[3], gn[3];
  size_t glen;
  size_t face_len[3];
  double *sendbuf[3][2], *recvbuf[3][2];
  MPI_Request req[12];
  int nreq;
  /* device vectors (rw_device.h): the exchange in flight is on `dev` (on_dev); the faces are
   * packed on the device into dsend and unpacked from drecv, staged through the page-locked
   * sendbuf / recvbuf, or handed to MPI as they are when the device's halos go direct
   * (rw_device_mpi_direct: a CUDA-aware MPI; on the emulated device inside a host scope, open
   * from the posts to the end of the wait: `scope`) */
  rw_device dev;
  int on_dev, scope, direct; /* direct: latched when the messages are posted */
  /* self[d]: dimension d is periodic over this rank alone (both neighbours are this rank): an
   * exchange unpacks each face it packed into the opposite ghosts itself, with no message and,
   * on a device, no copy through the host */
  int self[3];
  /* early[d]: the exchange in flight has already filled dimension d's ghosts when it was
   * begun. On CPU vectors a dimension without messages (self, or a physical boundary on both
   * sides) needs nothing the wait brings: its self faces and boundary ghosts depend on the
   * owned values alone, so they are filled by the begin, and rw_grid_apply's first kernel box
   * spans that dimension whole. Without it the frame's x-end slabs are one-node rows touching
   * every row of the block a second time (heat 128^3 on one rank: a quarter of the step). */
  int early[3];
  double *dsend[3][2], *drecv[3][2];
  /* on a device the faces are pieces of one block each (face (d, s) at face_off[d][s]), so a
   * staged exchange moves all its faces with one copy each way */
  double *dsend_all, *drecv_all, *hsend_all, *hrecv_all;
  size_t face_total, face_off[3][2];
  /* rw_grid_apply_comb_fused: the stage's inputs while its interior kernel runs (n = 0: none) */
  int fuse_n;
  const double *fuse_c;
  N_Vector *fuse_x, fuse_keep;
  /* the same on CPU vectors: the window of layers the interior kernel reads (made with the
   * halo buffers when the block suits it, rw_grid_apply_window) */
  double *win;
  long win_layers, win_cap, win_runs; /* set layers (0: by bytes), buffer layers, windows run */
  /* rw_grid_erk_wave: its buffers (one block, for wave_s stages of wave_w layers), the layers
   * set (0: by bytes, -1: off), the waves run, and whether a wave of s stages suits the grid on
   * every rank (wave_ok[ext_ok][s]: 0 not asked yet, 1 no, 2 yes) */
  double *wave;
  size_t wave_len;
  long *wave_cap; /* the plan's captures by layer: N + 1 starts, then the captures' order */
  size_t wave_cap_len;
  long *wave_inj; /* the same for its injections */
  size_t wave_inj_len;
  const void *wave_cur; /* the wave in progress (rw_grid_wave_aux_layer) */
  /* the wave's halo messages in flight (rw_grid_wave_halo): the receives of the layers below
   * the block (waited for before the sweep starts), of those above it (waited for when the
   * front first reaches them) and the sends (waited for when the sweep ends) */
  MPI_Request whalo_lo[RW_WAVE_MAX_STAGES + 2], whalo_hi[RW_WAVE_MAX_STAGES + 2],
      whalo_snd[2 * (RW_WAVE_MAX_STAGES + 2)];
  int nwhalo_lo, nwhalo_hi, nwhalo_snd, nwhalo;
  long wave_layers, wave_rows, wave_runs;
  double halo_wait; /* seconds in MPI_Waitall on halo messages (rw_grid_halo_wait) */
  /* the choices made by measurement (rw_wave_tune_pick), per sweep kind and plan shape
   * (rw_wave_tune_key); the clock they read (rw_grid_set_wave_clock; NULL: MPI_Wtime); the last
   * wave's rows per tile and layers per window */
  rw_wave_tune_slot wave_tune[RW_WAVE_TUNERS];
  unsigned long wave_tune_uses;
  double (*wave_clock)(void *);
  void *wave_clock_ctx;
  long wave_again; /* waves after a choice before it is measured again (0: RW_WAVE_TUNE_AGAIN) */
  long wave_rows_used, wave_layers_used;
  int wave_ok[2][RW_WAVE_MAX_STAGES + 1];
  int pair_ok[RW_WAVE_MAX_STAGES + 1]; /* rw_grid_erk_wave_pair's block test, as wave_ok */
  long pair_runs;                      /* the pairs run (each also counts as two waves) */
  int pair_off;                        /* rw_grid_set_wave_pair(g, 0): never a pair */
};

static void rw_grid_mpi_done(rw_grid g);
static int rw_grid_slabs_suit(const rw_grid_config *cfg, int size);

/* MPI_Waitall on k of the grid's halo requests, its time added to g->halo_wait. */
static int rw_grid_waitall(rw_grid g, int k, MPI_Request *r)
{
  const double t0 = MPI_Wtime();
  RW_CALL_MPI(MPI_Waitall(k, r, MPI_STATUSES_IGNORE));
  g->halo_wait += MPI_Wtime() - t0;
  return 0;
}

/* A ghosted row's nodes along dimension 0 for `count` owned ones: rows of whole cache lines
 * (rw_grid_ghosted_alloc). */
static long rw_grid_row_nodes(const rw_grid_config *cfg, long count)
{
  const long per = cfg->ncomp % 8 == 0 ? 1 : cfg->ncomp % 4 == 0 ? 2 : cfg->ncomp % 2 == 0 ? 4 : 8;
  return (count + 2 * cfg->ghost + per - 1) / per * per;
}
static long rw_grid_window_layers(rw_grid g);
static int rw_grid_window_alloc(rw_grid g, long W);

int rw_grid_create(rw_context ctx, const rw_grid_config *cfg, rw_grid *out)
{
  int ierr = 0;
  rw_grid g = NULL;
  RW_CHECK(cfg && out, RW_ERR_ARG, "rw_grid_create: NULL argument");
  *out = NULL;
  RW_CHECK(cfg->dim == 2 || cfg->dim == 3, RW_ERR_ARG, "grid dimension %d: 2 or 3 supported",
           cfg->dim);
  RW_CHECK(cfg->ncomp >= 1 && cfg->ncomp <= 8, RW_ERR_ARG,
           "grid: %d components per node; 1 to 8 supported", cfg->ncomp);
  RW_CHECK(cfg->ghost >= 1, RW_ERR_ARG, "grid: ghost layers %d must be >= 1", cfg->ghost);
  for (int d = 0; d < cfg->dim; d++) {
    RW_CHECK(cfg->n[d] >= 2, RW_ERR_ARG, "grid: %ld nodes in dimension %d; at least 2 needed",
             cfg->n[d], d);
    RW_CHECK(cfg->hi[d] > cfg->lo[d], RW_ERR_ARG, "grid: empty domain [%g, %g] in dimension %d",
             cfg->lo[d], cfg->hi[d], d);
  }
  RW_CALL(rw_calloc(1, sizeof *g, "grid", &g));
  g->ctx = ctx;
  g->cfg = *cfg;
  g->cart = MPI_COMM_NULL;
  int size = rw_context_size(ctx), periods[3] = {0, 0, 0};
  g->dims[0] = g->dims[1] = g->dims[2] = 0;
  if (cfg->dim == 2) g->dims[2] = 1;
  for (int d = 0; d < cfg->dim; d++)
    periods[d] = cfg->bc[d] == RW_BC_PERIODIC;
  if (MPI_Dims_create(size, cfg->dim, g->dims) != MPI_SUCCESS) {
    ierr = RW_ERROR(RW_ERR_MPI, "MPI_Dims_create failed for %d ranks", size);
    goto cleanup;
  }
  /* MPI_Dims_create orders the counts non-increasing; the most ranks go to the slowest
   * dimension instead (z, then y), so a block's faces and frame slabs across it are whole
   * rows and planes, and x, the contiguous dimension, is split last: 2 ranks split y in 2-D
   * and z in 3-D, 4 ranks give 2 x 2 in 2-D and 1 x 2 x 2 in 3-D. A split of x makes every
   * face a gather of one node per row and the frame's x-end slabs one-node rows. */
  for (int a = 0, b = cfg->dim - 1; a < b; a++, b--) {
    int t = g->dims[a];
    g->dims[a] = g->dims[b], g->dims[b] = t;
  }
  if (rw_grid_slabs_suit(cfg, size)) /* all ranks along the slowest dimension instead */
    for (int d = 0; d < cfg->dim; d++)
      g->dims[d] = d == cfg->dim - 1 ? size : 1;
  if (cfg->procs[0] || cfg->procs[1] || cfg->procs[2]) { /* the caller's split */
    long prod = 1;
    int ok = 1;
    for (int d = 0; d < 3; d++) {
      ok = ok && (d < cfg->dim ? cfg->procs[d] >= 1 : cfg->procs[d] <= 1);
      prod *= d < cfg->dim && cfg->procs[d] > 0 ? cfg->procs[d] : 1;
    }
    if (!ok || prod != size) {
      ierr = RW_ERROR(RW_ERR_ARG,
                      "grid: process grid %d x %d x %d for a %d-D grid on %d ranks; each of the "
                      "first %d counts must be >= 1 and their product %d",
                      cfg->procs[0], cfg->procs[1], cfg->procs[2], cfg->dim, size, cfg->dim, size);
      goto cleanup;
    }
    for (int d = 0; d < cfg->dim; d++)
      g->dims[d] = cfg->procs[d];
  }
  /* reorder = 0: ranks keep their numbers, so field vectors on the context's communicator
   * and the topology agree. */
  if (MPI_Cart_create(rw_context_comm(ctx), cfg->dim, g->dims, periods, 0, &g->cart) !=
      MPI_SUCCESS) {
    ierr = RW_ERROR(RW_ERR_MPI, "MPI_Cart_create failed");
    goto cleanup;
  }
  int rank;
  MPI_Comm_rank(g->cart, &rank);
  MPI_Cart_coords(g->cart, rank, cfg->dim, g->coords);
  for (int d = 0; d < 3; d++) {
    if (d >= cfg->dim) {
      g->start[d] = 0, g->count[d] = 1, g->gn[d] = 1;
      g->nbr[d][0] = g->nbr[d][1] = MPI_PROC_NULL;
      continue;
    }
    long n = cfg->n[d], p = g->dims[d], c = g->coords[d], q = n / p, r = n % p;
    g->count[d] = q + (c < r ? 1 : 0);
    g->start[d] = c * q + (c < r ? c : r);
    g->gn[d] = d == 0 ? rw_grid_row_nodes(cfg, g->count[0]) : g->count[d] + 2 * cfg->ghost;
    MPI_Cart_shift(g->cart, d, 1, &g->nbr[d][0], &g->nbr[d][1]);
    g->self[d] = g->nbr[d][0] == rank && g->nbr[d][1] == rank;
  }
  /* Every rank needs ghost + 1 nodes per dimension (the Neumann mirror reads node ghost). */
  int ok = 1;
  for (int d = 0; d < cfg->dim; d++)
    ok = ok && g->count[d] >= cfg->ghost + 1;
  int allok = 0;
  MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, rw_context_comm(ctx));
  char shape[96];
  if (cfg->dim == 3)
    snprintf(shape, sizeof shape, "%ld x %ld x %ld", cfg->n[0], cfg->n[1], cfg->n[2]);
  else
    snprintf(shape, sizeof shape, "%ld x %ld", cfg->n[0], cfg->n[1]);
  RW_CHECK_GOTO(allok, RW_ERR_ARG,
                "grid %s on %d ranks (process grid %d x %d x %d): some rank owns fewer than %d "
                "nodes in a dimension; use fewer ranks or a finer grid",
                shape, size, g->dims[0], g->dims[1], g->dims[2], cfg->ghost + 1);
  g->glen = (size_t)g->gn[0] * (size_t)g->gn[1] * (size_t)g->gn[2] * (size_t)cfg->ncomp;
  for (int d = 0; d < cfg->dim; d++) {
    size_t f = (size_t)cfg->ghost * (size_t)cfg->ncomp;
    for (int e = 0; e < cfg->dim; e++)
      if (e != d) f *= (size_t)g->count[e];
    g->face_len[d] = f;
    for (int s = 0; s < 2; s++) {
      RW_TRY(rw_calloc(f, sizeof(double), "halo send buffer", &g->sendbuf[d][s]));
      RW_TRY(rw_calloc(f, sizeof(double), "halo receive buffer", &g->recvbuf[d][s]));
    }
  }
  /* the fused stage's window, made with the other buffers (not inside the first solve) */
  const long W = rw_grid_window_layers(g);
  if (W > 0) RW_TRY(rw_grid_window_alloc(g, W));
  *out = g;
  return 0;
cleanup:
  rw_grid_destroy(&g);
  return ierr;
}

int rw_grid_destroy(rw_grid *pg)
{
  if (!pg || !*pg) return 0;
  rw_grid g = *pg;
  rw_grid_mpi_done(g); /* an exchange left open by an error */
  for (int d = 0; d < 3; d++)
    for (int s = 0; s < 2; s++) {
      if (g->dev) { /* pieces of the blocks (rw_grid_dev_setup) */
        g->sendbuf[d][s] = g->recvbuf[d][s] = g->dsend[d][s] = g->drecv[d][s] = NULL;
        continue;
      }
      rw_free(&g->sendbuf[d][s]);
      rw_free(&g->recvbuf[d][s]);
    }
  if (g->dev) {
    size_t bytes = g->face_total * sizeof(double);
    rw_device_host_free(g->dev, &g->hsend_all);
    rw_device_host_free(g->dev, &g->hrecv_all);
    rw_device_free(g->dev, &g->dsend_all, bytes);
    rw_device_free(g->dev, &g->drecv_all, bytes);
  }
  if (g->cart != MPI_COMM_NULL) MPI_Comm_free(&g->cart);
  rw_grid_ghosted_free(&g->win);
  rw_free(&g->wave);
  rw_free(&g->wave_cap);
  rw_free(&g->wave_inj);
  rw_free(pg);
  return 0;
}

const rw_grid_config *rw_grid_get_config(rw_grid g) { return &g->cfg; }
rw_context rw_grid_context(rw_grid g) { return g->ctx; }

void rw_grid_local_box(rw_grid g, long start[3], long count[3])
{
  for (int d = 0; d < 3; d++)
    start[d] = g->start[d], count[d] = g->count[d];
}

sunindextype rw_grid_local_length(rw_grid g)
{
  return (sunindextype)(g->count[0] * g->count[1] * g->count[2] * g->cfg.ncomp);
}

void rw_grid_spacing(rw_grid g, double h[3])
{
  for (int d = 0; d < 3; d++) {
    if (d >= g->cfg.dim) {
      h[d] = 1.0;
      continue;
    }
    long cells = g->cfg.bc[d] == RW_BC_PERIODIC ? g->cfg.n[d] : g->cfg.n[d] - 1;
    h[d] = (g->cfg.hi[d] - g->cfg.lo[d]) / (double)cells;
  }
}

void rw_grid_topology(rw_grid g, int dims[3], int coords[3])
{
  for (int d = 0; d < 3; d++) {
    dims[d] = d < g->cfg.dim ? g->dims[d] : 1;
    coords[d] = d < g->cfg.dim ? g->coords[d] : 0;
  }
}

int rw_grid_new_field(rw_grid g, N_Vector *out)
{
  RW_CALL(rw_vec_create(g->ctx, rw_grid_local_length(g), out));
  return 0;
}

void rw_grid_ghosted_dims(rw_grid g, long gn[3])
{
  for (int d = 0; d < 3; d++)
    gn[d] = g->gn[d];
}

size_t rw_grid_ghosted_length(rw_grid g) { return g->glen; }

/* The doubles from a cache line to a ghosted array's first entry that put every row's first
 * owned entry on a line: a row is a whole number of lines (gn[0] rounded up), and the first
 * owned entry of a row lies ghost ncomp entries into it. Under 8, so the line is the pointer
 * rounded down (rw_grid_ghosted_free). */
static size_t rw_grid_lead(rw_grid g)
{
  const size_t o = (size_t)g->cfg.ghost * (size_t)g->cfg.ncomp % 8;
  return o ? 8 - o : 0;
}

int rw_grid_ghosted_alloc(rw_grid g, size_t len, const char *what, double **out)
{
  double *raw = NULL;
  *out = NULL;
  RW_CALL(rw_calloc(len + 8, sizeof(double), what, &raw)); /* on a cache line (rw_calloc) */
  *out = raw + rw_grid_lead(g);
  return 0;
}

void rw_grid_ghosted_free(double **p)
{
  if (!p || !*p) return;
  double *raw = (double *)(void *)((uintptr_t)*p & ~(uintptr_t)63);
  rw_free(&raw);
  *p = NULL;
}

long rw_grid_local_index(rw_grid g, long gi, long gj, long gk)
{
  long gl[3] = {gi, gj, gk}, l[3];
  for (int d = 0; d < 3; d++) {
    l[d] = gl[d] - g->start[d];
    if (l[d] < 0 || l[d] >= g->count[d]) return -1;
  }
  return ((l[2] * g->count[1] + l[1]) * g->count[0] + l[0]) * g->cfg.ncomp;
}

/* Visits the face slab of dimension d: layers [a, a + ghost) in d (local coordinates,
 * ghosts reachable), owned range in the other dimensions. mode 0: pack gv -> buf,
 * 1: unpack buf -> gv, 2: add buf into gv. */
static void rw_grid_face(rw_grid g, int d, long a, double *gv, double *buf, int mode)
{
  const int nc = g->cfg.ncomp, G = g->cfg.ghost, dim = g->cfg.dim;
  long lo[3] = {0, 0, 0}, hi[3] = {g->count[0], g->count[1], g->count[2]};
  lo[d] = a, hi[d] = a + G;
  /* a run of (hi[0] - lo[0]) nodes' components is contiguous in gv and in buf: one copy per
   * run (the mode tested per run, not per entry; an x face's runs are one node, a y or z face's a
   * whole row or more; short runs are copied inline, not through a call) */
  const size_t run = (size_t)(hi[0] - lo[0]) * (size_t)nc;
  double *b = buf;
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++, b += run) {
      double *x = gv + rw_grid_gidx(g->gn, G, dim, lo[0], j, k, nc, 0);
      if (mode == 2) {
        for (size_t m = 0; m < run; m++)
          x[m] += b[m];
        continue;
      }
      const double *from = mode == 0 ? x : b;
      double *to = mode == 0 ? b : x;
      if (run > 8)
        memcpy(to, from, run * sizeof(double));
      else
        for (size_t m = 0; m < run; m++)
          to[m] = from[m];
    }
}

/* Physical boundary of dimension d, side s (0 low, 1 high). adjoint = 0: fill the ghosts
 * (Dirichlet value or Neumann mirror); adjoint = 1: transpose (mirror ghosts added to their
 * source nodes, Dirichlet ghosts dropped), and the ghosts zeroed. The face is walked with
 * strides (its two other dimensions, the components innermost), so a face across x rows is a
 * run of contiguous loads and stores. */
static int rw_grid_dev_bc(rw_grid g, int d, int s, double *gv, int adjoint);
static rw_body_geom rw_grid_geom(rw_grid g);

/* `layer` >= 0 (CPU only, d below the slowest dimension D): only the face's nodes in that
 * layer of D (rw_grid_layer_ghosts), and of face d = 0 in 3-D only rows [r0, r1) along
 * dimension 1 (a tile of the wave); -1: the whole face, or in 3-D with r1 > r0 and d = 2 (a
 * tile's ghost layers) only its rows [r0, r1) along dimension 1. */
static int rw_grid_bc_in(rw_grid g, int d, int s, double *gv, int adjoint, long layer, long r0,
                         long r1)
{
  const int nc = g->cfg.ncomp, G = g->cfg.ghost, dim = g->cfg.dim;
  const rw_bc bc = g->cfg.bc[d];
  const size_t st[3] = {(size_t)nc, (size_t)g->gn[0] * (size_t)nc,
                        (size_t)g->gn[0] * (size_t)g->gn[1] * (size_t)nc};
  const long last = g->count[d] - 1;
  const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
  long lo1 = 0, n1 = g->count[e1], lo2 = 0, n2 = e2 < dim ? g->count[e2] : 1;
  if (layer >= 0 && e2 == dim - 1)
    lo2 = layer, n2 = layer + 1;
  else if (layer >= 0)
    lo1 = layer, n1 = layer + 1;
  if (layer >= 0 && dim == 3 && e1 == 1) lo1 = r0 > lo1 ? r0 : lo1, n1 = r1 < n1 ? r1 : n1;
  if (layer < 0 && dim == 3 && d == 2 && r1 > r0) lo2 = r0 > 0 ? r0 : 0, n2 = r1 < n2 ? r1 : n2;
  const size_t base = rw_grid_gidx(g->gn, G, dim, 0, 0, 0, nc, 0);
  const double *dval = g->cfg.dirichlet;
  /* what a ghost gets: 0 the Dirichlet value, 1 its mirror's value, 2 (adjoint) 0.0 after a
   * Neumann side has added it to its mirror, 3 (adjoint) 0.0; chosen once, so that each run
   * along e1 is a plain loop (a y ghost row of a wave's layer is a contiguous fill) */
  const int how = !adjoint ? (bc == RW_BC_DIRICHLET ? 0 : 1) : (bc == RW_BC_NEUMANN ? 2 : 3);
  double dv[8];
  for (int c = 0; c < nc && c < 8; c++)
    dv[c] = dval[c];
  const ptrdiff_t s1 = (ptrdiff_t)st[e1];
  for (long m = 1; m <= G; m++) {
    /* ghost layer and its mirrored interior layer, as offsets along d */
    const long pg = s == 0 ? -m : last + m, pq = s == 0 ? m : last - m;
    for (long a2 = lo2; a2 < n2; a2++) {
      const size_t x = base + (size_t)a2 * st[e2] + (size_t)lo1 * st[e1];
      double *restrict ghost = gv + (ptrdiff_t)x + (ptrdiff_t)pg * (ptrdiff_t)st[d];
      double *restrict mirror = gv + (ptrdiff_t)x + (ptrdiff_t)pq * (ptrdiff_t)st[d];
      const long na = n1 - lo1;
      if (how == 0 && nc == 1)
        for (long a = 0; a < na; a++)
          ghost[a * s1] = dv[0];
      else if (how == 0)
        for (long a = 0; a < na; a++)
          for (int c = 0; c < nc; c++)
            ghost[a * s1 + c] = dv[c];
      else if (how == 1)
        for (long a = 0; a < na; a++)
          for (int c = 0; c < nc; c++)
            ghost[a * s1 + c] = mirror[a * s1 + c];
      else
        for (long a = 0; a < na; a++)
          for (int c = 0; c < nc; c++) {
            if (how == 2) mirror[a * s1 + c] += ghost[a * s1 + c];
            ghost[a * s1 + c] = 0.0;
          }
    }
  }
  return 0;
}

static int rw_grid_bc(rw_grid g, int d, int s, double *gv, int adjoint)
{
  if (g->on_dev) return rw_grid_dev_bc(g, d, s, gv, adjoint);
  return rw_grid_bc_in(g, d, s, gv, adjoint, -1, 0, 0);
}

/* rw_grid_bc on the device: one launch per side, in rw_grid_bc's order. */
static int rw_grid_dev_bc(rw_grid g, int d, int s, double *gv, int adjoint)
{
  const int nc = g->cfg.ncomp, G = g->cfg.ghost, dim = g->cfg.dim;
  rw_body_grid_bc p;
  p.g = rw_grid_geom(g);
  p.d = d, p.side = s, p.bc = (int)g->cfg.bc[d], p.adjoint = adjoint;
  p.e1 = d == 0 ? 1 : 0, p.e2 = d == 2 ? 1 : 2;
  p.n1 = g->count[p.e1], p.n2 = p.e2 < dim ? g->count[p.e2] : 1, p.last = g->count[d] - 1;
  p.st[0] = (size_t)nc, p.st[1] = (size_t)g->gn[0] * (size_t)nc;
  p.st[2] = (size_t)g->gn[0] * (size_t)g->gn[1] * (size_t)nc;
  p.base = rw_grid_gidx(g->gn, G, dim, 0, 0, 0, nc, 0);
  for (int c = 0; c < 8; c++)
    p.dval[c] = g->cfg.dirichlet[c];
  p.gv = gv;
  RW_CALL(rw_device_run(g->dev, RW_BODY_GRID_BC, &p, sizeof p, (long)G * p.n1 * p.n2 * nc,
                        rw_body_host));
  return 0;
}

/* gv's rows of the owned box [lo, hi) from fill (rw_grid_apply_fill), each row's offset o in
 * the owned layout. */
static void rw_grid_fill_box(rw_grid g, rw_grid_fill_fn fill, void *fctx, double *gv,
                             const long lo[3], const long hi[3])
{
  const int nc = g->cfg.ncomp, G = g->cfg.ghost, dim = g->cfg.dim;
  const size_t row = (size_t)(hi[0] - lo[0]) * (size_t)nc;
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++) {
      size_t gx = rw_grid_gidx(g->gn, G, dim, lo[0], j, k, nc, 0);
      size_t o = (size_t)((k * g->count[1] + j) * g->count[0] + lo[0]) * (size_t)nc;
      fill(fctx, o, gv + gx, row);
    }
}

static void rw_grid_copy_owned(rw_grid g, const double *v, double *gv, int add_to_v)
{
  const int nc = g->cfg.ncomp, G = g->cfg.ghost, dim = g->cfg.dim;
  size_t row = (size_t)g->count[0] * (size_t)nc, o = 0;
  for (long k = 0; k < g->count[2]; k++)
    for (long j = 0; j < g->count[1]; j++, o += row) {
      size_t x = rw_grid_gidx(g->gn, G, dim, 0, j, k, nc, 0);
      if (!add_to_v) {
        memcpy(gv + x, v + o, row * sizeof(double));
      } else {
        double *vo = (double *)v + o;
        for (size_t m = 0; m < row; m++)
          vo[m] += gv[x + m];
      }
    }
}

/* gv = sum_j c[j] X[j] on the owned box [lo, hi), row by row (rw_lincomb's arithmetic, one
 * node's value independent of the box); also copied to `keep` (owned layout) when not NULL,
 * while the row is in cache. */
static void rw_grid_comb_box(rw_grid g, int n, const double *c, N_Vector *X, double *gv,
                             double *keep, const long lo[3], const long hi[3])
{
  const int nc = g->cfg.ncomp, G = g->cfg.ghost, dim = g->cfg.dim;
  const size_t row = (size_t)(hi[0] - lo[0]) * (size_t)nc;
  const double *x[RW_LINCOMB_MAX];
  for (long k = lo[2]; k < hi[2]; k++)
    for (long j = lo[1]; j < hi[1]; j++) {
      size_t gx = rw_grid_gidx(g->gn, G, dim, lo[0], j, k, nc, 0);
      size_t o = (size_t)((k * g->count[1] + j) * g->count[0] + lo[0]) * (size_t)nc;
      for (int m = 0; m < n; m++)
        x[m] = rw_vec_data(X[m]) + o;
      rw_lincomb(n, c, x, gv + gx, (long)row);
      if (keep) memcpy(keep + o, gv + gx, row * sizeof(double));
    }
}

static void rw_grid_comb_owned(rw_grid g, int n, const double *c, N_Vector *X, double *gv,
                               double *keep)
{
  const long lo[3] = {0, 0, 0};
  rw_grid_comb_box(g, n, c, X, gv, keep, lo, g->count);
}

static int rw_grid_post(rw_grid g, double *gv);

/* --- Device vectors: the same exchange with the copies done by device kernels
 * (rw_dev_bodies.h), the faces staged through the host buffers. */

static rw_body_geom rw_grid_geom(rw_grid g)
{
  rw_body_geom b;
  for (int d = 0; d < 3; d++)
    b.gn[d] = g->gn[d], b.cnt[d] = g->count[d];
  b.ghost = g->cfg.ghost, b.dim = g->cfg.dim, b.ncomp = g->cfg.ncomp;
  return b;
}

/* The face slab of rw_grid_face on the device: pack (0), unpack (1) or add (2). */
static int rw_grid_dev_face(rw_grid g, int d, long a, double *gv, double *buf, int mode)
{
  rw_body_grid_box p;
  p.g = rw_grid_geom(g);
  for (int e = 0; e < 3; e++)
    p.lo[e] = 0, p.cnt[e] = g->count[e];
  p.lo[d] = a, p.cnt[d] = g->cfg.ghost;
  p.gv = gv, p.buf = buf, p.mode = mode;
  RW_CALL(
      rw_device_run(g->dev, RW_BODY_GRID_BOX, &p, sizeof p, (long)g->face_len[d], rw_body_host));
  return 0;
}

/* The device halo buffers, at the first device exchange: one device block for the faces sent
 * and one for those received, and their page-locked host copies (the staging buffers), face
 * (d, s) at face_off[d][s] in each. Nothing changes unless all four are allocated. */
static int rw_grid_dev_setup(rw_grid g, rw_device dev)
{
  RW_CHECK(!g->dev || g->dev == dev, RW_ERR_ARG, "a grid's fields must live on one device");
  if (g->dev) return 0;
  int ierr = 0;
  size_t total = 0;
  double *ds = NULL, *dr = NULL, *hs = NULL, *hr = NULL;
  for (int d = 0; d < g->cfg.dim; d++)
    total += 2 * g->face_len[d];
  size_t bytes = (total ? total : 1) * sizeof(double);
  RW_TRY(rw_device_alloc(dev, bytes, &ds));
  RW_TRY(rw_device_alloc(dev, bytes, &dr));
  RW_TRY(rw_device_host_alloc(dev, bytes, &hs));
  RW_TRY(rw_device_host_alloc(dev, bytes, &hr));
  g->dev = dev;
  g->face_total = total ? total : 1;
  g->dsend_all = ds, g->drecv_all = dr, g->hsend_all = hs, g->hrecv_all = hr;
  size_t off = 0;
  for (int d = 0; d < g->cfg.dim; d++)
    for (int s = 0; s < 2; s++) {
      rw_free(&g->sendbuf[d][s]);
      rw_free(&g->recvbuf[d][s]);
      g->face_off[d][s] = off;
      g->dsend[d][s] = ds + off, g->drecv[d][s] = dr + off;
      g->sendbuf[d][s] = hs + off, g->recvbuf[d][s] = hr + off;
      off += g->face_len[d];
    }
  return 0;
cleanup:
  rw_device_free(dev, &ds, bytes);
  rw_device_free(dev, &dr, bytes);
  rw_device_host_free(dev, &hs);
  rw_device_host_free(dev, &hr);
  return ierr;
}

/* A staged device exchange's copy of every face that has a neighbour, in one piece: the span
 * of the blocks from the first such face to the end of the last (faces between without a
 * neighbour travel along unread). dir RW_COPY_D2H: the packed faces out; RW_COPY_H2D: the
 * received faces in. with_self = 0 leaves out the faces of self dimensions (the forward
 * exchange sends them no message); the transposed exchange still sends them. */
static int rw_grid_dev_span_copy(rw_grid g, int dir, int with_self)
{
  size_t lo = SIZE_MAX, hi = 0;
  for (int d = 0; d < g->cfg.dim; d++)
    for (int s = 0; s < 2; s++)
      if (g->nbr[d][s] != MPI_PROC_NULL && (with_self || !g->self[d])) {
        if (g->face_off[d][s] < lo) lo = g->face_off[d][s];
        if (g->face_off[d][s] + g->face_len[d] > hi) hi = g->face_off[d][s] + g->face_len[d];
      }
  if (hi <= lo) return 0;
  size_t bytes = (hi - lo) * sizeof(double);
  if (dir == RW_COPY_D2H)
    RW_CALL(rw_device_copy(g->dev, g->hsend_all + lo, g->dsend_all + lo, bytes, RW_COPY_D2H));
  else
    RW_CALL(rw_device_copy(g->dev, g->drecv_all + lo, g->hrecv_all + lo, bytes, RW_COPY_H2D));
  return 0;
}

/* Starts a device exchange: the owned part of gv = sum_j c[j] X[j] (and keep), on the device. */
static int rw_grid_dev_begin(rw_grid g, int n, const double *c, N_Vector *X, double *gv,
                             N_Vector keep)
{
  rw_device dev = rw_vec_device(X[0]);
  RW_CALL(rw_grid_dev_setup(g, dev));
  rw_body_grid_fill f;
  f.g = rw_grid_geom(g);
  for (int d = 0; d < 3; d++)
    f.lo[d] = 0, f.cnt[d] = g->count[d];
  f.n = n;
  for (int j = 0; j < n; j++)
    f.c[j] = c ? c[j] : 1.0, f.x[j] = rw_vec_data(X[j]);
  f.gv = gv;
  f.keep = keep ? rw_vec_data(keep) : NULL;
  RW_CALL(rw_device_run(dev, RW_BODY_GRID_FILL, &f, sizeof f, (long)rw_grid_local_length(g),
                        rw_body_host));
  g->on_dev = 1;
  return rw_grid_post(g, gv);
}

/* Packs face (d, side) of gv into the host send buffer. */
static int rw_grid_pack(rw_grid g, int d, int side, double *gv)
{
  long a = side ? g->count[d] - g->cfg.ghost : 0;
  if (!g->on_dev) {
    rw_grid_face(g, d, a, gv, g->sendbuf[d][side], 0);
    return 0;
  }
  /* staged: copied out with the other faces (rw_grid_dev_span_copy); direct: MPI takes dsend */
  RW_CALL(rw_grid_dev_face(g, d, a, gv, g->dsend[d][side], 0));
  return 0;
}

/* Unpacks the receive buffer of face (d, side) into gv's ghosts; in a self dimension the face
 * this rank packed for the opposite side, which is what the neighbour there would have sent. */
static int rw_grid_unpack(rw_grid g, int d, int side, double *gv)
{
  long a = side ? g->count[d] : -g->cfg.ghost;
  if (!g->on_dev) {
    rw_grid_face(g, d, a, gv, g->self[d] ? g->sendbuf[d][!side] : g->recvbuf[d][side], 1);
    return 0;
  }
  /* drecv holds the face: MPI received into it, or rw_grid_dev_span_copy copied it in */
  RW_CALL(rw_grid_dev_face(g, d, a, gv, g->self[d] ? g->dsend[d][!side] : g->drecv[d][side], 1));
  return 0;
}

int rw_grid_exchange_begin(rw_grid g, N_Vector v, double *gv)
{
  if (rw_vec_device(v)) return rw_grid_dev_begin(g, 1, NULL, &v, gv, NULL);
  g->on_dev = 0;
  rw_grid_copy_owned(g, rw_vec_data(v), gv, 0);
  return rw_grid_post(g, gv);
}

int rw_grid_exchange_begin_comb(rw_grid g, int n, const double *c, N_Vector *X, double *gv,
                                N_Vector keep)
{
  RW_CHECK(n >= 1 && n <= RW_LINCOMB_MAX, RW_ERR_ARG,
           "rw_grid_exchange_begin_comb: %d vectors; 1 to %d are supported", n, RW_LINCOMB_MAX);
  if (rw_vec_device(X[0])) return rw_grid_dev_begin(g, n, c, X, gv, keep);
  g->on_dev = 0;
  rw_grid_comb_owned(g, n, c, X, gv, keep ? rw_vec_data(keep) : NULL);
  return rw_grid_post(g, gv);
}

/* The buffers MPI sends from and receives into for face (d, side): the device's own when its
 * halos go direct, else the host staging buffers. */
static double *rw_grid_sbuf(rw_grid g, int d, int side)
{
  return g->direct ? g->dsend[d][side] : g->sendbuf[d][side];
}

static double *rw_grid_rbuf(rw_grid g, int d, int side)
{
  return g->direct ? g->drecv[d][side] : g->recvbuf[d][side];
}

/* Before MPI is given device buffers: the packing kernels must have finished (MPI does not
 * order itself after the device's queue), and the emulated device's memory is opened until
 * the wait has completed (rw_grid_mpi_done). */
static int rw_grid_mpi_ready(rw_grid g)
{
  if (!g->direct) return 0;
  RW_CALL(rw_device_sync_compute(g->dev));
  if (!g->scope) rw_device_host_begin(g->dev), g->scope = 1;
  return 0;
}

static void rw_grid_mpi_done(rw_grid g)
{
  if (g->scope) rw_device_host_end(g->dev), g->scope = 0;
}

/* Dimension d sends and receives no message: both its neighbours are this rank (self) or
 * physical boundaries (a block that spans the dimension). */
static int rw_grid_msg_free(rw_grid g, int d)
{
  return g->self[d] || (g->nbr[d][0] == MPI_PROC_NULL && g->nbr[d][1] == MPI_PROC_NULL);
}

/* Packs the faces of gv and posts the messages; on CPU vectors also fills the ghosts of the
 * dimensions without messages (`early`). */
static int rw_grid_post(rw_grid g, double *gv)
{
  g->nreq = 0;
  g->direct = g->on_dev && rw_device_mpi_direct(g->dev);
  /* low face to the low neighbour (its high ghosts), high face to the high neighbour; a
   * physical boundary (no neighbour) sends and receives nothing, so nothing is packed */
  int msgs = 0;
  for (int d = 0; d < g->cfg.dim; d++)
    for (int side = 0; side < 2; side++)
      if (g->nbr[d][side] != MPI_PROC_NULL) {
        RW_CALL(rw_grid_pack(g, d, side, gv));
        msgs += !g->self[d];
      }
  for (int d = 0; d < 3; d++) { /* see `early`: the same ghost values the end would write */
    g->early[d] = 0;
    if (d >= g->cfg.dim || g->on_dev || !rw_grid_msg_free(g, d)) continue;
    for (int side = 0; side < 2; side++)
      if (g->nbr[d][side] != MPI_PROC_NULL)
        RW_CALL(rw_grid_unpack(g, d, side, gv));
      else
        RW_CALL(rw_grid_bc(g, d, side, gv, 0));
    g->early[d] = 1;
  }
  if (msgs == 0) return 0; /* every face is a self face or a physical boundary */
  if (g->on_dev && !g->direct) RW_CALL(rw_grid_dev_span_copy(g, RW_COPY_D2H, 0));
  RW_CALL(rw_grid_mpi_ready(g));
  for (int d = 0; d < g->cfg.dim; d++) {
    if (g->self[d]) continue;
    int n = (int)g->face_len[d];
    if (g->nbr[d][0] != MPI_PROC_NULL)
      RW_CALL_MPI(MPI_Irecv(rw_grid_rbuf(g, d, 0), n, MPI_DOUBLE, g->nbr[d][0], 2 * d + 1, g->cart,
                            &g->req[g->nreq++]));
    if (g->nbr[d][1] != MPI_PROC_NULL)
      RW_CALL_MPI(MPI_Irecv(rw_grid_rbuf(g, d, 1), n, MPI_DOUBLE, g->nbr[d][1], 2 * d, g->cart,
                            &g->req[g->nreq++]));
    if (g->nbr[d][0] != MPI_PROC_NULL)
      RW_CALL_MPI(MPI_Isend(rw_grid_sbuf(g, d, 0), n, MPI_DOUBLE, g->nbr[d][0], 2 * d, g->cart,
                            &g->req[g->nreq++]));
    if (g->nbr[d][1] != MPI_PROC_NULL)
      RW_CALL_MPI(MPI_Isend(rw_grid_sbuf(g, d, 1), n, MPI_DOUBLE, g->nbr[d][1], 2 * d + 1, g->cart,
                            &g->req[g->nreq++]));
  }
  return 0;
}

int rw_grid_exchange_end(rw_grid g, double *gv)
{
  RW_CALL(rw_grid_waitall(g, g->nreq, g->req));
  int msgs = g->nreq > 0;
  g->nreq = 0;
  rw_grid_mpi_done(g);
  if (g->on_dev && !g->direct && msgs) RW_CALL(rw_grid_dev_span_copy(g, RW_COPY_H2D, 0));
  for (int d = 0; d < g->cfg.dim; d++) {
    if (g->early[d]) continue;
    if (g->nbr[d][0] != MPI_PROC_NULL) RW_CALL(rw_grid_unpack(g, d, 0, gv));
    if (g->nbr[d][1] != MPI_PROC_NULL) RW_CALL(rw_grid_unpack(g, d, 1, gv));
  }
  for (int d = 0; d < g->cfg.dim; d++) {
    if (g->early[d]) continue;
    if (g->nbr[d][0] == MPI_PROC_NULL) RW_CALL(rw_grid_bc(g, d, 0, gv, 0));
    if (g->nbr[d][1] == MPI_PROC_NULL) RW_CALL(rw_grid_bc(g, d, 1, gv, 0));
  }
  g->early[0] = g->early[1] = g->early[2] = 0;
  return 0;
}

int rw_grid_exchange_adjoint(rw_grid g, double *gadj, N_Vector out)
{
  const int G = g->cfg.ghost;
  g->on_dev = rw_vec_device(out) != NULL;
  if (g->on_dev) RW_CALL(rw_grid_dev_setup(g, rw_vec_device(out)));
  /* Boundary conditions first (their ghosts hold no neighbour data). */
  for (int d = 0; d < g->cfg.dim; d++) {
    if (g->nbr[d][0] == MPI_PROC_NULL) RW_CALL(rw_grid_bc(g, d, 0, gadj, 1));
    if (g->nbr[d][1] == MPI_PROC_NULL) RW_CALL(rw_grid_bc(g, d, 1, gadj, 1));
  }
  /* Ghost adjoints go back to the neighbour that sent those values, which adds them to its
   * face: the reverse of each forward message. */
  g->nreq = 0;
  int direct = g->direct = g->on_dev && rw_device_mpi_direct(g->dev);
  for (int d = 0; d < g->cfg.dim; d++)
    for (int side = 0; side < 2; side++) {
      if (g->nbr[d][side] == MPI_PROC_NULL) continue; /* a physical boundary */
      if (g->on_dev)                                  /* the ghost face, packed on the device */
        RW_CALL(rw_grid_dev_face(g, d, side ? g->count[d] : -G, gadj, g->dsend[d][side], 0));
      else
        rw_grid_face(g, d, side ? g->count[d] : -G, gadj, g->sendbuf[d][side], 0);
    }
  if (g->on_dev && !direct) RW_CALL(rw_grid_dev_span_copy(g, RW_COPY_D2H, 1));
  RW_CALL(rw_grid_mpi_ready(g));
  for (int d = 0; d < g->cfg.dim; d++) {
    int n = (int)g->face_len[d];
    for (int side = 0; side < 2; side++) {
      int nb = g->nbr[d][side];
      if (nb == MPI_PROC_NULL) continue;
      RW_CALL_MPI(MPI_Irecv(rw_grid_rbuf(g, d, side), n, MPI_DOUBLE, nb, 100 + 2 * d + (1 - side),
                            g->cart, &g->req[g->nreq++]));
      RW_CALL_MPI(MPI_Isend(rw_grid_sbuf(g, d, side), n, MPI_DOUBLE, nb, 100 + 2 * d + side,
                            g->cart, &g->req[g->nreq++]));
    }
  }
  RW_CALL(rw_grid_waitall(g, g->nreq, g->req));
  g->nreq = 0;
  rw_grid_mpi_done(g);
  if (g->on_dev && !direct) RW_CALL(rw_grid_dev_span_copy(g, RW_COPY_H2D, 1));
  for (int d = 0; d < g->cfg.dim; d++)
    for (int side = 0; side < 2; side++) {
      if (g->nbr[d][side] == MPI_PROC_NULL) continue;
      long a = side ? g->count[d] - G : 0;
      if (!g->on_dev) {
        rw_grid_face(g, d, a, gadj, g->recvbuf[d][side], 2);
        continue;
      }
      RW_CALL(rw_grid_dev_face(g, d, a, gadj, g->drecv[d][side], 2));
    }
  if (g->on_dev) {
    rw_body_grid_add p = {rw_grid_geom(g), gadj, rw_vec_data(out)};
    RW_CALL(rw_device_run(g->dev, RW_BODY_GRID_ADD, &p, sizeof p, (long)rw_grid_local_length(g),
                          rw_body_host));
    return 0;
  }
  rw_grid_copy_owned(g, rw_vec_data(out), gadj, 1);
  return 0;
}

/* The frame of the owned block, as disjoint slabs: in dimension d the two G-thick slabs,
 * restricted to the interior range [ilo, ihi) in the dimensions before d and the full range in
 * those after. */
static void rw_grid_frame(rw_grid g, const double *gv, double *o, const long ilo[3],
                          const long ihi[3], rw_grid_kernel_fn kernel, void *kctx)
{
  const int G = g->cfg.ghost;
  for (int d = 0; d < g->cfg.dim; d++)
    for (int s = 0; s < 2 && !(ilo[d] == 0 && ihi[d] == g->count[d]); s++) {
      long lo[3], hi[3];
      for (int e = 0; e < 3; e++) {
        lo[e] = e < d ? ilo[e] : 0;
        hi[e] = e < d ? ihi[e] : g->count[e];
      }
      lo[d] = s == 0 ? 0 : g->count[d] - G;
      hi[d] = s == 0 ? G : g->count[d];
      kernel(kctx, g, gv, o, lo, hi);
    }
}

/* The interior box of an exchange in flight (after its begin): at least G from every block
 * edge across which messages travel, the whole extent of the dimensions whose ghosts the begin
 * has filled (`early`). */
static void rw_grid_interior(rw_grid g, long ilo[3], long ihi[3])
{
  const int G = g->cfg.ghost, dim = g->cfg.dim;
  for (int d = 0; d < 3; d++) {
    ilo[d] = d < dim && !g->early[d] ? G : 0;
    ihi[d] = d < dim ? g->count[d] - (g->early[d] ? 0 : G) : 1;
  }
}

/* fill (rw_grid_apply_fill), else the combination (c), else X[0] copied. */
static int rw_grid_apply_impl(rw_grid g, int n, const double *c, N_Vector *X, N_Vector keep,
                              rw_grid_fill_fn fill, void *fctx, double *gv, N_Vector out,
                              rw_grid_kernel_fn kernel, void *kctx)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim;
  double *o = rw_vec_data(out);
  long all_lo[3] = {0, 0, 0}, all_hi[3] = {g->count[0], g->count[1], g->count[2]};
  int overlap = 1;
  for (int d = 0; d < dim; d++)
    overlap = overlap && g->count[d] > 2 * G;
  if (fill) {
    g->on_dev = 0;
    rw_grid_fill_box(g, fill, fctx, gv, all_lo, all_hi);
    RW_CALL(rw_grid_post(g, gv));
  } else if (c) {
    RW_CALL(rw_grid_exchange_begin_comb(g, n, c, X, gv, keep));
  } else {
    RW_CALL(rw_grid_exchange_begin(g, X[0], gv));
  }
  if (!overlap) {
    RW_CALL(rw_grid_exchange_end(g, gv));
    kernel(kctx, g, gv, o, all_lo, all_hi);
    return 0;
  }
  /* Interior: no ghost still travelling is read, so it runs while the messages travel. */
  long ilo[3], ihi[3];
  rw_grid_interior(g, ilo, ihi);
  kernel(kctx, g, gv, o, ilo, ihi);
  RW_CALL(rw_grid_exchange_end(g, gv));
  rw_grid_frame(g, gv, o, ilo, ihi, kernel, kctx);
  return 0;
}

int rw_grid_apply(rw_grid g, N_Vector v, double *gv, N_Vector out, rw_grid_kernel_fn kernel,
                  void *kctx)
{
  RW_CALL(rw_grid_apply_impl(g, 1, NULL, &v, NULL, NULL, NULL, gv, out, kernel, kctx));
  return 0;
}

int rw_grid_apply_fill(rw_grid g, rw_grid_fill_fn fill, void *fctx, double *gv, N_Vector out,
                       rw_grid_kernel_fn kernel, void *kctx)
{
  RW_CHECK(fill && !rw_vec_device(out), RW_ERR_ARG,
           "rw_grid_apply_fill: needs a fill function and a CPU output vector");
  RW_CALL(rw_grid_apply_impl(g, 1, NULL, NULL, NULL, fill, fctx, gv, out, kernel, kctx));
  return 0;
}

int rw_grid_apply_comb(rw_grid g, int n, const double *c, N_Vector *X, N_Vector keep, double *gv,
                       N_Vector out, rw_grid_kernel_fn kernel, void *kctx)
{
  RW_CALL(rw_grid_apply_impl(g, n, c, X, keep, NULL, NULL, gv, out, kernel, kctx));
  return 0;
}

/* --- The fused stage on CPU vectors: a window of layers -----------------------------------
 * rw_grid_apply_comb first writes the whole combination into gv and then runs the stencil over
 * it: gv's lines are written (read for ownership first), evicted to memory, and read back, a
 * round trip of a vector through memory per stage. Here the combination is formed into gv only
 * on the owned shell of width 2G (what the faces, the boundary ghosts and the frame read, as on
 * a device); the interior kernel runs window by window along the slowest dimension D, each
 * window's layers [a - G, b + G) (a layer: all ghosted nodes with one index along D) formed in
 * a small buffer in gv's layout just before the kernel reads them, so they are read from cache.
 * The kernel is handed the buffer shifted so that gv's offsets land in it (as PETSc's
 * DMDAVecGetArray shifts by the start). Consecutive windows share 2G layers, moved to the
 * buffer's front rather than formed again; shell layers and D's ghost layers are copied from gv.
 * Every value is formed by rw_lincomb's arithmetic as in rw_grid_comb_owned and the early
 * ghosts are the same copies rw_grid_post makes, so the results and `keep` are the same bits;
 * the kernel sees the interior box's rows in the same order, in consecutive boxes. */
#define RW_WINDOW_BYTES ((size_t)256 * 1024) /* in L2 with the rows the kernel writes */

/* Doubles per layer of the slowest dimension in a ghosted array. */
static size_t rw_grid_layer_len(rw_grid g)
{
  size_t s = (size_t)g->cfg.ncomp;
  for (int d = 0; d + 1 < g->cfg.dim; d++)
    s *= (size_t)g->gn[d];
  return s;
}

/* The ghosts of layer l in the dimensions e < D that rw_grid_post filled at the begin (early;
 * every e < D when `all`, for a caller that has checked they send no message),
 * in gw (gv's layout), as rw_grid_post sets them: a boundary's by rw_grid_bc on the layer, a
 * self face's from the owned node a period away (what rw_grid_unpack copies from the opposite
 * face it packed). In 3-D only for the layer's rows [j0, j1) along dimension 1 (a tile of the
 * wave; the faces of dimension 1 only where the rows reach them); 0, count[1]: all of them. */
static void rw_grid_layer_ghosts_from(rw_grid g, double *gw, long l, int all, long j0, long j1,
                                      int e0)
{
  const int nc = g->cfg.ncomp, G = g->cfg.ghost, dim = g->cfg.dim, D = dim - 1;
  const ptrdiff_t st[2] = {nc, (ptrdiff_t)g->gn[0] * nc};
  for (int e = e0; e < D; e++) {
    if (!all && !g->early[e]) continue;
    const int o = dim == 3 ? 1 - e : -1; /* the other dimension of the layer (3-D) */
    const long a0 = o == 1 ? j0 : 0, no = o == 1 ? j1 : o >= 0 ? g->count[o] : 1;
    for (int side = 0; side < 2; side++) {
      if (e == 1 && dim == 3 && (side == 0 ? j0 > 0 : j1 < g->count[1])) continue;
      if (g->nbr[e][side] == MPI_PROC_NULL) {
        (void)rw_grid_bc_in(g, e, side, gw, 0, l, j0, j1);
        continue;
      }
      for (long a = a0; a < no; a++) {
        long pos[3] = {0, 0, 0};
        pos[D] = l;
        if (o >= 0) pos[o] = a;
        double *x = gw + rw_grid_gidx(g->gn, G, dim, pos[0], pos[1], pos[2], nc, 0);
        for (long m = 1; m <= G; m++) {
          const long pg = side == 0 ? -m : g->count[e] - 1 + m,
                     src = side == 0 ? g->count[e] - m : m - 1;
          for (int c = 0; c < nc; c++)
            x[pg * st[e] + c] = x[src * st[e] + c];
        }
      }
    }
  }
}

static void rw_grid_layer_ghosts(rw_grid g, double *gw, long l, int all, long j0, long j1)
{
  rw_grid_layer_ghosts_from(g, gw, l, all, j0, j1, 0);
}

/* The ghosts along dimension 0 (the fastest, never split) of one row, x pointing at the row's
 * node 0 in a ghosted array, with the values rw_grid_layer_ghosts gives them (a boundary's as
 * rw_grid_bc_in sets them outside an adjoint, a periodic side's from the owned node a period
 * away), in a tight loop while the row is in cache: the wave forms a stage's layer row by row,
 * and filling the layer's row ends after all its rows (rw_grid_bc_in's general loop, by then
 * out of L1) took 4 % of heat 128^3's adjoint step (AMD EPYC Zen 5 VM, `perf`). Its own loop
 * rather than rw_grid_layer_ghosts restricted to the row and dimension 0: that generic call per
 * row made the forward step 10 % slower at heat 128^3 and 4 % at Gray-Scott 512^2 (4 rounds of
 * tests/bench/ab_libs.sh, every round the same way). */
static void rw_grid_row_ghosts0(rw_grid g, double *x)
{
  const int nc = g->cfg.ncomp, G = g->cfg.ghost;
  const long n = g->count[0];
  const int dir = g->cfg.bc[0] == RW_BC_DIRICHLET;
  const double *dval = g->cfg.dirichlet;
  for (int side = 0; side < 2; side++) {
    const int bnd = g->nbr[0][side] == MPI_PROC_NULL;
    for (long m = 1; m <= G; m++) {
      const long pg = side == 0 ? -m : n - 1 + m;
      /* the boundary's mirror (rw_grid_bc_in's pq), or the node a period away */
      const long src = bnd ? (side == 0 ? m : n - 1 - m) : (side == 0 ? n - m : m - 1);
      for (int c = 0; c < nc; c++)
        x[pg * nc + c] = bnd && dir ? dval[c] : x[src * nc + c];
    }
  }
}

void rw_grid_set_window(rw_grid g, long layers) { g->win_layers = layers > 0 ? layers : 0; }
long rw_grid_windows(rw_grid g) { return g->win_runs; }

/* The layers per window (0: the fused stage on CPU vectors takes the two-pass path): as many
 * as fit RW_WINDOW_BYTES with the 2G shared ones, at least 2G (else the shared layers' moves
 * cost more than the window saves), and at most a quarter of the block's: a block of fewer
 * windows is a ghosted array that stays in L2 between the two passes anyway, and there the
 * window's own work (the shell formed apart, its layers copied, a call per layer) made the
 * default Gray-Scott job (128^2, one window and a bit) slower, 0.081-0.125 s against 0.075 s
 * for its forward sweep. Or the layers set by rw_grid_set_window, at most the block's.
 * The block must be at least 4G thick in every dimension (disjoint shell slabs around an
 * interior). */
static long rw_grid_window_layers(rw_grid g)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim;
  long W = (long)(RW_WINDOW_BYTES / (rw_grid_layer_len(g) * sizeof(double))) - 2 * G;
  if (g->win_layers > 0)
    W = g->win_layers;
  else if (W < 2 * G || 4 * W > g->count[dim - 1])
    return 0;
  for (int d = 0; d < dim; d++)
    if (g->count[d] < 4 * G) return 0;
  return W < g->count[dim - 1] ? W : g->count[dim - 1];
}

/* The window buffer for W layers and the 2G shared ones (kept when large enough). */
static int rw_grid_window_alloc(rw_grid g, long W)
{
  const long need = W + 2 * g->cfg.ghost;
  if (g->win_cap >= need) return 0;
  rw_grid_ghosted_free(&g->win);
  g->win_cap = 0;
  RW_CALL(rw_grid_ghosted_alloc(g, (size_t)need * rw_grid_layer_len(g), "grid window", &g->win));
  g->win_cap = need;
  return 0;
}

/* rw_grid_apply_comb_fused on CPU vectors (above); *done = 0 when the block or the layers do
 * not suit it (the caller runs rw_grid_apply_comb). */
static int rw_grid_apply_window(rw_grid g, int n, const double *c, N_Vector *X, N_Vector keep,
                                rw_grid_fill_fn fill, void *fctx, double *gv, N_Vector out,
                                rw_grid_kernel_fn kernel, void *kctx, int *done)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim, D = dim - 1;
  const size_t L = rw_grid_layer_len(g);
  const long W = rw_grid_window_layers(g);
  *done = 0;
  if (!(W > 0 && (fill || (c != NULL && n >= 1 && n <= RW_LINCOMB_MAX)))) return 0;
  RW_CALL(rw_grid_window_alloc(g, W));
  double *kp = keep ? rw_vec_data(keep) : NULL, *o = rw_vec_data(out), *buf = g->win;
  /* the shell: slabs 2G thick at both ends of D and of every dimension with messages */
  for (int d = 0; d < dim; d++) {
    if (d != D && rw_grid_msg_free(g, d)) continue; /* its ghosts: from each layer's own rows */
    for (int s = 0; s < 2; s++) {
      long lo[3] = {0, 0, 0}, hi[3] = {g->count[0], g->count[1], g->count[2]};
      lo[d] = s == 0 ? 0 : g->count[d] - 2 * G;
      hi[d] = s == 0 ? 2 * G : g->count[d];
      if (fill)
        rw_grid_fill_box(g, fill, fctx, gv, lo, hi);
      else
        rw_grid_comb_box(g, n, c, X, gv, kp, lo, hi);
    }
  }
  g->on_dev = 0;
  RW_CALL(rw_grid_post(g, gv));
  long ilo[3], ihi[3];
  rw_grid_interior(g, ilo, ihi);
  long have1 = 0; /* the buffer holds layers [a - G, have1) of the window before */
  for (long a = ilo[D]; a < ihi[D]; a += W) {
    const long b = a + W < ihi[D] ? a + W : ihi[D], l0 = a - G;
    long l = l0;
    if (a > ilo[D]) { /* the 2G layers this window shares with the one before */
      memmove(buf, buf + (size_t)W * L, (size_t)(have1 - l0) * L * sizeof(double));
      l = have1;
    }
    double *gw = buf - (ptrdiff_t)(l0 + G) * (ptrdiff_t)L; /* gw + gidx(.., l, ..) in buf */
    for (; l < b + G; l++) {
      double *dst = buf + (size_t)(l - l0) * L;
      if (l < 2 * G || l >= g->count[D] - 2 * G) { /* shell or ghost layer: formed in gv */
        memcpy(dst, gv + (size_t)(l + G) * L, L * sizeof(double));
        continue;
      }
      long lo[3] = {0, 0, 0}, hi[3] = {g->count[0], g->count[1], g->count[2]};
      lo[D] = l, hi[D] = l + 1;
      if (fill)
        rw_grid_fill_box(g, fill, fctx, gw, lo, hi);
      else
        rw_grid_comb_box(g, n, c, X, gw, kp, lo, hi);
      rw_grid_layer_ghosts(g, gw, l, 0, 0, g->count[1]);
    }
    have1 = b + G;
    long lo[3] = {ilo[0], ilo[1], ilo[2]}, hi[3] = {ihi[0], ihi[1], ihi[2]};
    lo[D] = a, hi[D] = b;
    kernel(kctx, g, gw, o, lo, hi);
    g->win_runs++;
  }
  RW_CALL(rw_grid_exchange_end(g, gv));
  rw_grid_frame(g, gv, o, ilo, ihi, kernel, kctx);
  *done = 1;
  return 0;
}

int rw_grid_apply_fill_fused(rw_grid g, rw_grid_fill_fn fill, void *fctx, double *gv, N_Vector out,
                             rw_grid_kernel_fn kernel, void *kctx)
{
  RW_CHECK(fill && !rw_vec_device(out), RW_ERR_ARG,
           "rw_grid_apply_fill_fused: needs a fill function and a CPU output vector");
  int done = 0;
  RW_CALL(rw_grid_apply_window(g, 1, NULL, NULL, NULL, fill, fctx, gv, out, kernel, kctx, &done));
  return done ? 0 : rw_grid_apply_fill(g, fill, fctx, gv, out, kernel, kctx);
}

/* The fused stage on a device (rw_grid.h): the combination filled into gv (and keep) only on
 * the owned shell of width 2G that the faces, the boundary ghosts and the frame kernels read,
 * as disjoint slabs like the frame's; then the faces posted, the interior kernel called with
 * gv == NULL (it forms the combination itself from rw_grid_comb_inputs and writes keep there),
 * the exchange completed and the frame run from gv as usual. */
int rw_grid_apply_comb_fused(rw_grid g, int n, const double *c, N_Vector *X, N_Vector keep,
                             double *gv, N_Vector out, rw_grid_kernel_fn kernel, void *kctx)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim;
  rw_device dev = rw_vec_device(X[0]);
  if (!dev) {
    int done = 0;
    RW_CALL(rw_grid_apply_window(g, n, c, X, keep, NULL, NULL, gv, out, kernel, kctx, &done));
    return done ? 0 : rw_grid_apply_comb(g, n, c, X, keep, gv, out, kernel, kctx);
  }
  int ok = c != NULL && n >= 1 && n <= RW_FUSE_MAX;
  for (int d = 0; d < dim; d++)
    ok = ok && g->count[d] >= 4 * G; /* disjoint shell slabs around an interior */
  if (!ok) return rw_grid_apply_comb(g, n, c, X, keep, gv, out, kernel, kctx);
  RW_CALL(rw_grid_dev_setup(g, dev));
  rw_body_grid_fill f;
  f.g = rw_grid_geom(g);
  f.n = n;
  for (int j = 0; j < n; j++)
    f.c[j] = c[j], f.x[j] = rw_vec_data(X[j]);
  f.gv = gv;
  f.keep = keep ? rw_vec_data(keep) : NULL;
  const long S = 2 * G;
  for (int d = 0; d < dim; d++)
    for (int s = 0; s < 2; s++) {
      long items = g->cfg.ncomp;
      for (int e = 0; e < 3; e++) {
        long lo = e < d && e < dim ? S : 0, hi = e < d && e < dim ? g->count[e] - S : g->count[e];
        if (e == d) lo = s == 0 ? 0 : g->count[d] - S, hi = s == 0 ? S : g->count[d];
        f.lo[e] = lo, f.cnt[e] = hi - lo;
        items *= hi - lo;
      }
      RW_CALL(rw_device_run(dev, RW_BODY_GRID_FILL, &f, sizeof f, items, rw_body_host));
    }
  g->on_dev = 1;
  RW_CALL(rw_grid_post(g, gv));
  long ilo[3], ihi[3];
  for (int d = 0; d < 3; d++) {
    ilo[d] = d < dim ? G : 0;
    ihi[d] = d < dim ? g->count[d] - G : 1;
  }
  double *o = rw_vec_data(out);
  g->fuse_n = n, g->fuse_c = c, g->fuse_x = X, g->fuse_keep = keep;
  kernel(kctx, g, NULL, o, ilo, ihi);
  g->fuse_n = 0;
  RW_CALL(rw_grid_exchange_end(g, gv));
  rw_grid_frame(g, gv, o, ilo, ihi, kernel, kctx);
  return 0;
}

/* --- A whole explicit RK step in one sweep (rw_grid_erk_wave) ------------------------------
 * The stage-by-stage step writes each Y_i into a ghosted array and each K_i into a vector and
 * reads both back: on a block larger than the cache, every stage moves its vectors through
 * memory (heat 128^3: about 40 state vectors per RK4 step where 5 would do). The wave computes
 * the same values in another order, along the slowest dimension D: the slope K_i at layer l
 * needs Y_i at layers l - G .. l + G, which need K_j (j < i) there; so with the front at f,
 * K_i is computed up to layer f - i G, Y_i formed G layers ahead of its kernel, and y_out
 * written where the last slope is complete. This is the wavefront (temporal) blocking of
 * stencil codes applied to the stages of one step (Wonnacott, "Using time skewing to
 * eliminate idle time due to memory bandwidth", IPDPS 2000; Wellein et al., "Efficient
 * temporal blocking for stencil computations by multicore-aware wavefront parallelization",
 * COMPSAC 2009), here within a step so that every value keeps its operations and order.
 * Layers are numbered along D in "wave coordinates" v = l + V0, V0 = s G when the low side
 * has a neighbour (the stages then reach below the block), so that no index is negative.
 * Y_i lives in a sliding buffer of ghosted layers (the kernel reads across layers: kept
 * contiguous, the layers still needed moved to the front when it fills); K_i in a ring of
 * owned layers (the kernel's writes split at the ring's end).
 * A 3-D block whose layers are large (heat 128^3: 135 KB each, some 40 of them live) is swept
 * in tiles of rows along the middle dimension J, each tile a wave of its own over all layers
 * whose live rows fit the cache; stage i computes (s - 1 - i) G rows past the tile on each
 * side (the rows Y_{i+1} .. Y_{s-1} read), the same values the next tile computes again, and
 * writes y_out on the tile's rows only. When y_out is y, the sG rows below the next tile are
 * kept aside before a tile overwrites them, for the next tile's stages to read. */
typedef struct {
  double *buf;
  long base, cap; /* the buffer holds wave layers [base, base + cap) */
  size_t L;       /* doubles per layer */
} rw_wave_slide;

static double *rw_wave_slot(const rw_wave_slide *b, long v)
{
  return b->buf + (size_t)(v - b->base) * b->L;
}

/* Room for layers up to `need` (exclusive), keeping [keep, have) where they are read: of each
 * kept layer the doubles [off, off + len) are moved (the rows in use). */
static int rw_wave_reserve(rw_wave_slide *b, long keep, long have, long need, size_t off,
                           size_t len)
{
  if (need - b->base <= b->cap) return 0;
  RW_CHECK(need - keep <= b->cap, RW_ERR_INTERNAL, "grid wave: %ld layers needed, buffer of %ld",
           need - keep, b->cap);
  for (long v = keep; v < have; v++)
    memmove(b->buf + (size_t)(v - keep) * b->L + off, rw_wave_slot(b, v) + off,
            len * sizeof(double));
  b->base = keep;
  return 0;
}

static double *rw_wave_ring(double *ring, long cap, size_t Lo, long v)
{
  return ring + (size_t)(v % cap) * Lo;
}

void rw_grid_set_wave(rw_grid g, long layers)
{
  g->wave_layers = layers < 0 ? -1 : layers;
  memset(g->wave_ok, 0, sizeof g->wave_ok);
}
void rw_grid_set_wave_rows(rw_grid g, long rows) { g->wave_rows = rows > 0 ? rows : 0; }
long rw_grid_waves(rw_grid g) { return g->wave_runs; }
double rw_grid_halo_wait(rw_grid g) { return g->halo_wait; }
long rw_grid_wave_pairs(rw_grid g) { return g->pair_runs; }
void rw_grid_set_wave_pair(rw_grid g, int on) { g->pair_off = !on; }

/* The layers a wave of s stages with windows of W layers keeps live: about s (2W + 3G) of
 * the Y buffers, s (W + (s + 1) G) of the rings and 4 of the fields a kernel reads. */
static long rw_wave_live_layers(int s, long W, int G)
{
  return (long)s * (2 * W + 3 * G) + (long)s * (W + (long)(s + 1) * G) + 4;
}

/* Layers per window of a wave of s stages: as many as keep a stage buffer (W + 2G ghosted
 * layers) within RW_WINDOW_BYTES, at least 1; or the ones set. 0: off, or the block is under 4
 * such windows (its vectors stay in cache between stages anyway, and there the window's own
 * work does not pay: see rw_grid_window_layers), but for the thinner 2-D blocks below. On a block
 * the wave does not tile (2-D; 3-D tiles are sized by rw_grid_wave_rows) fewer, so that the live
 * layers of all s stages (rw_wave_live_layers) stay within RW_WAVE_LIVE_BYTES: the per-stage rule
 * alone kept 3.2 MB live at Gray-Scott 512^2 (30 layers), past L2, and smaller windows were faster,
 * forward and adjoint alike (docs/architecture.md, "The wave's window on a 2-D block"); on an AMD
 * EPYC (Zen 5) VM the adjoint was faster with windows fitting twice that, so where no layers are
 * set rw_grid_erk_wave measures the two (rw_wave_tune_pick). Only the window changes, never whether
 * the wave runs, nor any value. */
#define RW_WAVE_LIVE_BYTES ((size_t)768 * 1024)
/* The four windows asked of a block are the per-stage rule's (RW_WINDOW_BYTES), which on a 2-D
 * block are several times the window the wave then runs with (the live layers' bound above):
 * Gray-Scott 160^2 to 224^2 on one rank, or 256^2 on two (128 layers a rank), were left to the
 * stage-by-stage step though they hold four and more of the wave's own windows. There the wave
 * with its own window took 0.55-0.75 of the stage-by-stage forward step and 0.8-1.0 of its
 * adjoint step (AMD EPYC Zen 5 VM, 2026-12-02); at 128^2 on one rank (266 KB a vector, the
 * default job's block) and on two it was no faster, forward, and 1.1-1.7x slower, adjoint:
 * the block's vectors stay in L2 and L3 between the stages anyway. So a 2-D block of at least
 * four of the wave's own windows runs the wave when a ghosted vector of it holds at least
 * RW_WAVE_SMALL_BYTES (160^2: 415 KB; 128^2: 266 KB). See docs/architecture.md, "Waves on
 * thinner 2-D blocks". */
#define RW_WAVE_SMALL_BYTES ((size_t)384 * 1024)
static long rw_grid_wave_layers_in(rw_grid g, int s, size_t live);
static long rw_grid_wave_layers(rw_grid g, int s)
{
  return rw_grid_wave_layers_in(g, s, RW_WAVE_LIVE_BYTES);
}

/* The rule of rw_grid_wave_layers_in for a block of N layers of lb bytes each (ghosted) in
 * dim dimensions with G ghost layers: the window a wave of s stages runs with, or 0 where the
 * block is too thin for it. */
static long rw_wave_layers_rule(int dim, size_t lb, long N, int G, int s, size_t live)
{
  long W = (long)(RW_WINDOW_BYTES / lb) - 2 * G;
  if (W < 1) W = 1;
  long Wf = W; /* the window the wave runs with */
  if (dim == 2 && s >= 1) {
    const long fit = ((long)(live / lb) - rw_wave_live_layers(s, 0, G)) / (3L * s);
    Wf = fit < W ? fit : W;
    if (Wf < 1) Wf = 1;
  }
  if (4 * W <= N) return Wf;
  /* a 2-D block under four windows of the per-stage rule but at least four of its own, whose
   * ghosted vector is past RW_WAVE_SMALL_BYTES: the wave too */
  if (dim == 2 && 4 * Wf <= N && (size_t)N * lb >= RW_WAVE_SMALL_BYTES) return Wf;
  return 0;
}

/* The same with the live layers of a 2-D block's wave within `live` bytes. */
static long rw_grid_wave_layers_in(rw_grid g, int s, size_t live)
{
  const long N = g->count[g->cfg.dim - 1];
  if (g->wave_layers < 0) return 0;
  if (g->wave_layers > 0) return g->wave_layers < N ? g->wave_layers : N;
  return rw_wave_layers_rule(g->cfg.dim, rw_grid_layer_len(g) * sizeof(double), N, g->cfg.ghost, s,
                             live);
}

/* Whether `size` ranks take slabs (every rank along the slowest dimension D, the faster ones
 * whole) instead of MPI_Dims_create's split: when the wave would run on every slab
 * (rw_wave_layers_rule, with a slab's ghosted layer) and each holds at least RW_SLAB_MIN_LAYERS
 * ghost depths, so that the stages' reach past its edges (s G layers each side) stays a small
 * part of it. The wave (rw_grid_erk_wave) runs only on blocks whose faster dimensions are
 * whole, so the default split turns it off (4 ranks: 2 x 2, 1 x 2 x 2). At 4 ranks a slab's
 * faces hold as many nodes as the default's (2-D: 2 n against 4 n / 2; 3-D: 2 n^2 against
 * 4 n^2 / 2); with more ranks slabs exchange more, and are taken only while they stay this
 * thick. The stage count is not known here: a 2-D slab is judged for RW_SLAB_STAGES stages,
 * whose window is the widest of every method of two or more (the wave's own window shrinks as
 * s grows), so each of them sweeps on the slabs taken (a one-stage method may not, and then
 * steps stage by stage there as it would on the default split). Slabs under four windows of the
 * per-stage rule but four of the wave's own (the thinner 2-D blocks' rule, stop 60) since
 * 2026-12-02: Gray-Scott 512^2 on 8 ranks (64 layers of 8 KiB) took 2 x 4 before. Measured in
 * docs/architecture.md, "Slabs when the wave fits" and "Slabs as thin as the wave's own
 * window". */
#define RW_SLAB_MIN_LAYERS 32
#define RW_SLAB_STAGES     2
static int rw_grid_slabs_suit(const rw_grid_config *cfg, int size)
{
  const int D = cfg->dim - 1, G = cfg->ghost;
  if (size < 2 || D < 1) return 0;
  size_t lb = (size_t)cfg->ncomp * sizeof(double); /* a slab's ghosted layer, as it will be */
  for (int e = 0; e < D; e++)
    lb *= (size_t)(e == 0 ? rw_grid_row_nodes(cfg, cfg->n[0]) : cfg->n[e] + 2 * G);
  const long N = cfg->n[D] / size; /* the thinnest slab */
  return N >= (long)RW_SLAB_MIN_LAYERS * G &&
         rw_wave_layers_rule(cfg->dim, lb, N, G, RW_SLAB_STAGES, RW_WAVE_LIVE_BYTES) > 0;
}

/* Rows per tile along J = D - 1 (3-D, J bounded by physical sides on both ends): the live
 * layers of a wave of s stages (about s (2W + 3G) of the Y buffers, s (W + (s + 1) G) of the
 * rings and 4 of the fields a kernel reads) over the tile's rows and the 2 s G rows around it
 * within RW_WAVE_TILE_BYTES; or the rows set; at least s G. The whole middle dimension
 * otherwise (no tiles). */
#define RW_WAVE_TILE_BYTES ((size_t)1536 * 1024) /* within L2 with what the kernel streams */
static long rw_grid_wave_rows(rw_grid g, int s, long W)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim;
  if (dim != 3) return g->count[1];
  const long n = g->count[1], sg = (long)s * G;
  if (g->self[1] || g->nbr[1][0] != MPI_PROC_NULL || g->nbr[1][1] != MPI_PROC_NULL) return n;
  long T = g->wave_rows;
  if (T <= 0) {
    const long live = rw_wave_live_layers(s, W, G);
    const size_t row = (size_t)g->gn[0] * (size_t)g->cfg.ncomp * sizeof(double);
    T = (long)(RW_WAVE_TILE_BYTES / ((size_t)live * row)) - 2 * sg;
  }
  if (T < sg) T = sg; /* the rows kept aside for the next tile lie within this one */
  return T < n ? T : n;
}

/* Whether tiles pay is a property of the machine's caches more than of the block, and
 * measured it went both ways: on an Intel Xeon (Emerald Rapids) VM, 2 MiB of L2 a core, heat
 * 128^3's forward step took 25 ms in the rule's 23-row tiles against 34-36 ms untiled (its live
 * layers in L3); on an AMD EPYC (Zen 5) VM, 1 MiB of L2 and a faster L3, 15.6-16.3 ms untiled
 * against 20.3-21.0 ms in those tiles, and untiled was as fast or faster at 64^3 to 160^3 on 1
 * and 2 ranks (docs/architecture.md, "Tiles chosen by measurement"); on that VM at 128^3, two
 * tiles of 64 rows beat both in most paired runs (rw_wave_rows_between). So where the rule
 * would tile and no rows are set, the grid times the rule's tiles, none, and the tiles between
 * the two where there are such: RW_WAVE_TUNE_ROUNDS waves of each candidate in turn, per plan
 * kind (a plain step, one keeping or recomputing its stages, an adjoint step: their streams
 * differ) and plan shape (rw_wave_tune_key), and keeps the one with the lowest best time, measuring
 * again after RW_WAVE_TUNE_AGAIN more waves (a machine whose speed drifted while it measured,
 * as these shared ones do, does not keep a wrong choice for the whole run). The rows change no
 * value (each tile forms its rows with the same operations), only the speed. Each rank decides
 * alone: tiles are only along a dimension no rank shares. A 2-D block's window (layers per
 * window) is chosen the same way between live layers within RW_WAVE_LIVE_BYTES and twice that;
 * windows change no value either, and a rank's choice is its own (the halo exchange does not
 * depend on it). */
#define RW_WAVE_TUNE_ROUNDS 4
/* The rows per tile of the tile count halfway (geometrically) between the rule's (rows T) and
 * one: k = sqrt(n / T) rounded, at least 2, tiles of ceil(n / k) rows. Used as a candidate where
 * it lies strictly between T and n. */
static long rw_wave_rows_between(long T, long n)
{
  long k = lround(sqrt((double)n / (double)(T > 0 ? T : 1)));
  if (k < 2) k = 2;
  return (n + k - 1) / k;
}
#define RW_WAVE_TUNE_AGAIN 1000 /* waves after a choice before it is measured again */
static long rw_wave_tune_pick(rw_grid g, rw_wave_tuner *t, int nc, const long *cand)
{
  const long again = g->wave_again > 0 ? g->wave_again : RW_WAVE_TUNE_AGAIN;
  int same = t->nc == nc;
  for (int i = 0; same && i < nc; i++)
    same = t->cand[i] == cand[i];
  if (!same || t->runs >= nc * RW_WAVE_TUNE_ROUNDS + again) { /* (again) from the start */
    t->nc = nc, t->chosen = cand[0], t->runs = 0;
    for (int i = 0; i < nc; i++)
      t->cand[i] = cand[i], t->best[i] = HUGE_VAL;
  }
  return t->runs < nc * RW_WAVE_TUNE_ROUNDS ? t->cand[t->runs % nc] : t->chosen;
}

/* A timed sweep of the candidate rw_wave_tune_pick returned; after the last round the one with
 * the lowest best time is chosen (a tie: the earlier candidate, the rule's first). */
static void rw_wave_tune_note(rw_wave_tuner *t, double secs)
{
  const int r = t->runs++, nc = t->nc;
  if (r >= nc * RW_WAVE_TUNE_ROUNDS) return;
  if (secs < t->best[r % nc]) t->best[r % nc] = secs;
  if (r + 1 < nc * RW_WAVE_TUNE_ROUNDS) return;
  int k = 0;
  for (int i = 1; i < nc; i++)
    k = t->best[i] < t->best[k] ? i : k;
  t->chosen = t->cand[k];
}

/* The tuner of sweeps of `kind` running plan P with `kernel` (a free slot, or the least
 * recently used one started afresh, the first time such a sweep is measured). */
static rw_wave_tuner *rw_wave_tuner_for(rw_grid g, int kind, const rw_stage_plan *P,
                                        rw_grid_kernel_fn kernel)
{
  rw_wave_tune_key k;
  memset(&k, 0, sizeof k);
  k.kind = kind, k.s = P->s, k.no_out = P->no_out, k.tune_class = P->tune_class;
  k.aux_ahead = P->aux_ahead, k.aux_reach_set = P->aux_reach_set;
  k.ninj = P->ninj > 0, k.ncap = P->ncap > 0;
  for (int i = 0; i < P->s && i < RW_WAVE_MAX_STAGES; i++) {
    k.aux_mask |= P->aux[i] ? 1u << i : 0u;
    k.keep_mask |= P->keep[i] ? 1u << i : 0u;
    k.aux_reach[i] = P->aux_reach_set ? P->aux_reach[i] : 0;
  }
  k.kernel = kernel, k.side = P->side;
  rw_wave_tune_slot *pick = &g->wave_tune[0];
  for (int m = 0; m < RW_WAVE_TUNERS; m++) {
    rw_wave_tune_slot *t = &g->wave_tune[m];
    if (t->used && !memcmp(&t->key, &k, sizeof k)) {
      t->used = ++g->wave_tune_uses;
      return &t->t;
    }
    if (t->used < pick->used) pick = t; /* a free slot (0) first, else the oldest */
  }
  memset(pick, 0, sizeof *pick);
  pick->key = k, pick->used = ++g->wave_tune_uses;
  return &pick->t;
}

static double rw_wave_clock(rw_grid g)
{
  return g->wave_clock ? g->wave_clock(g->wave_clock_ctx) : MPI_Wtime();
}

void rw_grid_set_wave_clock(rw_grid g, double (*clock)(void *), void *ctx, long again)
{
  g->wave_clock = clock, g->wave_clock_ctx = ctx, g->wave_again = again;
  memset(g->wave_tune, 0, sizeof g->wave_tune);
  g->wave_tune_uses = 0;
}

long rw_grid_wave_rows_used(rw_grid g) { return g->wave_rows_used; }
long rw_grid_wave_layers_used(rw_grid g) { return g->wave_layers_used; }

/* The layers per window of a sweep of kind `kind` whose rule gives W: on a 2-D block with no
 * layers set, the measured choice between W and the window whose live layers fit twice the
 * bytes (*tune: its tuner, else left as it was); W otherwise. */
static long rw_grid_wave_window(rw_grid g, int s, long W, int kind, const rw_stage_plan *P,
                                rw_grid_kernel_fn kernel, rw_wave_tuner **tune)
{
  if (g->cfg.dim != 2 || g->wave_layers != 0) return W;
  const long W2 = rw_grid_wave_layers_in(g, s, 2 * RW_WAVE_LIVE_BYTES);
  if (W2 <= W) return W;
  *tune = rw_wave_tuner_for(g, kind, P, kernel);
  const long cand[2] = {W, W2};
  return rw_wave_tune_pick(g, *tune, 2, cand);
}

/* Whether a wave of s stages runs on this grid (the same answer on every rank: one
 * all-reduce the first time it is asked for s and ext_ok). */
static int rw_grid_wave_suits(rw_grid g, int s, int ext_ok, long W)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim, D = dim - 1;
  int *ok = &g->wave_ok[ext_ok != 0][s];
  if (*ok) return *ok == 2;
  int mine = W > 0 && s >= 1 && s <= RW_WAVE_MAX_STAGES;
  const int ext = g->nbr[D][0] != MPI_PROC_NULL || g->nbr[D][1] != MPI_PROC_NULL;
  for (int e = 0; e < D; e++)
    mine = mine && rw_grid_msg_free(g, e) && g->count[e] >= G;
  mine = mine && g->count[D] >= 2 * G && (!ext || (ext_ok && g->count[D] >= (long)s * G));
  int all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, g->cart) != MPI_SUCCESS) all = 0;
  *ok = all ? 2 : 1;
  return all;
}

/* y's layers H deep past each side of D that has a neighbour, into lo_h / hi_h (owned
 * layout): the neighbour's edge layers, or this rank's own far layers when D is periodic
 * over it. The messages are posted, not waited for (rw_grid_wave_halo_wait): a sweep reads
 * the layers below its block at once, but those above only at its end, so their transfer
 * (and a neighbour that is later than this rank) overlaps the sweep. sbuf (2 H Lo doubles,
 * NULL: none) takes copies of y's edge layers to send from, for a sweep that overwrites y
 * before the neighbours have read them (y stepped in place); otherwise y must stay as it is
 * until the sends end. */
static int rw_grid_wave_halo(rw_grid g, const double *y, long H, size_t Lo, double *lo_h,
                             double *hi_h, double *sbuf)
{
  const int D = g->cfg.dim - 1;
  const long N = g->count[D];
  const size_t n = (size_t)H * Lo;
  if (g->self[D]) {
    memcpy(lo_h, y + (size_t)(N - H) * Lo, n * sizeof(double));
    memcpy(hi_h, y, n * sizeof(double));
    return 0;
  }
  RW_CHECK(n <= (size_t)INT32_MAX, RW_ERR_ARG, "grid wave: %zu doubles in one message", n);
  RW_CHECK(g->nwhalo < RW_WAVE_MAX_STAGES + 2, RW_ERR_INTERNAL,
           "grid wave: more than %d halo exchanges in flight", RW_WAVE_MAX_STAGES + 2);
  const double *sl = y, *sh = y + (size_t)(N - H) * Lo;
  if (sbuf) {
    memcpy(sbuf, sl, n * sizeof(double));
    memcpy(sbuf + n, sh, n * sizeof(double));
    sl = sbuf, sh = sbuf + n;
  }
  /* the low layers go down (they are the low neighbour's high halo), the high ones up; each
   * exchange of a sweep its own pair of tags */
  const int tag = 300 + 2 * g->nwhalo++, lo = g->nbr[D][0], hi = g->nbr[D][1];
  RW_CALL_MPI(
      MPI_Irecv(lo_h, (int)n, MPI_DOUBLE, lo, tag + 1, g->cart, &g->whalo_lo[g->nwhalo_lo++]));
  RW_CALL_MPI(MPI_Irecv(hi_h, (int)n, MPI_DOUBLE, hi, tag, g->cart, &g->whalo_hi[g->nwhalo_hi++]));
  RW_CALL_MPI(MPI_Isend(sl, (int)n, MPI_DOUBLE, lo, tag, g->cart, &g->whalo_snd[g->nwhalo_snd++]));
  RW_CALL_MPI(
      MPI_Isend(sh, (int)n, MPI_DOUBLE, hi, tag + 1, g->cart, &g->whalo_snd[g->nwhalo_snd++]));
  return 0;
}

/* Waits for the wave halo messages of one kind (rw_grid_wave_halo); none in flight: nothing. */
static int rw_grid_wave_halo_wait(rw_grid g, MPI_Request *r, int *n)
{
  if (*n == 0) return 0;
  const int k = *n;
  *n = 0;
  return rw_grid_waitall(g, k, r);
}

/* The end of a sweep (also one that failed): every halo message it posted complete. */
static int rw_grid_wave_halo_end(rw_grid g)
{
  int e = rw_grid_wave_halo_wait(g, g->whalo_lo, &g->nwhalo_lo);
  const int e2 = rw_grid_wave_halo_wait(g, g->whalo_hi, &g->nwhalo_hi);
  const int e3 = rw_grid_wave_halo_wait(g, g->whalo_snd, &g->nwhalo_snd);
  g->nwhalo = 0;
  return e ? e : e2 ? e2 : e3;
}

typedef struct {
  rw_grid g;
  const rw_stage_plan *P;
  long N, V0, H, capK, W;
  size_t L, Lo, row;
  int ext[2], tiled;
  const double *y, *lo_h, *hi_h;
  double *yo;
  double *ring[RW_WAVE_MAX_STAGES];
  rw_wave_slide Y[RW_WAVE_MAX_STAGES];
  /* the tile: rows [j0, j1) of y_out; stage i's kernel on rows [rlo, rhi), its Y formed on
   * [flo, fhi) (the block's rows) with the ghost rows below / above when flo / fhi is the
   * block's edge; rows of y below `jsave` read from `saved` (sG rows per layer) */
  long j0, j1, rlo[RW_WAVE_MAX_STAGES], rhi[RW_WAVE_MAX_STAGES], flo[RW_WAVE_MAX_STAGES],
      fhi[RW_WAVE_MAX_STAGES], jsave;
  const double *saved;
  const long *cstart, *corder; /* the captures of layer l: corder[cstart[l] .. cstart[l + 1]) */
  const long *istart, *iorder; /* the injections, likewise */
  double *keep[RW_WAVE_MAX_STAGES];
  /* the plan's aux vectors, and where the stages run past the block their layers there (H
   * each side, owned layout) */
  const double *aux[RW_WAVE_MAX_STAGES], *aux_lo[RW_WAVE_MAX_STAGES], *aux_hi[RW_WAVE_MAX_STAGES];
  long aux_d[RW_WAVE_MAX_STAGES]; /* the layers of aux[i] exchanged past each edge */
  /* the tile's progress (rw_wave_start, rw_wave_advance): K_i over wave layers [klo, khi),
   * computed up to e; Y_i formed (or a boundary's ghost layer) up to yt, the doubles [yoff,
   * yoff + ylen) of a Y layer in use; y_out written for wave layers [V0, done_v) */
  long klo[RW_WAVE_MAX_STAGES], khi[RW_WAVE_MAX_STAGES], e[RW_WAVE_MAX_STAGES],
      yt[RW_WAVE_MAX_STAGES], done_v;
  size_t yoff[RW_WAVE_MAX_STAGES], ylen[RW_WAVE_MAX_STAGES];
  /* E: the layers (and tile rows) the stages reach past the block beyond the plain wave's
   * (s - 1 - i) G (rw_grid_erk_wave_pair's recomputation: (s - 1) G); kring[i] (NULL: none): a
   * ring of kcap owned-layout layers into which Y_i's formed rows are copied (wave layer v at
   * v mod kcap); fw: the recomputation whose rings serve an adjoint's aux layers */
  long E, kcap;
  double *kring[RW_WAVE_MAX_STAGES];
  const void *fw;
} rw_wave;

/* dst = src (n doubles) with non-temporal stores where the ISA has them: the kept stages are
 * written once and read again only by the adjoint's later sweep, so they should not evict the
 * wave's live layers from the cache on their way to memory. rw_grid_erk_wave fences once at
 * the end. The widest store the CPU has (asked once): with AVX-512 one store writes a whole
 * 64-byte line, so each write-combining buffer goes to memory full from one instruction instead
 * of four 16-byte ones (on an AMD EPYC Zen 5 VM, a row of 1024 doubles streamed over 640 MiB:
 * 15.9-17.6 GB/s against 13.8-15.7). dst is aligned first, node by node; the values are copies,
 * the same bits whatever the width. */
#if defined(RW_STREAM_WIDE)
__attribute__((target("avx512f"))) static void
rw_wave_stream512(double *restrict dst, const double *restrict src, size_t n)
{
  size_t k = 0;
  for (; k < n && ((uintptr_t)(dst + k) & 63) != 0; k++)
    dst[k] = src[k];
  for (; k + 8 <= n; k += 8)
    _mm512_stream_pd(dst + k, _mm512_loadu_pd(src + k));
  for (; k < n; k++)
    dst[k] = src[k];
}

__attribute__((target("avx"))) static void rw_wave_stream256(double *restrict dst,
                                                             const double *restrict src, size_t n)
{
  size_t k = 0;
  for (; k < n && ((uintptr_t)(dst + k) & 31) != 0; k++)
    dst[k] = src[k];
  for (; k + 4 <= n; k += 4)
    _mm256_stream_pd(dst + k, _mm256_loadu_pd(src + k));
  for (; k < n; k++)
    dst[k] = src[k];
}
#endif

static void rw_wave_stream(double *restrict dst, const double *restrict src, size_t n)
{
#if defined(RW_STREAM_WIDE)
  static int width = 0; /* 512, 256 or 128 bits: the CPU's widest, asked once */
  if (width == 0)
    width = __builtin_cpu_supports("avx512f") ? 512 : __builtin_cpu_supports("avx") ? 256 : 128;
  if (width == 512) {
    rw_wave_stream512(dst, src, n);
    return;
  }
  if (width == 256) {
    rw_wave_stream256(dst, src, n);
    return;
  }
#endif
#if defined(__SSE2__)
  size_t k = 0;
  if (((uintptr_t)dst & 15) != 0 && n > 0) dst[0] = src[0], k = 1;
  for (; k + 2 <= n; k += 2)
    _mm_stream_pd(dst + k, _mm_loadu_pd(src + k));
  if (k < n) dst[k] = src[k];
#else
  memcpy(dst, src, n * sizeof(double));
#endif
}

/* Row j of y at wave layer v (the block, a halo, or the rows kept aside). */
static const double *rw_wave_yrow(const rw_wave *w, long v, long j)
{
  const long l = v - w->V0;
  const size_t r = (size_t)j * w->row;
  if (l < 0) return w->lo_h + (size_t)(l + w->H) * w->Lo + r;
  if (l >= w->N) return w->hi_h + (size_t)(l - w->N) * w->Lo + r;
  if (j < w->jsave)
    return w->saved + ((size_t)l * (size_t)w->H + (size_t)(j - (w->jsave - w->H))) * w->row;
  return w->y + (size_t)l * w->Lo + r;
}

/* z = the combination (rw_lincomb, the same bits) while the row `ahead` (len doubles, NULL:
 * none) is prefetched to L2, a line per 8 doubles, in chunks of RW_AHEAD_CHUNK interleaved with
 * the combination's: the plan's aux_ahead. A kernel that reads a stored stage (Gray-Scott's
 * VJP, heat's conductivity gradient) streams it from memory, and prefetching it only while the
 * kernels run left the adjoint step waiting for it: on an AMD EPYC (Zen 5) VM, 1 rank, Gray-Scott
 * 512^2's adjoint step took 3.10-3.34 ms (1.9-2.1 ms reading a cached row instead), a core's
 * software prefetches bringing about 10 GB/s at most; issued during the forms too, they keep
 * the memory busy for more of the step: 2.44-2.91 ms. See docs/architecture.md. */
#define RW_AHEAD_CHUNK 128
static void rw_wave_lincomb_ahead(int n, const double *c, const double *const *x, double *z,
                                  long len, const double *ahead)
{
  if (!ahead) {
    rw_lincomb(n, c, x, z, len);
    return;
  }
  const double *xc[RW_WAVE_MAX_STAGES + 1];
  for (long a = 0; a < len; a += RW_AHEAD_CHUNK) {
    const long m = len - a < RW_AHEAD_CHUNK ? len - a : RW_AHEAD_CHUNK;
    for (int k = 0; k < n; k++)
      xc[k] = x[k] + a;
    rw_lincomb(n, c, xc, z + a, m);
    for (long q = 0; q < m; q += 8)
      __builtin_prefetch(ahead + a + q, 0, 2);
  }
}

/* Y_i's owned part at wave layer v by rows (rw_lincomb, as rw_grid_comb_box rounds it), then
 * its ghosts in the dimensions below D. */
static void rw_wave_form(rw_wave *w, int i, double *gw, long v)
{
  rw_grid g = w->g;
  const int nc = g->cfg.ncomp, G = g->cfg.ghost, dim = g->cfg.dim;
  const long jlo = dim == 3 ? w->flo[i] : 0, jhi = dim == 3 ? w->fhi[i] : 1;
  const double *x[RW_WAVE_MAX_STAGES + 1];
  for (long j = jlo; j < jhi; j++) {
    for (int m = 0; m < w->P->n[i]; m++) {
      const int q = w->P->x[i][m];
      x[m] = q < 0 ? rw_wave_yrow(w, v, j)
                   : rw_wave_ring(w->ring[q], w->capK, w->Lo, v) + (size_t)j * w->row;
    }
    size_t gx = dim == 3 ? rw_grid_gidx(g->gn, G, dim, 0, j, v, nc, 0)
                         : rw_grid_gidx(g->gn, G, dim, 0, v, 0, nc, 0);
    const long la = v - w->V0 + 1; /* aux_ahead: the stored stage's next layer, this row */
    const double *ahead = w->P->aux_ahead && w->aux[i] && !w->fw && la >= 0 && la < w->N
                              ? w->aux[i] + (size_t)la * w->Lo + (size_t)j * w->row
                              : NULL;
    rw_wave_lincomb_ahead(w->P->n[i], w->P->c[i], x, gw + gx, (long)w->row, ahead);
    rw_grid_row_ghosts0(g, gw + gx);
    if (w->keep[i] && v >= w->V0 && v < w->V0 + w->N && j >= w->j0 && j < w->j1)
      rw_wave_stream(w->keep[i] + (size_t)(v - w->V0) * w->Lo + (size_t)j * w->row, gw + gx,
                     w->row);
    if (w->kring[i])
      memcpy(rw_wave_ring(w->kring[i], w->kcap, w->Lo, v) + (size_t)j * w->row, gw + gx,
             w->row * sizeof(double));
  }
  const long l = v - w->V0;
  if (w->cstart && l >= 0 && l < w->N) /* the plan's captures in this layer's formed rows */
    for (long k = w->cstart[l]; k < w->cstart[l + 1]; k++) {
      const long m = w->corder[k], off = w->P->cap[m] - l * (long)w->Lo, j = off / (long)w->row;
      if (j < jlo || j >= jhi) continue;
      size_t gx = dim == 3 ? rw_grid_gidx(g->gn, G, dim, 0, j, v, nc, 0)
                           : rw_grid_gidx(g->gn, G, dim, 0, v, 0, nc, 0);
      w->P->capv[(size_t)i * (size_t)w->P->ncap + (size_t)m] =
          gw[gx + (size_t)(off % (long)w->row)];
    }
  rw_grid_layer_ghosts_from(g, gw, v, 1, jlo, jhi, 1); /* dimension 0's: rw_grid_row_ghosts0 */
}

/* After the kernel has computed K_i on layers [a, b) (rows [rlo, rhi) of a tile): the plan's
 * injections there, in their order at each node; then its side kernel on the tile's own rows. */
static void rw_wave_after(rw_wave *w, int i, void *kctx, const double *gw, double *out, long a,
                          long b)
{
  rw_grid g = w->g;
  const rw_stage_plan *P = w->P;
  const int dim = g->cfg.dim, D = dim - 1;
  for (long v = a; w->istart && v < b; v++) /* inj: offsets from the block's layer 0 */
    for (long k = w->istart[v]; k < w->istart[v + 1]; k++) {
      const long m = w->iorder[k], off = P->inj[m] + (w->V0 - v) * (long)w->Lo,
                 j = off / (long)w->row;
      if (dim == 3 && (j < w->rlo[i] || j >= w->rhi[i])) continue;
      out[(size_t)v * w->Lo + (size_t)off] += P->injv[(size_t)i * (size_t)P->ninj + (size_t)m];
    }
  const long sa = a > w->V0 ? a : w->V0, sb = b < w->V0 + w->N ? b : w->V0 + w->N;
  if (!P->side || sa >= sb) return; /* the side: owned layers only */
  long lo[3] = {0, 0, 0}, hi[3] = {g->count[0], g->count[1], g->count[2]};
  if (dim == 3) lo[1] = w->j0, hi[1] = w->j1;
  lo[D] = sa, hi[D] = sb;
  P->side(kctx, g, gw, out, lo, hi);
}

/* A tile's wave, ready to start: every stage's span and nothing computed yet. */
static void rw_wave_start(rw_wave *w)
{
  rw_grid g = w->g;
  const int G = g->cfg.ghost, dim = g->cfg.dim, s = w->P->s;
  const long vend = w->V0 + w->N;
  for (int i = 0; i < s; i++) {
    const long x = (long)(s - 1 - i) * G + w->E;
    w->klo[i] = w->V0 - (w->ext[0] ? x : 0), w->khi[i] = vend + (w->ext[1] ? x : 0);
    w->e[i] = w->klo[i], w->yt[i] = w->klo[i] - G;
    w->Y[i].base = w->klo[i] - G;
    if (dim == 3) {
      const long glo = w->flo[i] == 0 ? -G : w->flo[i],
                 ghi = w->fhi[i] == g->count[1] ? g->count[1] + G : w->fhi[i];
      w->yoff[i] = (size_t)(glo + G) * (size_t)g->gn[0] * (size_t)g->cfg.ncomp;
      w->ylen[i] = (size_t)(ghi - glo) * (size_t)g->gn[0] * (size_t)g->cfg.ncomp;
    } else {
      w->yoff[i] = 0, w->ylen[i] = w->L;
    }
  }
  w->done_v = w->V0;
}

/* Whether the tile's wave is complete. */
static int rw_wave_finished(const rw_wave *w)
{
  const int s = w->P->s;
  return w->P->no_out ? w->e[s - 1] >= w->khi[s - 1] : w->done_v >= w->V0 + w->N;
}

/* The tile's wave with its front moved to f: K_i computed up to f - i G (within its span),
 * each Y_i formed G layers ahead of its kernel, y_out where every slope is complete. The
 * fronts f of successive calls increase. */
static int rw_wave_advance(rw_wave *w, long f, rw_grid_kernel_fn kernel, void *const *kctx)
{
  rw_grid g = w->g;
  const rw_stage_plan *P = w->P;
  const int G = g->cfg.ghost, dim = g->cfg.dim, D = dim - 1, s = P->s;
  const long vend = w->V0 + w->N;
  long *e = w->e, *yt = w->yt;
  const long *klo = w->klo, *khi = w->khi;
  const size_t tof = (size_t)w->j0 * w->row, tlen = (size_t)(w->j1 - w->j0) * w->row;
  /* nothing read past f + G: the layers above the block once the front nears them */
  if (g->nwhalo_hi && f + G >= vend) RW_CALL(rw_grid_wave_halo_wait(g, g->whalo_hi, &g->nwhalo_hi));
  for (int i = 0; i < s; i++) {
    long tgt = f - (long)i * G;
    if (tgt > khi[i]) tgt = khi[i];
    if (tgt <= e[i]) continue;
    /* Y_i up to G layers past the kernel's; at a physical high side all of its ghost layers
     * at once, as soon as the kernel reads one (filled when the last owned layer is) */
    const long ny = !w->ext[1] && tgt + G > vend ? khi[i] + G : tgt + G;
    rw_wave_slide *b = &w->Y[i];
    RW_CALL(rw_wave_reserve(b, e[i] - G, yt[i], ny, w->yoff[i], w->ylen[i]));
    double *gw = b->buf - (ptrdiff_t)(b->base + G) * (ptrdiff_t)w->L; /* layer v at slot v */
    double *ga = gw + (ptrdiff_t)w->V0 * (ptrdiff_t)w->L;             /* the block's coordinates */
    const long first = yt[i];
    for (long v = yt[i]; v < ny; v++) {
      const long l = v - w->V0;
      if ((l < 0 && !w->ext[0]) || (l >= w->N && !w->ext[1])) continue; /* a ghost layer */
      rw_wave_form(w, i, gw, v);
    }
    yt[i] = ny;
    /* D's ghost layers on the rows Y_i is formed on (the whole face without tiles) */
    if (!w->ext[0] && first == klo[i] - G)
      (void)rw_grid_bc_in(g, D, 0, ga, 0, -1, w->flo[i], w->fhi[i]);
    if (!w->ext[1] && first < khi[i] + G && ny == khi[i] + G)
      (void)rw_grid_bc_in(g, D, 1, ga, 0, -1, w->flo[i], w->fhi[i]);
    long live = w->done_v; /* the lowest layer of K_i still to be read */
    for (int q = i + 1; q < s; q++)
      live = yt[q] < live ? yt[q] : live;
    RW_CHECK(tgt - w->capK <= live, RW_ERR_INTERNAL,
             "grid wave: stage %d's ring of %ld layers would overwrite layer %ld", i, w->capK,
             tgt - 1 - w->capK);
    for (long a = e[i]; a < tgt && !(P->no_out && i == s - 1);) { /* [a, b): the ring's end */
      const long slot = a % w->capK, bnd = a + (w->capK - slot) < tgt ? a + (w->capK - slot) : tgt;
      double *out = w->ring[i] - (ptrdiff_t)(a - slot) * (ptrdiff_t)w->Lo;
      long lo[3] = {0, 0, 0}, hi[3] = {g->count[0], g->count[1], g->count[2]};
      if (dim == 3) lo[1] = w->rlo[i], hi[1] = w->rhi[i];
      lo[D] = a, hi[D] = bnd;
      kernel(kctx[i], g, gw, out, lo, hi);
      if (w->istart || P->side) rw_wave_after(w, i, kctx[i], gw, out, a, bnd);
      a = bnd;
    }
    e[i] = tgt;
  }
  /* y_out where every slope is complete, on the tile's rows */
  if (P->no_out) w->done_v = e[s - 1];
  for (; w->done_v < e[s - 1] && w->done_v < vend; w->done_v++) {
    const double *x[RW_WAVE_MAX_STAGES + 1];
    const long l = w->done_v - w->V0;
    for (int m = 0; m < P->nb; m++) {
      const int q = P->xb[m];
      x[m] =
          (q < 0 ? w->y + (size_t)l * w->Lo : rw_wave_ring(w->ring[q], w->capK, w->Lo, w->done_v)) +
          tof;
    }
    rw_lincomb(P->nb, P->cb, x, w->yo + (size_t)l * w->Lo + tof, (long)tlen);
  }
  return 0;
}

/* One tile's wave over every layer (the step on rows [j0, j1) of y_out). */
static int rw_wave_tile(rw_wave *w, rw_grid_kernel_fn kernel, void *const *kctx)
{
  rw_wave_start(w);
  for (long f = w->klo[0] + w->W; !rw_wave_finished(w); f += w->W)
    RW_CALL(rw_wave_advance(w, f, kernel, kctx));
  return 0;
}

/* The field layers a wave of s stages reads (ext_ok): actual layers [lo, hi) along D. */
static void rw_grid_wave_span(rw_grid g, int s, int ghosted, long *lo, long *hi)
{
  const int G = g->cfg.ghost, D = g->cfg.dim - 1;
  const long sg = (long)s * G;
  *lo = -(g->nbr[D][0] != MPI_PROC_NULL ? sg : 0) - (ghosted ? G : 0);
  *hi = g->count[D] + (g->nbr[D][1] != MPI_PROC_NULL ? sg : 0) + (ghosted ? G : 0);
}

int rw_grid_wave_ready(rw_grid g, int s, int ext_ok)
{
  return rw_grid_wave_suits(g, s, ext_ok, rw_grid_wave_layers(g, s));
}

int rw_grid_wave_reaches(rw_grid g)
{
  const int D = g->cfg.dim - 1;
  return g->nbr[D][0] != MPI_PROC_NULL || g->nbr[D][1] != MPI_PROC_NULL;
}

size_t rw_grid_wave_field_length(rw_grid g, int s, int ghosted)
{
  long lo, hi;
  rw_grid_wave_span(g, s, ghosted, &lo, &hi);
  const size_t L = ghosted ? rw_grid_layer_len(g)
                           : (size_t)g->count[0] * (size_t)g->cfg.ncomp *
                                 (size_t)(g->cfg.dim == 3 ? g->count[1] : 1);
  return (size_t)(hi - lo) * L;
}

int rw_grid_wave_field(rw_grid g, int s, N_Vector v, int ghosted, double *buf)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim, D = dim - 1, nc = g->cfg.ncomp;
  RW_CHECK(s >= 1 && s <= RW_WAVE_MAX_STAGES && !rw_vec_device(v), RW_ERR_ARG,
           "rw_grid_wave_field: %d stages on %s vectors", s, rw_vec_device(v) ? "device" : "host");
  const long N = g->count[D], H = (long)s * G, rows = dim == 3 ? g->count[1] : 1;
  const size_t row = (size_t)g->count[0] * (size_t)nc, Lo = row * (size_t)rows;
  const size_t L = ghosted ? rw_grid_layer_len(g) : Lo;
  const int ext0 = g->nbr[D][0] != MPI_PROC_NULL, ext1 = g->nbr[D][1] != MPI_PROC_NULL;
  const long V0 = ext0 ? H : 0;
  long lo, hi;
  rw_grid_wave_span(g, s, ghosted, &lo, &hi);
  const double *vd = rw_vec_data(v);
  double *halo = NULL;
  if (ext0 || ext1) {
    RW_CALL(rw_calloc(2 * (size_t)H * Lo, sizeof(double), "grid wave field halo", &halo));
    int e = rw_grid_wave_halo(g, vd, H, Lo, halo, halo + (size_t)H * Lo, NULL);
    const int e2 = rw_grid_wave_halo_end(g);
    e = e ? e : e2;
    if (e) {
      rw_free(&halo);
      RW_CALL(e);
    }
  }
  /* layer a at slot a - lo; the wave's layer v = a + V0 then at buf's own offsets (base = buf) */
  double *pv = buf - (ptrdiff_t)(ghosted ? lo + V0 + G : lo + V0) * (ptrdiff_t)L;
  for (long a = -(ext0 ? H : 0); a < N + (ext1 ? H : 0); a++) {
    const double *src = a < 0    ? halo + (size_t)(a + H) * Lo
                        : a >= N ? halo + (size_t)H * Lo + (size_t)(a - N) * Lo
                                 : vd + (size_t)a * Lo;
    if (!ghosted) {
      memcpy(pv + (size_t)(a + V0) * Lo, src, Lo * sizeof(double));
      continue;
    }
    for (long j = 0; j < rows; j++) {
      size_t gx = dim == 3 ? rw_grid_gidx(g->gn, G, dim, 0, j, a + V0, nc, 0)
                           : rw_grid_gidx(g->gn, G, dim, 0, a + V0, 0, nc, 0);
      memcpy(pv + gx, src + (size_t)j * row, row * sizeof(double));
    }
    rw_grid_layer_ghosts(g, pv, a + V0, 1, 0, g->count[1]);
  }
  if (ghosted) { /* D's physical sides: its boundary condition, in the block's coordinates */
    double *pa = pv + (ptrdiff_t)V0 * (ptrdiff_t)L;
    if (!ext0) (void)rw_grid_bc_in(g, D, 0, pa, 0, -1, 0, 0);
    if (!ext1) (void)rw_grid_bc_in(g, D, 1, pa, 0, -1, 0, 0);
    /* and where a neighbour's H layers end at the domain's physical side (its block is H layers
     * thick), that side's ghosts beyond them, as the neighbour's own ghosted copy has them: the
     * array shifted by H layers, so that its last layer is the domain's. A kernel past the block
     * reads them there: heat's adjoint wave on a Neumann side adds the face term of the layer
     * inside the domain's face, (k_face + k_ghost) w_face, wherever the wave computes that
     * layer, a neighbour's too. Left unfilled, a 3-D heat adjoint step with Neumann sides on 2
     * ranks (7 layers: 4 and 3), whose 3-stage sweep reaches the other rank's layer inside the
     * face, differed from the stage-by-stage step by 2e-5 on the block's last layer. */
    const int wraps = g->cfg.bc[D] == RW_BC_PERIODIC;
    if (ext0 && !wraps && g->start[D] == H)
      (void)rw_grid_bc_in(g, D, 0, pa - (ptrdiff_t)H * (ptrdiff_t)L, 0, -1, 0, 0);
    if (ext1 && !wraps && g->start[D] + N + H == g->cfg.n[D])
      (void)rw_grid_bc_in(g, D, 1, pa + (ptrdiff_t)H * (ptrdiff_t)L, 0, -1, 0, 0);
  }
  rw_free(&halo);
  return 0;
}

/* n offsets sorted by their layer (a counting sort, stable): offset + base lies in layer v of N
 * (base: V0 Lo for offsets from the block's layer 0 that may reach past it); the starts of the N
 * layers (N + 1 of them) and the order, in *buf (grown as needed). */
static int rw_wave_by_layer(int n, const long *off0, long base, long N, size_t Lo, const char *what,
                            long **buf, size_t *len, const long **start, const long **order)
{
  const size_t nl = (size_t)N + 1 + (size_t)n;
  if (*len < nl) {
    rw_free(buf);
    *len = 0;
    RW_CALL(rw_calloc(nl, sizeof(long), "grid wave offsets", buf));
    *len = nl;
  }
  long *st = *buf, *ord = *buf + N + 1;
  memset(st, 0, ((size_t)N + 1) * sizeof(long));
  for (int m = 0; m < n; m++) {
    const long o = off0[m] + base, l = o >= 0 ? o / (long)Lo : -1;
    RW_CHECK(o >= 0 && l < N, RW_ERR_ARG,
             "rw_grid_erk_wave: %s %d at offset %ld, outside the %ld entries the wave reaches",
             what, m, off0[m], N * (long)Lo);
    st[l + 1]++;
  }
  for (long l = 0; l < N; l++)
    st[l + 1] += st[l];
  for (int m = 0; m < n; m++) /* st[l]: the next place of layer l */
    ord[st[(off0[m] + base) / (long)Lo]++] = m;
  for (long l = N; l > 0; l--) /* back to the starts */
    st[l] = st[l - 1];
  st[0] = 0;
  *start = st, *order = ord;
  return 0;
}

const double *rw_grid_wave_aux_layer(rw_grid g, int i, long v)
{
  const rw_wave *w = g->wave_cur;
  if (!w || i < 0 || i >= w->P->s) return NULL;
  const long l = v - w->V0;
  if (w->fw) { /* a pair's adjoint: the recomputation's Y_{s-1-i}, y_n itself for Y_0 */
    const rw_wave *f = w->fw;
    const int k = w->P->s - 1 - i;
    if (k > 0) return rw_wave_ring(f->kring[k], f->kcap, f->Lo, l + f->V0);
    if ((l < 0 && !f->lo_h) || (l >= f->N && !f->hi_h)) return NULL;
    return rw_wave_yrow(f, l + f->V0, 0);
  }
  if (!w->aux[i]) return NULL;
  if (l < 0)
    return w->aux_lo[i] && l >= -w->aux_d[i] ? w->aux_lo[i] + (size_t)(l + w->aux_d[i]) * w->Lo
                                             : NULL;
  if (l >= w->N)
    return w->aux_hi[i] && l < w->N + w->aux_d[i] ? w->aux_hi[i] + (size_t)(l - w->N) * w->Lo
                                                  : NULL;
  return w->aux[i] + (size_t)l * w->Lo;
}

void rw_grid_wave_tile(rw_grid g, long *j0, long *j1)
{
  const rw_wave *w = g->wave_cur;
  *j0 = w && g->cfg.dim == 3 ? w->j0 : 0;
  *j1 = w && g->cfg.dim == 3 ? w->j1 : g->count[1];
}

long rw_grid_wave_layer0(rw_grid g)
{
  const rw_wave *w = g->wave_cur;
  return w ? w->V0 : 0;
}

void rw_grid_copy_wave_settings(rw_grid dst, rw_grid src)
{
  rw_grid_set_wave(dst, src->wave_layers);
  rw_grid_set_wave_rows(dst, src->wave_rows);
}

/* w's geometry for plan P on g: windows of W layers, the stages reaching E layers (and tile
 * rows) past the block beyond the plain wave's (s - 1 - i) G. */
static void rw_wave_init(rw_wave *w, rw_grid g, const rw_stage_plan *P, long W, long E)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim, D = dim - 1, s = P->s;
  memset(w, 0, sizeof *w);
  w->g = g, w->P = P, w->N = g->count[D], w->E = E, w->H = (long)s * G + E, w->W = W;
  w->ext[0] = g->nbr[D][0] != MPI_PROC_NULL, w->ext[1] = g->nbr[D][1] != MPI_PROC_NULL;
  w->V0 = w->ext[0] ? w->H : 0;
  w->L = rw_grid_layer_len(g);
  w->row = (size_t)g->count[0] * (size_t)g->cfg.ncomp;
  w->Lo = w->row * (size_t)(dim == 3 ? g->count[1] : 1);
  w->capK = W + (long)(s + 1) * G + 1;
}

/* The doubles of w's stage buffers and rings, of y's halo and of copies of y's edge layers to
 * send. */
static size_t rw_wave_need(const rw_wave *w)
{
  const int G = w->g->cfg.ghost, s = w->P->s;
  const long capY = 2 * (w->W + 2 * G);
  return (size_t)s * ((size_t)capY * w->L + 8 + (size_t)w->capK * w->Lo) +
         (w->ext[0] || w->ext[1] ? 4 * (size_t)w->H * w->Lo : 0);
}

/* w's stage buffers and rings from *p on, y's halo (H layers deep) after them, its messages
 * posted (rw_grid_wave_halo: y's edge layers sent from copies when y is stepped in place); *p
 * moves past them. Collective where D has a neighbour. */
static int rw_wave_place(rw_wave *w, N_Vector y, N_Vector y_out, double **p)
{
  const int G = w->g->cfg.ghost, s = w->P->s;
  const long capY = 2 * (w->W + 2 * G);
  for (int i = 0; i < s; i++) { /* Y_i's rows on cache lines, as a ghosted array's */
    w->Y[i].buf = *p + rw_grid_lead(w->g), w->Y[i].cap = capY, w->Y[i].L = w->L;
    *p += (size_t)capY * w->L + 8;
    w->ring[i] = *p, *p += (size_t)w->capK * w->Lo;
  }
  w->y = rw_vec_data(y);
  w->yo = y_out ? rw_vec_data(y_out) : NULL;
  for (int i = 0; i < s; i++)
    w->keep[i] = w->P->keep[i] ? rw_vec_data(w->P->keep[i]) : NULL;
  if (w->ext[0] || w->ext[1]) {
    const size_t n = (size_t)w->H * w->Lo;
    double *lo_h = *p, *hi_h = *p + n, *sb = w->yo == w->y ? *p + 2 * n : NULL;
    RW_CALL(rw_grid_wave_halo(w->g, w->y, w->H, w->Lo, lo_h, hi_h, sb));
    w->lo_h = lo_h, w->hi_h = hi_h;
    *p += 4 * n;
  }
  return 0;
}

/* The tile of rows [j0, j1) (3-D; the whole middle dimension otherwise): stage i's kernel on
 * (s - 1 - i) G + E rows past it each side, Y_i formed G rows further. */
static void rw_wave_rows(rw_wave *w, long j0, long j1)
{
  const int G = w->g->cfg.ghost, s = w->P->s;
  const long nrows = w->g->cfg.dim == 3 ? w->g->count[1] : 1;
  w->j0 = j0, w->j1 = j1;
  for (int i = 0; i < s; i++) {
    const long x = (long)(s - 1 - i) * G + w->E;
    w->rlo[i] = j0 - x > 0 ? j0 - x : 0;
    w->rhi[i] = j1 + x < nrows ? j1 + x : nrows;
    w->flo[i] = w->rlo[i] - G > 0 ? w->rlo[i] - G : 0;
    w->fhi[i] = w->rhi[i] + G < nrows ? w->rhi[i] + G : nrows;
  }
}

/* Before a tile steps y in place: the H rows below the next tile (which its stages read) of
 * every layer, kept aside in dst (read back through w->saved, w->jsave). */
static void rw_wave_aside(const rw_wave *w, double *dst)
{
  for (long l = 0; l < w->N; l++)
    memcpy(dst + (size_t)l * (size_t)w->H * w->row,
           w->y + (size_t)l * w->Lo + (size_t)(w->j1 - w->H) * w->row,
           (size_t)w->H * w->row * sizeof(double));
}

/* The plan's captures and injections sorted by layer, for w. */
static int rw_wave_lists(rw_wave *w)
{
  rw_grid g = w->g;
  const rw_stage_plan *P = w->P;
  if (P->ncap > 0)
    RW_CALL(rw_wave_by_layer(P->ncap, P->cap, 0, w->N, w->Lo, "capture", &g->wave_cap,
                             &g->wave_cap_len, &w->cstart, &w->corder));
  if (P->ninj > 0)
    RW_CALL(rw_wave_by_layer(P->ninj, P->inj, w->V0 * (long)w->Lo,
                             w->V0 + w->N + (w->ext[1] ? w->H : 0), w->Lo, "injection",
                             &g->wave_inj, &g->wave_inj_len, &w->istart, &w->iorder));
  return 0;
}

static int rw_grid_wave_grow(rw_grid g, size_t need)
{
  if (g->wave_len >= need) return 0;
  rw_free(&g->wave);
  g->wave_len = 0;
  RW_CALL(rw_calloc(need, sizeof(double), "grid wave", &g->wave));
  g->wave_len = need;
  return 0;
}

static int rw_wave_host(const rw_stage_plan *P, N_Vector y, N_Vector y_out)
{
  int dev = rw_vec_device(y) || (y_out && rw_vec_device(y_out));
  for (int i = 0; i < P->s && i < RW_WAVE_MAX_STAGES; i++)
    dev =
        dev || (P->keep[i] && rw_vec_device(P->keep[i])) || (P->aux[i] && rw_vec_device(P->aux[i]));
  return !dev;
}

static int rw_grid_erk_wave_sweep(rw_grid g, const rw_stage_plan *P, N_Vector y, N_Vector y_out,
                                  int ext_ok, rw_grid_kernel_fn kernel, void *const *kctx,
                                  int *done)
{
  const int dim = g->cfg.dim, s = P->s;
  *done = 0;
  if (!rw_wave_host(P, y, y_out) || (!y_out && !P->no_out)) return 0;
  long W = rw_grid_wave_layers(g, s);
  if (!rw_grid_wave_suits(g, s, ext_ok, W)) return 0;
  int kind = 0; /* the plan kind, for the measured choices */
  for (int i = 0; i < s; i++)
    kind = P->aux[i] ? 2 : kind == 0 && P->keep[i] ? 1 : kind;
  if (kind == 0 && P->no_out) kind = 1;
  rw_wave_tuner *tune = NULL;
  W = rw_grid_wave_window(g, s, W, kind, P, kernel, &tune);
  rw_wave w;
  rw_wave_init(&w, g, P, W, 0);
  const long nrows = dim == 3 ? g->count[1] : 1;
  long T = rw_grid_wave_rows(g, s, W);
  if (T < nrows && g->wave_rows <= 0) { /* the rule would tile and no rows are set */
    tune = rw_wave_tuner_for(g, kind, P, kernel);
    long cand[RW_WAVE_TUNE_MAX] = {T, nrows, rw_wave_rows_between(T, nrows)};
    T = rw_wave_tune_pick(g, tune, cand[2] > T && cand[2] < nrows ? 3 : 2, cand);
  }
  w.tiled = T < nrows;
  g->wave_layers_used = W;
  g->wave_rows_used = T;
  const int inplace = !P->no_out && rw_vec_data(y) == rw_vec_data(y_out) && w.tiled;
  const size_t keep = (size_t)w.N * (size_t)w.H * w.row; /* the rows kept aside, per copy */
  /* the aux vectors' layers past the block: only those the stage's kernels read (aux_reach),
   * d of them on each side, in buffers of 2 d layers */
  size_t naux = 0;
  for (int i = 0; i < s; i++) {
    if (!P->aux[i]) continue;
    const long d = P->aux_reach_set ? P->aux_reach[i] : w.H;
    RW_CHECK(d >= 0 && d <= w.H, RW_ERR_ARG,
             "grid wave: stage %d reads %ld layers of its aux vector past the block; the wave "
             "reaches %ld",
             i, d, w.H);
    w.aux_d[i] = d;
    naux += 2 * (size_t)d;
  }
  RW_CALL(rw_grid_wave_grow(g, rw_wave_need(&w) + (w.ext[0] || w.ext[1] ? naux * w.Lo : 0) +
                                   (inplace ? 2 * keep : 0)));
  double *p = g->wave;
  RW_CALL(rw_wave_place(&w, y, y_out, &p));
  for (int i = 0; i < s; i++) { /* the aux vectors, with their layers past the block */
    if (!P->aux[i]) continue;
    w.aux[i] = rw_vec_data(P->aux[i]);
    if (!w.ext[0] && !w.ext[1]) continue;
    const long d = w.aux_d[i]; /* layers -d .. -1 in the low buffer, N .. N + d - 1 above */
    if (d > 0) RW_CALL(rw_grid_wave_halo(g, w.aux[i], d, w.Lo, p, p + (size_t)d * w.Lo, NULL));
    w.aux_lo[i] = p, w.aux_hi[i] = p + (size_t)d * w.Lo;
    p += 2 * (size_t)d * w.Lo;
  }
  RW_CALL(rw_grid_wave_halo_wait(g, g->whalo_lo, &g->nwhalo_lo)); /* read at once */
  double *sv[2] = {p, p + keep};
  w.jsave = 0;
  RW_CALL(rw_wave_lists(&w));
  const double t0 = tune ? rw_wave_clock(g) : 0.0;
  for (long j0 = 0, t = 0; j0 < nrows; j0 += T, t++) {
    rw_wave_rows(&w, j0, j0 + T < nrows ? j0 + T : nrows);
    if (inplace && w.j1 < nrows) rw_wave_aside(&w, sv[t & 1]);
    g->wave_cur = &w;
    int e = rw_wave_tile(&w, kernel, kctx);
    g->wave_cur = NULL;
    RW_CALL(e);
    if (inplace) w.saved = sv[t & 1], w.jsave = w.j1;
  }
#if defined(__SSE2__)
  _mm_sfence(); /* the kept stages' streaming stores, before anyone reads them */
#endif
  if (tune) rw_wave_tune_note(tune, rw_wave_clock(g) - t0);
  g->wave_runs++;
  *done = 1;
  return 0;
}

int rw_grid_erk_wave(rw_grid g, const rw_stage_plan *P, N_Vector y, N_Vector y_out, int ext_ok,
                     rw_grid_kernel_fn kernel, void *const *kctx, int *done)
{
  const int e = rw_grid_erk_wave_sweep(g, P, y, y_out, ext_ok, kernel, kctx, done);
  const int e2 = rw_grid_wave_halo_end(g);
  return e ? e : e2;
}

/* --- A checkpointed backward step in one sweep (rw_grid_erk_wave_pair) -------------------
 * A checkpointed adjoint recomputes a step's stage inputs from y_n and then runs the step's
 * adjoint over them: two waves, the first streaming s - 1 state vectors to memory and the second
 * reading them back. The pair runs both waves over the same layers at once, the adjoint's front
 * (s - 1) G layers behind the recomputation's: the adjoint's plan stage k (the method's stage
 * i = s - 1 - k) computes up to k G behind its front and reads Y_i G layers past that, up to
 * (k - 1) G behind the adjoint's front, while the recomputation has formed Y_i up to (i - 1) G
 * behind its own; the lag must be (i - k) G at least, (s - 1) G for k = 0. The stage inputs go to
 * rings of a few layers (kring) instead of vectors: they are read while in cache. Past a block's
 * edge the adjoint's plan stage k runs (s - 1 - k) G layers out and reads Y_{s-1-k} G layers
 * further, while a plain wave forms Y_i only (s - i) G layers out; so the recomputation's stages
 * reach E = (s - 1) G layers further than a plain wave's, from a halo of y_n (2 s - 1) G layers
 * deep. One tile: every row. The values are those of the two waves apart, bit for bit: each is
 * formed by the same code from the same inputs; only when it is computed changes. */
static int rw_grid_pair_suits(rw_grid g, int s)
{
  const int G = g->cfg.ghost, D = g->cfg.dim - 1;
  int *ok = &g->pair_ok[s];
  if (*ok) return *ok == 2;
  const int ext = g->nbr[D][0] != MPI_PROC_NULL || g->nbr[D][1] != MPI_PROC_NULL;
  int mine = !ext || g->count[D] >= (long)(2 * s - 1) * G, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, g->cart) != MPI_SUCCESS) all = 0;
  *ok = all ? 2 : 1;
  return all;
}

/* Whether the wave of s stages on g would be tiled: the pair is not (see below). */
static int rw_grid_pair_tiled(rw_grid g, int s, long W)
{
  return g->cfg.dim == 3 && rw_grid_wave_rows(g, s, W) < g->count[1];
}

static int rw_grid_pair_sweep(rw_grid g, const rw_stage_plan *Pf, N_Vector y_n,
                              rw_grid_kernel_fn kf, void *const *kcf, const rw_stage_plan *Pa,
                              N_Vector lambda, rw_grid_kernel_fn ka, void *const *kca, int *done)
{
  const int G = g->cfg.ghost, dim = g->cfg.dim, s = Pa->s;
  *done = 0;
  if (g->pair_off || Pf->s != s || !Pf->no_out || !rw_wave_host(Pf, y_n, NULL) ||
      !rw_wave_host(Pa, lambda, lambda))
    return 0;
  for (int i = 0; i < s; i++)
    if (Pf->keep[i] || Pa->aux[i]) return 0;
  long W = rw_grid_wave_layers(g, s);
  if (!rw_grid_wave_suits(g, s, 1, W) || !rw_grid_pair_suits(g, s)) return 0;
  /* Where the wave is tiled (3-D, a middle dimension with physical sides, as heat's blocks)
   * a pair for heat was slower than the two waves apart: heat 128^3, 23-row tiles, 1.22-1.24x
   * their time (each tile's recomputation computes (s - 1) G more rows each side, and the live
   * layers of two waves and the rings outgrow the tile's cache budget); untiled, 64-76 against
   * 71-79 ms, no clear gain. So a tiled wave keeps the two waves (the same bits either way). */
  if (rw_grid_pair_tiled(g, s, W)) return 0;
  rw_wave_tuner *tune = NULL; /* the window measured as a wave's, apart from them */
  W = rw_grid_wave_window(g, s, W, 3, Pa, ka, &tune);
  g->wave_layers_used = W;
  const long lag = (long)(s - 1) * G;
  rw_wave wf, wa;
  rw_wave_init(&wf, g, Pf, W, lag);
  rw_wave_init(&wa, g, Pa, W, 0);
  const long nrows = dim == 3 ? g->count[1] : 1; /* one tile: every row */
  wf.kcap = W + 2 * (long)(s + 1) * G + 2;
  RW_CALL(rw_grid_wave_grow(g, rw_wave_need(&wf) + rw_wave_need(&wa) +
                                   (size_t)(s - 1) * (size_t)wf.kcap * wf.Lo));
  double *p = g->wave;
  RW_CALL(rw_wave_place(&wf, y_n, NULL, &p));
  RW_CALL(rw_wave_place(&wa, lambda, lambda, &p));
  RW_CALL(rw_grid_wave_halo_wait(g, g->whalo_lo, &g->nwhalo_lo)); /* read at once */
  for (int i = 1; i < s; i++)
    wf.kring[i] = p, p += (size_t)wf.kcap * wf.Lo;
  wa.fw = &wf;
  RW_CALL(rw_wave_lists(&wa));
  rw_wave_rows(&wf, 0, nrows);
  rw_wave_rows(&wa, 0, nrows);
  rw_wave_start(&wf);
  rw_wave_start(&wa);
  const double t0 = tune ? rw_wave_clock(g) : 0.0;
  /* F: the recomputation's front in the block's layers; the adjoint's is lag behind */
  for (long F = wf.klo[0] - wf.V0 + W; !rw_wave_finished(&wa); F += W) {
    if (!rw_wave_finished(&wf)) {
      g->wave_cur = &wf;
      int e = rw_wave_advance(&wf, F + wf.V0, kf, kcf);
      g->wave_cur = NULL;
      RW_CALL(e);
      for (int k = 0; k < s; k++) { /* no ring layer the adjoint still reads overwritten */
        const int i = s - 1 - k;
        RW_CHECK(i == 0 || wf.yt[i] - wf.kcap <= wa.e[k] - G - wa.V0 + wf.V0, RW_ERR_INTERNAL,
                 "grid wave pair: stage %d's ring of %ld layers overran the adjoint", i, wf.kcap);
      }
    }
    g->wave_cur = &wa;
    int e = rw_wave_advance(&wa, F - lag + wa.V0, ka, kca);
    g->wave_cur = NULL;
    RW_CALL(e);
  }
  if (tune) rw_wave_tune_note(tune, rw_wave_clock(g) - t0);
  g->wave_runs += 2;
  g->pair_runs++;
  *done = 1;
  return 0;
}

int rw_grid_erk_wave_pair(rw_grid g, const rw_stage_plan *Pf, N_Vector y_n, rw_grid_kernel_fn kf,
                          void *const *kcf, const rw_stage_plan *Pa, N_Vector lambda,
                          rw_grid_kernel_fn ka, void *const *kca, int *done)
{
  const int e = rw_grid_pair_sweep(g, Pf, y_n, kf, kcf, Pa, lambda, ka, kca, done);
  const int e2 = rw_grid_wave_halo_end(g);
  return e ? e : e2;
}

int rw_grid_comb_inputs(rw_grid g, int *n, const double **c, N_Vector **X, N_Vector *keep)
{
  RW_CHECK(g->fuse_n > 0, RW_ERR_INTERNAL,
           "rw_grid_comb_inputs: no fused stage in progress on this grid");
  *n = g->fuse_n, *c = g->fuse_c, *X = g->fuse_x, *keep = g->fuse_keep;
  return 0;
}

int rw_grid_comb_body(rw_grid g, rw_body_comb *in)
{
  int n = 0;
  const double *c = NULL;
  N_Vector *X = NULL, keep = NULL;
  RW_CALL(rw_grid_comb_inputs(g, &n, &c, &X, &keep));
  in->n = n;
  for (int j = 0; j < n; j++)
    in->c[j] = c[j], in->x[j] = rw_vec_data(X[j]);
  in->keep = keep ? rw_vec_data(keep) : NULL;
  return 0;
}
