/* Example: the exact gradient of your own model under a checkpoint budget.
 *
 * The model is a 1-D advection-reaction-diffusion equation on the periodic interval [0, 1),
 *
 *     u_t = D u_xx - a u_x + k u (1 - u),            parameters p = (D, a, k),
 *
 * discretised on N nodes x_i = i / N (second-order central differences) that are split into
 * contiguous blocks over the MPI ranks; each rank fills one ghost node on either side of its
 * block by a halo exchange with its neighbours on the periodic ring. The objective is a misfit
 * to data at the final time T, a Tikhonov term on p and an energy penalty over time,
 *
 *     J = h/2 sum_i (u_i(T) - d_i)^2  +  alpha/2 |p - p_prior|^2  +  int_0^T beta h/2 sum_i u_i^2
 * dt,
 *
 * with h = 1 / N and d the solution at T for "true" parameters. The program
 *
 *   1. defines the problem by the callbacks of <rewind/rw_problem.h>: the right-hand side, its
 *      vector-Jacobian products (VJPs) in u and in p, the terminal and running costs and their
 *      gradients (advdiff_create and the ad_* functions);
 *   2. checks every VJP and cost gradient with a dot-product test against finite differences
 *      of the callbacks themselves (check_callbacks: copy it for your own problem);
 *   3. runs the forward sweep and the adjoint sweep under a checkpoint schedule and a budget of
 *      RAM slots (binomial by default), optionally with a disk tier, and prints J, dJ/dp and
 *      the cost of the schedule;
 *   4. checks that the schedule does not change the gradient (the same run keeping every
 *      state gives the same bits), checks dJ/dp and dJ/du0 against central finite
 *      differences of J, and runs a Taylor remainder test. It exits with status 1 when the
 *      finite differences disagree by more than their step explains, or when the Taylor
 *      remainder does not decay at second order.
 *
 * It uses only the installed API: the <rewind/...> headers and the library Rewind::rewind
 * (pkg-config: rewind). See docs/library.md for the guide to this API.
 *
 *   mpirun -n 4 ./advection_diffusion_1d                      RK4, binomial schedule, 8 slots
 *   mpirun -n 2 ./advection_diffusion_1d -stepper ssprk3 -slots 3
 *   mpirun -n 2 ./advection_diffusion_1d -adaptive            dopri5, step count unknown:
 *                                                             online schedule
 *   mpirun -n 2 ./advection_diffusion_1d -disk_slots 4 -disk_dir /tmp    RAM + disk
 *
 * Options (defaults in brackets):
 *   -n N            grid nodes [128]             -tf T           final time [0.5]
 *   -dt DT          step (first trial step with -adaptive) [0.002]
 *   -stepper NAME   euler heun ssprk3 rk4 rk38 dopri5 (built in), ralston3 (defined here) [rk4]
 *   -schedule S     binomial online fixed store_all [binomial; online with -adaptive]
 *   -slots C        RAM checkpoint slots, counting the one that holds u(0) [8]
 *   -interval K     checkpoint interval of the fixed schedule [10]
 *   -adaptive       adaptive steps (dopri5's error estimate, -rtol [1e-6], -atol [1e-9])
 *   -disk_slots M   HDF5 checkpoint slots per rank in -disk_dir [0: none; dir "."]
 *   -disk_cost W    cost of a disk write and of a read, in forward steps [measured at start-up]
 *   -fd_step EPS    relative finite-difference step [1e-4]
 *   -perturb REL    scales the adjoint dJ/dp by 1 + REL before the check (to see it fail)
 */
#include <rewind/rw_adjoint.h> /* the driver; it includes the problem, stepper, vector,
                                  context and error headers */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------
 * 1. The problem
 * ------------------------------------------------------------------------------------------ */

enum { P_D, P_A, P_K, NPARAMS };
static const char *const param_names[NPARAMS] = {"D", "a", "k"};

/* The problem's content: whatever the callbacks need. Rewind hands it back to every callback
 * as `content` and releases it with ops.destroy. */
typedef struct {
  MPI_Comm comm; /* the context's communicator (halo exchange) */
  int rank, left, right;
  long n_local; /* nodes on this rank: global indices offset .. offset + n_local - 1 */
  long offset;
  double h;     /* grid spacing 1 / N */
  double alpha; /* weight of the Tikhonov term */
  double beta;  /* weight of the energy penalty */
  double prior[NPARAMS];
  double *data;    /* d_i on this rank's nodes */
  double *gu, *gw; /* ghosted work copies, n_local + 2 entries (ghosts at both ends) */
} advdiff;

/* g[1 .. n] = v[0 .. n-1]; g[0] = the left neighbour's last entry, g[n + 1] = the right
 * neighbour's first (periodic ring; with one rank both neighbours are the rank itself).
 * Collective: every rank calls it from the same callback at the same point of the run, which
 * holds because every rank runs the same schedule. */
static int halo(const advdiff *m, const double *v, double *g)
{
  long n = m->n_local;
  memcpy(g + 1, v, (size_t)n * sizeof *v);
  RW_CALL_MPI(MPI_Sendrecv(&v[n - 1], 1, MPI_DOUBLE, m->right, 0, &g[0], 1, MPI_DOUBLE, m->left, 0,
                           m->comm, MPI_STATUS_IGNORE));
  RW_CALL_MPI(MPI_Sendrecv(&v[0], 1, MPI_DOUBLE, m->left, 1, &g[n + 1], 1, MPI_DOUBLE, m->right, 1,
                           m->comm, MPI_STATUS_IGNORE));
  return 0;
}

