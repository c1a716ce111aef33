/* bench_online: the online schedule's excess over the offline optimum, and over a
 * comparator for Stumm & Walther's online Revolve, on a dense grid of lengths.
 *
 * For c = 3, 5, 10, 20 slots and every l = 1 .. 3000 plus log-spaced l (factor 1.02) up
 * to --lmax (default 10^5), with the end announced before the last step (B: l = n + 1)
 * and after it (A: l = n), it runs the online schedule to TERMINATE (rw_schedule_run for
 * A, a loop for B) and prints the median, 90th percentile and worst of
 *   excess = forward_steps / (t(l, c) + l) - 1   (B),   forward_steps / (t(l + 1, c) + l) - 1   (A)
 * (forward_steps = advances + reversals; the denominators are the offline optimum's). With
 * the end announced after the last step the state is at l when l becomes known, so the
 * reversal has no free current state: it costs what the reversal of l + 1 steps costs in B
 * (whose last step is reversed from the current state) minus that last step, i.e.
 * t(l + 1, c) + l forward steps at best (e.g. c = 3, l = 4: 9, not t(4, 3) + 4 + 1 = 8; the
 * earlier "+1" charged schedules for an unreachable optimum at every l in (c, beta(c, 2)]). The
 * comparator (tests/unit/online_compare.h) is online Revolve at its best: that optimum for
 * l <= beta(c, 3) (the paper's optimal and quasi-optimal range), the Wang-Moin-Iaccarino
 * level rule beyond; "worse" counts the lengths where the schedule takes more forward
 * steps than the comparator.
 *
 * The grid above samples lengths beyond 3000 (factor 1.02); the comparator's good lengths
 * come in bands (just before its level rule reorganises), which such a grid can step over.
 * The dense table (run first) takes every l = 2 .. lmax for c = 3, 4, 5, 6, 8, 10, 12, 15,
 * 20, end before the last step, from one forward sweep per c (dense_row below, checked
 * against full runs every 997 lengths; --c C, repeatable, picks other slot counts). Usage:
 * bench_online [--lmax L] [--dense-only | --grid-only] [--c C]... Build in Release. */
#include "../unit/online_compare.h"
#include "rewind/rw_schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Forward steps of the online schedule with c slots for l steps; before = 1: the end is
 * announced when the state is at l - 1, else after the step that reaches l. */
static int online_forward_steps(int64_t l, int c, int before, int64_t *fs)
{
  rw_schedule s = NULL;
  rw_schedule_stats st;
  RW_CALL(rw_schedule_create_online(c, &s));
  if (before) {
    rw_action a;
    int64_t y = 0;
    if (l == 1) RW_CALL(rw_schedule_set_steps(s, 1));
    for (;;) {
      RW_CALL(rw_schedule_next(s, &a));
      if (a.type == RW_ACTION_TERMINATE) break;
      if (a.type == RW_ACTION_ADVANCE) {
        y = a.to;
        if (y == l - 1) {
          int64_t known = 0;
          RW_CALL(rw_schedule_get_info(s, &known, NULL));
          if (known < 0) RW_CALL(rw_schedule_set_steps(s, l));
        }
      }
    }
    (void)y;
    RW_CALL(rw_schedule_get_stats(s, &st));
  } else {
    RW_CALL(rw_schedule_run(s, l, &st));
  }
  *fs = st.forward_steps;
  rw_schedule_destroy(&s);
  return 0;
}

/* --- Dense mode: every length l = 2 .. lmax for one c from a single forward sweep.
 * The online schedule never looks ahead, so its held checkpoints when the state is at E do
 * not depend on the length; the forward steps of the run of length l = E + 1 (B) are
 *   E + rev(held at E, E) + l,
 * rev the best segment-wise binomial reversal from a subset of the held checkpoints (what
 * the schedule's reverse sweep does, see rw_schedule_online.c). rev is computed here by its
 * own program, left to right (the schedule's runs right to left):
 *   h(i, j) = least cost of the intervals left of held p_i when it is the j-th kept one,
 *   h(0, 0) = 0, h(i, j) = min_{i' < i} h(i', j - 1) + t(p_i - p_{i'}, c - j + 1),
 *   rev = min_{i, j} h(i, j) + t(E - p_i, c - j),
 * and checked against full runs (online_forward_steps) on a sample of lengths. */
