/* Structured 2-D and 3-D grids distributed over MPI ranks.
 *
 * A grid of n[0] x n[1] (x n[2]) nodes with `ncomp` unknowns per node is split into blocks
 * over a Cartesian process topology (MPI_Dims_create, MPI_Cart_create; periodic along the
 * dimensions whose boundary is periodic). The most ranks go to the slowest dimension (2 ranks
 * split y in 2-D and z in 3-D; 4 give 2 x 2 and 1 x 2 x 2): x, whose rows are contiguous, is
 * split last, so faces and frame slabs are whole rows and planes where they can be. A field is
 * an N_Vector holding this rank's owned nodes, components interleaved, x fastest:
 *   local index = ((k * lny + j) * lnx + i) * ncomp + c.
 * Stencil operators read a ghosted copy (`ghost` layers on every side) filled by the halo
 * exchange: faces only (no edges or corners: 5- and 7-point stencils), non-blocking, so
 * interior work overlaps communication (rw_grid_apply). At physical boundaries the ghosts
 * are set by the boundary condition: Dirichlet (a fixed value per component, so the
 * derivative of a ghost is zero) or Neumann (zero flux, mirror about the boundary node:
 * u[-m] = u[m]). The exact transpose of the exchange (rw_grid_exchange_adjoint) sends ghost
 * adjoints back to their owners and adds them (to the mirrored node for Neumann, dropped for
 * Dirichlet), which is what every operator's VJP needs.
 *
 * Node (i, j, k) sits at lo + (i, j, k) * h with h = (hi - lo) / n for periodic dimensions
 * and h = (hi - lo) / (n - 1) otherwise. No PETSc here: the same grid serves CPU vectors and,
 * later, GPU vectors staged through host memory (the MPI here is not CUDA-aware). */
#ifndef REWIND_RW_GRID_H
#define REWIND_RW_GRID_H

#include "rw_vector.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RW_BC_PERIODIC = 0, RW_BC_DIRICHLET, RW_BC_NEUMANN } rw_bc;

typedef struct rw_grid_s *rw_grid;

typedef struct {
  int dim;             /* 2 or 3 */
  long n[3];           /* global nodes per dimension (n[2] ignored in 2-D) */
  double lo[3], hi[3]; /* domain */
  rw_bc bc[3];         /* per dimension, both sides */
  int ncomp;           /* unknowns per node, >= 1 */
  int ghost;           /* ghost layers, >= 1 */
  double dirichlet[8]; /* Dirichlet ghost value per component */
  /* ranks per dimension (their product the rank count; 1 past dim), or all 0: the grid's own
   * choice (slabs along the slowest dimension when the wave fits them, else MPI_Dims_create's
   * split, slowest dimension first). Grids whose fields must lie alike pass one's split to the
   * others (rw_grid_topology): the choice depends on the components per node. */
  int procs[3];
} rw_grid_config;

/* Creates the grid on the context's communicator. Every rank must own at least `ghost` + 1
 * nodes per dimension (the Neumann mirror reads node `ghost`; RW_ERR_ARG otherwise, naming
 * the sizes). Collective. */
int rw_grid_create(rw_context ctx, const rw_grid_config *cfg, rw_grid *out);
int rw_grid_destroy(rw_grid *g);

const rw_grid_config *rw_grid_get_config(rw_grid g);
/* Owned block: global start and count per dimension (3 entries; 2-D: start 0, count 1). */
void rw_grid_local_box(rw_grid g, long start[3], long count[3]);
/* Owned entries on this rank (nodes x ncomp). */
sunindextype rw_grid_local_length(rw_grid g);
/* Grid spacing per dimension. */
void rw_grid_spacing(rw_grid g, double h[3]);
/* Process grid (dims) and this rank's coordinates in it. */
void rw_grid_topology(rw_grid g, int dims[3], int coords[3]);
rw_context rw_grid_context(rw_grid g);

