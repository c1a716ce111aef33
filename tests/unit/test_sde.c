/* SDE steppers (rw_sde.h) on Ornstein-Uhlenbeck (additive noise) and geometric Brownian motion
 * (diagonal multiplicative noise) ensembles, with a running cost so every adjoint term runs:
 *  - a step needs its index, and the index is good for one call;
 *  - the noise: default global-index mapping, refinement = sums of the fine increments;
 *  - dot product of each step's VJP (state and parameters) against central differences of the
 *    step map with the same noise; stored-stage adjoint == recomputed, bit for bit;
 *  - Taylor remainder of dJ along a direction in (p, y0) with a fixed seed: second order;
 *  - store, stored stages, binomial / fixed-interval checkpointing: the same J and gradient
 *    bit for bit (the noise is redrawn by every recomputation);
 *  - strong orders against a fine reference on the same Brownian path (coarse increments are
 *    sums of fine draws): em 1/2 (gbm), em 1 (ou), sheun 1 (gbm, Stratonovich), fitted over 5
 *    step sizes and 400 paths, within 0.15 of theory; the fine reference against the closed
 *    form solution of GBM (Ito for em, Stratonovich for sheun). */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_revheun.h"
#include "rewind/rw_rng.h"
#include "rewind/rw_sde.h"
#include "rewind/rw_sde_problems.h"
#include "rw_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TestSuite(sde, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

typedef struct {
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  rw_adjoint_options opt;
  N_Vector y0, y, g;
} fx;

static void fx_create(fx *f, const char *model, const char *method, long paths, double wR,
                      double tf, double dt)
{
  memset(f, 0, sizeof *f);
  RW_TEST_OK(rw_context_create(MPI_COMM_SELF, &f->ctx));
  rw_sde_config cfg = {.model = model,
                       .paths = paths,
                       .y0 = 0.8,
                       .spread = 0.1,
                       .target = 0.5,
                       .terminal_weight = 1.0,
                       .running_weight = wR};
  RW_TEST_OK(rw_sde_problem_create(f->ctx, &cfg, &f->prob));
  RW_TEST_OK(rw_problem_set_noise(f->prob, 20240612, 1.0, 1));
  RW_TEST_OK(rw_stepper_create_sde(f->prob, method, &f->st));
  cr_assert_str_eq(rw_stepper_name(f->st), method);
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y0));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->g));
  RW_TEST_OK(rw_sde_initial_state(f->prob, f->y0));
  rw_adjoint_options_default(&f->opt);
  f->opt.tf = tf;
  f->opt.dt = dt;
}

static void fx_destroy(fx *f)
{
  rw_vec_destroy(&f->y0);
  rw_vec_destroy(&f->y);
  rw_vec_destroy(&f->g);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

static double fx_J(fx *f)
{
  double J;
  rw_vec_copy(f->y0, f->y);
  RW_TEST_OK(rw_forward_solve(f->prob, f->st, &f->opt, f->y, &J, NULL));
  return J;
}

/* J, dJ/dp (2) and dJ/dy0 (into f->g). */
static double fx_grad(fx *f, double *dJdp, rw_adjoint_stats *s)
{
  double J;
  rw_vec_copy(f->y0, f->y);
  RW_TEST_OK(rw_adjoint_solve(f->prob, f->st, &f->opt, f->y, &J, dJdp, f->g, s));
  return J;
}

static const char *models[] = {"ou", "gbm"};
static const char *methods[] = {"em", "sheun"};

Test(sde, step_needs_its_index)
{
  fx f;
  fx_create(&f, "gbm", "sheun", 4, 0.0, 1.0, 0.1);
  size_t mem0 = rw_mem_current();
  cr_assert_eq(rw_stepper_step_index(f.st), -1);
  cr_assert_eq(rw_stepper_step(f.st, 0.0, 0.1, f.y0, f.y, NULL, NULL), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "rw_stepper_set_step_index") != NULL, "%s",
            rw_error_message());
  rw_error_clear();
  rw_stepper_set_step_index(f.st, 3);
  cr_assert_eq(rw_stepper_step_index(f.st), 3);
  RW_TEST_OK(rw_stepper_step(f.st, 0.0, 0.1, f.y0, f.y, NULL, NULL));
  /* consumed: the next call needs its own index */
  cr_assert_eq(rw_stepper_step_index(f.st), -1);
  cr_assert_eq(rw_stepper_adjoint_step(f.st, 0.0, 0.1, f.y0, NULL, f.g, NULL), RW_ERR_ARG);
  rw_error_clear();
  /* an ODE problem refuses the SDE stepper; an unknown method is named */
  rw_stepper bad = NULL;
  cr_assert_eq(rw_stepper_create_sde(f.prob, "milstein", &bad), RW_ERR_ARG);
  cr_assert(strstr(rw_error_message(), "em, sheun") != NULL, "%s", rw_error_message());
  rw_error_clear();
  cr_assert_eq(rw_mem_current(), mem0);
  fx_destroy(&f);
}