typedef struct {
  int c;
  int64_t lmax, *t; /* t[s * (lmax + 2) + m], s <= c, m <= lmax + 1 */
  int64_t *h;       /* [c * c] */
} dense_ctx;

static int64_t dense_t(const dense_ctx *d, int64_t m, int s)
{
  return m <= 1 ? 0 : d->t[(int64_t)s * (d->lmax + 2) + m];
}

static int64_t dense_rev(const dense_ctx *d, const int64_t *p, int n, int64_t E)
{
  const int c = d->c;
  int64_t *h = d->h, best = INT64_MAX;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < c; j++)
      h[i * c + j] = INT64_MAX;
  h[0] = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j <= i && j < c; j++) {
      if (h[i * c + j] == INT64_MAX) continue;
      for (int i2 = i + 1; i2 < n && j + 1 < c; i2++) {
        int64_t v = h[i * c + j] + dense_t(d, p[i2] - p[i], c - j);
        if (v < h[i2 * c + j + 1]) h[i2 * c + j + 1] = v;
      }
      int64_t v = h[i * c + j] + dense_t(d, E - p[i], c - j);
      if (v < best) best = v;
    }
  return best;
}

/* One c, every l in [2, lmax], the end before the last step. Prints a table row. */
static int dense_row(int c, int64_t lmax)
{
  dense_ctx d = {c, lmax, NULL, NULL};
  int64_t n2 = lmax + 2, b2 = 0, b3 = 0;
  d.t = malloc(sizeof *d.t * (size_t)(c + 1) * (size_t)n2);
  d.h = malloc(sizeof *d.h * (size_t)c * (size_t)c);
  double *ex = malloc(sizeof *ex * (size_t)lmax), *exc = malloc(sizeof *exc * (size_t)lmax);
  int64_t *held = malloc(sizeof *held * (size_t)c);
  if (!d.t || !d.h || !ex || !exc || !held) return 1;
  for (int s = 1; s <= c; s++)
    for (int64_t m = 0; m < n2; m++)
      d.t[s * n2 + m] = oc_t(m, s);
  if (rw_binomial_beta(c, 2, &b2) || rw_binomial_beta(c, 3, &b3)) return 1;
  rw_schedule s = NULL;
  if (rw_schedule_create_online(c, &s)) return 1;
  online_wmi w;
  online_wmi_init(&w, c);
  int n = 0, ne = 0, nc = 0, worse = 0, checked = 0;
  int64_t worst_l = 0;
  double worst_loss = 0;
  rw_action a;
  for (int64_t E = 0; E < lmax;) {
    if (rw_schedule_next(s, &a)) return 1;
    if (a.type == RW_ACTION_STORE) {
      held[n++] = a.step; /* appended at the current state, the latest */
    } else if (a.type == RW_ACTION_FREE) {
      int k = 0;
      for (int i = 0; i < n; i++)
        if (held[i] != a.step) held[k++] = held[i];
      n = k;
    } else if (a.type == RW_ACTION_ADVANCE) {
      online_wmi_step(&w, E); /* the comparator decides on y_E */
      E = a.to;
      const int64_t l = E + 1;
      if (l > lmax) break;
      /* the state is at E = l - 1 and nothing is decided on y_E: the end of run l */
      const int64_t opt = dense_t(&d, l, c) + l, fs = E + dense_rev(&d, held, n, E) + l;
      ex[ne++] = (double)fs / (double)opt - 1;
      if (l > b2 && l <= b3) continue; /* online Revolve's quasi-optimal range: not compared */
      const int64_t cmp = l <= b2 ? opt : online_model_cost(w.pos, w.n, c, E) + l;
      exc[nc++] = (double)cmp / (double)opt - 1;
      if (fs > cmp) {
        worse++;
        double loss = (double)fs / (double)cmp - 1;
        if (loss > worst_loss) worst_loss = loss, worst_l = l;
      }
      if (l % 997 == 0 || l == lmax) { /* the model against a full run */
        int64_t real = 0;
        if (online_forward_steps(l, c, 1, &real)) return 1;
        if (real != fs) {
          fprintf(stderr,
                  "bench_online: c=%d l=%lld: a full run takes %lld forward steps, the "
                  "dense model %lld\n",
                  c, (long long)l, (long long)real, (long long)fs);
          return 1;
        }
        checked++;
      }
    }
  }
  rw_schedule_destroy(&s);
  qsort(ex, (size_t)ne, sizeof *ex, cmp_double);
  qsort(exc, (size_t)nc, sizeof *exc, cmp_double);
  printf("%3d | %7.2f%% %7.2f%% %7.2f%% | %7.2f%% %7.2f%% %7.2f%% | %6d %7.3f%% %7lld | %d\n", c,
         100 * ex[ne / 2], 100 * ex[(int)(0.9 * ne)], 100 * ex[ne - 1], 100 * exc[nc / 2],
         100 * exc[(int)(0.9 * nc)], 100 * exc[nc - 1], worse, 100 * worst_loss, (long long)worst_l,
         checked);
  fflush(stdout);
  free(d.t), free(d.h), free(ex), free(exc), free(held);
  return 0;
}

