/* Device vectors (rw_device.h) against CPU vectors, under mpiexec with 1, 2 and 4 ranks.
 * Argument: the device kind, "emulated" or "cuda" (cuda skips, exit 77 with the reason,
 * where the build has no CUDA or the machine no GPU).
 *
 *  1. Every N_Vector operation Rewind uses, on random vectors whose local lengths differ per
 *     rank and cross the reduction's chunk size (one rank owns no entries with 4 ranks):
 *     element-wise operations and linear combinations (1 to 7 vectors, 70 in passes, the
 *     output aliasing the first input, SUNDIALS' special N_VLinearSum forms) equal the CPU
 *     vectors bit for bit; reductions (dot, max norm, WRMS and WL2 norms, min, L1 norm, the
 *     local dot) agree to 1e-14 relative (another summation order; max and min exactly),
 *     and a second evaluation repeats bit for bit. With cuda, every result also equals the
 *     emulated device's bit for bit (the same formulas and reduction order, no fused
 *     multiply-adds).
 *  2. Emulated only: the device memory faults when host code touches it outside an
 *     operation (read caught as SIGSEGV), and is readable inside a host scope.
 *  3. Whole solves: a problem written with vector operations only (f = a y - b y^2,
 *     J = <y(T), y(T)>/2, so it runs on any device), RK4 store-everything and binomial
 *     checkpointing with 3 slots, the disk tier (1 RAM + 4 HDF5 slots), and Dormand-Prince adaptive
 * (online schedule, 4 slots): y(T) and dJ/dy0 equal the CPU run bit for bit with fixed steps, J and
 * dJ/dp to 1e-13 (they are dot products); checkpointed (RAM or disk) equals store bit for bit on
 * the device; adaptive agrees to 1e-10.
 *  3b. The grid's halo exchange and its transpose on the device (2-D, 3-D; periodic,
 *     Dirichlet, Neumann and mixed boundaries; 1 and 2 components and ghost layers) equal the
 *     CPU grid's bit for bit, ghosts included.
 *  4. Gray-Scott on the device (2-D and 3-D, point and u2 objectives, store and binomial
 *     checkpointing): its halo exchange and stencils run as device kernels
 *     (rw_dev_bodies.h) and no host scope is opened around its ops, so on the emulated device
 *     any host access to device data faults. y0, y(T) and dJ/dy0 equal the CPU run bit for
 *     bit; J and dJ/dp, sums over nodes in the device's order, to 1e-13.
 *  5. Heat on the device (2-D and 3-D, Dirichlet and periodic sides, conductivity field and
 *     sensor misfit, store and binomial): fields, y(T), dJ/dy0, dJ/dkappa and J equal the CPU
 *     run bit for bit, dJ/dsource (a sum over nodes) to 1e-13; Dirichlet, periodic and Neumann
 *     sides.
 *  5b. Burgers on the device (store and binomial): y0, the target, y(T) and dJ/dy0 equal the CPU
 *     run bit for bit, J and dJ/dnu (sums over nodes) to 1e-13.
 *  5e. ODE and SDE ensembles (Van der Pol, Lotka-Volterra with RK4 and the 3/8 rule; OU with
 *     Euler-Maruyama, GBM with stochastic Heun; terminal and running cost; 4103 + 2 ranks
 *     members): y0, y(T) and dJ/dy0 equal the CPU run bit for bit in store and binomial mode,
 *     J and dJ/dp (sums over members) to 1e-13; the tangent and deferred dJ/dp as above.
 *  5c. Wave with the leapfrog on the device (traces recorded from a velocity anomaly, then the
 *     misfit's gradient in store, binomial and reversible mode with the exact leapfrog):
 *     traces, y(T), dJ/dy0, dJ/dvelocity, J and dJ/damplitude equal the CPU run bit for bit.
 *  5d. The neural ODE on the device (its products through rw_device_gemm: cuBLAS on a GPU, the
 *     host BLAS emulated; activations, bias sums, time column and damping as device bodies):
 *     tanh with damping, softplus with a time input, relu with three hidden layers; a batch of
 *     7 split unevenly over the ranks; RK4 store and binomial with 3 slots, and Dormand-Prince
 *     adaptive: J, y(T), dJ/dy0 and dJ/dtheta agree with the CPU run to 1e-13 (relative, or
 *     of the field's maximum; another order of the products' sums); binomial equals store bit
 *     for bit on the device and a second device run repeats the first bit for bit; the device
 *     tangent against the device VJP (dot-product test) to 1e-13.
 *  6. Device memory: every byte is returned when the vectors are destroyed.
 * Prints one line per check on rank 0; exits 1 if any check failed. */
#define _POSIX_C_SOURCE 200809L
#include "rewind/rw_adjoint.h"
#include "rewind/rw_burgers.h"
#include "rewind/rw_cuda.h"
#include "rewind/rw_device.h"
#include "rewind/rw_grayscott.h"
#include "rewind/rw_grid.h"
#include "rewind/rw_heat.h"
#include "rewind/rw_leapfrog.h"
#include "rewind/rw_neuralode.h"
#include "rewind/rw_ode_problems.h"
#include "rewind/rw_sde.h"
#include "rewind/rw_sde_problems.h"
#include "rewind/rw_store.h"
#include "rewind/rw_wave.h"
#include "rw_mpi_test.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fails, rank, size;

