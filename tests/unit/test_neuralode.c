/* The neural-ODE problem (rw_neuralode.h):
 *  - the vectorised tanh against libm's, to 4.5e-16 absolute (4 units in the last place of
 *    1) and 1e-15 relative, NaN kept;
 *  - dot-product tests of the VJPs against the JVP (to rounding) and against central
 *    differences of the MLP (smooth activations), for several architectures (1 to 3 layers,
 *    time input, damping, every activation);
 *  - Taylor remainders of the gradient of the loss through 3/8-rule steps, in theta and y0:
 *    second order;
 *  - store mode, stored stages and binomial checkpointing give the same bits (the cache of
 *    activations is exact), and a change of theta invalidates the cache;
 *  - two BLAS threads give the one-thread gradient bit for bit on layers up to 128 x 128 (they
 *    stay on the one-thread small-product kernels) and to 1e-12 on a 160-wide layer (OpenBLAS's
 *    threaded products);
 *  - the reference-format files (rw_neuralode_io.h): a non-finite weight is refused at load
 *    with its index, matrix entry and layer, a non-finite y0 or target with the array's name,
 *    a problem header out of range with the allowed range; rw_mlp_load and
 *    rw_node_problem_load give what the readers give. */
#include "../solvers/rw_smallgemm.h"
#include "rewind/rw_adjoint.h"
#include "rewind/rw_blas.h"
#include "rewind/rw_neuralode.h"
#include "rewind/rw_neuralode_io.h"
#include "rewind/rw_sde.h"
#include "rw_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(neuralode, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

static double urand(unsigned *s)
{
  *s = *s * 1103515245u + 12345u;
  return ((double)((*s >> 8) & 0xffffff) / (double)0x1000000) * 2.0 - 1.0;
}

static void fill(double *d, long n, unsigned *s, double scale)
{
  for (long i = 0; i < n; i++)
    d[i] = scale * urand(s);
}

Test(neuralode, tanh_matches_libm)
{
  enum { N = 200000 };
  static double x[N], y[N];
  unsigned s = 3;
  for (long i = 0; i < N; i++) {
    double m = pow(10.0, -20.0 + 22.0 * (0.5 + 0.5 * urand(&s))); /* 1e-20 .. 100 */
    x[i] = (i % 3 == 0) ? 60.0 * urand(&s) : (i % 2 ? m : -m);
  }
  x[0] = 0.0, x[1] = -0.0, x[2] = 1e-310, x[3] = 800.0, x[4] = -INFINITY, x[5] = 0.25;
  rw_tanh_v(x, y, N);
  double amax = 0.0, rmax = 0.0;
  for (long i = 0; i < N; i++) {
    double r = tanh(x[i]), d = fabs(y[i] - r);
    amax = fmax(amax, d);
    if (r != 0.0) rmax = fmax(rmax, d / fabs(r));
    cr_assert(signbit(y[i]) == signbit(r), "tanh(%.17g): sign of %.17g", x[i], y[i]);
  }
  cr_assert(amax <= 4.5e-16 && rmax <= 1e-15, "tanh: max abs error %.3g, max rel error %.3g", amax,
            rmax);
  double nan[3] = {NAN, 1.0, -NAN}, out[3];
  rw_tanh_v(nan, out, 3);
  cr_assert(isnan(out[0]) && isnan(out[2]) && fabs(out[1] - tanh(1.0)) <= 4.5e-16,
            "tanh must keep NaN (and compute its neighbours)");
  /* in place */
  memcpy(y, x, sizeof x);
  rw_tanh_v(y, y, N);
  for (long i = 0; i < N; i += 997)
    cr_assert(fabs(y[i] - tanh(x[i])) <= 4.5e-16);
}

typedef struct {
  const char *name;
  rw_mlp_arch a;
  long batch;
  int smooth; /* finite differences apply */
} arch_case;