/* A field (zeroed) with this grid's layout. Collective. */
int rw_grid_new_field(rw_grid g, N_Vector *out);

/* Ghosted array sizes: gn[d] = count[d] + 2 ghost (1 for the absent third dimension), gn[0]
 * then rounded up so that a row (gn[0] ncomp doubles) is a whole number of 64-byte lines (the
 * entries past the high ghosts are padding, never read); and the number of doubles of a ghosted
 * array (gn[0] gn[1] gn[2] ncomp). */
void rw_grid_ghosted_dims(rw_grid g, long gn[3]);
size_t rw_grid_ghosted_length(rw_grid g);
/* A zeroed host array of len doubles laid out as this grid's ghosted arrays (len: at least
 * rw_grid_ghosted_length, or a run of whole layers), placed so that every row's first owned
 * entry starts a 64-byte line: a 512-bit load of 8 owned entries from there never splits lines.
 * Freed with rw_grid_ghosted_free (which needs no grid). */
int rw_grid_ghosted_alloc(rw_grid g, size_t len, const char *what, double **out);
void rw_grid_ghosted_free(double **p);
/* Index of (i, j, k, c) in a ghosted array, with i, j, k LOCAL owned coordinates
 * (0 .. count-1; -ghost .. count-1+ghost reach the ghosts). */
static inline size_t rw_grid_gidx(const long gn[3], int ghost, int dim, long i, long j, long k,
                                  int ncomp, int c)
{
  long gk = dim == 3 ? k + ghost : 0;
  return ((size_t)((gk * gn[1] + (j + ghost)) * gn[0] + (i + ghost))) * (size_t)ncomp + (size_t)c;
}

/* Halo exchange of `v` into the ghosted array `gv` (rw_grid_ghosted_length doubles):
 * begin copies the owned values and posts the messages; end waits and fills ghosts
 * (neighbour values, or the boundary condition). On CPU vectors the ghosts of a dimension
 * that needs no message (periodic over this rank alone, or a physical boundary on both
 * sides) are already filled by begin; gv's owned part must not change before end either way.
 * Collective (neighbours). */
int rw_grid_exchange_begin(rw_grid g, N_Vector v, double *gv);
int rw_grid_exchange_end(rw_grid g, double *gv);
/* The same for the combination sum_j c[j] X[j] (n vectors, 1 <= n <= RW_LINCOMB_MAX), formed
 * while it is copied into gv with the arithmetic of N_VLinearCombination (rw_lincomb): no
 * vector of its own is written and read again. `keep` (NULL: none) gets a copy of the
 * combination, written row by row while each row is in cache. */
int rw_grid_exchange_begin_comb(rw_grid g, int n, const double *c, N_Vector *X, double *gv,
                                N_Vector keep);
/* Transpose of the exchange: out += owned part of gadj + ghost entries of gadj sent back to
 * (and added at) the nodes they copy. gadj's ghost entries are consumed. Collective. */
int rw_grid_exchange_adjoint(rw_grid g, double *gadj, N_Vector out);

/* A stencil kernel over the owned box [lo, hi) (local coordinates): reads the ghosted
 * array `gv`, writes the owned array `out` (local layout). */
typedef void (*rw_grid_kernel_fn)(void *kctx, rw_grid g, const double *gv, double *out,
                                  const long lo[3], const long hi[3]);

/* out = kernel(exchange(v)): starts the exchange, runs the kernel on the interior nodes
 * (those at least `ghost` away from a block edge across which messages travel; the whole
 * extent of the dimensions whose ghosts begin has filled) while messages travel, then on the
 * boundary frame (none on one rank with CPU vectors). A kernel can tell a box that reads
 * ghosts by its bounds. `gv` is a ghosted work array. Collective. */
int rw_grid_apply(rw_grid g, N_Vector v, double *gv, N_Vector out, rw_grid_kernel_fn kernel,
                  void *kctx);