int main(int argc, char **argv)
{
  int64_t lmax = 100000;
  int grid = 1, dense = 1, nc = 0, cd_arg[32];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--lmax") && i + 1 < argc) {
      lmax = strtoll(argv[++i], NULL, 10);
      if (lmax < 2) {
        fprintf(stderr, "bench_online: --lmax must be >= 2\n");
        return 2;
      }
    } else if (!strcmp(argv[i], "--c") && i + 1 < argc && nc < 32) {
      cd_arg[nc] = atoi(argv[++i]);
      if (cd_arg[nc] < 1 || cd_arg[nc] > 512) {
        fprintf(stderr, "bench_online: --c must be in [1, 512]\n");
        return 2;
      }
      nc++;
    } else if (!strcmp(argv[i], "--dense-only")) {
      grid = 0;
    } else if (!strcmp(argv[i], "--grid-only")) {
      dense = 0;
    } else {
      fprintf(stderr, "usage: bench_online [--lmax L] [--dense-only | --grid-only] [--c C]...\n");
      return 2;
    }
  }
  if (dense) {
    static const int cd[] = {3, 4, 5, 6, 8, 10, 12, 15, 20};
    printf("dense: every l = 2 .. %lld, end before the last step; excess over t(l,c) + l; cmp as "
           "below (lengths in (beta(c,2), beta(c,3)] not compared)\n",
           (long long)lmax);
    printf("%3s | %8s %8s %8s | %8s %8s %8s | %6s %8s %7s | %s\n", "c", "median", "p90", "worst",
           "cmp med", "cmp p90", "cmp wst", "worse", "max loss", "at l", "full runs checked");
    const int *cl = nc ? cd_arg : cd, ncl = nc ? nc : (int)(sizeof cd / sizeof cd[0]);
    for (int ci = 0; ci < ncl; ci++)
      if (dense_row(cl[ci], lmax)) {
        fprintf(stderr, "bench_online: %s\n", rw_error_message());
        return 1;
      }
    printf("max loss: the largest forward steps / cmp - 1 among the lengths worse than cmp.\n");
    if (!grid) return 0;
  }
  int64_t *ls = malloc(sizeof *ls * 20000);
  double *ex = malloc(sizeof *ex * 20000), *exc = malloc(sizeof *exc * 20000);
  /* every cell (l, c) of one end mode, pooled over c: [end][cell] */
  double *pool[2] = {malloc(sizeof(double) * 4 * 20000), malloc(sizeof(double) * 4 * 20000)};
  double *poolc[2] = {malloc(sizeof(double) * 4 * 20000), malloc(sizeof(double) * 4 * 20000)};
  int npool[2] = {0, 0}, pworse[2] = {0, 0};
  if (!ls || !ex || !exc || !pool[0] || !pool[1] || !poolc[0] || !poolc[1]) return 1;
  int nl = 0;
  for (int64_t l = 1; l <= lmax && l <= 3000; l++)
    ls[nl++] = l;
  for (double x = 3000; nl < 20000;) {
    x *= 1.02;
    int64_t l = (int64_t)x;
    if (l > lmax) break;
    if (l > ls[nl - 1]) ls[nl++] = l;
  }
  static const int cs[] = {3, 5, 10, 20};
  printf("online schedule vs the offline optimum in forward steps (B: t(l,c) + l, A: t(l+1,c) + "
         "l), %d lengths l <= %lld\n",
         nl, (long long)lmax);
  printf("%3s %4s | %8s %8s %8s | %8s %8s %8s | %6s %6s\n", "c", "end", "median", "p90", "worst",
         "cmp med", "cmp p90", "cmp wst", "worse", "b2-b3");
  for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
    int c = cs[ci];
    int64_t b2 = 0, b3 = 0;
    if (rw_binomial_beta(c, 2, &b2) || rw_binomial_beta(c, 3, &b3)) return 1;
    for (int before = 1; before >= 0; before--) {
      online_wmi w;
      online_wmi_init(&w, c);
      int64_t N = 0; /* next state the model decides on */
      int worse = 0, mid = 0;
      for (int k = 0; k < nl; k++) {
        int64_t l = ls[k], fs = 0, t = 0;
        if (online_forward_steps(l, c, before, &fs)) {
          fprintf(stderr, "bench_online: %s\n", rw_error_message());
          return 1;
        }
        if (rw_binomial_advances(before ? l : l + 1, c, NULL, &t)) return 1;
        /* the model has decided on y_0 .. y_{E-1}: E = l - 1 (B) or l (A) */
        int64_t E = before ? l - 1 : l;
        for (; N < E; N++)
          online_wmi_step(&w, N);
        int64_t cmp = l <= b3 ? t + l : online_model_cost(w.pos, w.n, c, E) + l;
        double opt = (double)(t + l);
        ex[k] = (double)fs / opt - 1;
        exc[k] = (double)cmp / opt - 1;
        if (fs > cmp) {
          if (l > b2 && l <= b3)
            mid++;
          else
            worse++;
        }
        pool[before][npool[before]] = ex[k];
        poolc[before][npool[before]++] = exc[k];
      }
      pworse[before] += worse;
      qsort(ex, (size_t)nl, sizeof *ex, cmp_double);
      qsort(exc, (size_t)nl, sizeof *exc, cmp_double);
      int m = nl / 2, p = (int)(0.9 * nl);
      printf("%3d %4s | %7.2f%% %7.2f%% %7.2f%% | %7.2f%% %7.2f%% %7.2f%% | %6d %6d\n", c,
             before ? "B" : "A", 100 * ex[m], 100 * ex[p], 100 * ex[nl - 1], 100 * exc[m],
             100 * exc[p], 100 * exc[nl - 1], worse, mid);
      fflush(stdout);
    }
  }
  for (int before = 1; before >= 0; before--) {
    int n = npool[before], m = n / 2, p = (int)(0.9 * n);
    qsort(pool[before], (size_t)n, sizeof(double), cmp_double);
    qsort(poolc[before], (size_t)n, sizeof(double), cmp_double);
    printf("all %4s | %7.2f%% %7.2f%% %7.2f%% | %7.2f%% %7.2f%% %7.2f%% | %6d        (%d cells "
           "(l, c) pooled)\n",
           before ? "B" : "A", 100 * pool[before][m], 100 * pool[before][p],
           100 * pool[before][n - 1], 100 * poolc[before][m], 100 * poolc[before][p],
           100 * poolc[before][n - 1], pworse[before], n);
  }
  printf("B: end announced before the last step (l = n + 1), optimum t(l,c) + l; A: after it\n"
         "(l = n), optimum t(l+1,c) + l (no free current state for the reversal). cmp: that\n"
         "optimum for l <= beta(c,3), Wang-Moin-Iaccarino beyond. worse: lengths outside\n"
         "(beta(c,2), beta(c,3)] with more forward steps than cmp; b2-b3: lengths in that range\n"
         "above the optimum.\n");
  free(ls);
  free(ex);
  free(exc);
  for (int e = 0; e < 2; e++)
    free(pool[e]), free(poolc[e]);
  return 0;
}
