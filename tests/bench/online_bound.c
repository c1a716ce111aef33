/* online_bound: an exact lower bound on what any online checkpointing policy of a natural
 * class can reach, for c = 3 or 4 slots, by dynamic programming over all such policies.
 *
 * Question (issue 7): can an online schedule (length unknown until the end) keep the median
 * excess over the offline optimum below a threshold, e.g. 0.5 %, over the lengths
 * l = lmin .. L? The excess of a length l is
 *   ex(l) = (forward steps of the policy) / (t(l, c) + l) - 1,
 * t(l, c) = r l - C(c + r, r - 1) Revolve's optimum (Griewank & Walther, ACM TOMS 26(1),
 * 2000), t(l, c) + l its forward steps (advances plus one per reversed step).
 *
 * Model (the class of policies). Slots: c = k + 1, slot 0 holds y_0 for the whole run (y_0
 * cannot be recomputed), k slots are movable. The forward sweep computes y_1, y_2, ... once
 * each, never restoring (no recomputation before the end is known); after computing y_N
 * the policy either keeps its held set Q (|Q| = k, Q a subset of {1 .. N-1}) or replaces
 * one member of Q by N. The first k states are stored (into free slots: never worse, as a
 * held state may be ignored later). The end is announced when y_{l-1} is current (before
 * the last step, as bench_online's "B" case); the policy then reverses with Q fixed. The
 * reversal is the best "segment-wise binomial" one: drop any subset of Q, then reverse the
 * segments right to left, the last segment [q_s, l-1) with c - s slots (its start's and the
 * free ones), each earlier one with one slot more (its successor's slot is free by then):
 *   rc(Q, E) = min_{K subset of Q} t(k_1, c) + sum_i t(k_{i+1} - k_i, c - i) + t(E - k_s, c - s)
 * (K = {k_1 < .. < k_s}, E = l - 1; the step l - 1 is reversed from the current state).
 * The forward steps are then (l - 1) + rc(Q, l - 1) + l. A deterministic online policy is
 * a path of decisions (one per N) that does not depend on l; length l is charged at the
 * state its end finds. With the decision at N preceding the announcement of l = N + 2,
 *   W(N, Q) = min over the k + 1 choices Q' of [ pen(N + 2, Q') + W(N + 1, Q') ],
 *   W(L - 1, .) = 0, answer W(k + 1, {1 .. k}),
 * pen(l, Q) = [ex(l) > thr] (mode count: the fewest lengths above thr any policy reaches)
 * or ex(l) (mode mean: the least total excess). Lengths l = k + 3 .. L are counted (for
 * l <= k + 2 every state fits and the policy is optimal).
 *
 * What it proves: no policy of the class has fewer than `count` of the lengths
 * k + 3 .. L above thr; if count > half of them, no policy of the class reaches a median
 * excess <= thr over those lengths. Limits: (1) the class assumes no recomputation during
 * the forward sweep and a segment-wise binomial reversal (the structure of our online
 * schedule, of Stumm & Walther's online Revolve, SIAM J. Sci. Comput. 32(2), 2010, and of
 * Wang, Moin & Iaccarino's dynamic checkpointing, SIAM J. Sci. Comput. 31(4), 2009); it is
 * not shown here that these choices are optimal, so the bound covers the class, not every
 * conceivable online schedule. (2) Only the lengths k + 3 .. L, uniformly; bench_online's
 * median also takes log-spaced lengths up to 10^5, which this DP (time O(L^(k+1)), memory
 * O(L^k) 16-bit counts) cannot reach. (3) The end announced before the last step.
 *
 * Against the comparator (--vs-cmp): the same DP with a limit per length instead of thr, the
 * forward steps of bench_online's comparator for online Revolve (tests/unit/online_compare.h):
 * t(l, c) + l for l <= beta(c, 2) (where online Revolve is optimal), none in
 * (beta(c, 2), beta(c, 3)] (quasi-optimal there; bench_online does not count those lengths),
 * the Wang-Moin-Iaccarino rule's steps beyond. Count mode: the fewest lengths on which a policy
 * of the class takes more forward steps than the comparator (0: a policy never worse than it
 * exists); mean mode: among the policies with that fewest count, the least mean excess (each
 * length above its limit costs VS_BIG, far more than any sum of excesses, so the minimum is
 * lexicographic).
 *
 * Usage: online_bound [--c 2|3|4] [--L L] [--thr X | --mean] [--vs-cmp] [--check]
 *   --check: the DP against a brute-force enumeration of every decision path (own t(n, s)
 *   by a plain dynamic program, own reversal by subset enumeration) for small L, c = 2, 3, 4,
 *   with a threshold and against the comparator;
 *   and the property that a policy optimal for every l <= beta(c, 2) = C(c + 2, 2) exists.
 * Written for this repository (Rewind); no code from elsewhere. */