static void report(int ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void report(int ok, const char *fmt, ...)
{
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) fails++;
  if (rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  printf("%s ", all ? "ok  " : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

/* A CPU vector and a device vector holding the same values. */
typedef struct {
  N_Vector c, d;
} pair;

static rw_context cpu_ctx, dev_ctx;

static pair pair_new(sunindextype n, uint64_t seed, double lo)
{
  pair p;
  CHECK(rw_vec_create(cpu_ctx, n, &p.c));
  CHECK(rw_vec_create(dev_ctx, n, &p.d));
  double *x = rw_vec_data(p.c);
  for (sunindextype i = 0; i < n; i++) {
    double h = rw_test_hash01(seed, (uint64_t)(rank * 1000003 + i));
    x[i] = lo >= 0 ? lo + fabs(h) : h;
  }
  CHECK(rw_vec_from_host(p.d, x));
  return p;
}

static void pair_free(pair *p)
{
  rw_vec_destroy(&p->c);
  rw_vec_destroy(&p->d);
}

/* Entries of the device vector that differ from the CPU vector's bits. */
static long differ(N_Vector c, N_Vector d)
{
  long n = (long)rw_vec_local_length(c), bad = 0;
  double *h = malloc(((size_t)n + 1) * sizeof(double));
  CHECK(rw_vec_to_host(d, h));
  for (long i = 0; i < n; i++)
    bad += memcmp(&h[i], &rw_vec_data(c)[i], sizeof(double)) != 0;
  free(h);
  return bad;
}

static double relerr(double a, double b)
{
  double s = fmax(fabs(a), fabs(b));
  return s == 0.0 ? 0.0 : fabs(a - b) / s;
}

/* --- 1. Operations ---------------------------------------------------------------------- */

static void op_tests(rw_device dev, rw_device emu)
{
  /* lengths that cross the chunk size; rank 3 of 4 owns nothing */
  sunindextype n = size == 4 && rank == 3 ? 0 : 5000 + 3001 * (sunindextype)rank;
  pair x = pair_new(n, 1, -1), y = pair_new(n, 2, -1), w = pair_new(n, 3, 0.5),
       z = pair_new(n, 4, -1);
  long bad = 0;
  const double ab[][2] = {{1, 1},     {1, -1},   {-1, 1},   {2.5, 2.5}, {2.5, -2.5},
                          {0.3, 0.7}, {-1, 0.5}, {0.5, -1}, {1, 0.25},  {0, 1.5}};
  for (size_t k = 0; k < sizeof ab / sizeof ab[0]; k++) {
    N_VLinearSum(ab[k][0], x.c, ab[k][1], y.c, z.c);
    N_VLinearSum(ab[k][0], x.d, ab[k][1], y.d, z.d);
    bad += differ(z.c, z.d);
  }
  N_VLinearSum(0.75, x.c, 1.0, z.c, z.c); /* axpy form, output aliasing an input */
  N_VLinearSum(0.75, x.d, 1.0, z.d, z.d);
  bad += differ(z.c, z.d);
  report(bad == 0, "N_VLinearSum, 11 coefficient forms on %d ranks: %ld entries differ", size, bad);

  bad = 0;
  N_VConst(0.3, z.c), N_VConst(0.3, z.d), bad += differ(z.c, z.d);
  N_VProd(x.c, y.c, z.c), N_VProd(x.d, y.d, z.d), bad += differ(z.c, z.d);
  N_VDiv(x.c, w.c, z.c), N_VDiv(x.d, w.d, z.d), bad += differ(z.c, z.d);
  N_VScale(-0.7, x.c, z.c), N_VScale(-0.7, x.d, z.d), bad += differ(z.c, z.d);
  N_VScale(-1.0, x.c, z.c), N_VScale(-1.0, x.d, z.d), bad += differ(z.c, z.d);
  N_VAbs(x.c, z.c), N_VAbs(x.d, z.d), bad += differ(z.c, z.d);
  N_VInv(w.c, z.c), N_VInv(w.d, z.d), bad += differ(z.c, z.d);
  N_VAddConst(x.c, 0.125, z.c), N_VAddConst(x.d, 0.125, z.d), bad += differ(z.c, z.d);
  N_VCompare(0.5, x.c, z.c), N_VCompare(0.5, x.d, z.d), bad += differ(z.c, z.d);
  rw_vec_copy(y.c, z.c), rw_vec_copy(y.d, z.d), bad += differ(z.c, z.d);
  report(bad == 0,
         "Const, Prod, Div, Scale, Abs, Inv, AddConst, Compare, copy on %d ranks: %ld entries "
         "differ",
         size, bad);

  /* linear combinations: 1..7 vectors, 70 (passes of RW_LINCOMB_MAX), z = X[0] aliased */
  {
    enum { NV = 70 };
    pair v[NV];
    N_Vector Xc[NV], Xd[NV];
    double c[NV];
    for (int j = 0; j < NV; j++) {
      v[j] = pair_new(n, 100 + (uint64_t)j, -1);
      Xc[j] = v[j].c, Xd[j] = v[j].d;
      c[j] = rw_test_hash01(7, (uint64_t)j);
    }
    bad = 0;
    for (int m = 1; m <= 7; m++) {
      CHECK(N_VLinearCombination(m, c, Xc, z.c));
      CHECK(N_VLinearCombination(m, c, Xd, z.d));
      bad += differ(z.c, z.d);
    }
    double c2[2] = {0.4, 0.4};
    CHECK(N_VLinearCombination(2, c2, Xc, z.c));
    CHECK(N_VLinearCombination(2, c2, Xd, z.d));
    bad += differ(z.c, z.d);
    CHECK(N_VLinearCombination(NV, c, Xc, z.c));
    CHECK(N_VLinearCombination(NV, c, Xd, z.d));
    bad += differ(z.c, z.d);
    CHECK(N_VLinearCombination(5, c, Xc, Xc[0]));
    CHECK(N_VLinearCombination(5, c, Xd, Xd[0]));
    bad += differ(Xc[0], Xd[0]);
    N_Vector Yc[2] = {y.c, w.c}, Yd[2] = {y.d, w.d}, Zc[2] = {v[1].c, v[2].c},
             Zd[2] = {v[1].d, v[2].d};
    CHECK(N_VScaleAddMulti(2, c, x.c, Yc, Zc));
    CHECK(N_VScaleAddMulti(2, c, x.d, Yd, Zd));
    bad += differ(v[1].c, v[1].d) + differ(v[2].c, v[2].d);
    report(bad == 0,
           "N_VLinearCombination of 1-7 and 70 vectors, aliased output, N_VScaleAddMulti on %d "
           "ranks: %ld entries differ",
           size, bad);
    for (int j = 0; j < NV; j++)
      pair_free(&v[j]);
  }

  /* reductions */
  {
    struct {
      const char *name;
      double c, d, d2;
      int exact;
    } r[7];
    r[0].name = "dot", r[0].c = N_VDotProd(x.c, y.c), r[0].d = N_VDotProd(x.d, y.d);
    r[0].d2 = N_VDotProd(x.d, y.d), r[0].exact = 0;
    r[1].name = "max norm", r[1].c = N_VMaxNorm(x.c), r[1].d = N_VMaxNorm(x.d);
    r[1].d2 = N_VMaxNorm(x.d), r[1].exact = 1;
    r[2].name = "WRMS norm", r[2].c = N_VWrmsNorm(x.c, w.c), r[2].d = N_VWrmsNorm(x.d, w.d);
    r[2].d2 = N_VWrmsNorm(x.d, w.d), r[2].exact = 0;
    r[3].name = "min", r[3].c = N_VMin(x.c), r[3].d = N_VMin(x.d), r[3].d2 = N_VMin(x.d);
    r[3].exact = 1;
    r[4].name = "WL2 norm", r[4].c = N_VWL2Norm(x.c, w.c), r[4].d = N_VWL2Norm(x.d, w.d);
    r[4].d2 = N_VWL2Norm(x.d, w.d), r[4].exact = 0;
    r[5].name = "L1 norm", r[5].c = N_VL1Norm(x.c), r[5].d = N_VL1Norm(x.d);
    r[5].d2 = N_VL1Norm(x.d), r[5].exact = 0;
    r[6].name = "local dot", r[6].c = rw_vec_dot_local(x.c, y.c);
    r[6].d = rw_vec_dot_local(x.d, y.d), r[6].d2 = rw_vec_dot_local(x.d, y.d), r[6].exact = 0;
    for (int k = 0; k < 7; k++) {
      double e = relerr(r[k].c, r[k].d);
      int ok =
          (r[k].exact ? e == 0.0 : e <= 1e-14) && memcmp(&r[k].d, &r[k].d2, sizeof(double)) == 0;
      report(ok, "%s on %d ranks: device %.17g, CPU %.17g (rel %.1e), repeat %s", r[k].name, size,
             r[k].d, r[k].c, e, memcmp(&r[k].d, &r[k].d2, sizeof(double)) ? "DIFFERS" : "equal");
    }
    if (emu) {
      /* the GPU's reductions are the emulated device's bit for bit */
      N_Vector ex, ey, ew;
      rw_context_set_device(dev_ctx, emu);
      CHECK(rw_vec_create(dev_ctx, n, &ex));
      CHECK(rw_vec_create(dev_ctx, n, &ey));
      CHECK(rw_vec_create(dev_ctx, n, &ew));
      rw_context_set_device(dev_ctx, dev);
      CHECK(rw_vec_from_host(ex, rw_vec_data(x.c)));
      CHECK(rw_vec_from_host(ey, rw_vec_data(y.c)));
      CHECK(rw_vec_from_host(ew, rw_vec_data(w.c)));
      double e[5] = {N_VDotProd(ex, ey), N_VWrmsNorm(ex, ew), N_VWL2Norm(ex, ew), N_VL1Norm(ex),
                     rw_vec_dot_local(ex, ey)};
      double g[5] = {r[0].d, r[2].d, r[4].d, r[5].d, r[6].d};
      report(memcmp(e, g, sizeof e) == 0,
             "GPU reductions equal the emulated device's bit for bit on %d ranks", size);
      rw_vec_destroy(&ex), rw_vec_destroy(&ey), rw_vec_destroy(&ew);
    }
  }
  pair_free(&x), pair_free(&y), pair_free(&w), pair_free(&z);
}

/* --- 2. The emulated device's memory guard ---------------------------------------------- */

static sigjmp_buf guard_jmp;
static void guard_handler(int sig)
{
  (void)sig;
  siglongjmp(guard_jmp, 1);
}

static void guard_tests(rw_device dev)
{
  N_Vector v;
  CHECK(rw_vec_create(dev_ctx, 16, &v));
  N_VConst(2.0, v);
  struct sigaction sa, old_segv, old_bus;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = guard_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  volatile int faulted = 0, wfaulted = 0, after = 0;
  if (sigsetjmp(guard_jmp, 1) == 0)
    (void)((volatile double *)rw_vec_data(v))[3];
  else
    faulted = 1;
  if (sigsetjmp(guard_jmp, 1) == 0)
    ((volatile double *)rw_vec_data(v))[5] = 7.0;
  else
    wfaulted = 1;
  rw_device_host_begin(dev);
  double inside = rw_vec_data(v)[3];
  rw_device_host_end(dev);
  N_VScale(3.0, v, v);              /* a kernel after the scope: it still reaches the data */
  if (sigsetjmp(guard_jmp, 1) == 0) /* and the host, after the scope and the kernel, cannot */
    (void)((volatile double *)rw_vec_data(v))[3];
  else
    after = 1;
  sigaction(SIGSEGV, &old_segv, NULL);
  sigaction(SIGBUS, &old_bus, NULL);
  double h[16];
  CHECK(rw_vec_to_host(v, h));
  report(faulted && wfaulted && after && inside == 2.0 && h[3] == 6.0 && h[5] == 6.0,
         "emulated device memory: a host read outside a device operation %s, a host write %s; "
         "inside a host scope it reads %g; after the scope and a kernel a host read %s; the "
         "kernel's result %g, the refused write's entry %g (6 expected)",
         faulted ? "faults" : "DOES NOT FAULT", wfaulted ? "faults" : "DOES NOT FAULT", inside,
         after ? "faults" : "DOES NOT FAULT", h[3], h[5]);
  rw_vec_destroy(&v);
}

/* --- 3. A problem written with vector operations only ----------------------------------- */

typedef struct {
  N_Vector t1; /* work vector */
} vprob;

static int vp_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  (void)c, (void)t;
  N_VProd(y, y, f);                   /* y^2 */
  N_VLinearSum(p[0], y, -p[1], f, f); /* a y - b y^2 */
  return 0;
}

static int vp_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  vprob *v = c;
  (void)t;
  N_VProd(y, w, v->t1);                            /* y w */
  N_VLinearSum(1.0, out, p[0], w, out);            /* + a w */
  N_VLinearSum(1.0, out, -2.0 * p[1], v->t1, out); /* - 2 b y w */
  return 0;
}

static int vp_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  vprob *v = c;
  (void)t, (void)p;
  out[0] += rw_vec_dot_local(w, y);
  N_VProd(y, y, v->t1);
  out[1] -= rw_vec_dot_local(w, v->t1);
  return 0;
}

static int vp_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  (void)c, (void)t, (void)p;
  *g = 0.5 * N_VDotProd(y, y);
  return 0;
}

static int vp_terminal_grad(void *c, double t, N_Vector y, const double *p, N_Vector gy, double *gp)
{
  (void)c, (void)t, (void)p, (void)gp;
  N_VScale(1.0, y, gy);
  return 0;
}

static void vp_destroy(void *c)
{
  vprob *v = c;
  rw_vec_destroy(&v->t1);
  free(v);
}

static rw_problem vp_create(rw_context ctx, sunindextype n)
{
  static const rw_problem_ops ops = {.rhs = vp_rhs,
                                     .vjp_y = vp_vjp_y,
                                     .vjp_p = vp_vjp_p,
                                     .terminal = vp_terminal,
                                     .terminal_grad = vp_terminal_grad,
                                     .destroy = vp_destroy};
  const char *names[2] = {"a", "b"};
  vprob *v = calloc(1, sizeof *v);
  rw_problem prob;
  CHECK(rw_vec_create(ctx, n, &v->t1));
  CHECK(rw_problem_create(ctx, "vector-ops logistic", &ops, v, n, 2, names, &prob));
  rw_problem_params(prob)[0] = 0.8, rw_problem_params(prob)[1] = 0.6;
  return prob;
}

typedef struct {
  double J, p[4];
  double *y, *g;
  long n;
} result;

/* Runs the adjoint with `o` from y0 (host values) and collects J, dJ/dp, y(T), dJ/dy0. */
static void solve(rw_problem prob, const char *tab, const rw_adjoint_options *o, const double *y0,
                  result *r)
{
  rw_stepper st;
  N_Vector y, g;
  if (rw_sde_method_known(tab)) /* em, sheun: the problem's noise is set */
    CHECK(rw_stepper_create_sde(prob, tab, &st));
  else
    CHECK(rw_stepper_create_erk(prob, rw_tableau_find(tab), &st));
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_problem_new_state(prob, &g));
  r->n = (long)rw_vec_local_length(y);
  r->y = malloc(((size_t)r->n + 1) * sizeof(double));
  r->g = malloc(((size_t)r->n + 1) * sizeof(double));
  CHECK(rw_vec_from_host(y, y0));
  memset(r->p, 0, sizeof r->p);
  CHECK(rw_adjoint_solve(prob, st, o, y, &r->J, r->p, g, NULL));
  CHECK(rw_vec_to_host(y, r->y));
  CHECK(rw_vec_to_host(g, r->g));
  rw_vec_destroy(&y);
  rw_vec_destroy(&g);
  rw_stepper_destroy(&st);
}