/* f = f(t, u; p). Writes every entry of f (f is never the vector u). */
static int ad_rhs(void *content, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)t;
  advdiff *m = content;
  const double *u = rw_vec_data(y);
  double *out = rw_vec_data(f);
  RW_CALL(halo(m, u, m->gu));
  const double *g = m->gu + 1; /* g[-1] .. g[n_local] */
  const double cd = p[P_D] / (m->h * m->h), ca = p[P_A] / (2.0 * m->h);
  for (long i = 0; i < m->n_local; i++)
    out[i] = cd * (g[i - 1] - 2.0 * g[i] + g[i + 1]) - ca * (g[i + 1] - g[i - 1]) +
             p[P_K] * g[i] * (1.0 - g[i]);
  return 0;
}

/* out += (df/du)^T w. ACCUMULATES into out (the steppers sum stage contributions there).
 * Column j of df/du holds df_i/du_j for the three i that read u_j: D/h^2 (1, -2, 1) is
 * symmetric, the advection stencil a/(2h) (1, 0, -1) changes sign under transposition, and
 * the reaction term is diagonal. On a periodic grid the transpose is again a stencil, applied
 * to w after the same halo exchange; with Dirichlet or Neumann ends it differs at the boundary
 * (rw_grid.h's rw_grid_exchange_adjoint does that bookkeeping for 2-D and 3-D grids). */
static int ad_vjp_y(void *content, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  (void)t;
  advdiff *m = content;
  const double *u = rw_vec_data(y), *wl = rw_vec_data(w);
  double *o = rw_vec_data(out);
  RW_CALL(halo(m, wl, m->gw));
  const double *g = m->gw + 1;
  const double cd = p[P_D] / (m->h * m->h), ca = p[P_A] / (2.0 * m->h);
  for (long i = 0; i < m->n_local; i++)
    o[i] += cd * (g[i - 1] - 2.0 * g[i] + g[i + 1]) + ca * (g[i + 1] - g[i - 1]) +
            p[P_K] * (1.0 - 2.0 * u[i]) * wl[i];
  return 0;
}

/* out[k] += THIS RANK'S PART of sum_i w_i df_i/dp_k. The driver adds the ranks' parts once at
 * the end of the adjoint sweep; a callback that reduced over ranks itself would be counted
 * size times. */
static int ad_vjp_p(void *content, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  (void)t, (void)p;
  advdiff *m = content;
  const double *u = rw_vec_data(y), *wl = rw_vec_data(w);
  RW_CALL(halo(m, u, m->gu));
  const double *g = m->gu + 1;
  double sD = 0.0, sA = 0.0, sK = 0.0;
  for (long i = 0; i < m->n_local; i++) {
    sD += wl[i] * (g[i - 1] - 2.0 * g[i] + g[i + 1]);
    sA += wl[i] * (g[i + 1] - g[i - 1]);
    sK += wl[i] * g[i] * (1.0 - g[i]);
  }
  out[P_D] += sD / (m->h * m->h);
  out[P_A] -= sA / (2.0 * m->h);
  out[P_K] += sK;
  return 0;
}

/* *g = the terminal cost, the GLOBAL value on every rank: the callback reduces over the ranks
 * itself. The Tikhonov term depends on the replicated p only, so it is added after the
 * reduction (once, not once per rank). Collective. */
static int ad_terminal(void *content, double t, N_Vector y, const double *p, double *g)
{
  (void)t;
  advdiff *m = content;
  const double *u = rw_vec_data(y);
  double s = 0.0;
  for (long i = 0; i < m->n_local; i++)
    s += (u[i] - m->data[i]) * (u[i] - m->data[i]);
  s *= 0.5 * m->h;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, m->comm));
  for (int k = 0; k < NPARAMS; k++)
    s += 0.5 * m->alpha * (p[k] - m->prior[k]) * (p[k] - m->prior[k]);
  *g = s;
  return 0;
}

/* gy = dg/du (this rank's entries; the driver zeroes gy before the call) and gp[k] += this
 * rank's part of dg/dp_k. gp is summed over the ranks like the VJPs' parameter parts, so a
 * term that every rank knows in full (the Tikhonov term's gradient) is added on one rank. */
static int ad_terminal_grad(void *content, double t, N_Vector y, const double *p, N_Vector gy,
                            double *gp)
{
  (void)t;
  advdiff *m = content;
  const double *u = rw_vec_data(y);
  double *o = rw_vec_data(gy);
  for (long i = 0; i < m->n_local; i++)
    o[i] = m->h * (u[i] - m->data[i]);
  if (m->rank == 0)
    for (int k = 0; k < NPARAMS; k++)
      gp[k] += m->alpha * (p[k] - m->prior[k]);
  return 0;
}

/* *r = THIS RANK'S PART of the running cost r(t, u; p) (the driver sums over ranks). Not
 * collective. The stepper integrates it with its own quadrature, so J is the discrete J that
 * the adjoint differentiates exactly. */
static int ad_running(void *content, double t, N_Vector y, const double *p, double *r)
{
  (void)t, (void)p;
  advdiff *m = content;
  const double *u = rw_vec_data(y);
  double s = 0.0;
  for (long i = 0; i < m->n_local; i++)
    s += u[i] * u[i];
  *r = 0.5 * m->beta * m->h * s;
  return 0;
}