#include "../unit/online_compare.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KMAX   3   /* movable slots: c <= 4 */
#define VS_BIG 1e6 /* --vs-cmp --mean: the cost of one length above the comparator */

/* t(n, s): Revolve's optimal advances for n steps and s slots (closed form). */
static int64_t t_closed(int64_t n, int s)
{
  if (n <= 1) return 0;
  if (s == 1) return n * (n - 1) / 2;
  int64_t r = 0, b = 1; /* b = beta(s, r) = C(s + r, s) */
  while (b < n) {
    r++;
    b = b * (s + r) / r;
  }
  return r * n - b * r / (s + 1); /* C(s + r, r - 1) = beta(s, r) r / (s + 1) */
}

typedef struct {
  int c, k, L;
  int64_t *t[KMAX + 2]; /* t[s][n], s = 1 .. c, n = 0 .. L */
  int64_t *lim;         /* --vs-cmp: the largest reversal cost of length l, lim[l]; else NULL */
} model;

/* Segment-wise binomial reversal cost of the held set q[0 .. k) (increasing) with the
 * state at E: the minimum over kept subsets (header comment). */
static int64_t reversal(const model *md, const int *q, int64_t E)
{
  int64_t best = INT64_MAX;
  for (int mask = 0; mask < (1 << md->k); mask++) {
    int64_t cost = 0, prev = 0;
    int s = 0;
    for (int i = 0; i < md->k; i++)
      if (mask >> i & 1) {
        cost += md->t[md->c - s][q[i] - prev];
        prev = q[i];
        s++;
      }
    cost += md->t[md->c - s][E - prev];
    if (cost < best) best = cost;
  }
  return best;
}

/* Penalty of length l = E + 1 with held set q: count mode (mean = 0) [ex > thr], else ex;
 * against the comparator (md->lim) [rc > lim], else VS_BIG [rc > lim] + ex. */
static double penalty(const model *md, const int *q, int64_t E, double thr, int mean)
{
  int64_t l = E + 1, rc = reversal(md, q, E);
  double opt = (double)(md->t[md->c][l] + l);
  double ex = (double)(E + rc + l) / opt - 1.0;
  if (md->lim) return (rc > md->lim[l] ? (mean ? VS_BIG : 1.0) : 0.0) + (mean ? ex : 0.0);
  if (mean) return ex;
  return ex > thr + 1e-12 ? 1.0 : 0.0;
}

static int64_t binom(int64_t n, int r)
{
  if (n < r) return 0;
  int64_t b = 1;
  for (int j = 0; j < r; j++)
    b = b * (n - j) / (j + 1);
  return b;
}

/* Penalty from the reversal cost rc of length l = E + 1: count mode [rc > rcmax], else ex
 * (plus VS_BIG [rc > rcmax] against the comparator). */
static double pen_of(const model *md, int64_t rc, int64_t E, int64_t rcmax, int mean)
{
  if (!mean) return rc > rcmax ? 1.0 : 0.0;
  int64_t l = E + 1;
  double ex = (double)(E + rc + l) / (double)(md->t[md->c][l] + l) - 1.0;
  return md->lim && rc > rcmax ? VS_BIG + ex : ex;
}