/* rw_grid_apply with gv's owned values written by `fill` instead of copied from a vector, so
 * that a problem whose stencil reads a function of its state (one component of interleaved
 * pairs, a product with a field) writes that function straight into the ghosted array, with no
 * owned vector of its own written and read again: fill(fctx, o, row, len) writes the len values
 * of the owned row that starts at entry o of the owned layout (ncomp entries a node) into row.
 * CPU vectors only (`out` must not be on a device). Collective. */
typedef void (*rw_grid_fill_fn)(void *fctx, size_t o, double *row, size_t len);
int rw_grid_apply_fill(rw_grid g, rw_grid_fill_fn fill, void *fctx, double *gv, N_Vector out,
                       rw_grid_kernel_fn kernel, void *kctx);
/* The same in one pass over memory, as rw_grid_apply_comb_fused on CPU vectors: fill writes
 * only the owned shell into gv, and the interior's layers window by window into a small buffer
 * just before the kernel reads them (the kernel then gets gv shifted into that buffer). Every
 * row is filled once, before the kernel of any node that reads it: a kernel may overwrite
 * what fill reads at its own nodes (an update in place). The same bits as rw_grid_apply_fill,
 * to which it falls back where the windows do not apply (rw_grid_apply_comb_fused's rules). */
int rw_grid_apply_fill_fused(rw_grid g, rw_grid_fill_fn fill, void *fctx, double *gv, N_Vector out,
                             rw_grid_kernel_fn kernel, void *kctx);

/* rw_grid_apply on the combination sum_j c[j] X[j] (rw_grid_exchange_begin_comb; `keep` may
 * be NULL). */
int rw_grid_apply_comb(rw_grid g, int n, const double *c, N_Vector *X, N_Vector keep, double *gv,
                       N_Vector out, rw_grid_kernel_fn kernel, void *kctx);

/* rw_grid_apply_comb in one pass over memory, for a caller that does not read gv afterwards:
 * the combination is formed into gv (and keep) only on the owned shell 2 ghost layers deep
 * that the faces, the boundary ghosts and the frame read. The interior:
 * - device vectors: the kernel is called once for the interior box with gv == NULL and must
 *   then form Y = sum_j c[j] X[j] itself at every point it reads (rw_grid_comb_inputs; all of an
 *   interior node's neighbours are owned) and write keep there, with the same rounding as the
 *   fill (rw_dk_lincomb);
 * - CPU vectors: the kernel is called on consecutive slabs of the interior box along the
 *   slowest dimension (windows), with gv pointing so that its offsets fall in a small buffer
 *   that holds the slab's layers (and G more each side) in gv's layout, formed just before
 *   (ghosts included), so the kernel reads them from cache.
 * The results equal rw_grid_apply_comb's bit for bit. Falls back to rw_grid_apply_comb for
 * more than RW_FUSE_MAX (8) inputs on a device or RW_LINCOMB_MAX on the CPU, a block thinner
 * than 4 ghost layers, or (CPU, default window size) layers too large for 2G of them and the
 * ghosts to fit the window's 256 KiB, or a block of fewer than four such windows along its
 * slowest dimension (its ghosted array stays in cache between the two passes). Collective. */
int rw_grid_apply_comb_fused(rw_grid g, int n, const double *c, N_Vector *X, N_Vector keep,
                             double *gv, N_Vector out, rw_grid_kernel_fn kernel, void *kctx);
/* Tuning and tests: the layers per window of the fused stage on CPU vectors (0, the default:
 * as many as fit 256 KiB), and the number of windows run on this grid so far. */
void rw_grid_set_window(rw_grid g, long layers);
long rw_grid_windows(rw_grid g);

/* A whole explicit Runge-Kutta step as one sweep (the wave). The step is
 *   Y_i = sum_m c[i][m] X_im, K_i = f(Y_i) (i < s),   y_out = sum_m cb[m] X_bm,
 * each X either y (x = -1) or a slope K_j (x = j < i): the stepper's own combinations with
 * h already in the coefficients, in its order, so every value is rounded as the stage-by-stage
 * step rounds it (rw_lincomb). */