Test(sde, noise_mapping_and_refinement)
{
  fx f;
  fx_create(&f, "ou", "em", 6, 0.0, 1.0, 0.1);
  N_Vector a = NULL, b = NULL, w = NULL;
  RW_TEST_OK(rw_problem_new_state(f.prob, &a));
  RW_TEST_OK(rw_problem_new_state(f.prob, &b));
  RW_TEST_OK(rw_problem_new_state(f.prob, &w));
  /* R = 1: dW_n = sqrt(h) z(seed, n, 0, forcing, global index) */
  RW_TEST_OK(rw_problem_noise_increment(f.prob, 7, 0.25, a, NULL));
  for (int i = 0; i < 6; i++) {
    double z;
    RW_TEST_OK(rw_rng_normal(20240612, 7, 0, (uint64_t)i, RW_RNG_STREAM_FORCING, &z));
    cr_assert_eq(rw_vec_data(a)[i], sqrt(0.25) * z, "entry %d", i);
  }
  /* R = 8: step 3 of size 0.4 sums the fine increments of steps 24..31 of size 0.05 */
  N_VConst(0.0, b);
  for (long m = 24; m < 32; m++) {
    RW_TEST_OK(rw_problem_noise_increment(f.prob, m, 0.05, w, NULL));
    N_VLinearSum(1.0, b, 1.0, w, b);
  }
  RW_TEST_OK(rw_problem_set_noise(f.prob, 20240612, 1.0, 8));
  RW_TEST_OK(rw_problem_noise_increment(f.prob, 3, 0.4, a, w));
  for (int i = 0; i < 6; i++)
    cr_assert_leq(fabs(rw_vec_data(a)[i] - rw_vec_data(b)[i]), 1e-14, "entry %d: %.17g vs %.17g", i,
                  rw_vec_data(a)[i], rw_vec_data(b)[i]);
  /* amplitude scales; a bad refinement or amplitude is refused */
  RW_TEST_OK(rw_problem_set_noise(f.prob, 20240612, -2.0, 8));
  RW_TEST_OK(rw_problem_noise_increment(f.prob, 3, 0.4, b, w));
  for (int i = 0; i < 6; i++)
    cr_assert_eq(rw_vec_data(b)[i], -2.0 * rw_vec_data(a)[i], "entry %d", i);
  cr_assert_eq(rw_problem_set_noise(f.prob, 1, 1.0, 0), RW_ERR_ARG);
  cr_assert_eq(rw_problem_set_noise(f.prob, 1, NAN, 1), RW_ERR_ARG);
  rw_error_clear();
  rw_vec_destroy(&a);
  rw_vec_destroy(&b);
  rw_vec_destroy(&w);
  fx_destroy(&f);
}

/* phi(y, p) = <lam, S(y, p)> + q(y, p) for one step of index n. */
static double step_phi(fx *f, long n, double t, double h, N_Vector y, N_Vector out, N_Vector lam)
{
  double q = 0.0;
  rw_stepper_set_step_index(f->st, n);
  RW_TEST_OK(rw_stepper_step(f->st, t, h, y, out, NULL, &q));
  return N_VDotProd(lam, out) + q;
}