static void result_free(result *r)
{
  free(r->y);
  free(r->g);
}

static int same_fields(const result *a, const result *b)
{
  return a->n == b->n && memcmp(a->y, b->y, (size_t)a->n * sizeof(double)) == 0 &&
         memcmp(a->g, b->g, (size_t)a->n * sizeof(double)) == 0;
}

static double field_rel(const double *a, const double *b, long n)
{
  double d = 0.0, m = 0.0;
  for (long i = 0; i < n; i++)
    d = fmax(d, fabs(a[i] - b[i])), m = fmax(m, fabs(a[i]));
  double gd = 0.0, gm = 0.0;
  MPI_Allreduce(&d, &gd, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&m, &gm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return gm > 0 ? gd / gm : gd;
}

/* The host store's asynchronous transfers, called directly: puts whose source changes right
 * after, a prefetch, gets with and without it, a slot stored again after a prefetch of it.
 * On the emulated device a transfer runs only when waited for, so each missing wait shows as
 * stale data here. */
static void host_store_tests(void)
{
  const sunindextype n = 1000 + 7 * rank;
  pair a = pair_new(n, 91, -1), b = pair_new(n, 92, -1), q = pair_new(n, 93, -1);
  rw_store st = NULL;
  CHECK(rw_store_create_host(a.d, 2, 3, &st));
  N_Vector va[2] = {a.d, b.d}, vq[2] = {q.d, a.d};
  rw_snapshot_tag t5 = {5, 0.5, 0.1, 0.0}, t7 = {7, 0.7, 0.1, 0.0}, t9 = {9, 0.9, 0.1, 0.0}, got;
  CHECK(rw_store_put(st, 0, &t5, va)); /* slot 0: (a, b) */
  N_VScale(2.0, a.d, a.d), N_VScale(2.0, a.c, a.c);
  CHECK(rw_store_put(st, 1, &t7, va)); /* slot 1: (2a, b) */
  N_VConst(-1.0, a.d), N_VConst(-1.0, b.d);
  CHECK(rw_store_prefetch(st, 0, 5));
  pair e = pair_new(n, 91, -1);         /* the original a */
  CHECK(rw_store_get(st, 0, &got, vq)); /* from the prefetch */
  long bad = differ(e.c, q.d) + (got.step != 5);
  N_VConst(3.0, b.d);                   /* b is written again: the slots must not see it */
  CHECK(rw_store_get(st, 1, &got, vq)); /* the last put's slot: from the staging copy */
  bad += differ(a.c, q.d) + (got.step != 7);
  pair f = pair_new(n, 92, -1);
  bad += differ(f.c, vq[1]);
  CHECK(rw_store_put(st, 2, &t9, vq)); /* another put: slot 1 now comes from the host */
  N_VConst(6.0, q.d), N_VConst(6.0, a.d);
  CHECK(rw_store_get(st, 1, &got, vq));
  bad += differ(a.c, q.d) + differ(f.c, vq[1]) + (got.step != 7);
  long hits = rw_store_host_prefetch_hits(st), staged = rw_store_host_staged_hits(st);
  /* a prefetch of slot 0, then slot 0 stored again: the get returns the new contents */
  CHECK(rw_store_prefetch(st, 0, 5));
  N_VConst(4.0, q.d), N_VConst(5.0, b.d), N_VConst(4.0, q.c), N_VConst(5.0, f.c);
  N_Vector vn[2] = {q.d, b.d};
  CHECK(rw_store_release(st, 0));
  CHECK(rw_store_put(st, 0, &t9, vn));
  N_VConst(0.0, q.d), N_VConst(0.0, b.d);
  CHECK(rw_store_get(st, 0, &got, vn));
  bad += differ(q.c, q.d) + differ(f.c, b.d) + (got.step != 9);
  CHECK(rw_store_sync(st));
  long hits2 = rw_store_host_prefetch_hits(st);
  rw_store_destroy(&st);
  long all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  report(all == 0 && hits == 1 && hits2 == 1 && staged == 1,
         "host store on the device, transfers asynchronous: %ld entries differ from what was put "
         "(sources overwritten after each put, a prefetched get, a get from the staging copy, one "
         "from the host, a slot stored again after its prefetch); gets from a prefetch %ld and "
         "%ld after the re-store (1 expected), from the staging copy %ld (1 expected)",
         all, hits, hits2, staged);
  pair_free(&a), pair_free(&b), pair_free(&q), pair_free(&e), pair_free(&f);
}

static void vector_problem_tests(void)
{
  const sunindextype n = 3000 + 500 * (sunindextype)rank;
  double *y0 = malloc((size_t)n * sizeof(double));
  for (sunindextype i = 0; i < n; i++)
    y0[i] = 0.2 + 0.5 * fabs(rw_test_hash01(11, (uint64_t)(rank * 100003 + i)));
  rw_problem pc = vp_create(cpu_ctx, n), pd = vp_create(dev_ctx, n);
  rw_adjoint_options o;
  rw_adjoint_options_default(&o);
  o.t0 = 0.0, o.tf = 2.0, o.dt = 0.05;
  result c, d, dk;
  solve(pc, "rk4", &o, y0, &c);
  solve(pd, "rk4", &o, y0, &d);
  double eJ = relerr(c.J, d.J), ea = relerr(c.p[0], d.p[0]), eb = relerr(c.p[1], d.p[1]);
  report(same_fields(&c, &d) && eJ <= 1e-13 && ea <= 1e-13 && eb <= 1e-13,
         "vector-op problem, RK4 store, %d ranks: y(T) and dJ/dy0 %s the CPU run's; J rel %.1e, "
         "dJ/da rel %.1e, dJ/db rel %.1e",
         size, same_fields(&c, &d) ? "equal" : "DIFFER FROM", eJ, ea, eb);
  rw_adjoint_options ok = o;
  ok.mode = RW_ADJOINT_CHECKPOINT, ok.schedule = RW_SCHEDULE_BINOMIAL, ok.ram_slots = 3;
  solve(pd, "rk4", &ok, y0, &dk);
  int same = same_fields(&d, &dk) && d.J == dk.J && memcmp(d.p, dk.p, sizeof d.p) == 0;
  report(same, "vector-op problem on the device, %d ranks: binomial 3 slots %s store mode", size,
         same ? "equals bit for bit" : "DIFFERS FROM");
  result_free(&dk);

  /* the disk tier: snapshots pass through the HDF5 store's host copy */
  char dir[64] = "/tmp/rw-device-disk-XXXXXX";
  if (rank == 0 && !mkdtemp(dir)) dir[0] = 0;
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (dir[0]) {
    rw_adjoint_options od = ok;
    rw_adjoint_stats sd;
    od.ram_slots = 1, od.disk_slots = 4, od.disk_dir = dir, od.run_id = "test-device";
    od.write_cost = 0.5, od.read_cost = 0.5;
    rw_stepper st;
    N_Vector y, g;
    CHECK(rw_stepper_create_erk(pd, rw_tableau_find("rk4"), &st));
    CHECK(rw_problem_new_state(pd, &y));
    CHECK(rw_problem_new_state(pd, &g));
    CHECK(rw_vec_from_host(y, y0));
    dk.n = (long)n;
    dk.y = malloc((size_t)n * sizeof(double)), dk.g = malloc((size_t)n * sizeof(double));
    memset(dk.p, 0, sizeof dk.p);
    CHECK(rw_adjoint_solve(pd, st, &od, y, &dk.J, dk.p, g, &sd));
    CHECK(rw_vec_to_host(y, dk.y));
    CHECK(rw_vec_to_host(g, dk.g));
    same = same_fields(&d, &dk) && d.J == dk.J && memcmp(d.p, dk.p, sizeof d.p) == 0;
    report(same && sd.disk_writes > 0 && sd.disk_reads > 0,
           "vector-op problem on the device, %d ranks: 1 RAM + 4 disk slots (%ld disk writes, %ld "
           "reads) %s store mode",
           size, sd.disk_writes, sd.disk_reads, same ? "equals bit for bit" : "DIFFERS FROM");
    rw_vec_destroy(&y), rw_vec_destroy(&g);
    result_free(&dk);
    /* three tiers: device slots, page-locked host slots, disk (issue 11); the host tier's
     * costs measured once, then given, so that every tier is used */
    rw_adjoint_options o3 = od;
    rw_adjoint_stats s3;
    o3.ram_slots = 2, o3.host_slots = 2, o3.disk_slots = 3, o3.run_id = "test-device-3";
    o3.host_write_cost = -1.0, o3.host_read_cost = -1.0, o3.write_cost = 1.0, o3.read_cost = 1.0;
    CHECK(rw_problem_new_state(pd, &y));
    CHECK(rw_problem_new_state(pd, &g));
    CHECK(rw_vec_from_host(y, y0));
    dk.n = (long)n;
    dk.y = malloc((size_t)n * sizeof(double)), dk.g = malloc((size_t)n * sizeof(double));
    memset(dk.p, 0, sizeof dk.p);
    CHECK(rw_adjoint_solve(pd, st, &o3, y, &dk.J, dk.p, g, &s3));
    double mwh = s3.host_write_cost, mrh = s3.host_read_cost;
    int measured = s3.costs_measured && mwh >= 0 && mrh >= 0;
    CHECK(rw_vec_to_host(y, dk.y));
    CHECK(rw_vec_to_host(g, dk.g));
    same = same_fields(&d, &dk) && d.J == dk.J && memcmp(d.p, dk.p, sizeof d.p) == 0;
    o3.host_write_cost = 0.25, o3.host_read_cost = 0.25;
    memset(dk.p, 0, sizeof dk.p);
    CHECK(rw_vec_from_host(y, y0));
    CHECK(rw_adjoint_solve(pd, st, &o3, y, &dk.J, dk.p, g, &s3));
    CHECK(rw_vec_to_host(y, dk.y));
    CHECK(rw_vec_to_host(g, dk.g));
    same = same && same_fields(&d, &dk) && d.J == dk.J && memcmp(d.p, dk.p, sizeof d.p) == 0;
    report(same && measured && s3.host_writes > 0 && s3.host_reads > 0 && s3.disk_writes > 0 &&
               s3.host_slots <= 2,
           "vector-op problem on the device, %d ranks: 2 device + 2 host + 3 disk slots (host "
           "costs measured %.3g / %.3g steps; at 0.25: %ld host writes, %ld reads, %ld disk "
           "writes) %s store mode",
           size, mwh, mrh, s3.host_writes, s3.host_reads, s3.disk_writes,
           same ? "equals bit for bit" : "DIFFERS FROM");
    rw_vec_destroy(&y), rw_vec_destroy(&g);
    rw_stepper_destroy(&st);
    result_free(&dk);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) rmdir(dir);
  } else {
    report(0, "could not make a checkpoint directory under /tmp");
  }
  result_free(&c), result_free(&d);

  rw_adjoint_options oa = o;
  oa.adaptive = 1, oa.rtol = 1e-8, oa.atol = 1e-10;
  oa.mode = RW_ADJOINT_CHECKPOINT, oa.schedule = RW_SCHEDULE_ONLINE, oa.ram_slots = 4;
  solve(pc, "dopri5", &oa, y0, &c);
  solve(pd, "dopri5", &oa, y0, &d);
  double fy = field_rel(c.y, d.y, c.n), fg = field_rel(c.g, d.g, c.n);
  eJ = relerr(c.J, d.J), ea = relerr(c.p[0], d.p[0]);
  report(fy <= 1e-10 && fg <= 1e-10 && eJ <= 1e-10 && ea <= 1e-10,
         "vector-op problem, Dormand-Prince adaptive, %d ranks: y(T) %.1e, dJ/dy0 %.1e, J %.1e, "
         "dJ/da %.1e relative to the CPU run",
         size, fy, fg, eJ, ea);
  result_free(&c), result_free(&d);
  rw_problem_destroy(&pc);
  rw_problem_destroy(&pd);
  free(y0);
}