/* The DP of the header comment, in place: sets containing N are states of step N + 1
 * only, so W(N + 1, .) is read from them before step N overwrites the others. Sets are
 * indexed by the combinatorial number system (colex order: the index of q is
 * sum_i C(q_i - 1, i + 1)), so an enumeration in colex order visits 0, 1, 2, ...; the
 * choices that store N reach the sets r u {N}, whose index is C(N - 1, k) + that of the
 * (k-1)-set r; their penalty plus W is tabulated per N (G). Returns W(k + 1, {1 .. k}). */
static double dp(const model *md, double thr, int mean)
{
  int k = md->k, L = md->L;
  int64_t size = binom(L - 1, k) + 1, gsize = binom(L - 1, k - 1) + 1;
  double *W = calloc((size_t)size, sizeof *W), *G = calloc((size_t)gsize, sizeof *G);
  int64_t(*C)[KMAX + 1] = calloc((size_t)L + 1, sizeof *C);
  if (!W || !G || !C) {
    fprintf(stderr, "online_bound: out of memory (%" PRId64 " states)\n", size);
    exit(1);
  }
  for (int x = 0; x <= L; x++)
    for (int r = 0; r <= k; r++)
      C[x][r] = binom(x, r);
  int q[KMAX + 1];
  for (int N = L - 2; N >= k + 1; N--) {
    int64_t E = N + 1, l = E + 1, last = N + 1 <= L - 2;
    /* the largest rc with ex <= thr (count mode) */
    int64_t rcmax =
        md->lim ? md->lim[l]
                : (int64_t)floor((1.0 + thr) * (double)(md->t[md->c][l] + l) + 1e-9) - E - l;
    /* G over the (k-1)-sets r of {1 .. N - 1}: penalty of r u {N} plus W(N + 1, r u {N}) */
    for (int i = 0; i < k - 1; i++)
      q[i] = i + 1;
    for (int64_t g = 0;; g++) {
      q[k - 1] = N;
      G[g] = pen_of(md, reversal(md, q, E), E, rcmax, mean) + (last ? W[C[N - 1][k] + g] : 0.0);
      int i = 0; /* next (k-1)-set in colex order */
      while (i < k - 1 && q[i] + 1 == (i + 1 < k - 1 ? q[i + 1] : N))
        i++;
      if (i == k - 1) break;
      q[i]++;
      for (int j = 0; j < i; j++)
        q[j] = j + 1;
    }
    /* W(N, q) over the k-sets q of {1 .. N - 1} */
    for (int i = 0; i < k; i++)
      q[i] = i + 1;
    for (int64_t idx = 0;; idx++) {
      double best = pen_of(md, reversal(md, q, E), E, rcmax, mean) + (last ? W[idx] : 0.0);
      for (int drop = 0; drop < k; drop++) { /* q minus q[drop], N stored */
        int64_t gi = 0;
        for (int j = 0; j < k; j++)
          if (j < drop)
            gi += C[q[j] - 1][j + 1];
          else if (j > drop)
            gi += C[q[j] - 1][j];
        if (G[gi] < best) best = G[gi];
      }
      W[idx] = best;
      int i = 0; /* next k-set in colex order */
      while (i < k && q[i] + 1 == (i + 1 < k ? q[i + 1] : N))
        i++;
      if (i == k) break;
      q[i]++;
      for (int j = 0; j < i; j++)
        q[j] = j + 1;
    }
  }
  double v = W[0]; /* {1 .. k} has index 0 */
  free(W);
  free(G);
  free(C);
  return v;
}