Test(sde, step_vjp_dot_product)
{
  for (int m = 0; m < 2; m++)
    for (int k = 0; k < 2; k++) {
      fx f;
      fx_create(&f, models[m], methods[k], 5, 0.7, 1.0, 0.1);
      double *p = rw_problem_params(f.prob);
      p[0] = 0.9, p[1] = 0.6;
      N_Vector lam = NULL, v = NULL, yp = NULL, out = NULL, lam2 = NULL, st2[2] = {NULL, NULL};
      RW_TEST_OK(rw_problem_new_state(f.prob, &lam));
      RW_TEST_OK(rw_problem_new_state(f.prob, &lam2));
      RW_TEST_OK(rw_problem_new_state(f.prob, &v));
      RW_TEST_OK(rw_problem_new_state(f.prob, &yp));
      RW_TEST_OK(rw_problem_new_state(f.prob, &out));
      for (int i = 0; i < 2; i++)
        RW_TEST_OK(rw_problem_new_state(f.prob, &st2[i]));
      for (int i = 0; i < 5; i++) {
        rw_vec_data(lam)[i] = 0.3 - 0.17 * i;
        rw_vec_data(v)[i] = 0.2 + 0.11 * i * (i % 2 ? -1 : 1);
      }
      double dp[2] = {0.4, -0.7}, p0[2] = {p[0], p[1]}, t = 0.3, h = 0.05;
      long n = 11;
      /* adjoint: lam2 = dphi/dy, pbar = dphi/dp */
      double pbar[2] = {0.0, 0.0};
      rw_vec_copy(lam, lam2);
      rw_stepper_set_step_index(f.st, n);
      RW_TEST_OK(rw_stepper_adjoint_step(f.st, t, h, f.y0, NULL, lam2, pbar));
      double adj = N_VDotProd(lam2, v) + pbar[0] * dp[0] + pbar[1] * dp[1];
      /* central differences along (v, dp), the same noise (same n) */
      double e = 1e-6;
      N_VLinearSum(1.0, f.y0, e, v, yp);
      p[0] = p0[0] + e * dp[0], p[1] = p0[1] + e * dp[1];
      double phip = step_phi(&f, n, t, h, yp, out, lam);
      N_VLinearSum(1.0, f.y0, -e, v, yp);
      p[0] = p0[0] - e * dp[0], p[1] = p0[1] - e * dp[1];
      double phim = step_phi(&f, n, t, h, yp, out, lam);
      p[0] = p0[0], p[1] = p0[1];
      double fd = (phip - phim) / (2 * e);
      cr_assert_leq(fabs(fd - adj), 1e-8 * fmax(1.0, fabs(fd)), "%s/%s: adjoint %.15g, FD %.15g",
                    models[m], methods[k], adj, fd);
      /* a different step index draws different noise: the derivative changes */
      double q = 0.0;
      rw_stepper_set_step_index(f.st, n + 1);
      RW_TEST_OK(rw_stepper_step(f.st, t, h, f.y0, yp, NULL, &q));
      rw_stepper_set_step_index(f.st, n);
      RW_TEST_OK(rw_stepper_step(f.st, t, h, f.y0, out, st2, &q));
      cr_assert(memcmp(rw_vec_data(yp), rw_vec_data(out), 5 * sizeof(double)) != 0);
      /* stored stages give the recomputed adjoint bit for bit */
      double pbar2[2] = {0.0, 0.0};
      rw_vec_copy(lam, v);
      rw_stepper_set_step_index(f.st, n);
      RW_TEST_OK(rw_stepper_adjoint_step(f.st, t, h, out /* unused */, st2, v, pbar2));
      cr_assert(memcmp(rw_vec_data(v), rw_vec_data(lam2), 5 * sizeof(double)) == 0 &&
                    memcmp(pbar, pbar2, sizeof pbar) == 0,
                "%s/%s: stored-stage adjoint differs", models[m], methods[k]);
      rw_vec_destroy(&lam);
      rw_vec_destroy(&lam2);
      rw_vec_destroy(&v);
      rw_vec_destroy(&yp);
      rw_vec_destroy(&out);
      for (int i = 0; i < 2; i++)
        rw_vec_destroy(&st2[i]);
      fx_destroy(&f);
    }
}