/* --- 3b. The grid's halo exchange and its transpose on the device ------------------------ */

static void grid_tests(void)
{
  const rw_bc sets[4][3] = {{RW_BC_PERIODIC, RW_BC_PERIODIC, RW_BC_PERIODIC},
                            {RW_BC_DIRICHLET, RW_BC_DIRICHLET, RW_BC_DIRICHLET},
                            {RW_BC_NEUMANN, RW_BC_NEUMANN, RW_BC_NEUMANN},
                            {RW_BC_DIRICHLET, RW_BC_NEUMANN, RW_BC_PERIODIC}};
  long nbad = 0, ncase = 0;
  for (int dim = 2; dim <= 3; dim++)
    for (int b = 0; b < 4; b++)
      for (int nc = 1; nc <= 2; nc++)
        for (int G = 1; G <= 2; G++) {
          rw_grid_config cf;
          memset(&cf, 0, sizeof cf);
          cf.dim = dim, cf.ncomp = nc, cf.ghost = G;
          for (int d = 0; d < 3; d++)
            cf.n[d] = dim == 2 ? 9 + d : 7 + d, cf.hi[d] = 1.0, cf.bc[d] = sets[b][d];
          cf.dirichlet[0] = 0.25, cf.dirichlet[1] = -1.5;
          rw_grid gc, gd;
          CHECK(rw_grid_create(cpu_ctx, &cf, &gc));
          CHECK(rw_grid_create(dev_ctx, &cf, &gd));
          size_t gl = rw_grid_ghosted_length(gc);
          pair v = pair_new(rw_grid_local_length(gc), 50 + (uint64_t)b, -1);
          pair a = pair_new((sunindextype)gl, 60 + (uint64_t)b, -1); /* ghosted arrays */
          pair o = pair_new(rw_grid_local_length(gc), 70 + (uint64_t)b, -1);
          N_VConst(0.0, a.c), N_VConst(0.0, a.d);
          CHECK(rw_grid_exchange_begin(gc, v.c, rw_vec_data(a.c)));
          CHECK(rw_grid_exchange_end(gc, rw_vec_data(a.c)));
          CHECK(rw_grid_exchange_begin(gd, v.d, rw_vec_data(a.d)));
          CHECK(rw_grid_exchange_end(gd, rw_vec_data(a.d)));
          long e1 = differ(a.c, a.d);
          nbad += e1;
          /* the transpose, from an array with values in every entry, ghosts included */
          pair r = pair_new((sunindextype)gl, 80 + (uint64_t)b, -1);
          CHECK(rw_grid_exchange_adjoint(gc, rw_vec_data(r.c), o.c));
          CHECK(rw_grid_exchange_adjoint(gd, rw_vec_data(r.d), o.d));
          long e2 = differ(o.c, o.d), e3 = differ(r.c, r.d);
          nbad += e2 + e3;
          if (getenv("RW_TEST_VERBOSE") && (e1 || e2 || e3))
            printf("rank %d: dim %d bc set %d nc %d G %d: exchange %ld, transpose out %ld, "
                   "array %ld differ\n",
                   rank, dim, b, nc, G, e1, e2, e3);
          ncase++;
          pair_free(&v), pair_free(&a), pair_free(&o), pair_free(&r);
          rw_grid_destroy(&gc);
          rw_grid_destroy(&gd);
        }
  report(nbad == 0,
         "grid exchange and its transpose on the device, %ld configurations (2-D, 3-D; periodic, "
         "Dirichlet, Neumann, mixed; 1-2 components; 1-2 ghost layers) on %d ranks: %ld entries "
         "differ from the CPU grid's",
         ncase, size, nbad);
}

/* How halos reach MPI (rw_device_set_mpi). AUTO on this device is direct exactly when it is
 * a GPU and every rank's MPI library reports CUDA support; DIRECT on a GPU without that is
 * refused with the reason. On the emulated device DIRECT hands MPI the device's own face
 * buffers inside a host scope (a wrong buffer faults or changes bits): the grid tests run again
 * that way, then Gray-Scott's, and the mode goes back to AUTO. */
static void grayscott_tests(void);

static void mpi_mode_tests(rw_device dev)
{
  int mine = rw_mpi_cuda_support(), least = mine;
  MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int cuda = rw_device_get_kind(dev) == RW_DEVICE_CUDA;
  report(rw_device_mpi_direct(dev) == (cuda && least == 1),
         "halo mode at start-up (auto): %s; MPI library's CUDA support %d (1 yes, 0 no, -1 cannot "
         "say)",
         rw_device_mpi_mode(dev), least);
  int ierr = rw_device_set_mpi(dev, MPI_COMM_WORLD, RW_DEVICE_MPI_DIRECT);
  if (cuda && least != 1) {
    report(ierr == RW_ERR_ARG && strstr(rw_error_message(), "CUDA-aware") != NULL,
           "direct halos refused on a GPU whose MPI library does not take CUDA memory: %s",
           ierr ? rw_error_message() : "(accepted)");
    CHECK(rw_device_set_mpi(dev, MPI_COMM_WORLD, RW_DEVICE_MPI_AUTO));
    return;
  }
  CHECK(ierr);
  report(rw_device_mpi_direct(dev) == 1, "direct halos: %s", rw_device_mpi_mode(dev));
  grid_tests();
  grayscott_tests();
  CHECK(rw_device_set_mpi(dev, MPI_COMM_WORLD, RW_DEVICE_MPI_STAGED));
  report(rw_device_mpi_direct(dev) == 0, "staged halos when asked: %s", rw_device_mpi_mode(dev));
  CHECK(rw_device_set_mpi(dev, MPI_COMM_WORLD, RW_DEVICE_MPI_AUTO));
  report(rw_device_set_mpi(dev, MPI_COMM_WORLD, (rw_device_mpi)7) == RW_ERR_ARG,
         "an unknown halo mode is refused: %s", rw_error_message());
}

/* The tangent on the device (the problems' JVPs, used by Taylor and dot-product tests): J v +
 * (df/dp) dp at y equals the CPU's bit for bit, and on the device <w, J v + f_p dp> equals
 * <J^T w, v> + <f_p^T w, dp> (the device VJP against the device JVP) to 1e-12. */
static void jvp_check(const char *what, rw_problem pc, rw_problem pd, N_Vector yc, int np)
{
  N_Vector vc, vd, wd, jc, jd, gd, yd;
  CHECK(rw_problem_new_state(pc, &vc));
  CHECK(rw_problem_new_state(pc, &jc));
  CHECK(rw_problem_new_state(pd, &vd));
  CHECK(rw_problem_new_state(pd, &wd));
  CHECK(rw_problem_new_state(pd, &jd));
  CHECK(rw_problem_new_state(pd, &gd));
  CHECK(rw_problem_new_state(pd, &yd));
  long n = (long)rw_vec_local_length(vc);
  double *h = malloc(((size_t)n + 1) * sizeof(double));
  for (long i = 0; i < n; i++)
    rw_vec_data(vc)[i] = rw_test_hash01(21, (uint64_t)(rank * 1000003 + i));
  CHECK(rw_vec_from_host(vd, rw_vec_data(vc)));
  CHECK(rw_vec_from_host(yd, rw_vec_data(yc)));
  for (long i = 0; i < n; i++)
    h[i] = rw_test_hash01(22, (uint64_t)(rank * 1000003 + i));
  CHECK(rw_vec_from_host(wd, h));
  double dp[4] = {0.3, -0.2, 0.1, 0.05}, pbar[4] = {0, 0, 0, 0};
  CHECK(rw_problem_jvp(pc, 0.0, yc, vc, dp, jc));
  CHECK(rw_problem_jvp(pd, 0.0, yd, vd, dp, jd));
  long bad = differ(jc, jd);
  N_VConst(0.0, gd);
  CHECK(rw_problem_vjp(pd, 0.0, yd, wd, gd, pbar));
  double lhs = N_VDotProd(wd, jd), rhs = N_VDotProd(gd, vd);
  /* the parameter VJP is this rank's part (the driver sums it over ranks once per sweep) */
  MPI_Allreduce(MPI_IN_PLACE, pbar, np, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int k = 0; k < np; k++)
    rhs += pbar[k] * dp[k];
  /* against the dot products' own rounding scale, ||w|| ||J v||: the sums cancel much */
  double scale = sqrt(N_VDotProd(wd, wd) * N_VDotProd(jd, jd));
  double e = fabs(lhs - rhs) / fmax(scale, 1e-300);
  report(bad == 0 && e <= 1e-13,
         "%s tangent on the device, %d ranks: J v + f_p dp %s the CPU's (%ld entries differ); "
         "<w, J v + f_p dp> = %.15e vs <J^T w, v> + <f_p^T w, dp>: %.1e of ||w|| ||J v||",
         what, size, bad == 0 ? "equals" : "DIFFERS FROM", bad, lhs, e);
  free(h);
  N_Vector *vs[] = {&vc, &jc, &vd, &wd, &jd, &gd, &yd};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    rw_vec_destroy(vs[i]);
}