static int model_init(model *md, int c, int L, int64_t (*t)(int64_t, int))
{
  memset(md, 0, sizeof *md);
  md->c = c, md->k = c - 1, md->L = L;
  for (int s = 1; s <= c; s++) {
    md->t[s] = malloc(((size_t)L + 2) * sizeof(int64_t));
    if (!md->t[s]) return 1;
    for (int64_t n = 0; n <= L + 1; n++)
      md->t[s][n] = t(n, s);
  }
  return 0;
}

static void model_free(model *md)
{
  for (int s = 1; s <= md->c; s++)
    free(md->t[s]);
  free(md->lim);
}

/* --vs-cmp: lim[l] = the comparator's forward steps minus this class's E + l, i.e. the largest
 * reversal cost that is not worse (header comment); INT64_MAX / 4 where nothing is counted. */
static int model_vs_cmp(model *md)
{
  const int c = md->c;
  const int64_t b2 = (int64_t)(c + 2) * (c + 1) / 2, b3 = b2 * (c + 3) / 3;
  md->lim = malloc(((size_t)md->L + 2) * sizeof(int64_t));
  if (!md->lim) return 1;
  online_wmi w;
  online_wmi_init(&w, c);
  int64_t N = 0;
  md->lim[0] = md->lim[1] = INT64_MAX / 4;
  for (int64_t l = 2; l <= md->L; l++) {
    const int64_t E = l - 1;
    for (; N < E; N++)
      online_wmi_step(&w, N);
    md->lim[l] = l <= b2   ? md->t[c][l]
                 : l <= b3 ? INT64_MAX / 4
                           : online_model_cost(w.pos, w.n, c, E) - E;
  }
  return 0;
}

/* --- The independent check ------------------------------------------------------------ */

/* t(n, s) by the plain recurrence t(n, s) = min_j j + t(n - j, s - 1) + t(j, s). */
static int64_t t_dp(int64_t n, int s)
{
  static int64_t memo[KMAX + 2][64];
  static int ready = 0;
  if (!ready) {
    for (int ss = 1; ss <= KMAX + 1; ss++)
      for (int m = 0; m < 64; m++) {
        if (m <= 1)
          memo[ss][m] = 0;
        else if (ss == 1)
          memo[ss][m] = (int64_t)m * (m - 1) / 2;
        else {
          int64_t b = INT64_MAX;
          for (int j = 1; j < m; j++) {
            int64_t v = j + memo[ss - 1][m - j] + memo[ss][j];
            if (v < b) b = v;
          }
          memo[ss][m] = b;
        }
      }
    ready = 1;
  }
  return memo[s][n];
}

/* Every decision path from step N with held set q; the least total penalty. */
static double brute(const model *md, const int *q, int N, double thr, int mean)
{
  if (N > md->L - 2) return 0.0;
  double best = INFINITY;
  int r[KMAX];
  for (int drop = -1; drop < md->k; drop++) {
    int n = 0;
    for (int i = 0; i < md->k; i++)
      if (i != drop) r[n++] = q[i];
    if (drop >= 0) r[n++] = N;
    double v = penalty(md, r, N + 1, thr, mean) + brute(md, r, N + 1, thr, mean);
    if (v < best) best = v;
  }
  return best;
}