Test(sde, taylor_second_order)
{
  for (int m = 0; m < 2; m++)
    for (int k = 0; k < 2; k++) {
      fx f;
      fx_create(&f, models[m], methods[k], 6, 0.3, 1.0, 0.02);
      double dJdp[2], dp[2] = {0.3, -0.2}, dy[6] = {0.1, -0.3, 0.2, 0.05, -0.1, 0.4};
      double J0 = fx_grad(&f, dJdp, NULL), slope = dJdp[0] * dp[0] + dJdp[1] * dp[1], res[5];
      for (int i = 0; i < 6; i++)
        slope += rw_vec_data(f.g)[i] * dy[i];
      double p0[2], y0[6], *p = rw_problem_params(f.prob), *y = rw_vec_data(f.y0);
      memcpy(p0, p, sizeof p0);
      memcpy(y0, y, sizeof y0);
      for (int l = 0; l < 5; l++) {
        double e = 0.02 / (double)(1 << l);
        for (int j = 0; j < 2; j++)
          p[j] = p0[j] + e * dp[j];
        for (int i = 0; i < 6; i++)
          y[i] = y0[i] + e * dy[i];
        res[l] = fabs(fx_J(&f) - J0 - e * slope);
      }
      memcpy(p, p0, sizeof p0);
      memcpy(y, y0, sizeof y0);
      for (int l = 0; l + 1 < 5; l++)
        cr_assert_gt(log2(res[l] / res[l + 1]), 1.8, "%s/%s: Taylor order %g at halving %d",
                     models[m], methods[k], log2(res[l] / res[l + 1]), l);
      /* first-order remainder (no gradient) decays at order 1 only: the test can tell */
      double r1a, r1b;
      p[0] = p0[0] + 0.02 * dp[0];
      r1a = fabs(fx_J(&f) - J0);
      p[0] = p0[0] + 0.01 * dp[0];
      r1b = fabs(fx_J(&f) - J0);
      p[0] = p0[0];
      cr_assert_lt(log2(r1a / r1b), 1.2, "%s/%s", models[m], methods[k]);
      fx_destroy(&f);
    }
}

Test(sde, checkpointing_equals_store_bitwise)
{
  for (int k = 0; k < 2; k++) {
    fx f;
    fx_create(&f, "gbm", methods[k], 7, 0.4, 1.0, 0.025); /* 40 steps */
    double g0[2], g[2], y0g[7];
    rw_adjoint_stats s;
    double J0 = fx_grad(&f, g0, NULL);
    memcpy(y0g, rw_vec_data(f.g), sizeof y0g);
    struct {
      rw_adjoint_mode mode;
      rw_schedule_kind sched;
      int slots, stages;
      long interval;
    } runs[] = {{RW_ADJOINT_STORE, RW_SCHEDULE_BINOMIAL, 0, 1, 0},
                {RW_ADJOINT_CHECKPOINT, RW_SCHEDULE_BINOMIAL, 3, 0, 0},
                {RW_ADJOINT_CHECKPOINT, RW_SCHEDULE_BINOMIAL, 3, 1, 0},
                {RW_ADJOINT_CHECKPOINT, RW_SCHEDULE_FIXED, 0, 0, 6},
                {RW_ADJOINT_CHECKPOINT, RW_SCHEDULE_ONLINE, 4, 0, 0}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
      f.opt.mode = runs[r].mode;
      f.opt.schedule = runs[r].sched;
      f.opt.ram_slots = runs[r].slots;
      f.opt.store_stages = runs[r].stages;
      f.opt.interval = runs[r].interval;
      double J = fx_grad(&f, g, &s);
      cr_assert(J == J0 && memcmp(g, g0, sizeof g) == 0 &&
                    memcmp(rw_vec_data(f.g), y0g, sizeof y0g) == 0,
                "%s, run %zu: J %.17g vs %.17g, dJ/dmu %.17g vs %.17g", methods[k], r, J, J0, g[0],
                g0[0]);
      if (runs[r].mode == RW_ADJOINT_CHECKPOINT)
        cr_assert_gt(s.recomputed_steps, 0, "%s, run %zu", methods[k], r);
    }
    fx_destroy(&f);
  }
}