#define RW_WAVE_MAX_STAGES 16
typedef struct rw_stage_plan_s {
  int s;
  int n[RW_WAVE_MAX_STAGES], x[RW_WAVE_MAX_STAGES][RW_WAVE_MAX_STAGES + 1];
  double c[RW_WAVE_MAX_STAGES][RW_WAVE_MAX_STAGES + 1];
  int nb, xb[RW_WAVE_MAX_STAGES + 1];
  double cb[RW_WAVE_MAX_STAGES + 1];
  /* optional: Y_i's entries at the owned offsets cap[m] (m < ncap) copied to
   * capv[i * ncap + m] as they are formed (a running cost's sensors) */
  int ncap;
  const long *cap;
  double *capv;
  /* optional: Y_i also written whole to keep[i] (owned layout; NULL: not kept), the stored
   * stages of a step; no_out: only the stages are wanted (an adjoint's recomputation): the
   * last slope and y_out are not computed (y_out may be NULL) */
  N_Vector keep[RW_WAVE_MAX_STAGES];
  int no_out;
  /* optional, for an adjoint step run as a wave (the transposed stages: X = lambda and the
   * stage adjoints, the kernel a VJP):
   * - aux[i]: a vector the stage's kernels read beside Y_i (the stored stage state of a VJP),
   *   layer by layer through rw_grid_wave_aux_layer, which also has its layers past the block
   *   where the stages run there (exchanged once per wave; NULL: none);
   * - injections: K_i at offset inj[m] (m < ninj; the owned layout's, from the block's layer
   *   0: negative or past the block where the stages run there, and the caller must then give
   *   the neighbour's injections too) gets += injv[i * ninj + m] as soon as the kernel has
   *   computed it (a running cost's gradient at its sensors), in m's order;
   * - side(kctx[i], ...): called once per owned node and stage, on boxes of owned layers
   *   (the wave's layer coordinates, see rw_grid_wave_layer0) and (tiles) the tile's own
   *   rows, right after the kernel and the injections have computed K_i there, with Y_i
   *   readable G layers (and rows) around the box: a parameter's gradient gathered at the
   *   node while its rows are in cache. The boxes of a stage come in increasing layer order,
   *   and at any node the stages in their order. */
  N_Vector aux[RW_WAVE_MAX_STAGES];
  /* aux_ahead: the kernels read aux[i] at every node (a stored stage state that comes from
   * memory): while Y_i's layer v is formed, the wave prefetches aux[i]'s layer v + 1 row by
   * row, so that stream is read during the forms as well as during the kernels (a prefetch
   * changes no value) */
  int aux_ahead;
  /* aux_reach (when aux_reach_set): how many of aux[i]'s layers past each edge of the block
   * stage i's kernels read, at most the wave's reach s G. Only those are exchanged with the
   * neighbours, and rw_grid_wave_aux_layer gives NULL past them. Unset: every layer the wave
   * reaches (s G), whatever the kernels read. */
  int aux_reach_set;
  int aux_reach[RW_WAVE_MAX_STAGES];
  int ninj;
  const long *inj;
  const double *injv;
  rw_grid_kernel_fn side;
  /* tune_class: where the rows per tile or layers per window are chosen by measurement, plans
   * that differ only in what their kernels compute through kctx (an adjoint's which gradients)
   * give different classes, so that each is measured on its own sweeps, not on a mix of cheap
   * and dear ones (0: the default) */
  int tune_class;
} rw_stage_plan;