/* ry += w dr/du and rp[k] += w (this rank's part of dr/dp_k); r does not depend on p here. */
static int ad_running_grad(void *content, double t, N_Vector y, const double *p, double w,
                           N_Vector ry, double *rp)
{
  (void)t, (void)p, (void)rp;
  advdiff *m = content;
  const double *u = rw_vec_data(y);
  double *o = rw_vec_data(ry);
  for (long i = 0; i < m->n_local; i++)
    o[i] += w * m->beta * m->h * u[i];
  return 0;
}

static void ad_destroy(void *content)
{
  advdiff *m = content;
  if (!m) return;
  free(m->data);
  free(m->gu);
  free(m->gw);
  free(m);
}

/* Creates the problem with N global nodes split in blocks over the context's ranks, its
 * parameters set to `p`. Collective. */
static int advdiff_create(rw_context ctx, long N, const double p[NPARAMS], rw_problem *out)
{
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);
  RW_CHECK(N >= size, RW_ERR_ARG, "%ld nodes cannot be split over %d ranks (at least one each)", N,
           size);
  advdiff *m = calloc(1, sizeof *m);
  RW_CHECK(m, RW_ERR_MEM, "advdiff_create: out of memory");
  m->comm = rw_context_comm(ctx);
  m->rank = rank;
  m->left = (rank + size - 1) % size;
  m->right = (rank + 1) % size;
  m->n_local = N / size + (rank < N % size ? 1 : 0);
  m->offset = rank * (N / size) + (rank < N % size ? rank : N % size);
  m->h = 1.0 / (double)N;
  m->alpha = 1e-3;
  m->beta = 0.1;
  m->prior[P_D] = 0.01, m->prior[P_A] = 0.5, m->prior[P_K] = 1.0;
  m->data = calloc((size_t)m->n_local, sizeof(double));
  m->gu = calloc((size_t)m->n_local + 2, sizeof(double));
  m->gw = calloc((size_t)m->n_local + 2, sizeof(double));
  if (!m->data || !m->gu || !m->gw) {
    ad_destroy(m);
    return RW_ERROR(RW_ERR_MEM, "advdiff_create: out of memory");
  }

  /* The ops a problem does not provide stay NULL (zero-initialise the table): rhs is always
   * required; vjp_y for any adjoint; vjp_p for dJ/dp; terminal_grad with terminal and
   * running_grad with running. The optional fused ops (vjp, rhs_comb, vjp_comb), the JVP, a
   * parameter field and noise are left out. */
  rw_problem_ops ops = {0};
  ops.rhs = ad_rhs;
  ops.vjp_y = ad_vjp_y;
  ops.vjp_p = ad_vjp_p;
  ops.terminal = ad_terminal;
  ops.terminal_grad = ad_terminal_grad;
  ops.running = ad_running;
  ops.running_grad = ad_running_grad;
  ops.destroy = ad_destroy;
  int ierr = rw_problem_create(ctx, "advection-diffusion-1d", &ops, m, (sunindextype)m->n_local,
                               NPARAMS, param_names, out);
  if (ierr) { /* on failure the content is still ours */
    ad_destroy(m);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  memcpy(rw_problem_params(*out), p, NPARAMS * sizeof(double));
  return 0;
}

/* u(0, x) = 0.2 + 0.6 exp(-((x - 0.3) / 0.08)^2) on this rank's nodes. */
static void initial_state(rw_problem prob, N_Vector y)
{
  const advdiff *m = rw_problem_content(prob);
  double *u = rw_vec_data(y);
  for (long i = 0; i < m->n_local; i++) {
    double x = (double)(m->offset + i) * m->h, z = (x - 0.3) / 0.08;
    u[i] = 0.2 + 0.6 * exp(-z * z);
  }
}

/* ------------------------------------------------------------------------------------------
 * 2. The dot-product test of the callbacks
 * ------------------------------------------------------------------------------------------ */

/* A uniform number in [-1, 1) that depends only on (seed, i): filled by global index, a
 * random vector is the same for every number of ranks (splitmix64's mixing function). */