/* Least-squares slope of log2 err against log2 h. */
static double fit_order(const double *h, const double *err, int n)
{
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    double x = log2(h[i]), y = log2(err[i]);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

#define NPATHS 400
#define FINE   4096 /* fine steps over [0, 1] */

/* Terminal states of NPATHS paths with FINE / R steps of size R / FINE and refinement R: every
 * run follows the Brownian path of the fine grid. */
static void terminal_states(const char *model, const char *method, const double *par, long R,
                            double *yT)
{
  fx f;
  fx_create(&f, model, method, NPATHS, 0.0, 1.0, (double)R / FINE);
  double *p = rw_problem_params(f.prob);
  p[0] = par[0], p[1] = par[1];
  N_VConst(1.0, f.y0);
  RW_TEST_OK(rw_problem_set_noise(f.prob, 77, 1.0, R));
  fx_J(&f);
  memcpy(yT, rw_vec_data(f.y), NPATHS * sizeof *yT);
  fx_destroy(&f);
}

/* Fits the strong order of `method` on `model` (root-mean-square error at T = 1 over NPATHS
 * paths against the fine solution of the same path, step sizes 2^-3 .. 2^-7). */
static double strong_order(const char *model, const char *method, const double *par)
{
  static double ref[NPATHS], yT[NPATHS];
  double h[5], err[5];
  terminal_states(model, method, par, 1, ref);
  for (int l = 0; l < 5; l++) {
    long R = FINE >> (3 + l); /* 8 .. 128 steps */
    terminal_states(model, method, par, R, yT);
    double s = 0.0;
    for (int i = 0; i < NPATHS; i++)
      s += (yT[i] - ref[i]) * (yT[i] - ref[i]);
    h[l] = (double)R / FINE;
    err[l] = sqrt(s / NPATHS);
  }
  double q = fit_order(h, err, 5);
  cr_log_info("%s/%s: errors %.3e %.3e %.3e %.3e %.3e, fitted strong order %.3f", model, method,
              err[0], err[1], err[2], err[3], err[4], q);
  printf("strong order %s/%s: %.3f (errors %.3e .. %.3e)\n", model, method, q, err[0], err[4]);
  return q;
}

static const double gbm_par[2] = {0.5, 0.8}; /* mu, sigma */
static const double ou_par[2] = {1.5, 0.8};  /* theta, sigma */

Test(sde, strong_order_em_multiplicative, .timeout = 300)
{
  double q = strong_order("gbm", "em", gbm_par);
  cr_assert_leq(fabs(q - rw_sde_strong_order("em", 0)), 0.15, "em on gbm: order %g, theory 0.5", q);
  /* and it is told apart from order 1 */
  cr_assert_gt(fabs(q - 1.0), 0.15, "em on gbm: order %g", q);
}

Test(sde, strong_order_em_additive, .timeout = 300)
{
  double q = strong_order("ou", "em", ou_par);
  cr_assert_leq(fabs(q - rw_sde_strong_order("em", 1)), 0.15, "em on ou: order %g, theory 1", q);
}

Test(sde, strong_order_heun_stratonovich, .timeout = 300)
{
  double q = strong_order("gbm", "sheun", gbm_par);
  cr_assert_leq(fabs(q - rw_sde_strong_order("sheun", 0)), 0.15, "sheun on gbm: order %g", q);
  cr_assert_gt(fabs(q - 0.5), 0.15, "sheun on gbm: order %g", q);
}

/* The fine reference against the closed form on the same path, W_i(1) = sqrt(1/FINE) sum_m
 * z_m,i: em solves the Ito SDE, sheun the Stratonovich one. */
Test(sde, fine_path_matches_closed_form, .timeout = 300)
{
  static double W[NPATHS], yT[NPATHS], z[NPATHS];
  memset(W, 0, sizeof W);
  for (long m = 0; m < FINE; m++) {
    RW_TEST_OK(rw_rng_normal_fill(77, (uint64_t)m, 0, RW_RNG_STREAM_FORCING, 0, NPATHS, z));
    for (int i = 0; i < NPATHS; i++)
      W[i] += sqrt(1.0 / FINE) * z[i];
  }
  double mu = gbm_par[0], sg = gbm_par[1], worst[2] = {0, 0}, mw = 0, vw = 0;
  for (int i = 0; i < NPATHS; i++)
    mw += W[i] / NPATHS, vw += W[i] * W[i] / NPATHS;
  /* W(1) ~ N(0, 1) over the paths */
  cr_assert_leq(fabs(mw), 4.0 / sqrt(NPATHS), "mean of W(1) %g", mw);
  cr_assert_leq(fabs(vw - 1.0), 0.25, "mean square of W(1) %g", vw);
  for (int k = 0; k < 2; k++) {
    terminal_states("gbm", methods[k], gbm_par, 1, yT);
    double s = 0.0;
    for (int i = 0; i < NPATHS; i++) {
      double ex = exp((k == 0 ? mu - 0.5 * sg * sg : mu) + sg * W[i]);
      s += (yT[i] - ex) * (yT[i] - ex) / (ex * ex);
    }
    worst[k] = sqrt(s / NPATHS);
  }
  /* relative RMS errors ~ sqrt(h) for em, ~ h for sheun at h = 1/4096 */
  cr_assert_leq(worst[0], 0.05, "em against the Ito solution: %g", worst[0]);
  cr_assert_leq(worst[1], 2e-3, "sheun against the Stratonovich solution: %g", worst[1]);
  printf("fine path vs closed form: em %.3e, sheun %.3e\n", worst[0], worst[1]);
}

/* The ensemble mean (rw_adjoint_solve_ensemble): equals the mean of the M single-path solves
 * with seeds seed..seed+M-1 (summed in that order), its gradient passes a Taylor test of the
 * mean objective, the paths differ from each other, the problem's seed comes back, and
 * refusals: M < 1, M > 1 without noise. */
Test(sde, ensemble_mean_and_gradient)
{
  fx f;
  fx_create(&f, "gbm", "sheun", 5, 0.2, 1.0, 0.05);
  const long M = 4;
  uint64_t seed;
  double amp;
  long refine;
  rw_problem_get_noise(f.prob, &seed, &amp, &refine);
  /* single paths, by hand */
  double Js = 0.0, gs[2] = {0.0, 0.0}, gy[5] = {0}, Jm[4];
  for (long m = 0; m < M; m++) {
    double g[2];
    RW_TEST_OK(rw_problem_set_noise(f.prob, seed + (uint64_t)m, amp, refine));
    Jm[m] = fx_grad(&f, g, NULL);
    Js += Jm[m];
    gs[0] += g[0], gs[1] += g[1];
    for (int i = 0; i < 5; i++)
      gy[i] += rw_vec_data(f.g)[i];
  }
  RW_TEST_OK(rw_problem_set_noise(f.prob, seed, amp, refine));
  cr_assert(Jm[0] != Jm[1] && Jm[1] != Jm[2], "the paths must differ: %g %g %g", Jm[0], Jm[1],
            Jm[2]);
  double J, g[2];
  rw_adjoint_stats s;
  rw_vec_copy(f.y0, f.y);
  RW_TEST_OK(rw_adjoint_solve_ensemble(f.prob, f.st, &f.opt, M, f.y, &J, g, f.g, &s));
  cr_assert(J == Js * (1.0 / M), "J %.17g vs %.17g", J, Js / M);
  cr_assert(g[0] == gs[0] * (1.0 / M) && g[1] == gs[1] * (1.0 / M));
  for (int i = 0; i < 5; i++)
    cr_assert(rw_vec_data(f.g)[i] == gy[i] * (1.0 / M), "dJ/dy0[%d]", i);
  uint64_t seed_after;
  rw_problem_get_noise(f.prob, &seed_after, &amp, &refine);
  cr_assert_eq(seed_after, seed);
  /* Taylor: the mean objective along a parameter direction */
  double *p = rw_problem_params(f.prob), p0[2] = {p[0], p[1]}, dp[2] = {0.2, -0.4};
  double slope = g[0] * dp[0] + g[1] * dp[1], res[4];
  for (int l = 0; l < 4; l++) {
    double e = 0.02 / (double)(1 << l), Je;
    p[0] = p0[0] + e * dp[0], p[1] = p0[1] + e * dp[1];
    rw_vec_copy(f.y0, f.y);
    RW_TEST_OK(rw_adjoint_solve_ensemble(f.prob, f.st, &f.opt, M, f.y, &Je, NULL, NULL, NULL));
    res[l] = fabs(Je - J - e * slope);
  }
  p[0] = p0[0], p[1] = p0[1];
  for (int l = 0; l + 1 < 4; l++)
    cr_assert_gt(log2(res[l] / res[l + 1]), 1.8, "ensemble Taylor order %g at halving %d",
                 log2(res[l] / res[l + 1]), l);
  /* refusals */
  cr_assert_eq(rw_adjoint_solve_ensemble(f.prob, f.st, &f.opt, 0, f.y, &J, g, f.g, NULL),
               RW_ERR_ARG);
  fx_destroy(&f);
}

/* ---- reversible Heun with noise (Kidger et al. 2021, the SDE form of rw_revheun.h) ------ */
typedef struct {
  rw_context ctx;
  rw_problem prob, pair;
  rw_stepper st;
  rw_adjoint_options opt;
  N_Vector y0, Y, L, g;
} rh;

static void rh_create(rh *f, const char *model, long paths, double wR, double dt, long refine)
{
  memset(f, 0, sizeof *f);
  RW_TEST_OK(rw_context_create(MPI_COMM_SELF, &f->ctx));
  rw_sde_config cfg = {.model = model,
                       .paths = paths,
                       .y0 = 0.8,
                       .spread = 0.1,
                       .target = 0.5,
                       .terminal_weight = 1.0,
                       .running_weight = wR};
  RW_TEST_OK(rw_sde_problem_create(f->ctx, &cfg, &f->prob));
  RW_TEST_OK(rw_problem_set_noise(f->prob, 4242, 1.0, refine));
  RW_TEST_OK(rw_problem_create_partnered(f->prob, &f->pair));
  RW_TEST_OK(rw_stepper_create_revheun(f->pair, &f->st));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->y0));
  RW_TEST_OK(rw_problem_new_state(f->pair, &f->Y));
  RW_TEST_OK(rw_problem_new_state(f->pair, &f->L));
  RW_TEST_OK(rw_problem_new_state(f->prob, &f->g));
  RW_TEST_OK(rw_sde_initial_state(f->prob, f->y0));
  rw_adjoint_options_default(&f->opt);
  f->opt.tf = 1.0;
  f->opt.dt = dt;
}