static const arch_case cases[] = {
    {"2-16-16-2 tanh", {3, {2, 16, 16, 2}, RW_ACT_TANH, 0, 0.0}, 7, 1},
    {"3-8-2 softplus, time input, damping", {2, {3, 8, 2}, RW_ACT_SOFTPLUS, 1, 0.3}, 5, 1},
    {"3-3 identity", {1, {3, 3}, RW_ACT_IDENTITY, 0, 0.1}, 4, 1},
    {"2-8-8-8-2 relu", {4, {2, 8, 8, 8, 2}, RW_ACT_RELU, 0, 0.0}, 6, 0},
    /* the CPU's row blocks (64 forward, 32 in the VJP) with a partial last block, 4-row dot
     * tiles with a row left over, and dot products whose length is not a multiple of 8 */
    {"3-40-33-2 tanh, time input, damping, batch 77",
     {3, {3, 40, 33, 2}, RW_ACT_TANH, 1, 0.2},
     77,
     1},
};

static rw_problem make(rw_context ctx, const arch_case *c, unsigned *s)
{
  rw_problem prob;
  RW_TEST_OK(rw_neuralode_create(ctx, &c->a, c->batch, &prob));
  long P = rw_problem_nparams(prob);
  cr_assert_eq(P, rw_mlp_nparams(&c->a));
  cr_assert(!rw_problem_params_named(prob) && rw_problem_param_name(prob, 0) == NULL);
  fill(rw_problem_params(prob), P, s, 0.6);
  long first, count;
  rw_neuralode_local_batch(prob, &first, &count);
  fill(rw_neuralode_targets(prob), count * rw_mlp_dim(&c->a), s, 1.0);
  return prob;
}

Test(neuralode, vjps_against_jvp_and_finite_differences)
{
  rw_context ctx;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  unsigned s = 17;
  for (size_t m = 0; m < sizeof cases / sizeof *cases; m++) {
    rw_problem prob = make(ctx, &cases[m], &s);
    long P = rw_problem_nparams(prob);
    double *p = rw_problem_params(prob), *p0 = malloc(P * sizeof(double));
    double *dp = malloc(P * sizeof(double)), *pt = calloc(P, sizeof(double));
    N_Vector y, v, w, jv, vt, yp, fp, fm, vt2;
    RW_TEST_OK(rw_problem_new_state(prob, &y));
    RW_TEST_OK(rw_vec_clone(y, &v));
    RW_TEST_OK(rw_vec_clone(y, &w));
    RW_TEST_OK(rw_vec_clone(y, &jv));
    RW_TEST_OK(rw_vec_clone(y, &vt));
    RW_TEST_OK(rw_vec_clone(y, &vt2));
    RW_TEST_OK(rw_vec_clone(y, &yp));
    RW_TEST_OK(rw_vec_clone(y, &fp));
    RW_TEST_OK(rw_vec_clone(y, &fm));
    long n = rw_vec_local_length(y);
    for (int trial = 0; trial < 4; trial++) {
      fill(rw_vec_data(y), n, &s, 1.5);
      fill(rw_vec_data(v), n, &s, 1.0);
      fill(rw_vec_data(w), n, &s, 1.0);
      fill(dp, P, &s, 1.0);
      memset(pt, 0, P * sizeof(double));
      N_VConst(0.0, vt);
      N_VConst(0.0, vt2);
      double t = 0.37;
      RW_TEST_OK(rw_problem_jvp(prob, t, y, v, dp, jv));
      RW_TEST_OK(rw_problem_vjp(prob, t, y, w, vt, pt));
      double lhs = N_VDotProd(w, jv), rhs = N_VDotProd(vt, v), rp = 0.0;
      for (long k = 0; k < P; k++)
        rp += pt[k] * dp[k];
      MPI_Allreduce(MPI_IN_PLACE, &rp, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      rhs += rp;
      cr_assert(rw_test_relerr(lhs, rhs) < 1e-12, "%s: <w,Jv> = %.17g, <J^T w,v> = %.17g",
                cases[m].name, lhs, rhs);
      /* the separate VJPs equal the combined one bit for bit */
      RW_TEST_OK(rw_problem_vjp_y(prob, t, y, w, vt2));
      cr_assert(memcmp(rw_vec_data(vt), rw_vec_data(vt2), n * sizeof(double)) == 0,
                "%s: vjp_y differs from the combined VJP", cases[m].name);
      if (!cases[m].smooth) continue;
      double e = 1e-6;
      memcpy(p0, p, P * sizeof(double));
      for (long k = 0; k < P; k++)
        p[k] = p0[k] + e * dp[k];
      N_VLinearSum(1.0, y, e, v, yp);
      RW_TEST_OK(rw_problem_rhs(prob, t, yp, fp));
      for (long k = 0; k < P; k++)
        p[k] = p0[k] - e * dp[k];
      N_VLinearSum(1.0, y, -e, v, yp);
      RW_TEST_OK(rw_problem_rhs(prob, t, yp, fm));
      memcpy(p, p0, P * sizeof(double));
      N_VLinearSum(1.0 / (2 * e), fp, -1.0 / (2 * e), fm, jv);
      double fd = N_VDotProd(w, jv);
      cr_assert(rw_test_relerr(fd, rhs) < 1e-7, "%s: FD <w,Jv> = %.17g, <J^T w,v> = %.17g",
                cases[m].name, fd, rhs);
    }
    rw_vec_destroy(&y), rw_vec_destroy(&v), rw_vec_destroy(&w), rw_vec_destroy(&jv);
    rw_vec_destroy(&vt), rw_vec_destroy(&vt2), rw_vec_destroy(&yp), rw_vec_destroy(&fp);
    rw_vec_destroy(&fm);
    free(p0), free(dp), free(pt);
    rw_problem_destroy(&prob);
  }
  rw_context_destroy(&ctx);
}

typedef struct {
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  rw_adjoint_options opt;
  N_Vector y0, y, gy;
  long P;
} fx;

static void fx_create(fx *f, const arch_case *c, unsigned *s)
{
  memset(f, 0, sizeof *f);
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &f->ctx));
  f->prob = make(f->ctx, c, s);
  f->P = rw_problem_nparams(f->prob);
  RW_TEST_OK(rw_stepper_create_erk(f->prob, rw_tableau_find("rk38"), &f->st));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y0));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->gy));
  fill(rw_vec_data(f->y0), rw_vec_local_length(f->y0), s, 1.0);
  rw_adjoint_options_default(&f->opt);
  f->opt.tf = 0.5;
  f->opt.dt = 0.025;
}