static double urand_at(uint64_t seed, uint64_t i)
{
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

/* v_i = shift + scale * urand_at(seed, global index of entry i); `first` is the global index of
 * this rank's first entry. */
static void fill_random(N_Vector v, long long first, uint64_t seed, double shift, double scale)
{
  double *d = rw_vec_data(v);
  for (sunindextype i = 0; i < rw_vec_local_length(v); i++)
    d[i] = shift + scale * urand_at(seed, (uint64_t)(first + (long long)i));
}

static double reldiff(double a, double b)
{
  double s = fmax(fabs(a), fabs(b));
  return s > 0.0 ? fabs(a - b) / s : 0.0;
}

/* For random u, v, w and a random parameter direction dp, with a small step e:
 *   <w, (f(u + e v; p + e dp) - f(u - e v; p - e dp)) / (2e)>  =  <vjp_y(w), v> + <vjp_p(w), dp>
 * up to O(e^2) and rounding: the left side is a directional derivative of f, the right side
 * what the VJPs return; the two agree only if the VJPs are the exact transposes of f's
 * linearisation. The same identity checks the gradients of the terminal cost g and of the
 * running cost r. Everything goes through the public dispatchers (rw_problem_rhs,
 * rw_problem_vjp_y, ...), which are what the steppers call.
 *
 * MPI: N_VDotProd is a global sum; the parameter parts that the callbacks return are this
 * rank's parts, summed here with MPI_Allreduce; the parameters are replicated, so dp is drawn
 * with the same seed on every rank and every rank moves p the same way. Returns the largest
 * relative difference in *worst. Collective. */
static int check_callbacks(rw_problem prob, double *worst)
{
  int ierr = 0, np = rw_problem_nparams(prob);
  double *p = rw_problem_params(prob), p0[NPARAMS], dp[NPARAMS], vp[NPARAMS], e = 1e-6;
  MPI_Comm comm = rw_context_comm(rw_problem_context(prob));
  N_Vector u = NULL, v = NULL, w = NULL, up = NULL, fp = NULL, fm = NULL, vt = NULL;
  long long n = (long long)rw_problem_local_length(prob), first = 0;
  *worst = 0.0;
  if (np > NPARAMS) return RW_ERROR(RW_ERR_ARG, "check_callbacks: at most %d parameters", NPARAMS);
  /* the global index of this rank's first entry: the lengths of the lower ranks summed */
  RW_CALL_MPI(MPI_Exscan(&n, &first, 1, MPI_LONG_LONG, MPI_SUM, comm));
  if (rw_context_rank(rw_problem_context(prob)) == 0) first = 0; /* Exscan leaves rank 0's */
  memcpy(p0, p, (size_t)np * sizeof *p); /* restored at cleanup, whatever happens */
  RW_TRY(rw_problem_new_state(prob, &u));
  RW_TRY(rw_vec_clone(u, &v));
  RW_TRY(rw_vec_clone(u, &w));
  RW_TRY(rw_vec_clone(u, &up));
  RW_TRY(rw_vec_clone(u, &fp));
  RW_TRY(rw_vec_clone(u, &fm));
  RW_TRY(rw_vec_clone(u, &vt));
  for (int trial = 0; trial < 3; trial++) {
    fill_random(u, first, 3 * trial + 1, 0.5, 0.5);
    fill_random(v, first, 3 * trial + 2, 0.0, 1.0);
    fill_random(w, first, 3 * trial + 3, 0.0, 1.0);
    for (int k = 0; k < np; k++) /* the same on every rank, on the parameters' own scale */
      dp[k] = p0[k] * urand_at(100 + trial, k);

    /* f: VJPs against a central difference of rhs along (v, dp) */
    for (int k = 0; k < np; k++)
      p[k] = p0[k] + e * dp[k];
    N_VLinearSum(1.0, u, e, v, up);
    RW_TRY(rw_problem_rhs(prob, 0.0, up, fp));
    for (int k = 0; k < np; k++)
      p[k] = p0[k] - e * dp[k];
    N_VLinearSum(1.0, u, -e, v, up);
    RW_TRY(rw_problem_rhs(prob, 0.0, up, fm));
    memcpy(p, p0, (size_t)np * sizeof *p);
    N_VLinearSum(1.0, fp, -1.0, fm, fp);
    double lhs = N_VDotProd(w, fp) / (2.0 * e);
    N_VConst(0.0, vt); /* the VJPs accumulate: start from zero */
    for (int k = 0; k < np; k++)
      vp[k] = 0.0;
    RW_TRY(rw_problem_vjp_y(prob, 0.0, u, w, vt));
    RW_TRY(rw_problem_vjp_p(prob, 0.0, u, w, vp));
    RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, vp, np, MPI_DOUBLE, MPI_SUM, comm));
    double rhs = N_VDotProd(vt, v);
    for (int k = 0; k < np; k++)
      rhs += vp[k] * dp[k];
    *worst = fmax(*worst, reldiff(lhs, rhs));

    /* g: terminal_grad against a central difference of terminal */
    double gpl = 0.0, gml = 0.0;
    for (int k = 0; k < np; k++)
      p[k] = p0[k] + e * dp[k];
    N_VLinearSum(1.0, u, e, v, up);
    RW_TRY(rw_problem_terminal(prob, 0.0, up, &gpl));
    for (int k = 0; k < np; k++)
      p[k] = p0[k] - e * dp[k];
    N_VLinearSum(1.0, u, -e, v, up);
    RW_TRY(rw_problem_terminal(prob, 0.0, up, &gml));
    memcpy(p, p0, (size_t)np * sizeof *p);
    for (int k = 0; k < np; k++)
      vp[k] = 0.0;
    RW_TRY(rw_problem_terminal_grad(prob, 0.0, u, vt, vp));
    RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, vp, np, MPI_DOUBLE, MPI_SUM, comm));
    rhs = N_VDotProd(vt, v);
    for (int k = 0; k < np; k++)
      rhs += vp[k] * dp[k];
    *worst = fmax(*worst, reldiff((gpl - gml) / (2.0 * e), rhs));

    /* r: running_grad (weight 1) against a central difference of the summed running cost */
    double rpl = 0.0, rml = 0.0;
    for (int k = 0; k < np; k++)
      p[k] = p0[k] + e * dp[k];
    N_VLinearSum(1.0, u, e, v, up);
    RW_TRY(rw_problem_running_local(prob, 0.0, up, &rpl));
    for (int k = 0; k < np; k++)
      p[k] = p0[k] - e * dp[k];
    N_VLinearSum(1.0, u, -e, v, up);
    RW_TRY(rw_problem_running_local(prob, 0.0, up, &rml));
    memcpy(p, p0, (size_t)np * sizeof *p);
    lhs = (rpl - rml) / (2.0 * e);
    RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, &lhs, 1, MPI_DOUBLE, MPI_SUM, comm));
    N_VConst(0.0, vt);
    for (int k = 0; k < np; k++)
      vp[k] = 0.0;
    RW_TRY(rw_problem_running_grad(prob, 0.0, u, 1.0, vt, vp));
    RW_TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, vp, np, MPI_DOUBLE, MPI_SUM, comm));
    rhs = N_VDotProd(vt, v);
    for (int k = 0; k < np; k++)
      rhs += vp[k] * dp[k];
    *worst = fmax(*worst, reldiff(lhs, rhs));
  }