static void rh_destroy(rh *f)
{
  rw_vec_destroy(&f->y0), rw_vec_destroy(&f->Y), rw_vec_destroy(&f->L), rw_vec_destroy(&f->g);
  rw_stepper_destroy(&f->st);
  rw_problem_destroy(&f->pair);
  rw_problem_destroy(&f->prob);
  rw_context_destroy(&f->ctx);
}

static double rh_J(rh *f)
{
  double J;
  rw_revheun_initial_state(f->y0, f->Y);
  RW_TEST_OK(rw_forward_solve(f->pair, f->st, &f->opt, f->Y, &J, NULL));
  return J;
}

static double rh_grad(rh *f, double *dJdp, rw_adjoint_stats *s)
{
  double J;
  rw_revheun_initial_state(f->y0, f->Y);
  RW_TEST_OK(rw_adjoint_solve(f->pair, f->st, &f->opt, f->Y, &J, dJdp, f->L, s));
  rw_revheun_initial_adjoint(f->L, f->g);
  return J;
}

/* The noise reaches the step, the inverse step undoes it (same index, same noise), a step
 * without its index is refused, and without noise the stepper is the ODE one. */
Test(sde, revheun_noise_inverse_step)
{
  rh f;
  rh_create(&f, "gbm", 5, 0.0, 0.05, 1);
  N_Vector Y1, Y2, Y3;
  RW_TEST_OK(rw_vec_clone(f.Y, &Y1));
  RW_TEST_OK(rw_vec_clone(f.Y, &Y2));
  RW_TEST_OK(rw_vec_clone(f.Y, &Y3));
  rw_revheun_initial_state(f.y0, f.Y);
  cr_assert_eq(rw_stepper_step(f.st, 0.0, 0.05, f.Y, Y1, NULL, NULL), RW_ERR_ARG,
               "a noisy step without its index must be refused");
  rw_stepper_set_step_index(f.st, 3);
  RW_TEST_OK(rw_stepper_step(f.st, 0.15, 0.05, f.Y, Y1, NULL, NULL));
  rw_stepper_set_step_index(f.st, 4);
  RW_TEST_OK(rw_stepper_step(f.st, 0.15, 0.05, f.Y, Y3, NULL, NULL));
  cr_assert(memcmp(rw_vec_data(Y1), rw_vec_data(Y3), 10 * sizeof(double)) != 0,
            "steps 3 and 4 drew the same noise");
  rw_stepper_set_step_index(f.st, 3);
  RW_TEST_OK(rw_stepper_reverse_step(f.st, 0.15, 0.05, Y1, Y2));
  double worst = 0.0;
  for (int i = 0; i < 10; i++)
    worst = fmax(worst, fabs(rw_vec_data(Y2)[i] - rw_vec_data(f.Y)[i]));
  cr_assert_lt(worst, 1e-14, "inverse step error %g", worst);
  rw_vec_destroy(&Y1), rw_vec_destroy(&Y2), rw_vec_destroy(&Y3);
  rh_destroy(&f);
}