/* --- 4. Gray-Scott on the device (its grid exchange and stencils as device kernels) ------- */

static double vec_rel(const double *a, const double *b, long n)
{
  double d = 0.0, m = 0.0;
  for (long i = 0; i < n; i++)
    d += (a[i] - b[i]) * (a[i] - b[i]), m += a[i] * a[i];
  return m > 0 ? sqrt(d / m) : sqrt(d);
}

/* Deferred parameter gradients (rw_problem_params_defer / _flush) on the device: the VJP terms
 * into the deferred pbar are held there until the flush and then equal the terms added at once
 * (to the rounding of their order); a VJP into another array is added at once meanwhile; a
 * defer(NULL) drops what is held. */
static void defer_check(const char *what, rw_problem pd, const double *y0)
{
  long P = rw_problem_nparams(pd);
  N_Vector yd, wd, gd;
  CHECK(rw_problem_new_state(pd, &yd));
  CHECK(rw_problem_new_state(pd, &wd));
  CHECK(rw_problem_new_state(pd, &gd));
  long n = (long)rw_problem_local_length(pd);
  double *h = malloc(((size_t)n + 1) * sizeof(double)), *r = malloc((size_t)P * sizeof(double));
  double *now = malloc((size_t)P * sizeof(double)), *held = malloc((size_t)P * sizeof(double));
  double *other = calloc((size_t)P, sizeof(double)), *solo = calloc((size_t)P, sizeof(double));
  CHECK(rw_vec_from_host(yd, y0));
  for (long i = 0; i < n; i++)
    h[i] = rw_test_hash01(34, (uint64_t)(rank * 1000003 + i));
  CHECK(rw_vec_from_host(wd, h));
  for (long k = 0; k < P; k++)
    r[k] = rw_test_hash01(35, (uint64_t)k);
  memcpy(now, r, (size_t)P * sizeof(double));
  memcpy(held, r, (size_t)P * sizeof(double));
  for (int j = 0; j < 3; j++) /* three terms added at once */
    CHECK(rw_problem_vjp(pd, 0.25 + 0.1 * j, yd, wd, gd, now));
  CHECK(rw_problem_vjp(pd, 0.5, yd, wd, gd, solo));
  CHECK(rw_problem_params_defer(pd, held));
  for (int j = 0; j < 3; j++) {
    CHECK(rw_problem_vjp(pd, 0.25 + 0.1 * j, yd, wd, gd, held));
    if (j == 1) CHECK(rw_problem_vjp(pd, 0.5, yd, wd, gd, other));
  }
  int untouched = !memcmp(held, r, (size_t)P * sizeof(double));
  int other_same = !memcmp(other, solo, (size_t)P * sizeof(double));
  CHECK(rw_problem_params_flush(pd));
  CHECK(rw_problem_params_flush(pd)); /* nothing held: adds nothing */
  CHECK(rw_problem_params_defer(pd, NULL));
  double e = vec_rel(now, held, P);
  memcpy(held, r, (size_t)P * sizeof(double));
  CHECK(rw_problem_params_defer(pd, held));
  CHECK(rw_problem_vjp(pd, 0.25, yd, wd, gd, held));
  CHECK(rw_problem_params_defer(pd, NULL)); /* dropped */
  CHECK(rw_problem_params_flush(pd));
  int dropped = !memcmp(held, r, (size_t)P * sizeof(double));
  report(untouched && other_same && e <= 1e-15 && dropped,
         "%s: deferred dJ/dp on the device, %d ranks: held until the flush %s, "
         "then %.1e from the terms added at once; another array's term added at once %s; "
         "defer(NULL) drops what is held %s",
         what, size, untouched ? "yes" : "NO", e, other_same ? "yes" : "NO",
         dropped ? "yes" : "NO");
  free(h), free(r), free(now), free(held), free(other), free(solo);
  rw_vec_destroy(&yd), rw_vec_destroy(&wd), rw_vec_destroy(&gd);
}

static void grayscott_tests(void)
{
  for (int dim = 2; dim <= 3; dim++)
    for (int obj = 0; obj < 2; obj++) {
      rw_gs_config cfg;
      rw_gs_config_default(&cfg);
      cfg.dim = dim;
      cfg.n = dim == 2 ? 24 : 12;
      cfg.objective = obj ? RW_GS_U2 : RW_GS_POINT;
      rw_problem pc, pd;
      CHECK(rw_gs_problem_create(cpu_ctx, &cfg, &pc));
      CHECK(rw_gs_problem_create(dev_ctx, &cfg, &pd));
      N_Vector yc, yd;
      CHECK(rw_problem_new_state(pc, &yc));
      CHECK(rw_problem_new_state(pd, &yd));
      CHECK(rw_gs_initial_state(pc, yc));
      CHECK(rw_gs_initial_state(pd, yd));
      long bad = differ(yc, yd);
      if (obj == 0) jvp_check(dim == 3 ? "Gray-Scott 3D" : "Gray-Scott 2D", pc, pd, yc, 4);
      if (obj == 0) defer_check(dim == 3 ? "Gray-Scott 3D" : "Gray-Scott 2D", pd, rw_vec_data(yc));
      rw_adjoint_options o;
      rw_adjoint_options_default(&o);
      o.t0 = 0.0, o.tf = dim == 2 ? 10.0 : 4.0, o.dt = 0.5;
      for (int mode = 0; mode < 2; mode++) {
        rw_adjoint_options m = o;
        if (mode)
          m.mode = RW_ADJOINT_CHECKPOINT, m.schedule = RW_SCHEDULE_BINOMIAL, m.ram_slots = 3;
        result c, d;
        solve(pc, "rk4", &m, rw_vec_data(yc), &c);
        solve(pd, "rk4", &m, rw_vec_data(yc), &d);
        double ep = 0.0;
        for (int k = 0; k < 4; k++)
          ep = fmax(ep, relerr(c.p[k], d.p[k]));
        double eJ = relerr(c.J, d.J);
        int same = same_fields(&c, &d);
        report(same && bad == 0 && eJ <= 1e-13 && ep <= 1e-13,
               "Gray-Scott %dD %s %s on %d ranks: y0, y(T) and dJ/dy0 %s the CPU run's; J rel "
               "%.1e, dJ/dp max rel %.1e",
               dim, obj ? "u2" : "point", mode ? "binomial 3 slots" : "store", size,
               same && bad == 0 ? "equal" : "DIFFER FROM", eJ, ep);
        result_free(&c), result_free(&d);
      }
      /* space-time white noise (issue 12) on the device: the normals (both species, or v only
       * in 3-D) and the diffusion coefficients as device bodies, Euler-Maruyama and stochastic
       * Heun */
      for (int k = 0; k < 2; k++) {
        rw_gs_config nc = cfg;
        nc.noise = dim == 3 ? RW_GS_NOISE_V : RW_GS_NOISE_UV;
        rw_problem nq[2];
        CHECK(rw_gs_problem_create(cpu_ctx, &nc, &nq[0]));
        CHECK(rw_gs_problem_create(dev_ctx, &nc, &nq[1]));
        for (int q = 0; q < 2; q++)
          CHECK(rw_problem_set_noise(nq[q], 5, 0.01, 1));
        static const char *sdes[] = {"em", "sheun"};
        rw_adjoint_options m = o;
        m.mode = RW_ADJOINT_CHECKPOINT, m.schedule = RW_SCHEDULE_BINOMIAL, m.ram_slots = 3;
        result c, d;
        solve(nq[0], sdes[k], &m, rw_vec_data(yc), &c);
        solve(nq[1], sdes[k], &m, rw_vec_data(yc), &d);
        double ep = 0.0;
        for (int q = 0; q < 4; q++)
          ep = fmax(ep, relerr(c.p[q], d.p[q]));
        double eJ = relerr(c.J, d.J);
        int same = same_fields(&c, &d);
        report(same && eJ <= 1e-13 && ep <= 1e-13,
               "Gray-Scott %dD %s with noise on %s, %s binomial 3 slots on %d ranks: y(T) and "
               "dJ/dy0 %s the CPU run's; J rel %.1e, dJ/dp max rel %.1e",
               dim, obj ? "u2" : "point", dim == 3 ? "v" : "u and v", sdes[k], size,
               same ? "equal" : "DIFFER FROM", eJ, ep);
        result_free(&c), result_free(&d);
        rw_problem_destroy(&nq[0]);
        rw_problem_destroy(&nq[1]);
      }
      rw_vec_destroy(&yc);
      rw_vec_destroy(&yd);
      rw_problem_destroy(&pc);
      rw_problem_destroy(&pd);
    }
}

/* --- 5. Heat on the device (conductivity field, sensors, Dirichlet, periodic and Neumann
 * sides) ------------------------------------------------------------------------------------ */