/* The step of `plan` from y into y_out (which may be y), with f = kernel(kctx[i]) on the
 * stage's ghosted Y_i (the kernel of rw_grid_apply), pipelined along the slowest dimension D:
 * a window of W layers of K_0 is computed, then W layers of K_1 G layers behind it, and so
 * on, each Y_i formed in a few layers just ahead of its kernel (ghosts included) and y_out
 * written s G layers behind the front. Every vector of the step is read or written once
 * instead of once per stage (no stage's Y or K makes a round trip through memory); the
 * slopes live in rings of a few layers. The kernel is called with gv and out pointing so
 * that its offsets fall in those buffers.
 * Where D has a neighbour (another rank, or periodic over this rank), y is exchanged s G
 * layers deep once, and the stages are computed on (s - 1 - i) G layers past the block's edge
 * too (the same values the neighbour computes, so the bits do not depend on the
 * decomposition); only when `ext_ok` says the kernel reads nothing but gv (no field of its
 * own in layers it does not have), and the kernel then sees layer coordinates shifted by
 * s G. Runs (*done = 1) on CPU vectors when every other dimension sends no message, the
 * block is at least 4 windows and s G layers thick (a 2-D block whose vectors are under
 * 384 KiB: 4 windows of the per-stage rule's, RW_WINDOW_BYTES, else of the wave's own), and
 * s <= RW_WAVE_MAX_STAGES; otherwise
 * *done = 0 and nothing is computed (the caller steps stage by stage). The decision is taken
 * the same on every rank. Collective. */
int rw_grid_erk_wave(rw_grid g, const rw_stage_plan *plan, N_Vector y, N_Vector y_out, int ext_ok,
                     rw_grid_kernel_fn kernel, void *const *kctx, int *done);
/* A checkpointed backward step as one sweep: the recomputation of a step's stage inputs from
 * y_n (plan_f: no_out, nothing kept; kernel kf) and the step's adjoint (plan_a: the adjoint
 * wave's plan without aux vectors, lambda updated in place; kernel ka) run together, the
 * adjoint's front (s - 1) G layers behind the recomputation's. In ka's calls (and side's)
 * rw_grid_wave_aux_layer(g, k, v) gives the method's stage input Y_{s-1-k} (y_n for k = s -
 * 1) from rings of a few layers, past the block too: no stage input is written to memory and
 * read back. The recomputation's stages run (s - 1) G layers further past the block than a
 * plain wave's, so kf sees layer coordinates shifted by (2 s - 1) G where D has a neighbour
 * (a kernel that reads fields of its own needs them that deep: rw_grid_wave_field with 2 s -
 * 1 stages). The same values as rw_grid_erk_wave's two waves, bit for bit. *done = 0 (nothing
 * computed) where those would not run, where the wave would be tiled (3-D with a middle
 * dimension of physical sides: slower there, see docs/architecture.md), or where the block is
 * under (2 s - 1) G layers thick and D has a neighbour. Collective. */
int rw_grid_erk_wave_pair(rw_grid g, const rw_stage_plan *plan_f, N_Vector y_n,
                          rw_grid_kernel_fn kf, void *const *kcf, const rw_stage_plan *plan_a,
                          N_Vector lambda, rw_grid_kernel_fn ka, void *const *kca, int *done);
/* A kernel that reads fields of its own at the node (a conductivity, a source shape) can take
 * ext_ok when it reads them, at the wave's shifted layer coordinates, from copies that reach
 * s G layers past the block along D where D has a neighbour (rw_grid_wave_reaches; none is
 * needed otherwise): rw_grid_wave_field fills `buf` (rw_grid_wave_field_length doubles) with
 * the field v of this grid's layout, ghosted (this grid's ghost layers and boundary
 * conditions; read with rw_grid_gidx) or owned (read with the owned offsets), exchanged s G
 * layers deep, so that the kernel reads it at buf + the offset of its (shifted) coordinates.
 * Collective. */
int rw_grid_wave_reaches(rw_grid g);
/* Whether rw_grid_erk_wave of s stages would run on host vectors of this grid (the same answer
 * on every rank; collective the first time it is asked for s and ext_ok). */