static void fx_destroy(fx *f)
{
  rw_vec_destroy(&f->y0), rw_vec_destroy(&f->y), rw_vec_destroy(&f->gy);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

static double fx_grad(fx *f, double *g, N_Vector gy)
{
  double J;
  N_VScale(1.0, f->y0, f->y);
  RW_TEST_OK(rw_adjoint_solve(f->prob, f->st, &f->opt, f->y, &J, g, gy, NULL));
  return J;
}

/* Taylor test of the gradient (g = dJ/dtheta, f->gy = dJ/dy0 at J0) along a random direction
 * in (theta, y0) drawn from *s: the remainders |J(x + e d) - J0 - e dJ| fall at order 2. */
static void check_taylor(fx *f, const double *g, double J0, unsigned *s, const char *what)
{
  long P = f->P, n = rw_vec_local_length(f->y0);
  double *dp = malloc(P * sizeof(double)), *p0 = malloc(P * sizeof(double));
  double *p = rw_problem_params(f->prob);
  N_Vector dy, y00;
  RW_TEST_OK(rw_vec_clone(f->y0, &dy));
  RW_TEST_OK(rw_vec_clone(f->y0, &y00));
  fill(dp, P, s, 1.0);
  fill(rw_vec_data(dy), n, s, 1.0);
  double dJ = N_VDotProd(f->gy, dy);
  for (long k = 0; k < P; k++)
    dJ += g[k] * dp[k];
  memcpy(p0, p, P * sizeof(double));
  N_VScale(1.0, f->y0, y00);
  double rem[4];
  for (int i = 0; i < 4; i++) {
    double e = 1e-2 / (1 << i), J;
    for (long k = 0; k < P; k++)
      p[k] = p0[k] + e * dp[k];
    N_VLinearSum(1.0, y00, e, dy, f->y);
    RW_TEST_OK(rw_forward_solve(f->prob, f->st, &f->opt, f->y, &J, NULL));
    rem[i] = fabs(J - J0 - e * dJ);
  }
  memcpy(p, p0, P * sizeof(double));
  for (int i = 1; i < 4; i++) {
    double order = log2(rem[i - 1] / rem[i]);
    cr_assert(order > 1.8 && order < 2.2, "%s: Taylor remainders %.3e %.3e: order %.2f", what,
              rem[i - 1], rem[i], order);
  }
  rw_vec_destroy(&dy), rw_vec_destroy(&y00);
  free(dp), free(p0);
}

Test(neuralode, taylor_remainders_of_the_loss_gradient)
{
  unsigned s = 5;
  for (size_t m = 0; m < 2; m++) {
    fx f;
    fx_create(&f, &cases[m], &s);
    double *g = malloc(f.P * sizeof(double));
    double J0 = fx_grad(&f, g, f.gy);
    check_taylor(&f, g, J0, &s, cases[m].name);
    free(g);
    fx_destroy(&f);
  }
}

Test(neuralode, checkpointed_and_stored_stages_equal_store_bit_for_bit)
{
  unsigned s = 9;
  fx f;
  fx_create(&f, &cases[0], &s);
  long P = f.P, n = rw_vec_local_length(f.y0);
  double *g0 = malloc(P * sizeof(double)), *g1 = malloc(P * sizeof(double));
  N_Vector gy1;
  RW_TEST_OK(rw_vec_clone(f.y0, &gy1));
  double J0 = fx_grad(&f, g0, f.gy);
  for (int variant = 0; variant < 2; variant++) {
    if (variant == 0) {
      f.opt.store_stages = 1;
    } else {
      f.opt.store_stages = 0;
      f.opt.mode = RW_ADJOINT_CHECKPOINT;
      f.opt.schedule = RW_SCHEDULE_BINOMIAL;
      f.opt.ram_slots = 3;
    }
    double J1 = fx_grad(&f, g1, gy1);
    cr_assert(J0 == J1 && !memcmp(g0, g1, P * sizeof(double)), "variant %d: dJ/dtheta differs",
              variant);
    cr_assert(!memcmp(rw_vec_data(f.gy), rw_vec_data(gy1), n * sizeof(double)),
              "variant %d: dJ/dy0 differs", variant);
  }
  /* a new theta invalidates the cached activations: the rhs equals a fresh problem's */
  N_Vector f1, f2;
  RW_TEST_OK(rw_vec_clone(f.y0, &f1));
  RW_TEST_OK(rw_vec_clone(f.y0, &f2));
  RW_TEST_OK(rw_problem_rhs(f.prob, 0.1, f.y0, f1));
  rw_problem_params(f.prob)[3] += 0.25;
  RW_TEST_OK(rw_problem_rhs(f.prob, 0.1, f.y0, f1));
  rw_problem fresh;
  RW_TEST_OK(rw_neuralode_create(f.ctx, &cases[0].a, cases[0].batch, &fresh));
  memcpy(rw_problem_params(fresh), rw_problem_params(f.prob), P * sizeof(double));
  RW_TEST_OK(rw_problem_rhs(fresh, 0.1, f.y0, f2));
  cr_assert(!memcmp(rw_vec_data(f1), rw_vec_data(f2), n * sizeof(double)),
            "a change of theta did not reach the rhs");
  rw_problem_destroy(&fresh);
  rw_vec_destroy(&f1), rw_vec_destroy(&f2), rw_vec_destroy(&gy1);
  free(g0), free(g1);
  fx_destroy(&f);
}

/* blas_threads 2: layers up to 128 x 128 stay on the one-thread small-product kernels (so the
 * gradient is the one-thread gradient bit for bit, where the build has them), larger layers go
 * to OpenBLAS's threaded products (the same gradient up to their summation order). */
Test(neuralode, blas_threads_keep_small_layers_on_one_thread)
{
  const arch_case wide[] = {
      {"2-64-64-2 tanh", {3, {2, 64, 64, 2}, RW_ACT_TANH, 0, 0.0}, 70, 1},
      {"2-160-160-2 tanh", {3, {2, 160, 160, 2}, RW_ACT_TANH, 0, 0.0}, 70, 1},
  };
  const int threads0 = rw_blas_threads();
  for (int c = 0; c < 2; c++) {
    unsigned s = 21;
    fx f;
    fx_create(&f, &wide[c], &s);
    f.opt.tf = 0.1;
    long P = f.P;
    double *g1 = malloc(P * sizeof(double)), *g2 = malloc(P * sizeof(double));
    RW_TEST_OK(rw_blas_set_threads(1));
    double J1 = fx_grad(&f, g1, f.gy);
    RW_TEST_OK(rw_blas_set_threads(2));
    double J2 = fx_grad(&f, g2, f.gy);
    RW_TEST_OK(rw_blas_set_threads(threads0));
    double d = 0.0, r = 0.0;
    for (long i = 0; i < P; i++)
      d += (g1[i] - g2[i]) * (g1[i] - g2[i]), r += g1[i] * g1[i];
    if (c == 0 && rw_sgemm_available())
      cr_assert(J1 == J2 && !memcmp(g1, g2, P * sizeof(double)),
                "%s: blas_threads 2 changed the gradient (rel %.3g): small layers must stay on "
                "the one-thread kernels",
                wide[c].name, sqrt(d / r));
    else
      cr_assert(fabs(J1 - J2) <= 1e-13 * fabs(J1) && sqrt(d) <= 1e-12 * sqrt(r),
                "%s: blas_threads 1 and 2 disagree: J %.17g / %.17g, gradient rel %.3g",
                wide[c].name, J1, J2, sqrt(d / r));
    free(g1), free(g2);
    fx_destroy(&f);
  }
}

/* OpenBLAS's fallback kernels for a CPU it does not know (Prescott on Emerald Rapids with
 * OpenBLAS 0.3.21) are named with the OPENBLAS_CORETYPE that selects better ones; its real
 * choices and CPUs without the instruction sets get no advice. */
Test(neuralode, openblas_fallback_kernels_are_named)
{
  cr_assert_str_eq(rw_blas_better_core("Prescott", RW_ISA_AVX2 | RW_ISA_AVX512), "SkylakeX");
  cr_assert_str_eq(rw_blas_better_core("prescott", RW_ISA_AVX2), "Haswell");
  cr_assert_str_eq(rw_blas_better_core("Barcelona", RW_ISA_AVX2), "Haswell");
  cr_assert_str_eq(rw_blas_better_core("Core2", RW_ISA_AVX2 | RW_ISA_AVX512), "SkylakeX");
  cr_assert_null(rw_blas_better_core("Prescott", 0), "no better kernels without AVX2");
  const char *real[] = {"Haswell", "SkylakeX", "Cooperlake", "Zen", "SapphireRapids", NULL};
  for (int k = 0; real[k]; k++)
    cr_assert_null(rw_blas_better_core(real[k], RW_ISA_AVX2 | RW_ISA_AVX512),
                   "%s is OpenBLAS's own choice, not a fallback", real[k]);
  cr_assert_null(rw_blas_better_core(NULL, RW_ISA_AVX512));
  /* this process: the advice agrees with the pure rule on the kernels OpenBLAS chose here */
  char line[160];
  rw_blas_describe(line, sizeof line);
  const char *adv = rw_blas_advice();
  cr_assert_eq(adv != NULL, strstr(line, "a fallback") != NULL, "'%s' and the advice disagree",
               line);
  if (adv) cr_assert(strstr(adv, "OPENBLAS_CORETYPE="), "advice without the remedy: %s", adv);
}

Test(neuralode, bad_architectures_are_refused)
{
  rw_context ctx;
  rw_problem prob = NULL;
  RW_TEST_OK(rw_context_create(MPI_COMM_WORLD, &ctx));
  rw_mlp_arch a = {2, {3, 8, 2}, RW_ACT_TANH, 0, 0.0}; /* d_0 = 3 without a time input */
  cr_assert_eq(rw_neuralode_create(ctx, &a, 4, &prob), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "d_0 = 3") != NULL, "%s", rw_error_message());
  rw_error_clear();
  a.widths[0] = 2;
  a.damping = -1.0;
  cr_assert_eq(rw_neuralode_create(ctx, &a, 4, &prob), RW_ERR_ARG);
  rw_error_clear();
  a.damping = 0.0;
  cr_assert_eq(rw_neuralode_create(ctx, &a, 0, &prob), RW_ERR_ARG);
  rw_error_clear();
  cr_assert(prob == NULL);
  rw_context_destroy(&ctx);
}