cleanup:
  memcpy(p, p0, (size_t)np * sizeof *p);
  rw_vec_destroy(&u), rw_vec_destroy(&v), rw_vec_destroy(&w), rw_vec_destroy(&up);
  rw_vec_destroy(&fp), rw_vec_destroy(&fm), rw_vec_destroy(&vt);
  return ierr;
}

/* ------------------------------------------------------------------------------------------
 * 3. Recording the accepted steps of an adaptive run (a monitor)
 * ------------------------------------------------------------------------------------------ */

/* The monitor sees every state of the first forward sweep (n = 0 is u(0)), never a
 * recomputation, so it can record the accepted times of an adaptive run: the gradient is the
 * exact gradient of J on that grid, and rw_forward_solve replays the grid through opt.times. */
typedef struct {
  double *t;
  long n, cap;
} time_record;

static int record_time(void *mctx, long n, double t, N_Vector y)
{
  (void)y;
  time_record *r = mctx;
  if (n != r->n) return RW_ERROR(RW_ERR_INTERNAL, "monitor: step %ld, expected %ld", n, r->n);
  if (r->n == r->cap) {
    long cap = r->cap ? 2 * r->cap : 256;
    double *nt = realloc(r->t, (size_t)cap * sizeof *nt);
    if (!nt) return RW_ERROR(RW_ERR_MEM, "monitor: out of memory");
    r->t = nt, r->cap = cap;
  }
  r->t[r->n++] = t;
  return 0;
}

/* ------------------------------------------------------------------------------------------
 * 4. The run
 * ------------------------------------------------------------------------------------------ */

typedef struct {
  long n;
  double tf, dt, rtol, atol, fd_step, perturb, disk_cost;
  const char *stepper, *schedule, *disk_dir;
  int slots, disk_slots, adaptive;
  long interval;
} settings;

static int parse(int argc, char **argv, settings *s)
{
  *s = (settings){.n = 128,
                  .tf = 0.5,
                  .dt = 0.002,
                  .rtol = 1e-6,
                  .atol = 1e-9,
                  .fd_step = 1e-4,
                  .stepper = NULL,
                  .schedule = NULL,
                  .slots = 8,
                  .interval = 10,
                  .disk_cost = -1.0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-adaptive") == 0) {
      s->adaptive = 1;
      continue;
    }
    RW_CHECK(v, RW_ERR_ARG, "option %s needs a value (see the comment at the top of the file)", a);
    i++;
    if (strcmp(a, "-n") == 0)
      s->n = strtol(v, NULL, 10);
    else if (strcmp(a, "-tf") == 0)
      s->tf = strtod(v, NULL);
    else if (strcmp(a, "-dt") == 0)
      s->dt = strtod(v, NULL);
    else if (strcmp(a, "-rtol") == 0)
      s->rtol = strtod(v, NULL);
    else if (strcmp(a, "-atol") == 0)
      s->atol = strtod(v, NULL);
    else if (strcmp(a, "-stepper") == 0)
      s->stepper = v;
    else if (strcmp(a, "-schedule") == 0)
      s->schedule = v;
    else if (strcmp(a, "-slots") == 0)
      s->slots = atoi(v);
    else if (strcmp(a, "-interval") == 0)
      s->interval = strtol(v, NULL, 10);
    else if (strcmp(a, "-disk_slots") == 0)
      s->disk_slots = atoi(v);
    else if (strcmp(a, "-disk_cost") == 0)
      s->disk_cost = strtod(v, NULL);
    else if (strcmp(a, "-disk_dir") == 0)
      s->disk_dir = v;
    else if (strcmp(a, "-fd_step") == 0)
      s->fd_step = strtod(v, NULL);
    else if (strcmp(a, "-perturb") == 0)
      s->perturb = strtod(v, NULL);
    else
      return RW_ERROR(RW_ERR_ARG, "unknown option '%s' (see the comment at the top of the file)",
                      a);
  }
  if (!s->stepper) s->stepper = s->adaptive ? "dopri5" : "rk4";
  if (!s->schedule) s->schedule = s->adaptive ? "online" : "binomial";
  return 0;
}

/* A tableau of our own: Ralston's third-order method (3 stages, a strictly lower triangular,
 * row-major; no embedded pair, so no adaptive steps). */