int rw_grid_wave_ready(rw_grid g, int s, int ext_ok);
size_t rw_grid_wave_field_length(rw_grid g, int s, int ghosted);
int rw_grid_wave_field(rw_grid g, int s, N_Vector v, int ghosted, double *buf);
/* Tuning and tests: the layers per window of the wave (0, the default: as many as fit 256 KiB
 * of the widest stage buffer, on a 2-D block chosen by measurement between as many as keep
 * the wave's live layers within 768 KiB and within 1.5 MiB; -1: off), and the number of waves
 * run on this grid so far. */
void rw_grid_set_wave(rw_grid g, long layers);
long rw_grid_waves(rw_grid g);
/* Benchmarks: the seconds this rank has spent in MPI_Waitall on this grid's halo messages (the
 * stage-by-stage exchanges and the waves' halos) since the grid was created. Ranks that wait
 * much longer than others show an imbalance (each step waits for the slowest neighbour). */
double rw_grid_halo_wait(rw_grid g);
/* Tests: the rw_grid_erk_wave_pair sweeps run on this grid so far (each is also two waves). */
long rw_grid_wave_pairs(rw_grid g);
/* Tuning and benchmarks: whether rw_grid_erk_wave_pair may run (1, the default) or declines
 * (0: the caller then runs the two waves apart). */
void rw_grid_set_wave_pair(rw_grid g, int on);
/* Tuning and tests: the rows per tile along the middle dimension of a 3-D block whose middle
 * dimension has physical sides (0, the default: chosen by measurement between no tiles and as
 * many rows as keep the wave's live rows within 1.5 MiB, at least s G; see rw_grid.c). */
void rw_grid_set_wave_rows(rw_grid g, long rows);
/* Benchmarks and tests: the rows per tile (count[1] untiled) and the layers per window of the
 * last wave run on this grid (0 before any). */
long rw_grid_wave_rows_used(rw_grid g);
long rw_grid_wave_layers_used(rw_grid g);
/* Tests: the clock (seconds) the measured choices of rows and layers read (NULL: MPI_Wtime)
 * and the waves after a choice before it is measured again (0: the default, 1000); setting
 * them starts every measurement again. */
void rw_grid_set_wave_clock(rw_grid g, double (*clock)(void *), void *ctx, long again);

/* In a kernel or side call of rw_grid_erk_wave: layer v (the call's layer coordinates) of the
 * plan's aux[i] in the owned layout (row j at + j count[0] ncomp): the block's own, or past the
 * block the neighbour's copy. NULL outside a wave or for a stage without aux. Not collective. */
const double *rw_grid_wave_aux_layer(rw_grid g, int i, long v);
/* In such a call: the layer coordinate of the block's first layer (its layers are [v0, v0 +
 * count) there; 0 outside a wave). Not collective. */
long rw_grid_wave_layer0(rw_grid g);
/* In such a call: the rows [j0, j1) of the middle dimension the wave's tile writes (3-D; the
 * side kernel's rows); [0, count[1]) otherwise. Not collective. */
void rw_grid_wave_tile(rw_grid g, long *j0, long *j1);
/* Tuning: give dst src's wave settings (layers per window and rows per tile). */
void rw_grid_copy_wave_settings(rw_grid dst, rw_grid src);

/* The inputs of the fused stage in progress (inside its interior kernel call). Not collective. */
int rw_grid_comb_inputs(rw_grid g, int *n, const double **c, N_Vector **X, N_Vector *keep);

/* The local index, in a field of this grid (the local layout above), of component 0 of
 * global node (gi, gj, gk) when this rank owns it, -1 otherwise (gk = 0 in 2-D). The global
 * coordinates of local node (i, j, k) are start + (i, j, k), start from rw_grid_local_box.
 * Not collective. */
long rw_grid_local_index(rw_grid g, long gi, long gj, long gk);

#ifdef __cplusplus
}
#endif
#endif