/* Neural SDEs (issue 12): dh = (MLP(h) - c h) dt + sigma dW, additive noise, with em and
 * sheun at a fixed seed: the pathwise gradient passes the Taylor test in (theta, y0), the
 * noise changes J (another seed, another J), and binomial checkpointing with stored-stage
 * variants equals store mode bit for bit (the noise is redrawn, never stored). */
Test(neuralode, neural_sde_taylor_and_checkpointing)
{
  static const char *methods[] = {"em", "sheun"};
  for (int k = 0; k < 2; k++) {
    unsigned s = 21;
    fx f;
    fx_create(&f, &cases[1], &s);
    rw_stepper_destroy(&f.st);
    RW_TEST_OK(rw_problem_set_noise(f.prob, 77, 0.3, 1));
    RW_TEST_OK(rw_stepper_create_sde(f.prob, methods[k], &f.st));
    long P = f.P, n = rw_vec_local_length(f.y0);
    double *g = malloc(P * sizeof(double)), *g1 = malloc(P * sizeof(double));
    N_Vector gy1;
    RW_TEST_OK(rw_vec_clone(f.y0, &gy1));
    double J0 = fx_grad(&f, g, f.gy);
    /* another seed, another path */
    RW_TEST_OK(rw_problem_set_noise(f.prob, 78, 0.3, 1));
    double Jo = fx_grad(&f, g1, gy1);
    cr_assert(Jo != J0, "%s: the noise does not reach J", methods[k]);
    RW_TEST_OK(rw_problem_set_noise(f.prob, 77, 0.3, 1));
    check_taylor(&f, g, J0, &s, methods[k]); /* in (theta, y0) */
    /* checkpointed (states, then stored stages) equals store bit for bit */
    for (int v = 0; v < 2; v++) {
      f.opt.mode = RW_ADJOINT_CHECKPOINT;
      f.opt.schedule = RW_SCHEDULE_BINOMIAL;
      f.opt.ram_slots = 3;
      f.opt.store_stages = v;
      double J1 = fx_grad(&f, g1, gy1);
      cr_assert(J1 == J0 && !memcmp(g, g1, P * sizeof(double)) &&
                    !memcmp(rw_vec_data(f.gy), rw_vec_data(gy1), n * sizeof(double)),
                "%s, variant %d: checkpointed differs from store", methods[k], v);
    }
    rw_vec_destroy(&gy1);
    free(g), free(g1);
    fx_destroy(&f);
  }
}