static const double ralston3_c[3] = {0.0, 0.5, 0.75};
static const double ralston3_a[9] = {0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.75, 0.0};
static const double ralston3_b[3] = {2.0 / 9.0, 1.0 / 3.0, 4.0 / 9.0};
static const rw_tableau ralston3 = {.name = "ralston3",
                                    .description = "Ralston's third-order method",
                                    .stages = 3,
                                    .order = 3,
                                    .embedded_order = 0,
                                    .c = ralston3_c,
                                    .a = ralston3_a,
                                    .b = ralston3_b,
                                    .bhat = NULL};

static int schedule_kind(const char *name, rw_schedule_kind *kind)
{
  static const char *const names[] = {"binomial", "online", "fixed", "store_all"};
  static const rw_schedule_kind kinds[] = {RW_SCHEDULE_BINOMIAL, RW_SCHEDULE_ONLINE,
                                           RW_SCHEDULE_FIXED, RW_SCHEDULE_STORE_ALL};
  for (int i = 0; i < 4; i++)
    if (strcmp(name, names[i]) == 0) {
      *kind = kinds[i];
      return 0;
    }
  return RW_ERROR(RW_ERR_ARG, "unknown schedule '%s': binomial, online, fixed or store_all", name);
}

/* J(p, u0) by a forward solve on the grid of `opt` (opt->times when set). Collective. */
static int objective(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector u0,
                     N_Vector work, double *J)
{
  rw_vec_copy(u0, work);
  RW_CALL(rw_forward_solve(prob, st, opt, work, J, NULL));
  return 0;
}

/* The central difference (J(x + e) - J(x - e)) / (2e) along parameter k (k >= 0) or along the
 * state direction v (k < 0), with step e. Collective. */
static int central_difference(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt,
                              N_Vector u0, N_Vector v, N_Vector u0e, N_Vector work, int k, double e,
                              double *d)
{
  double *p = rw_problem_params(prob), Jp = 0.0, Jm = 0.0;
  for (int sgn = 1; sgn >= -1; sgn -= 2) {
    double *J = sgn > 0 ? &Jp : &Jm, pk = k >= 0 ? p[k] : 0.0;
    if (k >= 0) {
      p[k] = pk + sgn * e;
      int ierr = objective(prob, st, opt, u0, work, J);
      p[k] = pk; /* restored before any return */
      RW_CALL(ierr);
    } else {
      N_VLinearSum(1.0, u0, sgn * e, v, u0e);
      RW_CALL(objective(prob, st, opt, u0e, work, J));
    }
  }
  *d = (Jp - Jm) / (2.0 * e);
  return 0;
}

/* Compares an adjoint derivative with central differences of J at steps e and e/2 and says
 * whether they agree. The central difference D(e) has the error c e^2 + (rounding of J) / e:
 * the truncation part of D(e/2) is estimated as |D(e) - D(e/2)| / 3 (Richardson), the
 * rounding part from J's relative rounding error, taken as 1e-13 (J sums a few hundred
 * thousand terms in double precision). The tolerance is ten times their sum, and the adjoint
 * is compared with D(e/2). */
static int fd_agrees(rw_context ctx, const char *what, double adj, double d1, double d2, double J,
                     double e)
{
  double trunc = fabs(d1 - d2) / 3.0, round = 1e-13 * fabs(J) / (0.5 * e);
  double tol = 10.0 * (trunc + round), diff = fabs(adj - d2);
  int ok = diff <= tol;
  rw_log(ctx, RW_LOG_SUMMARY,
         "  %-12s adjoint % .12e   finite diff. % .12e   |diff| %.1e  tol %.1e  %s\n", what, adj,
         d2, diff, tol, ok ? "ok" : "DISAGREE");
  return ok;
}

/* The Taylor remainder test along the direction (dp, v) in (p, u0):
 *   R(e) = |J(p + e dp, u0 + e v) - J(p, u0) - e (<dJ/dp, dp> + <dJ/du0, v>)|
 * is O(e^2) when the gradient is right and only O(e) when it is not, so halving e must divide
 * R by about 4 (an observed order log2(R(e) / R(e/2)) near 2) until rounding takes over. Five
 * halvings from e = 1e-2, relative to the parameters' scale. Sets *ok to 0 when the last order
 * is below 1.8. Collective. */