static void heat_tests(void)
{
  static const char *bcn[] = {"Dirichlet", "periodic", "Neumann"};
  for (int dim = 2; dim <= 3; dim++)
    for (int bc = 0; bc < 3; bc++) {
      rw_heat_config cfg;
      memset(&cfg, 0, sizeof cfg);
      cfg.dim = dim;
      for (int d = 0; d < 3; d++)
        cfg.n[d] = dim == 2 ? 20 + d : 10 + d, cfg.length[d] = 1.0, cfg.source_center[d] = 0.4;
      cfg.bc = bc == 2 ? RW_BC_NEUMANN : bc ? RW_BC_PERIODIC : RW_BC_DIRICHLET;
      cfg.boundary_value = bc ? 0.0 : 0.3;
      cfg.source_width = 0.15;
      cfg.nsensors = 5;
      rw_problem pc, pd;
      CHECK(rw_heat_problem_create(cpu_ctx, &cfg, &pc));
      CHECK(rw_heat_problem_create(dev_ctx, &cfg, &pd));
      const double kc[3] = {0.6, 0.4, 0.5}, uc[3] = {0.5, 0.5, 0.5};
      N_Vector yc, yd;
      CHECK(rw_problem_new_state(pc, &yc));
      CHECK(rw_problem_new_state(pd, &yd));
      double kmin[2], kmax[2];
      rw_problem probs[2] = {pc, pd};
      N_Vector ys[2] = {yc, yd};
      for (int q = 0; q < 2; q++) {
        CHECK(rw_heat_fill_gaussian(probs[q], rw_problem_field(probs[q]), 0.5, 0.8, kc, 0.2));
        CHECK(rw_heat_fill_gaussian(probs[q], ys[q], 0.1, 1.0, uc, 0.25));
        CHECK(rw_heat_kappa_range(probs[q], &kmin[q], &kmax[q]));
        rw_problem_params(probs[q])[0] = 0.7;
        const double times[2] = {0.0, 1.0};
        double vals[10];
        for (int k = 0; k < 10; k++)
          vals[k] = 0.05 * k;
        CHECK(rw_heat_set_data(probs[q], 2, times, vals));
      }
      long bad = differ(yc, yd) + differ(rw_problem_field(pc), rw_problem_field(pd)) +
                 (kmin[0] != kmin[1]) + (kmax[0] != kmax[1]);
      if (bc == 0) defer_check(dim == 3 ? "heat 3D" : "heat 2D", pd, rw_vec_data(yc));
      rw_adjoint_options o;
      rw_adjoint_options_default(&o);
      o.t0 = 0.0, o.dt = 0.9 * rw_heat_stability_limit(pc, kmax[0]), o.tf = 12.0 * o.dt;
      for (int mode = 0; mode < 2; mode++) {
        rw_adjoint_options m = o;
        if (mode)
          m.mode = RW_ADJOINT_CHECKPOINT, m.schedule = RW_SCHEDULE_BINOMIAL, m.ram_slots = 3;
        result c, d;
        solve(pc, "rk4", &m, rw_vec_data(yc), &c);
        solve(pd, "rk4", &m, rw_vec_data(yc), &d);
        long fbad = differ(rw_problem_field_adjoint(pc), rw_problem_field_adjoint(pd));
        double eJ = relerr(c.J, d.J), eq = relerr(c.p[0], d.p[0]);
        int same = same_fields(&c, &d);
        report(same && bad == 0 && fbad == 0 && eJ == 0.0 && eq <= 1e-13,
               "heat %dD %s %s on %d ranks: fields, y(T), dJ/dy0 and dJ/dkappa %s the CPU run's "
               "(%ld entries differ); J rel %.1e, dJ/dsource rel %.1e",
               dim, bcn[bc], mode ? "binomial 3 slots" : "store", size,
               same && bad == 0 && fbad == 0 ? "equal" : "DIFFER FROM", bad + fbad, eJ, eq);
        result_free(&c), result_free(&d);
      }
      /* space-time white noise (issue 12) on the device: the normals and the diffusion
       * coefficients (half cells at Neumann sides) as device bodies, Euler-Maruyama and
       * stochastic Heun through the heat's gather VJPs */
      for (int q = 0; q < 2; q++)
        CHECK(rw_problem_set_noise(probs[q], 11, 0.05, 1));
      static const char *sdes[] = {"em", "sheun"};
      for (int k = 0; k < 2; k++) {
        rw_adjoint_options m = o;
        m.mode = RW_ADJOINT_CHECKPOINT, m.schedule = RW_SCHEDULE_BINOMIAL, m.ram_slots = 3;
        result c, d;
        solve(pc, sdes[k], &m, rw_vec_data(yc), &c);
        solve(pd, sdes[k], &m, rw_vec_data(yc), &d);
        long fbad = differ(rw_problem_field_adjoint(pc), rw_problem_field_adjoint(pd));
        double eJ = relerr(c.J, d.J), eq = relerr(c.p[0], d.p[0]);
        int same = same_fields(&c, &d);
        report(same && fbad == 0 && eJ == 0.0 && eq <= 1e-13,
               "heat %dD %s with noise, %s binomial 3 slots on %d ranks: y(T), dJ/dy0 and "
               "dJ/dkappa %s the CPU run's (%ld entries differ); J rel %.1e, dJ/dsource rel %.1e",
               dim, bcn[bc], sdes[k], size, same && fbad == 0 ? "equal" : "DIFFER FROM", fbad, eJ,
               eq);
        result_free(&c), result_free(&d);
      }
      /* the plain VJPs called directly (vjp_y, vjp_p with vjp_field; the CPU scatters, the
       * device runs the fused stage's gathers with one input) against the CPU's, w = u */
      {
        N_Vector oc, od, wd;
        CHECK(rw_problem_new_state(pc, &oc));
        CHECK(rw_problem_new_state(pd, &od));
        CHECK(rw_problem_new_state(pd, &wd));
        CHECK(rw_vec_from_host(wd, rw_vec_data(yc)));
        long n = (long)rw_vec_local_length(yc);
        double *h = malloc(((size_t)n + 1) * sizeof(double));
        double *fh =
            malloc(((size_t)rw_vec_local_length(rw_problem_field(pc)) + 1) * sizeof(double));
        double ep = 0.0, py[2][2] = {{0.3, 0.0}, {0.3, 0.0}}, ey = 0.0, ef = 0.0;
        for (int rep = 0; rep < 2; rep++) { /* twice: the outputs are added to */
          N_VConst(rep ? 0.5 : 0.0, oc);
          N_VConst(rep ? 0.5 : 0.0, od);
          N_VConst(0.0, rw_problem_field_adjoint(pc));
          N_VConst(0.0, rw_problem_field_adjoint(pd));
          py[0][0] = py[1][0] = 0.3;
          CHECK(rw_problem_vjp_y(pc, 0.1, yc, yc, oc));
          CHECK(rw_problem_vjp_p(pc, 0.1, yc, yc, py[0]));
          CHECK(rw_problem_vjp_y(pd, 0.1, yd, wd, od));
          CHECK(rw_problem_vjp_p(pd, 0.1, yd, wd, py[1]));
          CHECK(rw_vec_to_host(od, h));
          ey = fmax(ey, field_rel(rw_vec_data(oc), h, n));
          CHECK(rw_vec_to_host(rw_problem_field_adjoint(pd), fh));
          ef = fmax(ef, field_rel(rw_vec_data(rw_problem_field_adjoint(pc)), fh,
                                  (long)rw_vec_local_length(rw_problem_field(pc))));
          ep = fmax(ep, relerr(py[0][0], py[1][0]));
        }
        report(ey <= 1e-13 && ef <= 1e-13 && ep <= 1e-13,
               "heat %dD %s plain VJP on the device (gathers) vs the CPU's scatters, %d ranks: "
               "(df/du)^T w %.1e, (df/dkappa)^T w %.1e of their maxima, dJ/dsource rel %.1e",
               dim, bcn[bc], size, ey, ef, ep);
        free(h), free(fh);
        rw_vec_destroy(&oc), rw_vec_destroy(&od), rw_vec_destroy(&wd);
      }
      rw_vec_destroy(&yc);
      rw_vec_destroy(&yd);
      rw_problem_destroy(&pc);
      rw_problem_destroy(&pd);
    }
}

/* --- 5b. Burgers on the device ------------------------------------------------------------- */

static void burgers_tests(void)
{
  rw_burgers_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.n[0] = 24, cfg.n[1] = 20;
  cfg.hi[0] = cfg.hi[1] = 1.0;
  cfg.nu = 0.01, cfg.offset = 0.2, cfg.amplitude = 0.5, cfg.width = 0.15;
  cfg.center[0] = 0.4, cfg.center[1] = 0.5, cfg.shift[0] = 0.1, cfg.shift[1] = -0.05;
  rw_problem pc, pd;
  CHECK(rw_burgers_problem_create(cpu_ctx, &cfg, &pc));
  CHECK(rw_burgers_problem_create(dev_ctx, &cfg, &pd));
  N_Vector yc, yd;
  CHECK(rw_problem_new_state(pc, &yc));
  CHECK(rw_problem_new_state(pd, &yd));
  CHECK(rw_burgers_initial_state(pc, yc));
  CHECK(rw_burgers_initial_state(pd, yd));
  long bad = differ(yc, yd) + differ(rw_burgers_target(pc), rw_burgers_target(pd));
  jvp_check("Burgers", pc, pd, yc, 1);
  defer_check("Burgers", pd, rw_vec_data(yc));
  rw_adjoint_options o;
  rw_adjoint_options_default(&o);
  o.t0 = 0.0, o.tf = 0.2, o.dt = 0.01;
  for (int mode = 0; mode < 2; mode++) {
    rw_adjoint_options m = o;
    if (mode) m.mode = RW_ADJOINT_CHECKPOINT, m.schedule = RW_SCHEDULE_BINOMIAL, m.ram_slots = 3;
    result c, d;
    solve(pc, "rk4", &m, rw_vec_data(yc), &c);
    solve(pd, "rk4", &m, rw_vec_data(yc), &d);
    double eJ = relerr(c.J, d.J), en = relerr(c.p[0], d.p[0]);
    int same = same_fields(&c, &d);
    report(same && bad == 0 && eJ <= 1e-13 && en <= 1e-13,
           "Burgers %s on %d ranks: y0, target, y(T) and dJ/dy0 %s the CPU run's; J rel %.1e, "
           "dJ/dnu rel %.1e",
           mode ? "binomial 3 slots" : "store", size, same && bad == 0 ? "equal" : "DIFFER FROM",
           eJ, en);
    result_free(&c), result_free(&d);
  }
  rw_vec_destroy(&yc);
  rw_vec_destroy(&yd);
  rw_problem_destroy(&pc);
  rw_problem_destroy(&pd);
}

/* --- 5e. ODE and SDE ensembles on the device ------------------------------------------------ */