static int check(void)
{
  int fails = 0;
  for (int64_t n = 0; n < 64; n++)
    for (int s = 1; s <= KMAX + 1; s++)
      if (t_closed(n, s) != t_dp(n, s)) {
        fprintf(stderr, "t(%" PRId64 ", %d): closed form %" PRId64 ", DP %" PRId64 "\n", n, s,
                t_closed(n, s), t_dp(n, s));
        fails++;
      }
  static const double thrs[] = {0.0, 0.005, 0.05, -1.0}; /* -1: mean mode */
  for (int c = 2; c <= 4; c++)
    for (int L = c + 3; L <= (c == 2 ? 20 : c == 3 ? 15 : 12); L++)
      for (size_t i = 0; i < sizeof thrs / sizeof thrs[0]; i++) {
        /* vs 1: against the comparator; vs 2: against limits one step stricter, which some
         * lengths miss (so a DP that misreads the limits differs from the brute force) */
        for (int vs = 0; vs <= 2; vs++) {
          model a, b;
          int mean = thrs[i] < 0, q[KMAX];
          if (vs && thrs[i] != 0.0 && !mean) continue; /* the comparator replaces thr */
          if (model_init(&a, c, L, t_closed) || model_init(&b, c, L, t_dp)) return 1;
          if (vs && (model_vs_cmp(&a) || model_vs_cmp(&b))) return 1;
          for (int l = 0; vs == 2 && l <= L; l++)
            if (a.lim[l] < INT64_MAX / 4) a.lim[l]--, b.lim[l]--;
          for (int j = 0; j < c - 1; j++)
            q[j] = j + 1;
          double x = dp(&a, thrs[i], mean), y = brute(&b, q, c, thrs[i], mean);
          if (!(fabs(x - y) <= 1e-12 * (1 + fabs(y))) || x < 0) {
            fprintf(stderr, "c=%d L=%d thr=%g mean=%d vs-cmp=%d: DP %.17g, brute force %.17g\n", c,
                    L, thrs[i], mean, vs, x, y);
            fails++;
          }
          /* an online policy optimal for every l <= beta(c, 2) exists (Stumm & Walther) */
          if (!vs && !mean && thrs[i] == 0.0 && L <= (c + 2) * (c + 1) / 2 && x != 0.0) {
            fprintf(stderr, "c=%d L=%d: %g lengths above the optimum, expected 0\n", c, L, x);
            fails++;
          }
          model_free(&a);
          model_free(&b);
        }
      }
  printf("online_bound --check: %s\n", fails ? "FAILED" : "DP = brute force, all passed");
  return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
  int c = 3, L = 3000, mean = 0, vs = 0;
  double thr = 0.005;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--c") && i + 1 < argc)
      c = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--L") && i + 1 < argc)
      L = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--thr") && i + 1 < argc)
      thr = atof(argv[++i]);
    else if (!strcmp(argv[i], "--mean"))
      mean = 1;
    else if (!strcmp(argv[i], "--vs-cmp"))
      vs = 1;
    else if (!strcmp(argv[i], "--check"))
      return check();
    else {
      fprintf(stderr,
              "usage: online_bound [--c 3|4] [--L L] [--thr X | --mean] [--vs-cmp] [--check]\n");
      return 2;
    }
  }
  if (c < 2 || c > KMAX + 1 || L < c + 3 || L > 60000) {
    fprintf(stderr, "online_bound: need 2 <= c <= %d and c + 3 <= L <= 60000\n", KMAX + 1);
    return 2;
  }
  model md;
  if (model_init(&md, c, L, t_closed) || (vs && model_vs_cmp(&md))) return 1;
  double v = dp(&md, thr, mean);
  int nlen = L - (c - 1) - 2;
  if (vs && mean) {
    double worse = floor(v / VS_BIG + 1e-9);
    printf("c=%d lengths %d..%d: among the policies of the class with the fewest lengths worse "
           "than the comparator (%.0f), the least mean excess %.4f %%\n",
           c, c + 2, L, worse, 100.0 * (v - worse * VS_BIG) / nlen);
  } else if (vs)
    printf("c=%d lengths %d..%d: every policy of the class takes more forward steps than the "
           "comparator on >= %.0f of %d lengths (%s)\n",
           c, c + 2, L, v, nlen,
           v == 0 ? "a policy never worse than it exists" : "none is never worse");
  else if (mean)
    printf("c=%d lengths %d..%d: least mean excess of any policy of the class %.4f %%\n", c, c + 2,
           L, 100.0 * v / nlen);
  else
    printf("c=%d lengths %d..%d: every policy of the class has >= %.0f of %d lengths above "
           "%.3g %% (%s)\n",
           c, c + 2, L, v, nlen, 100.0 * thr,
           2 * v > nlen ? "so its median excess is above it" : "median not decided");
  model_free(&md);
  return 0;
}