static int taylor_test(rw_problem prob, rw_stepper st, const rw_adjoint_options *opt, N_Vector u0,
                       N_Vector v, N_Vector u0e, N_Vector work, double J, const double *dJdp,
                       N_Vector dJdu0, int *ok)
{
  rw_context ctx = rw_problem_context(prob);
  double *p = rw_problem_params(prob), p0[NPARAMS], slope = N_VDotProd(dJdu0, v), R[5], order = 0;
  memcpy(p0, p, sizeof p0);
  for (int k = 0; k < NPARAMS; k++)
    slope += dJdp[k] * p0[k]; /* dp = p0: each parameter moved relative to its own size */
  rw_log(ctx, RW_LOG_SUMMARY, "Taylor test along (dp, du0) = (p, v):\n");
  for (int i = 0; i < 5; i++) {
    double e = 1e-2 / (double)(1 << i), Je = 0.0;
    for (int k = 0; k < NPARAMS; k++)
      p[k] = p0[k] * (1.0 + e);
    N_VLinearSum(1.0, u0, e, v, u0e);
    int ierr = objective(prob, st, opt, u0e, work, &Je);
    memcpy(p, p0, sizeof p0);
    RW_CALL(ierr);
    R[i] = fabs(Je - J - e * slope);
    if (i > 0) order = log2(R[i - 1] / R[i]);
    if (i == 0)
      rw_log(ctx, RW_LOG_SUMMARY, "  e = %.3e  remainder %.3e\n", e, R[i]);
    else
      rw_log(ctx, RW_LOG_SUMMARY, "  e = %.3e  remainder %.3e  order %.2f\n", e, R[i], order);
  }
  *ok = order >= 1.8;
  rw_log(ctx, RW_LOG_SUMMARY, "  %s\n",
         *ok ? "second-order decay: ok" : "NOT second order: the gradient is wrong");
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int ierr = 0, rank = 0, size = 1, all_ok = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rw_context ctx = NULL;
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector u0 = NULL, u = NULL, dJdu0 = NULL, dJdu0_store = NULL, v = NULL, work = NULL, u0e = NULL;
  time_record rec = {0};
  settings s;
  const double p_true[NPARAMS] = {0.01, 0.5, 2.0}, p_guess[NPARAMS] = {0.015, 0.4, 1.5};

  /* Every Rewind object lives on a context: the communicator (duplicated), the SUNDIALS
   * context of the vectors and the log level. MPI must be initialised first. */
  RW_TRY(parse(argc, argv, &s));
  RW_TRY(rw_context_create(MPI_COMM_WORLD, &ctx));
  RW_TRY(advdiff_create(ctx, s.n, p_true, &prob));
  /* An explicit Runge-Kutta stepper from a Butcher tableau: a built-in one by name, or your
   * own (the stepper copies it, and its adjoint step is derived from the tableau). */
  const rw_tableau *tab =
      strcmp(s.stepper, "ralston3") == 0 ? &ralston3 : rw_tableau_find(s.stepper);
  RW_CHECK_GOTO(tab, RW_ERR_ARG, "unknown stepper '%s'; known: %s, ralston3", s.stepper,
                rw_tableau_names());
  RW_TRY(rw_stepper_create_erk(prob, tab, &st));
  RW_TRY(rw_problem_new_state(prob, &u0));
  RW_TRY(rw_vec_clone(u0, &u));
  RW_TRY(rw_vec_clone(u0, &dJdu0));
  RW_TRY(rw_vec_clone(u0, &dJdu0_store));
  RW_TRY(rw_vec_clone(u0, &v));
  RW_TRY(rw_vec_clone(u0, &u0e));
  RW_TRY(rw_vec_clone(u0, &work));
  initial_state(prob, u0);

  /* The data: u(T) for the true parameters, a forward solve on the fixed grid. */
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.t0 = 0.0, opt.tf = s.tf, opt.dt = s.dt;
  RW_TRY(objective(prob, st, &opt, u0, u, &(double){0.0}));
  {
    advdiff *m = rw_problem_content(prob);
    memcpy(m->data, rw_vec_data(u), (size_t)m->n_local * sizeof(double));
  }
  memcpy(rw_problem_params(prob), p_guess, sizeof p_guess);

  /* Check the callbacks before trusting any gradient built from them. */
  double worst = 0.0;
  RW_TRY(check_callbacks(prob, &worst));
  rw_log(ctx, RW_LOG_SUMMARY,
         "%s: %ld nodes on %d rank%s, stepper %s\ndot-product test of the VJPs and cost "
         "gradients: largest relative difference %.1e (tolerance 1e-6)\n",
         rw_problem_name(prob), s.n, size, size == 1 ? "" : "s", s.stepper, worst);
  if (!(worst <= 1e-6)) all_ok = 0;

  /* The adjoint run: checkpoint mode under a schedule with `slots` RAM slots (a byte budget
   * per rank would go in opt.ram_bytes instead), optionally an HDF5 disk tier. */
  opt.mode = RW_ADJOINT_CHECKPOINT;
  RW_TRY(schedule_kind(s.schedule, &opt.schedule));
  opt.ram_slots = s.slots;
  opt.interval = s.interval;
  opt.disk_slots = s.disk_slots;
  opt.disk_dir = s.disk_dir;
  opt.run_id = "advdiff1d"; /* names the checkpoint files: unique per concurrent run */
  /* The disk's costs in forward steps; negative: measured at start-up (the default 0 would
   * tell the schedule that disk traffic is free). */
  opt.write_cost = opt.read_cost = s.disk_cost;
  opt.adaptive = s.adaptive;
  opt.rtol = s.rtol, opt.atol = s.atol;
  opt.monitor = record_time; /* records the grid (for the finite differences below) */
  opt.monitor_ctx = &rec;
  double J = 0.0, dJdp[NPARAMS];
  rw_adjoint_stats stats;
  rw_vec_copy(u0, u); /* in: u(0); out: u(T) */
  RW_TRY(rw_adjoint_solve(prob, st, &opt, u, &J, dJdp, dJdu0, &stats));
  rw_log(ctx, RW_LOG_SUMMARY,
         "J = %.15e  (terminal %.6e, running %.6e)\n"
         "  %ld steps%s, schedule %s with %d RAM slots: %ld forward steps recomputed, "
         "%ld advances (the binomial optimum for these slots: %ld), peak %d slots of %zu "
         "bytes per rank\n",
         J, stats.J_terminal, stats.J_running, stats.steps, s.adaptive ? " (adaptive)" : "",
         s.schedule, stats.ram_slots, stats.recomputed_steps, stats.advances,
         stats.optimal_advances, stats.peak_slots, stats.snapshot_bytes);
  if (stats.disk_slots > 0)
    rw_log(ctx, RW_LOG_SUMMARY,
           "  disk tier: %d slots, %ld writes, %ld reads (costs %.2g and %.2g steps)\n",
           stats.disk_slots, stats.disk_writes, stats.disk_reads, stats.write_cost,
           stats.read_cost);
  /* The grid the gradient belongs to: the fixed grid, or the accepted steps of an adaptive
   * run, which rw_forward_solve replays through opt.times. */
  rw_adjoint_options fd = opt;
  fd.monitor = NULL;
  if (s.adaptive) {
    RW_CHECK_GOTO(rec.n == stats.steps + 1, RW_ERR_INTERNAL,
                  "the monitor saw %ld states for %ld steps", rec.n, stats.steps);
    fd.adaptive = 0;
    fd.times = rec.t;
    fd.nsteps = stats.steps;
  }

  /* The schedule changes the cost, never the gradient: keeping every state on the same grid
   * gives the same bits. */
  {
    rw_adjoint_options store = fd;
    double Js = 0.0, gs[NPARAMS];
    store.mode = RW_ADJOINT_STORE;
    rw_vec_copy(u0, u);
    RW_TRY(rw_adjoint_solve(prob, st, &store, u, &Js, gs, dJdu0_store, NULL));
    N_VLinearSum(1.0, dJdu0, -1.0, dJdu0_store, work);
    double dy = N_VMaxNorm(work), dp = 0.0;
    for (int k = 0; k < NPARAMS; k++)
      dp = fmax(dp, fabs(gs[k] - dJdp[k]));
    int same = dy == 0.0 && dp == 0.0 && Js == J;
    rw_log(ctx, RW_LOG_SUMMARY, "store-everything run on the same grid: %s\n",
           same ? "the same J, dJ/dp and dJ/du0, bit for bit" : "DIFFERENT");
    if (!same) all_ok = 0;
  }

  if (s.perturb != 0.0) /* -perturb: what the check says when the gradient is wrong */
    for (int k = 0; k < NPARAMS; k++)
      dJdp[k] *= 1.0 + s.perturb;

  /* dJ/dp and dJ/du0 against central differences of J. */
  rw_log(ctx, RW_LOG_SUMMARY, "gradient against central differences (relative step %g):\n",
         s.fd_step);
  double *p = rw_problem_params(prob);
  for (int k = 0; k < NPARAMS; k++) {
    double e = s.fd_step * fabs(p[k]), d1 = 0.0, d2 = 0.0;
    char what[32];
    snprintf(what, sizeof what, "dJ/d%s", param_names[k]);
    RW_TRY(central_difference(prob, st, &fd, u0, v, u0e, work, k, e, &d1));
    RW_TRY(central_difference(prob, st, &fd, u0, v, u0e, work, k, 0.5 * e, &d2));
    if (!fd_agrees(ctx, what, dJdp[k], d1, d2, J, e)) all_ok = 0;
  }
  {
    /* a smooth direction v in the initial state: <dJ/du0, v> against the difference along v */
    const advdiff *m = rw_problem_content(prob);
    const double pi = 3.14159265358979323846;
    double *vd = rw_vec_data(v);
    for (long i = 0; i < m->n_local; i++) {
      double x = (double)(m->offset + i) * m->h;
      vd[i] = sin(2.0 * pi * x) + 0.5 * cos(4.0 * pi * x + 1.0);
    }
    double e = s.fd_step, d1 = 0.0, d2 = 0.0;
    RW_TRY(central_difference(prob, st, &fd, u0, v, u0e, work, -1, e, &d1));
    RW_TRY(central_difference(prob, st, &fd, u0, v, u0e, work, -1, 0.5 * e, &d2));
    if (!fd_agrees(ctx, "<dJ/du0, v>", N_VDotProd(dJdu0, v), d1, d2, J, e)) all_ok = 0;
  }
  {
    int ok = 1;
    RW_TRY(taylor_test(prob, st, &fd, u0, v, u0e, work, J, dJdp, dJdu0, &ok));
    if (!ok) all_ok = 0;
  }
  rw_log(ctx, RW_LOG_SUMMARY, "%s\n",
         all_ok ? "gradient check passed" : "gradient check FAILED: the gradient is wrong");

cleanup:
  if (ierr) {
    /* Rewind returns a code and keeps the message of the first failure with the calls it
     * went through. A failure inside one rank's callback is not seen by the other ranks,
     * which may be waiting in a collective call: end the whole job. */
    fprintf(stderr, "[rank %d] error %d (%s): %s\n", rank, ierr, rw_error_string(ierr),
            rw_error_message());
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* Destroy in reverse order of creation: vectors and the stepper before the problem, all of
   * them before the context, the context before MPI_Finalize. */
  rw_vec_destroy(&u0), rw_vec_destroy(&u), rw_vec_destroy(&dJdu0);
  rw_vec_destroy(&dJdu0_store), rw_vec_destroy(&v), rw_vec_destroy(&u0e), rw_vec_destroy(&work);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
  free(rec.t);
  if (rw_hdf5_broken()) { /* a checkpoint file failed to close (a full disk): HDF5's clean-up
                           * in MPI_Finalize would crash on it (see rw_context.h) */
    fflush(NULL);
    _exit(2);
  }
  MPI_Finalize();
  return ierr ? 2 : all_ok ? 0 : 1;
}