static void ensemble_tests(void)
{
  static const char *models[] = {"vanderpol", "lotkavolterra", "ou", "gbm"};
  static const char *steppers[] = {"rk4", "rk38", "em", "sheun"};
  const long E = 4103 + 2 * size; /* one rank's terms cross the reduction's chunk */
  for (int q = 0; q < 4; q++) {
    rw_problem pc, pd;
    int sde = q >= 2;
    if (sde) {
      rw_sde_config c = {models[q], E, 0.6, 1e-4, 0.3, 1.0, 0.25};
      CHECK(rw_sde_problem_create(cpu_ctx, &c, &pc));
      CHECK(rw_sde_problem_create(dev_ctx, &c, &pd));
      CHECK(rw_problem_set_noise(pc, 17, 1.0, 1));
      CHECK(rw_problem_set_noise(pd, 17, 1.0, 1));
    } else {
      rw_ode_config c = {models[q], E, {1.2, 0.7}, 1e-4, {0.1, -0.2}, 1.0, 0.25};
      CHECK(rw_ode_problem_create(cpu_ctx, &c, &pc));
      CHECK(rw_ode_problem_create(dev_ctx, &c, &pd));
    }
    int np = rw_problem_nparams(pc);
    N_Vector yc, yd;
    CHECK(rw_problem_new_state(pc, &yc));
    CHECK(rw_problem_new_state(pd, &yd));
    CHECK(sde ? rw_sde_initial_state(pc, yc) : rw_ode_initial_state(pc, yc));
    CHECK(sde ? rw_sde_initial_state(pd, yd) : rw_ode_initial_state(pd, yd));
    long bad = differ(yc, yd);
    jvp_check(models[q], pc, pd, yc, np);
    defer_check(models[q], pd, rw_vec_data(yc));
    rw_adjoint_options o;
    rw_adjoint_options_default(&o);
    o.t0 = 0.0, o.tf = 0.5, o.dt = 0.02;
    for (int mode = 0; mode < 2; mode++) {
      rw_adjoint_options m = o;
      if (mode) m.mode = RW_ADJOINT_CHECKPOINT, m.schedule = RW_SCHEDULE_BINOMIAL, m.ram_slots = 3;
      result c, d;
      solve(pc, steppers[q], &m, rw_vec_data(yc), &c);
      solve(pd, steppers[q], &m, rw_vec_data(yc), &d);
      double eJ = relerr(c.J, d.J), ep = 0.0;
      for (int k = 0; k < np; k++)
        ep = fmax(ep, relerr(c.p[k], d.p[k]));
      int same = same_fields(&c, &d);
      report(same && bad == 0 && eJ <= 1e-13 && ep <= 1e-13,
             "%s ensemble (%ld members, %s) %s on %d ranks: y0, y(T) and dJ/dy0 %s the CPU "
             "run's; J rel %.1e, dJ/dp rel %.1e (J %.6e)",
             models[q], E, steppers[q], mode ? "binomial 3 slots" : "store", size,
             same && bad == 0 ? "equal" : "DIFFER FROM", eJ, ep, c.J);
      result_free(&c), result_free(&d);
    }
    rw_vec_destroy(&yc);
    rw_vec_destroy(&yd);
    rw_problem_destroy(&pc);
    rw_problem_destroy(&pd);
  }
}

/* --- 5d. The neural ODE on the device -------------------------------------------------------- */

typedef struct {
  double J, *th, *y, *g;
  long n, P;
} node_result;

static void node_solve(rw_problem prob, const char *tab, const rw_adjoint_options *o,
                       const double *y0, node_result *r)
{
  rw_stepper st;
  N_Vector y, g;
  CHECK(rw_stepper_create_erk(prob, rw_tableau_find(tab), &st));
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_problem_new_state(prob, &g));
  r->n = (long)rw_vec_local_length(y);
  r->P = rw_problem_nparams(prob);
  r->y = malloc(((size_t)r->n + 1) * sizeof(double));
  r->g = malloc(((size_t)r->n + 1) * sizeof(double));
  r->th = calloc((size_t)r->P, sizeof(double));
  CHECK(rw_vec_from_host(y, y0));
  CHECK(rw_adjoint_solve(prob, st, o, y, &r->J, r->th, g, NULL));
  CHECK(rw_vec_to_host(y, r->y));
  CHECK(rw_vec_to_host(g, r->g));
  rw_vec_destroy(&y);
  rw_vec_destroy(&g);
  rw_stepper_destroy(&st);
}

static void node_result_free(node_result *r) { free(r->y), free(r->g), free(r->th); }

static int node_same(const node_result *a, const node_result *b)
{
  return a->n == b->n && a->P == b->P && memcmp(&a->J, &b->J, sizeof a->J) == 0 &&
         memcmp(a->y, b->y, (size_t)a->n * sizeof(double)) == 0 &&
         memcmp(a->g, b->g, (size_t)a->n * sizeof(double)) == 0 &&
         memcmp(a->th, b->th, (size_t)a->P * sizeof(double)) == 0;
}

/* ||a - b||_2 / ||a||_2 of a replicated vector (dJ/dtheta is summed over the ranks). */

/* The neural problem's tangent on the device against its VJP: <w, J v + f_theta dtheta> equals
 * <J^T w, v> + <f_theta^T w, dtheta>; and the device tangent agrees with the CPU's. */
static void node_jvp_check(const char *what, rw_problem pc, rw_problem pd, const double *y0)
{
  long P = rw_problem_nparams(pd);
  N_Vector yc, vc, jc, yd, vd, wd, jd, gd;
  CHECK(rw_problem_new_state(pc, &yc));
  CHECK(rw_problem_new_state(pc, &vc));
  CHECK(rw_problem_new_state(pc, &jc));
  N_Vector *dv[] = {&yd, &vd, &wd, &jd, &gd};
  for (int k = 0; k < 5; k++)
    CHECK(rw_problem_new_state(pd, dv[k]));
  long n = (long)rw_vec_local_length(yc);
  double *h = malloc(((size_t)n + 1) * sizeof(double)), *dth = malloc((size_t)P * sizeof(double));
  double *pbar = calloc((size_t)P, sizeof(double));
  memcpy(rw_vec_data(yc), y0, (size_t)n * sizeof(double));
  CHECK(rw_vec_from_host(yd, y0));
  for (long i = 0; i < n; i++)
    rw_vec_data(vc)[i] = rw_test_hash01(31, (uint64_t)(rank * 1000003 + i));
  CHECK(rw_vec_from_host(vd, rw_vec_data(vc)));
  for (long i = 0; i < n; i++)
    h[i] = rw_test_hash01(32, (uint64_t)(rank * 1000003 + i));
  CHECK(rw_vec_from_host(wd, h));
  for (long k = 0; k < P; k++)
    dth[k] = 0.1 * rw_test_hash01(33, (uint64_t)k);
  CHECK(rw_problem_jvp(pc, 0.25, yc, vc, dth, jc));
  CHECK(rw_problem_jvp(pd, 0.25, yd, vd, dth, jd));
  double *jh = malloc(((size_t)n + 1) * sizeof(double));
  CHECK(rw_vec_to_host(jd, jh));
  double ecpu = field_rel(rw_vec_data(jc), jh, n);
  N_VConst(0.0, gd);
  CHECK(rw_problem_vjp(pd, 0.25, yd, wd, gd, pbar));
  double lhs = N_VDotProd(wd, jd), rhs = N_VDotProd(gd, vd);
  MPI_Allreduce(MPI_IN_PLACE, pbar, (int)P, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (long k = 0; k < P; k++)
    rhs += pbar[k] * dth[k];
  double scale = sqrt(N_VDotProd(wd, wd) * N_VDotProd(jd, jd));
  double e = fabs(lhs - rhs) / fmax(scale, 1e-300);
  report(ecpu <= 1e-13 && e <= 1e-13,
         "neural ODE (%s) tangent on the device, %d ranks: J v + f_theta dtheta %.1e of its "
         "maximum from the CPU's; <w, J v + f_theta dtheta> vs <J^T w, v> + <f_theta^T w, "
         "dtheta>: %.1e of ||w|| ||J v||",
         what, size, ecpu, e);
  free(h), free(dth), free(pbar), free(jh);
  rw_vec_destroy(&yc), rw_vec_destroy(&vc), rw_vec_destroy(&jc);
  for (int k = 0; k < 5; k++)
    rw_vec_destroy(dv[k]);
}

static void node_tests(void)
{
  static const struct {
    const char *what;
    int L, w[5], act, time_input;
    double damping;
  } cases[] = {
      {"2-16-16-2 tanh, damping 0.1", 3, {2, 16, 16, 2}, RW_ACT_TANH, 0, 0.1},
      {"3-12-2 softplus, time input", 2, {3, 12, 2}, RW_ACT_SOFTPLUS, 1, 0.0},
      {"2-8-8-8-2 relu", 4, {2, 8, 8, 8, 2}, RW_ACT_RELU, 0, 0.0},
  };
  const long B = 7;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    rw_mlp_arch a;
    memset(&a, 0, sizeof a);
    a.nlayers = cases[c].L;
    for (int l = 0; l <= a.nlayers; l++)
      a.widths[l] = cases[c].w[l];
    a.activation = (rw_activation)cases[c].act;
    a.time_input = cases[c].time_input;
    a.damping = cases[c].damping;
    rw_problem pc, pd;
    CHECK(rw_neuralode_create(cpu_ctx, &a, B, &pc));
    CHECK(rw_neuralode_create(dev_ctx, &a, B, &pd));
    long P = rw_problem_nparams(pc), first = 0, cnt = 0;
    rw_mlp_init_theta(&a, 7 + c, rw_problem_params(pc));
    for (long k = 0; k < P; k++) /* nonzero biases too */
      rw_problem_params(pc)[k] += 0.05 * rw_test_hash01(40 + c, (uint64_t)k);
    memcpy(rw_problem_params(pd), rw_problem_params(pc), (size_t)P * sizeof(double));
    rw_neuralode_local_batch(pc, &first, &cnt);
    int D = rw_mlp_dim(&a);
    double *y0 = malloc(((size_t)(cnt * D) + 1) * sizeof(double));
    for (long i = 0; i < cnt * D; i++) {
      y0[i] = rw_test_hash01(50 + c, (uint64_t)(first * D + i));
      rw_neuralode_targets(pc)[i] = rw_neuralode_targets(pd)[i] =
          0.5 * rw_test_hash01(60 + c, (uint64_t)(first * D + i));
    }
    node_jvp_check(cases[c].what, pc, pd, y0);
    char nm[96];
    snprintf(nm, sizeof nm, "neural ODE (%s)", cases[c].what);
    defer_check(nm, pd, y0);
    rw_adjoint_options o;
    rw_adjoint_options_default(&o);
    o.t0 = 0.0, o.tf = 1.0, o.dt = 0.05;
    node_result store = {0};
    for (int mode = 0; mode < 3; mode++) {
      rw_adjoint_options m = o;
      const char *tab = "rk4";
      if (mode == 1)
        m.mode = RW_ADJOINT_CHECKPOINT, m.schedule = RW_SCHEDULE_BINOMIAL, m.ram_slots = 3;
      if (mode == 2)
        tab = "dopri5", m.adaptive = 1, m.rtol = m.atol = 1e-8, m.mode = RW_ADJOINT_CHECKPOINT,
        m.schedule = RW_SCHEDULE_ONLINE, m.ram_slots = 4;
      node_result cr, dr, d2;
      node_solve(pc, tab, &m, y0, &cr);
      node_solve(pd, tab, &m, y0, &dr);
      node_solve(pd, tab, &m, y0, &d2);
      double eJ = relerr(cr.J, dr.J), ey = field_rel(cr.y, dr.y, cr.n),
             eg = field_rel(cr.g, dr.g, cr.n), et = vec_rel(cr.th, dr.th, P);
      /* adaptive: the products' last bits may move a step size (a rejected step's error
       * estimate), so the device run is held to the tolerance the solve keeps */
      double tol = mode == 2 ? 1e-9 : 1e-13;
      int rep = node_same(&dr, &d2), vs = mode == 1 ? node_same(&store, &dr) : 1;
      report(eJ <= tol && ey <= tol && eg <= tol && et <= tol && rep && vs,
             "neural ODE %s on %d ranks, %s: J rel %.1e, y(T) %.1e, dJ/dy0 %.1e, dJ/dtheta %.1e "
             "from the CPU run (at most %.0e); a second device run %s%s",
             cases[c].what, size,
             mode == 0   ? "RK4 store"
             : mode == 1 ? "RK4 binomial 3 slots"
                         : "dopri5 online 4 slots",
             eJ, ey, eg, et, tol, rep ? "repeats bit for bit" : "DIFFERS",
             mode == 1 ? (vs ? "; equals store bit for bit" : "; DIFFERS FROM STORE") : "");
      node_result_free(&cr), node_result_free(&d2);
      if (mode == 0)
        store = dr;
      else
        node_result_free(&dr);
    }
    node_result_free(&store);
    free(y0);
    rw_problem_destroy(&pc);
    rw_problem_destroy(&pd);
  }
}