/* Pathwise gradient: Taylor remainders of second order in (p, y0) on multiplicative (gbm) and
 * additive (ou) noise with a running cost; binomial checkpointing equals store bit for bit;
 * adjoint_mode reversible (states rebuilt by the inverse step, same noise redrawn) agrees with
 * store to rounding. */
Test(sde, revheun_noise_gradients)
{
  for (int m = 0; m < 2; m++) {
    rh f;
    rh_create(&f, models[m], 6, 0.3, 0.02, 1);
    double dJdp[2], dp[2] = {0.3, -0.2}, dy[6] = {0.1, -0.3, 0.2, 0.05, -0.1, 0.4}, res[5];
    double J0 = rh_grad(&f, dJdp, NULL), slope = dJdp[0] * dp[0] + dJdp[1] * dp[1];
    for (int i = 0; i < 6; i++)
      slope += rw_vec_data(f.g)[i] * dy[i];
    double p0[2], y0[6], *p = rw_problem_params(f.prob), *y = rw_vec_data(f.y0);
    memcpy(p0, p, sizeof p0);
    memcpy(y0, y, sizeof y0);
    for (int l = 0; l < 5; l++) {
      double e = 0.02 / (double)(1 << l);
      for (int j = 0; j < 2; j++)
        p[j] = p0[j] + e * dp[j];
      for (int i = 0; i < 6; i++)
        y[i] = y0[i] + e * dy[i];
      res[l] = fabs(rh_J(&f) - J0 - e * slope);
    }
    memcpy(p, p0, sizeof p0);
    memcpy(y, y0, sizeof y0);
    for (int l = 0; l + 1 < 5; l++)
      cr_assert_gt(log2(res[l] / res[l + 1]), 1.8, "%s: Taylor order %g at halving %d", models[m],
                   log2(res[l] / res[l + 1]), l);
    double g0y[6], g[2];
    memcpy(g0y, rw_vec_data(f.g), sizeof g0y);
    f.opt.mode = RW_ADJOINT_CHECKPOINT;
    f.opt.schedule = RW_SCHEDULE_BINOMIAL;
    f.opt.ram_slots = 3;
    rw_adjoint_stats s;
    double J = rh_grad(&f, g, &s);
    cr_assert(J == J0 && g[0] == dJdp[0] && g[1] == dJdp[1] &&
                  !memcmp(rw_vec_data(f.g), g0y, sizeof g0y),
              "%s: checkpointed differs from store", models[m]);
    cr_assert_gt(s.recomputed_steps, 0);
    f.opt.mode = RW_ADJOINT_REVERSIBLE;
    f.opt.ram_slots = 6;
    J = rh_grad(&f, g, &s);
    cr_assert(J == J0, "%s: reversible J %.17g vs %.17g", models[m], J, J0);
    cr_assert_eq(s.drift_fallbacks, 0, "%s: drift %g", models[m], s.drift_max);
    cr_assert_gt(s.rebuilt_steps, 0, "%s: nothing was rebuilt", models[m]);
    for (int k = 0; k < 2; k++)
      cr_assert_leq(fabs(g[k] - dJdp[k]), 1e-9 * fabs(dJdp[k]) + 1e-13, "%s: reversible dJ/dp",
                    models[m]);
    rh_destroy(&f);
  }
}