/* ---- the reference-format files ------------------------------------------------------------ */

/* A scratch file name in the test's working directory (one per test process). */
static void scratch(char *path, size_t len, const char *name)
{
  snprintf(path, len, "neuralode_io_%ld_%s", (long)getpid(), name);
}

#define IO_ASSERT_MSG(needle)                                                                      \
  cr_assert(strstr(rw_error_message(), (needle)) != NULL, "message lacks \"%s\":\n%s", (needle),   \
            rw_error_message())

Test(neuralode, nonfinite_weights_are_refused_at_load_with_their_place)
{
  const rw_mlp_arch a = {3, {2, 4, 3, 2}, RW_ACT_TANH, 0, 0.0};
  long P = rw_mlp_nparams(&a); /* W_0 4x2, b_0 4, W_1 3x4, b_1 3, W_2 2x3, b_2 2 */
  double *v = calloc((size_t)P, sizeof(double)), *back = NULL;
  char path[256];
  scratch(path, sizeof path, "theta.bin");
  rw_mlp_arch got;
  long Pgot = 0;
  /* W_1[2][1]: after W_0 (8) and b_0 (4), row 2 column 1 of the 3 x 4 matrix */
  v[8 + 4 + 2 * 4 + 1] = NAN;
  RW_TEST_OK(rw_mlp_file_write(path, 0, &a, v));
  cr_assert_eq(rw_mlp_file_read(path, 0, &got, &back, &Pgot), RW_ERR_ARG);
  cr_assert(back == NULL);
  IO_ASSERT_MSG(path);
  IO_ASSERT_MSG("weights value 21 is nan: W_1[2][1] (layer 2 of 3, a 3 x 4 matrix)");
  rw_error_clear();
  /* a bias, in a gradient file */
  v[8 + 4 + 2 * 4 + 1] = 0.5;
  v[P - 1] = -INFINITY;
  RW_TEST_OK(rw_mlp_file_write(path, 1, &a, v));
  cr_assert_eq(rw_mlp_file_read(path, 1, &got, &back, &Pgot), RW_ERR_ARG);
  IO_ASSERT_MSG("gradient value 34 is -inf: b_2[1] (layer 3 of 3, 2 biases)");
  rw_error_clear();
  /* finite: read back, also through the collective loader */
  v[P - 1] = 0.25;
  RW_TEST_OK(rw_mlp_file_write(path, 0, &a, v));
  RW_TEST_OK(rw_mlp_load(MPI_COMM_WORLD, path, 0, &got, &back, &Pgot));
  cr_assert(Pgot == P && got.nlayers == 3 && got.widths[2] == 3 &&
            !memcmp(back, v, (size_t)P * sizeof(double)));
  rw_free(&back);
  remove(path);
  cr_assert_eq(rw_mlp_load(MPI_COMM_WORLD, path, 0, &got, &back, &Pgot), RW_ERR_IO);
  IO_ASSERT_MSG("No such file");
  rw_error_clear();
  free(v);
}