/* --- 5c. Wave and the leapfrog on the device ------------------------------------------------ */

static int wave_record(void *prob, long n, double t, N_Vector y)
{
  (void)t;
  return rw_wave_record_traces(prob, n, y);
}

typedef struct {
  rw_problem prob;
  double *traces;
  int nrec;
  long ns;
} wave_setup;

/* A wave problem on ctx whose traces are recorded from a velocity anomaly; the field is then
 * reset to the background (the inversion's starting model). */
static wave_setup wave_make(rw_context ctx)
{
  static const double src[2] = {0.3, 0.5}, rec[6] = {0.7, 0.3, 0.7, 0.5, 0.72, 0.66};
  rw_wave_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.n[0] = 40, cfg.n[1] = 36, cfg.hi[0] = cfg.hi[1] = 1.0;
  cfg.velocity = 1.0, cfg.amplitude = 1.0, cfg.freq = 6.0;
  cfg.nsrc = 1, cfg.src = src, cfg.nrec = 3, cfg.rec = rec;
  cfg.dt = 0.004, cfg.nsteps = 60;
  wave_setup w;
  CHECK(rw_wave_problem_create(ctx, &cfg, &w.prob));
  rw_stepper st;
  CHECK(rw_stepper_create_leapfrog(w.prob, &st));
  N_Vector y, c = rw_problem_field(w.prob);
  const double center[2] = {0.5, 0.45};
  CHECK(rw_wave_velocity_model(w.prob, 1.0, 0.2, center, 0.1, c));
  CHECK(rw_wave_check_cfl(w.prob, c, cfg.dt, "true model"));
  CHECK(rw_problem_new_state(w.prob, &y));
  rw_adjoint_options o;
  rw_adjoint_options_default(&o);
  o.tf = (double)cfg.nsteps * cfg.dt, o.dt = cfg.dt, o.monitor = wave_record,
  o.monitor_ctx = w.prob;
  double J;
  CHECK(rw_forward_solve(w.prob, st, &o, y, &J, NULL));
  CHECK(rw_wave_finish_traces(w.prob));
  N_VConst(1.0, c);
  w.traces = rw_wave_traces(w.prob, &w.nrec, &w.ns);
  rw_vec_destroy(&y);
  rw_stepper_destroy(&st);
  return w;
}

static void wave_solve(rw_problem prob, int exact, const rw_adjoint_options *o, result *r,
                       N_Vector dc_host_like, double *dc)
{
  rw_stepper st;
  N_Vector y, g;
  if (exact)
    CHECK(rw_stepper_create_leapfrog_exact(prob, 4.0, &st));
  else
    CHECK(rw_stepper_create_leapfrog(prob, &st));
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_problem_new_state(prob, &g));
  r->n = (long)rw_vec_local_length(y);
  r->y = malloc(((size_t)r->n + 1) * sizeof(double));
  r->g = malloc(((size_t)r->n + 1) * sizeof(double));
  memset(r->p, 0, sizeof r->p);
  CHECK(rw_adjoint_solve(prob, st, o, y, &r->J, r->p, g, NULL));
  CHECK(rw_vec_to_host(y, r->y));
  CHECK(rw_vec_to_host(g, r->g));
  CHECK(rw_vec_to_host(rw_problem_field_adjoint(prob), dc));
  (void)dc_host_like;
  rw_vec_destroy(&y);
  rw_vec_destroy(&g);
  rw_stepper_destroy(&st);
}

static void wave_tests(void)
{
  wave_setup c = wave_make(cpu_ctx), d = wave_make(dev_ctx);
  size_t nt = (size_t)c.nrec * (size_t)c.ns;
  int traces_same = memcmp(c.traces, d.traces, nt * sizeof(double)) == 0;
  report(traces_same,
         "wave on %d ranks: the recorded traces (%d receivers x %ld samples) %s the "
         "CPU run's",
         size, c.nrec, c.ns, traces_same ? "equal" : "DIFFER FROM");
  long nf = (long)rw_vec_local_length(rw_problem_field(c.prob));
  double *fc = malloc(((size_t)nf + 1) * sizeof(double)),
         *fd = malloc(((size_t)nf + 1) * sizeof(double));
  const char *names[3] = {"store", "binomial 3 slots", "reversible (exact leapfrog)"};
  for (int mode = 0; mode < 3; mode++) {
    rw_adjoint_options o;
    rw_adjoint_options_default(&o);
    o.tf = 60 * 0.004, o.dt = 0.004;
    if (mode == 1)
      o.mode = RW_ADJOINT_CHECKPOINT, o.schedule = RW_SCHEDULE_BINOMIAL, o.ram_slots = 3;
    if (mode == 2) o.mode = RW_ADJOINT_REVERSIBLE, o.ram_slots = 4;
    result rc, rd;
    wave_solve(c.prob, mode == 2, &o, &rc, NULL, fc);
    wave_solve(d.prob, mode == 2, &o, &rd, NULL, fd);
    int same = same_fields(&rc, &rd) && rc.J == rd.J && rc.p[0] == rd.p[0] &&
               memcmp(fc, fd, (size_t)nf * sizeof(double)) == 0;
    report(same,
           "wave, leapfrog %s on %d ranks: y(T), dJ/dy0, dJ/dvelocity, J and dJ/damplitude "
           "%s the CPU run's",
           names[mode], size, same ? "equal" : "DIFFER FROM");
    result_free(&rc), result_free(&rd);
  }
  free(fc), free(fd);
  rw_problem_destroy(&c.prob);
  rw_problem_destroy(&d.prob);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *kind = argc > 1 ? argv[1] : "emulated";
  rw_device_kind k = strcmp(kind, "cuda") == 0 ? RW_DEVICE_CUDA : RW_DEVICE_EMULATED;
  CHECK(rw_context_create(MPI_COMM_WORLD, &cpu_ctx));
  CHECK(rw_context_create(MPI_COMM_WORLD, &dev_ctx));
  rw_device dev = NULL, emu = NULL;
  int ierr = rw_device_create(dev_ctx, k, &dev), anyerr = 0;
  MPI_Allreduce(&ierr, &anyerr, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (anyerr) {
    if (rank == 0) printf("SKIP: no %s device: %s\n", kind, rw_error_message());
    rw_device_destroy(&dev);
    rw_context_destroy(&dev_ctx);
    rw_context_destroy(&cpu_ctx);
    MPI_Finalize();
    return 77;
  }
  if (k == RW_DEVICE_CUDA) CHECK(rw_device_create(dev_ctx, RW_DEVICE_EMULATED, &emu));
  rw_context_set_device(dev_ctx, dev);
  if (rank == 0) printf("device: %s\n", rw_device_name(dev));

  op_tests(dev, emu);
  if (k == RW_DEVICE_EMULATED) guard_tests(dev);
  host_store_tests();
  vector_problem_tests();
  grid_tests();
  mpi_mode_tests(dev);
  grayscott_tests();
  heat_tests();
  burgers_tests();
  ensemble_tests();
  wave_tests();
  node_tests();

  size_t left = rw_device_bytes(dev), peak = rw_device_peak_bytes(dev);
  report(left == 0, "device memory on %d ranks: %zu bytes held after the tests (peak %zu)", size,
         left, peak);
  rw_device_destroy(&emu);
  rw_device_destroy(&dev);
  rw_context_destroy(&dev_ctx);
  rw_context_destroy(&cpu_ctx);
  MPI_Finalize();
  return fails ? 1 : 0;
}