/* Strong convergence on the same Brownian path (refinement R), root-mean-square error at
 * T = 1 over the paths against reversible Heun's own fine solution: order 1 on additive noise
 * (Ornstein-Uhlenbeck), as for stochastic Heun. */
Test(sde, revheun_noise_strong_order_additive, .timeout = 300)
{
  static double ref[NPATHS], yT[NPATHS];
  double h[4], err[4];
  for (int l = -1; l < 4; l++) {
    long R = l < 0 ? 1 : FINE >> (3 + l);
    rh f;
    rh_create(&f, "ou", NPATHS, 0.0, (double)R / FINE, R);
    double *p = rw_problem_params(f.prob);
    p[0] = ou_par[0], p[1] = ou_par[1];
    N_VConst(1.0, f.y0);
    rh_J(&f);
    memcpy(l < 0 ? ref : yT, rw_vec_data(f.Y), NPATHS * sizeof(double)); /* the y half */
    rh_destroy(&f);
    if (l < 0) continue;
    double s = 0.0;
    for (int i = 0; i < NPATHS; i++)
      s += (yT[i] - ref[i]) * (yT[i] - ref[i]);
    h[l] = (double)R / FINE;
    err[l] = sqrt(s / NPATHS);
  }
  double q = fit_order(h, err, 4);
  printf("strong order ou/revheun: %.3f (errors %.3e .. %.3e)\n", q, err[0], err[3]);
  cr_assert_leq(fabs(q - 1.0), 0.15, "revheun on ou: order %g, theory 1", q);
}