/* Writes a NODEPRB1 file by hand: header (B, D, T) and nv values of y0 then of targets. */
static void write_problem(const char *path, uint32_t B, uint32_t D, double T, const double *vals,
                          long nv)
{
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  uint32_t h[4] = {1, B, D, 0};
  cr_assert(fwrite("NODEPRB1", 1, 8, f) == 8 && fwrite(h, 4, 4, f) == 4 &&
            fwrite(&T, 8, 1, f) == 1);
  if (nv) cr_assert(fwrite(vals, 8, (size_t)(2 * nv), f) == (size_t)(2 * nv));
  fclose(f);
}

Test(neuralode, problem_file_messages_name_the_array_and_the_range)
{
  char path[256];
  scratch(path, sizeof path, "problem.bin");
  rw_node_problem_file pf;
  /* B x D beyond 2^32: the message gives the allowed range, not "both must be >= 1" */
  write_problem(path, 4000000000u, 2, 1.0, NULL, 0);
  cr_assert_eq(rw_node_problem_read(path, &pf), RW_ERR_ARG);
  IO_ASSERT_MSG("B = 4000000000, D = 2 (B x D = 8000000000 values); allowed B >= 1, D >= 1 and "
                "B x D <= 4294967296");
  rw_error_clear();
  /* 3 trajectories of 2: a NaN in the targets (value 4: trajectory 2, component 0) */
  double vals[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  vals[6 + 4] = NAN;
  write_problem(path, 3, 2, 0.5, vals, 6);
  cr_assert_eq(rw_node_problem_read(path, &pf), RW_ERR_ARG);
  IO_ASSERT_MSG("targets value 4 is nan (trajectory 2, component 0 of B = 3 x D = 2)");
  cr_assert(pf.y0 == NULL && pf.targets == NULL);
  rw_error_clear();
  /* and in y0 */
  vals[6 + 4] = 10;
  vals[1] = INFINITY;
  write_problem(path, 3, 2, 0.5, vals, 6);
  cr_assert_eq(rw_node_problem_read(path, &pf), RW_ERR_ARG);
  IO_ASSERT_MSG("y0 value 1 is inf (trajectory 0, component 1");
  rw_error_clear();
  /* finite: the collective loader gives the file's contents */
  vals[1] = 1;
  write_problem(path, 3, 2, 0.5, vals, 6);
  RW_TEST_OK(rw_node_problem_load(MPI_COMM_WORLD, path, &pf));
  cr_assert(pf.B == 3 && pf.D == 2 && pf.T == 0.5 && !memcmp(pf.y0, vals, 6 * sizeof(double)) &&
            !memcmp(pf.targets, vals + 6, 6 * sizeof(double)));
  rw_node_problem_free(&pf);
  remove(path);
}
