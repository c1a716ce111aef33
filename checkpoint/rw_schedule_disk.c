/* Two-level (RAM + disk) offline checkpointing: the optimal schedule for a known number of
 * steps with c_ram RAM slots and c_disk disk slots (or unlimited disk), when a disk write
 * costs wd and a disk read rd (in units of one forward step).
 *
 * References: J. Herrmann and G. Pallez, "H-Revolve: a framework for adjoint computation on
 * synchronous hierarchical platforms", ACM TOMS 46(2), 2020 (finite disk); G. Aupy,
 * J. Herrmann, P. Hovland and Y. Robert, "Optimal multistage algorithm for adjoint
 * computation", SIAM J. Sci. Comput. 38(3), 2016 (Disk-Revolve, unlimited disk). Written
 * from the recurrences below, not from the authors' code. With R(n) = t(n, c_ram) (the
 * binomial optimum, rw_binomial_advances):
 *   finite disk:  H(n, 0) = R(n),  H(n, m) = min(R(n), wd + P(n, m)),
 *                 P(n, m) = min(R(n), min_{1 <= j <= n-2} j + H(n-j, m-1) + rd + P(j, m));
 *   unlimited:    D(n) = min(R(n), min_{1 <= j <= n-2} wd + j + D(n-j) + rd + R(j)).
 * H(n, m) reverses n steps from the current state with m free disk slots: either in RAM, or
 * write the start to disk and run P. P(n, m) reverses n steps whose start is on disk (and
 * current): in RAM (the disk slot is freed first: it is never read again), or advance j
 * steps, reverse the right part [j, n) with one disk slot less, read the start back and
 * reverse the left part [0, j) with the start still on disk. D writes the start, advances j,
 * reverses the right part, reads the start (freeing its slot) and reverses [0, j) in RAM.
 *
 * Computing the tables exactly without O(l^2) work
 * ------------------------------------------------
 * Each entry is min(R(n), rd' + min_j g(j)) with g(j) = U(j) + V(n - j): for P, U(j) =
 * j + P(j, m) and V = H(., m-1) (and the constant rd); for D, U(j) = wd + rd + j + R(j) and
 * V = D. Neither U nor V is convex in general (H is a minimum of two functions, and tables
 * show both non-convex entries and non-monotone optimal splits), so neither a convexity
 * search nor a monotone-split argument is exact. What is exact is a lower bound: let U^ and
 * V^ be the lower convex hulls (greatest convex minorants) of the points U(j) and V(x) over
 * the index ranges in use. Then U^ <= U, V^ <= V, and
 *   LB(j) = U^(j) + V^(n - j) <= g(j)
 * is a CONVEX function of j (a sum of convex functions of j). So the set of j where
 * LB(j) < best (the best g found so far) is an interval around the minimiser of LB; every j
 * outside it has g(j) >= LB(j) >= best and cannot improve. The search descends LB to its
 * minimiser (starting at the previous entry's split), then evaluates g on both sides,
 * outward, while LB(j) < best - tol, tightening best as it goes: the result is the exact
 * minimum (tol = 1e-9 relative absorbs the rounding of the hull arithmetic; with integer
 * costs every value is an integer and nothing is lost). The hulls are small (the binomial
 * function is piecewise linear with slope changes only at beta(c, r)), and the tables are
 * close to convex, so few j are evaluated per entry. The hull of an online sequence (P(., m)
 * or D, filled in increasing n) is kept as a monotone-chain stack of the prefix: a minorant
 * of every point of the prefix, which is all the queries use. Tests check every value
 * against a plain O(l^2 m) dynamic program.
 *
 * Finite disk with many slots: fewer entries and fewer candidates
 * ------------------------------------------------------------------
 * The hull bound alone leaves thousands of j per entry once c_disk is in the tens: the
 * tables are piecewise linear with integer slopes, so g is flat (exact ties) over long
 * ranges of j and the bound cannot separate them. Three exact reductions, all checked on the
 * computed numbers rather than assumed (so a bad guess only costs time):
 *
 * 1. Per-n saturation. Let N_m be the largest N with H(x, m) = H(x, m-1) for every x <= N.
 *    For n <= N_m + 1, P(n, m+1) and H(n, m+1) use only H(x, m), x <= n - 1 <= N_m, and
 *    P(j, m+1), j < n, so by induction on n they equal P(n, m) and H(n, m). Column m+1 is
 *    therefore computed only for n >= lo_{m+1} = N_m + 2; below, it repeats the last column
 *    that computed n. N_m grows with m (by about the disk-checkpoint period, 66 steps for
 *    c_ram = 10, wd = 20, rd = 10), and the columns stop once lo > l (full saturation).
 *
 * 2. Candidate splits. Write dd_s f(x) = f(x + s) - 2 f(x) + f(x - s). If dd_s U(j) = 0
 *    and dd_s V(n - j) = 0 with j - s >= 1 and j + s <= n - 2, then g(j) is the mean of
 *    g(j - s) and g(j + s), so g(j) >= min(g(j - s), g(j + s)); such a j is "skippable
 *    with step s". The smallest minimiser of g over [1, n-2] is never skippable (a
 *    neighbour s away would be a smaller minimiser). We use s = 1 (the tables are piecewise
 *    linear: few kinks) and s = T (the tables are exactly periodic plus linear with period
 *    T over the saturated range: H(x + T) - H(x) is constant there), so only j that are
 *    skippable with neither step are evaluated: a kink of U at j or of V at n - j (or an
 *    end), lying in a band where U or V is not T-periodic (or within T of an end). T is
 *    taken as lo_m - lo_{m-1} (the period shows up as the growth of the saturated prefix);
 *    any T >= 1 is correct. The kinks are kept as increasing lists, the non-periodic bands
 *    as intervals (a handful per column); the search walks the intervals outward from the
 *    hull bound's minimiser, stopping (as above) once the bound reaches the best value.
 *    Equalities are tested exactly (==) on doubles: with integer or dyadic costs every
 *    value is exact; otherwise rounding only makes more points candidates.
 *
 * 3. Ties keep the previous entry's split (or its shift by one), which makes the decisions
 *    of a column a few runs (tens at most in practice); they are stored run-length encoded.
 *
 * 4. The saturated column. With unbounded disk slots the recurrence has one column:
 *    H(n) = min(R(n), wd + P(n)), P(n) = min(R(n), min_j j + H(n-j) + rd + P(j)), and by
 *    induction on n, H(n, m) >= H(n) for every m. It is computed first (one pass, U and V
 *    both online, T = the online-disk period, any T being exact); if the
 *    schedule its decisions describe, walked with as many slots as it wants, holds at most
 *    c_disk disk slots, it is optimal for c_disk too and is the plan (one column). Else it
 *    is dropped (about one column's work lost) and the columns below are computed.
 *
 * Reading a decision for (n, m) takes the last column k <= m with lo_k <= n. The walk is
 * exact because the tables are nonincreasing in m (a column's options contain the previous
 * column's): the decision from column k costs j + H(n-j, m-1) + rd + P(j, m) <= P(n, k) =
 * P(n, m) when walked with m slots, and no schedule beats the optimum; rw_two_level_cost
 * checks the walked cost against the table value.
 *
 * Cost (l = 10^5, wd = 20, rd = 10, Release, one core of a shared VM): at or above the
 * saturated slot count (1511 for c_ram = 10, 3332 for c_ram = 3) about 0.15 s (was 19 s and
 * 55-82 s); below it the columns: c_ram = 10: 50 slots ~0.7 s, 200 ~4 s, 1000 ~8 s;
 * c_ram = 3: 50 ~1.2 s, 200 ~5 s, 1000 ~20 s, 3331 ~30 s (rewind-plan plans once and takes
 * the optimum from the schedule's plan, rw_schedule_two_level_counts: 2026-11-24, quiet,
 * c_ram = 10 with 200 / 1000 slots 3.2 / 7.4 s, c_ram = 3 4.8 / 19.5 s). Half the time goes
 * to the lower bound's hull evaluations (hull_at_cur), from the number of calls, not the
 * cursor's walks (bisecting them changed nothing). So the walk over the candidates tests the
 * bound only at every 8th candidate (and at each interval's start): g is cheaper than the
 * bound, and testing less often only evaluates a few more g, so the minimum is the same
 * (2026-11-24, l = 5*10^4, c_ram = 3, 600 slots, alternating runs: 5.5-6.4 s against 7.2-8.7
 * s, identical plans). Each hull segment's slope is kept when the point is pushed, so an
 * evaluation is one multiply-add, not a division (2026-11-25, l = 10^5, c_ram = 3, 1000 slots,
 * alternating runs: 20.9-21.0 s against 22.3-23.8 s, the same cost, writes and reads; the
 * bound moves by rounding only, far inside tolerance()). The planner holds O(l) doubles and
 * lists (about
 * 15 MB at l = 10^5) and the plan keeps the runs and two int64 per column. Unlimited disk keeps one
 * int32 decision per n. The action generator holds a stack of at most (disk slots + 4)
 * segments and the binomial engine's O(c_ram) state. */
#include "rewind/rw_context.h"
#include "rw_schedule_impl.h"

#include <math.h>
#include <string.h>

#define WRITE_BIT           0x40000000 /* decision: H writes the start to disk */
#define SPLIT_MASK          0x3fffffff
#define MAX_TWO_LEVEL_STEPS ((int64_t)SPLIT_MASK)

/* --- Lower convex hull of points (x, y), x increasing (monotone chain) ----------------- */
typedef struct {
  int64_t *x;
  double *y, *s; /* s[k]: the slope of segment k (from point k to k + 1), set by hull_push */
  int n, cap;
} hull;

static int hull_init(hull *h, int cap)
{
  h->n = 0;
  h->cap = cap;
  RW_CALL(rw_calloc((size_t)cap, sizeof *h->x, "two-level hull x", &h->x));
  RW_CALL(rw_calloc((size_t)cap, sizeof *h->y, "two-level hull y", &h->y));
  RW_CALL(rw_calloc((size_t)cap, sizeof *h->s, "two-level hull slopes", &h->s));
  return 0;
}

static void hull_free(hull *h)
{
  rw_free(&h->x);
  rw_free(&h->y);
  rw_free(&h->s);
}

/* Appends (x, y) with x above every point; drops points on or above the new chord. */
static void hull_push(hull *h, int64_t x, double y)
{
  while (h->n >= 2) {
    int64_t x0 = h->x[h->n - 2], x1 = h->x[h->n - 1];
    double y0 = h->y[h->n - 2], y1 = h->y[h->n - 1];
    if ((y1 - y0) * (double)(x - x1) >= (y - y1) * (double)(x1 - x0))
      h->n--;
    else
      break;
  }
  h->x[h->n] = x;
  h->y[h->n] = y;
  if (h->n >= 1) /* the new last segment; the others keep their points, so their slopes */
    h->s[h->n - 1] = (y - h->y[h->n - 1]) / (double)(x - h->x[h->n - 1]);
  h->n++;
}

/* The hull at x (h->x[0] <= x <= h->x[n-1]). */
static double hull_at(const hull *h, int64_t x)
{
  int lo = 0, hi = h->n - 1;
  if (x <= h->x[0]) return h->y[0];
  if (x >= h->x[hi]) return h->y[hi];
  while (hi - lo > 1) { /* h->x[lo] <= x < h->x[hi] */
    int mid = (lo + hi) / 2;
    if (h->x[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return h->y[lo] + (double)(x - h->x[lo]) * h->s[lo];
}

static double tolerance(double v) { return 1e-9 * (fabs(v) > 1 ? fabs(v) : 1); }

/* min over 1 <= j <= n-2 of U[j] + V[n-j] + add, if below *best (then *bj = j). hu, hv are
 * convex minorants of U on [1, n-2] and V on [2, n-1]; *hint is where to start the descent
 * (updated). Returns the number of g evaluations. See the header comment. */
static int64_t split_search(int64_t n, const double *U, const double *V, const hull *hu,
                            const hull *hv, double add, double *best, int64_t *bj, int64_t *hint)
{
  int64_t lo = 1, hi = n - 2, j = *hint, evals = 0;
  if (hi < lo) return 0;
  if (j < lo) j = lo;
  if (j > hi) j = hi;
#define LB(k) (hull_at(hu, (k)) + hull_at(hv, n - (k)) + add)
  double lj = LB(j);
  while (j < hi) { /* descend the convex lower bound */
    double ln = LB(j + 1);
    if (!(ln < lj)) break;
    j++, lj = ln;
  }
  while (j > lo) {
    double ln = LB(j - 1);
    if (!(ln < lj)) break;
    j--, lj = ln;
  }
  *hint = j;
  for (int64_t k = j; k >= lo; k--) {
    if (LB(k) >= *best - tolerance(*best)) break;
    double g = U[k] + V[n - k] + add;
    evals++;
    if (g < *best) *best = g, *bj = k;
  }
  for (int64_t k = j + 1; k <= hi; k++) {
    if (LB(k) >= *best - tolerance(*best)) break;
    double g = U[k] + V[n - k] + add;
    evals++;
    if (g < *best) *best = g, *bj = k;
  }
#undef LB
  return evals;
}

/* --- The plan: decision tables --------------------------------------------------------- */

/* A run of finite-disk decisions in one column: for n0 <= n < the next run's n0, the
 * decision is v + (n - n0) if SHIFT_BIT is set in v (the right part keeps its length), else
 * v (the split stays). Decisions: split j of P (0: RAM) | WRITE_BIT if H writes. */
#define SHIFT_BIT 0x80000000u
typedef struct {
  int32_t n0;
  uint32_t v;
} dec_run;

typedef struct plan_s {
  int64_t l;
  int c_ram, c_disk; /* c_disk: this tier's slots, -1 unlimited (top tier only) */
  double wd, rd;
  int tier;                 /* index of this tier in the caller's tiers (>= 1) */
  const struct plan_s *sub; /* the tiers below (NULL: the binomial schedule, c_ram slots) */
  int is_base;              /* a tier above reverses segments of every length n <= l with this plan:
                               keep `full`, and check slot counts for every n */
  int levels;               /* finite: columns kept (m = 1 .. levels); unlimited: 1 */
  int32_t *dec;             /* unlimited: dec[n] = split j of D(n) (0: RAM) */
  int64_t *col_lo;          /* finite: [levels + 1] column m holds n >= col_lo[m]; below, column m
                               repeats column m - 1 (per-n saturation) */
  int64_t *col_run; /* finite: [levels + 2] runs of column m: runs[col_run[m] .. col_run[m+1]) */
  dec_run *runs;
  int64_t nruns, cap_runs;
  int64_t *ram;  /* bottom tier: t(n, c_ram), n = 0 .. l (int64: exact) */
  double *R;     /* R(n) = H_{k-1}(n): t(n, c_ram), or the optimum of the tiers below */
  double *full;  /* is_base: this tier's optimum H(n, c_disk) for every n = 1 .. l */
  double value;  /* the optimum H(l, c_disk) or D(l) */
  int64_t evals; /* g evaluations while planning (for the record) */
} plan;

static void plan_free(plan *p)
{
  rw_free(&p->dec);
  rw_free(&p->col_lo);
  rw_free(&p->col_run);
  rw_free(&p->runs);
  rw_free(&p->ram);
  rw_free(&p->R);
  rw_free(&p->full);
}

/* Appends the decision d of entry n to the runs of the column being built (which start at
 * runs[first_run]), extending the last run when d continues it. */
static int runs_add(plan *p, int64_t first_run, int64_t n, uint32_t d)
{
  if (p->nruns > first_run) {
    dec_run *r = &p->runs[p->nruns - 1];
    uint32_t base = r->v & ~SHIFT_BIT, step = (uint32_t)(n - r->n0);
    if (r->v & SHIFT_BIT) {
      if (d == base + step) return 0;
    } else if (d == base) {
      return 0;
    } else if (step == 1 && d == base + 1) {
      r->v = base | SHIFT_BIT;
      return 0;
    }
  }
  if (p->nruns == p->cap_runs) {
    int64_t cap = p->cap_runs ? 2 * p->cap_runs : 1024;
    dec_run *bigger = NULL;
    RW_CALL(rw_calloc((size_t)cap, sizeof *bigger, "two-level decision runs", &bigger));
    if (p->nruns) memcpy(bigger, p->runs, (size_t)p->nruns * sizeof *bigger);
    rw_free(&p->runs);
    p->runs = bigger;
    p->cap_runs = cap;
  }
  p->runs[p->nruns++] = (dec_run){(int32_t)n, d};
  return 0;
}

/* --- Finite disk: one column at a time ------------------------------------------------ */

/* The points of U (or V) that the candidate rule of the header comment keeps: p1, the
 * points with a nonzero second difference of step 1 (or at an end), increasing; [ta, tb],
 * the maximal intervals of points with a nonzero second difference of step T (or within T
 * of an end), increasing. */
typedef struct {
  int32_t *p1, *ta, *tb;
  int64_t n1, nt;
} sparse_set;

static int sparse_init(sparse_set *s, int64_t l)
{
  RW_CALL(rw_calloc((size_t)l + 2, sizeof *s->p1, "two-level candidates", &s->p1));
  RW_CALL(rw_calloc((size_t)l + 2, sizeof *s->ta, "two-level candidates", &s->ta));
  RW_CALL(rw_calloc((size_t)l + 2, sizeof *s->tb, "two-level candidates", &s->tb));
  return 0;
}

static void sparse_free(sparse_set *s)
{
  rw_free(&s->p1);
  rw_free(&s->ta);
  rw_free(&s->tb);
}

/* Adds point x (above every point added) to the step-T intervals. */
static void sparse_add_t(sparse_set *s, int64_t x)
{
  if (s->nt > 0 && s->tb[s->nt - 1] == x - 1) {
    s->tb[s->nt - 1] = (int32_t)x;
  } else {
    s->ta[s->nt] = s->tb[s->nt] = (int32_t)x;
    s->nt++;
  }
}

/* Classifies point x of f (f known on [x - T, x + T] unless endT, on [x - 1, x + 1] unless
 * end1: x is within T, or 1, of an end of the domain) and adds it to s. */
static void sparse_add(sparse_set *s, const double *f, int64_t x, int64_t T, int end1, int endT)
{
  if (end1 || f[x + 1] - f[x] != f[x] - f[x - 1]) s->p1[s->n1++] = (int32_t)x;
  if (endT || f[x + T] - f[x] != f[x] - f[x - T]) sparse_add_t(s, x);
}

/* The hull at x with a segment cursor *i (h->x[*i] <= x <= h->x[*i + 1] on return when x
 * is inside): O(1) amortised when x moves a little between calls. */
static double hull_at_cur(const hull *h, int64_t x, int *i)
{
  int last = h->n - 1, k = *i;
  if (x <= h->x[0]) return h->y[0];
  if (x >= h->x[last]) return h->y[last];
  if (k > last - 1) k = last - 1;
  if (k < 0) k = 0;
  while (h->x[k] > x)
    k--;
  while (h->x[k + 1] < x)
    k++;
  *i = k;
  return h->y[k] + (double)(x - h->x[k]) * h->s[k]; /* no division per evaluation */
}

/* First index of the increasing list v[0 .. nv) with v[i] >= x (nv if none). */
static int64_t lower_bound32(const int32_t *v, int64_t nv, int64_t x)
{
  int64_t a = 0, b = nv;
  while (a < b) {
    int64_t mid = a + (b - a) / 2;
    if (v[mid] < x)
      a = mid + 1;
    else
      b = mid;
  }
  return a;
}

/* The sparse split search of one entry: the minimum over 1 <= j <= n-2 of g(j) = U[j] +
 * V[n-j] + add, if below *best (then *bj = j), evaluated only at the candidates of the
 * header comment (in su's p1 or at n minus a point of sv's p1, and inside an interval of su
 * or at n minus a point inside an interval of sv), and only while the convex lower bound
 * hu(j) + hv(n - j) + add is below *best. su holds the j with U known on [j - T, j + T] or
 * [j - 1, j + 1]; sv all of V. *hint: where the bound's minimiser was last (updated).
 * Returns the number of g evaluations. */
static int64_t sparse_search(int64_t n, const double *U, const double *V, const sparse_set *su,
                             const sparse_set *sv, const hull *hu, const hull *hv, double add,
                             double *best, int64_t *bj, int64_t *hint)
{
  int64_t lo = 1, hi = n - 2, j = *hint, evals = 0;
  if (hi < lo) return 0;
  if (j < lo) j = lo;
  if (j > hi) j = hi;
  int cu = 0, cv = 0;
#define LB(k) (hull_at_cur(hu, (k), &cu) + hull_at_cur(hv, n - (k), &cv) + add)
#define D(k)  (LB((k) + 1) - LB(k))
  /* move to a minimiser of the convex lower bound: d(k) = LB(k + 1) - LB(k) is nondecreasing;
   * find k with d(k - 1) <= 0 <= d(k) by galloping from the hint, then bisecting */
  if (j < hi && D(j) < 0) { /* the first k > j with d(k) >= 0, or hi */
    int64_t a = j, s = 1, b;
    for (;;) {
      b = a + s < hi ? a + s : hi;
      if (b == hi || D(b) >= 0) break;
      a = b, s *= 2;
    }
    while (b - a > 1) { /* d(a) < 0, and d(b) >= 0 or b = hi */
      int64_t mid = a + (b - a) / 2;
      if (D(mid) < 0)
        a = mid;
      else
        b = mid;
    }
    j = b;
  } else if (j > lo && D(j - 1) > 0) { /* the last k < j with d(k - 1) <= 0, or lo */
    int64_t b = j, s = 1, a;
    for (;;) {
      a = b - s > lo ? b - s : lo;
      if (a == lo || D(a - 1) <= 0) break;
      b = a, s *= 2;
    }
    while (b - a > 1) { /* d(b - 1) > 0, and d(a - 1) <= 0 or a = lo */
      int64_t mid = a + (b - a) / 2;
      if (D(mid - 1) > 0)
        b = mid;
      else
        a = mid;
    }
    j = a;
  }
#undef D
  *hint = j;
  int cu0 = cu, cv0 = cv;
  unsigned nlb = 0; /* candidates walked: the bound is tested at every 8th */
  /* downwards from j: the step-T intervals (of U, and of V reflected) below pos, highest
   * first; inside each, the step-1 points, highest first */
  int64_t pos = j;
  int64_t iu = lower_bound32(su->ta, su->nt, pos + 1) - 1; /* last with ta <= pos */
  int64_t iv = lower_bound32(sv->tb, sv->nt, n - pos);     /* first with n - tb <= pos */
  for (;;) {
    int64_t topu = iu >= 0 ? (su->tb[iu] < pos ? su->tb[iu] : pos) : -1;
    int64_t topv = iv < sv->nt ? (n - sv->ta[iv] < pos ? n - sv->ta[iv] : pos) : -1;
    int64_t top = topu > topv ? topu : topv, a;
    if (top < lo) break;
    if (topu >= topv)
      a = su->ta[iu--];
    else
      a = n - sv->tb[iv++];
    if (a < lo) a = lo;
    if (LB(top) >= *best - tolerance(*best)) break;
    int64_t p = lower_bound32(su->p1, su->n1, top + 1) - 1,
            q = lower_bound32(sv->p1, sv->n1, n - top);
    for (;;) {
      int64_t ku = p >= 0 && su->p1[p] >= a ? su->p1[p] : -1;
      int64_t kv = q < sv->n1 && sv->p1[q] <= n - a ? n - sv->p1[q] : -1;
      int64_t k = ku > kv ? ku : kv;
      if (k < a) break;
      if (ku == k) p--;
      if (kv == k) q++;
      if ((++nlb & 7) == 0 && LB(k) >= *best - tolerance(*best)) goto up;
      double g = U[k] + V[n - k] + add;
      evals++;
      if (g < *best) *best = g, *bj = k;
    }
    pos = a - 1;
    while (iu >= 0 && su->ta[iu] > pos)
      iu--;
    while (iv < sv->nt && n - sv->tb[iv] > pos)
      iv++;
  }
up:
  /* upwards from j + 1, the same way */
  cu = cu0, cv = cv0;
  pos = j + 1;
  iu = lower_bound32(su->tb, su->nt, pos);             /* first with tb >= pos */
  iv = lower_bound32(sv->ta, sv->nt, n - pos + 1) - 1; /* last with n - ta >= pos */
  for (;;) {
    int64_t startu = iu < su->nt ? (su->ta[iu] > pos ? su->ta[iu] : pos) : INT64_MAX;
    int64_t startv = iv >= 0 ? (n - sv->tb[iv] > pos ? n - sv->tb[iv] : pos) : INT64_MAX;
    int64_t start = startu < startv ? startu : startv, e;
    if (start > hi) break;
    if (startu <= startv)
      e = su->tb[iu++];
    else
      e = n - sv->ta[iv--];
    if (e > hi) e = hi;
    if (LB(start) >= *best - tolerance(*best)) break;
    int64_t p = lower_bound32(su->p1, su->n1, start),
            q = lower_bound32(sv->p1, sv->n1, n - start + 1) - 1;
    for (;;) {
      int64_t ku = p < su->n1 && su->p1[p] <= e ? su->p1[p] : INT64_MAX;
      int64_t kv = q >= 0 && sv->p1[q] >= n - e ? n - sv->p1[q] : INT64_MAX;
      int64_t k = ku < kv ? ku : kv;
      if (k > e) break;
      if (ku == k) p++;
      if (kv == k) q--;
      if ((++nlb & 7) == 0 && LB(k) >= *best - tolerance(*best)) return evals;
      double g = U[k] + V[n - k] + add;
      evals++;
      if (g < *best) *best = g, *bj = k;
    }
    pos = e + 1;
    while (iu < su->nt && su->tb[iu] < pos)
      iu++;
    while (iv >= 0 && n - sv->ta[iv] < pos)
      iv--;
  }
#undef LB
  return evals;
}

/* The finite-disk columns H(., m), m = 1 .. c_disk, with per-n saturation, sparse candidates
 * and run-length decisions (header comment). */
static int plan_columns(plan *p, const double *R)
{
  int ierr = 0;
  int64_t l = p->l, ncols = (int64_t)p->c_disk < l + 1 ? p->c_disk : l + 1;
  double *U = NULL, *Hp = NULL, *Hc = NULL;
  sparse_set su = {0}, sv = {0};
  hull hu = {0}, hv = {0};
  RW_TRY(rw_calloc((size_t)ncols + 2, sizeof *p->col_lo, "two-level columns", &p->col_lo));
  RW_TRY(rw_calloc((size_t)ncols + 2, sizeof *p->col_run, "two-level columns", &p->col_run));
  RW_TRY(rw_calloc((size_t)l + 2, sizeof *U, "two-level U", &U));
  RW_TRY(rw_calloc((size_t)l + 2, sizeof *Hp, "two-level H", &Hp));
  RW_TRY(rw_calloc((size_t)l + 2, sizeof *Hc, "two-level H", &Hc));
  RW_TRY(sparse_init(&su, l));
  RW_TRY(sparse_init(&sv, l));
  RW_TRY(hull_init(&hu, (int)l + 1));
  RW_TRY(hull_init(&hv, (int)l + 1));
  for (int64_t n = 1; n <= l; n++)
    Hp[n] = Hc[n] = R[n]; /* H(., 0) */
  int64_t lo = 1, lo_prev = 1, T = 1;
  p->levels = 0;
  p->value = R[l];
  for (int64_t m = 1; m <= ncols && lo <= l; m++) {
    /* Hp = H(., m-1); Hc = H(., m-2), equal to H(., m-1) below lo_prev: complete it below lo */
    for (int64_t n = lo_prev; n < lo; n++)
      Hc[n] = Hp[n];
    if (m >= 2 && lo - lo_prev >= 1) T = lo - lo_prev; /* the growth of the saturated prefix */
    sv.n1 = sv.nt = 0;
    hv.n = 0;
    for (int64_t x = 1; x <= l; x++) {
      hull_push(&hv, x, Hp[x]);
      if (x >= 2) sparse_add(&sv, Hp, x, T, x == 2 || x == l, x < T + 2 || x + T > l);
    }
    /* U = j + P(j, m) is that of column m-1 below lo: its hull and points from there */
    su.n1 = su.nt = 0;
    hu.n = 0;
    for (int64_t j = 1; j < lo; j++)
      hull_push(&hu, j, U[j]);
    for (int64_t j = 1; j + 1 < lo; j++) /* step 1 needs U(j + 1), step T U(j + T) */
      if (j == 1 || U[j + 1] - U[j] != U[j] - U[j - 1]) su.p1[su.n1++] = (int32_t)j;
    for (int64_t j = 1; j + T < lo; j++)
      if (j <= T || U[j + T] - U[j] != U[j] - U[j - T]) sparse_add_t(&su, j);
    int64_t first_run = p->nruns, hint = 1;
    p->col_lo[m] = lo;
    p->col_run[m] = first_run;
    uint32_t last = 0; /* decision at n - 1 */
    for (int64_t n = lo; n <= l; n++) {
      double best = R[n];
      int64_t bj = 0, jp = (int64_t)(last & SPLIT_MASK);
      /* the previous entry's split, then its shift: kept on ties (longer runs) */
      for (int64_t k = jp; k <= jp + 1; k++)
        if (jp > 0 && k <= n - 2) {
          double g = U[k] + Hp[n - k] + p->rd;
          if (g < best) best = g, bj = k;
        }
      p->evals += sparse_search(n, U, Hp, &su, &sv, &hu, &hv, p->rd, &best, &bj, &hint);
      int write = p->wd + best < R[n];
      Hc[n] = write ? p->wd + best : R[n];
      U[n] = (double)n + best; /* j + P(j, m) */
      hull_push(&hu, n, U[n]);
      if (n >= 2 && (n - 1 == 1 || U[n] - U[n - 1] != U[n - 1] - U[n - 2]))
        su.p1[su.n1++] = (int32_t)(n - 1);
      if (n - T >= 1 && (n - T <= T || U[n] - U[n - T] != U[n - T] - U[n - 2 * T]))
        sparse_add_t(&su, n - T);
      last = (uint32_t)bj | (write ? WRITE_BIT : 0);
      RW_TRY(runs_add(p, first_run, n, last));
    }
    p->col_run[m + 1] = p->nruns;
    p->levels = (int)m;
    p->value = Hc[l];
    /* per-n saturation: H(., m) = H(., m-1) on 1 .. N, so column m+1 starts at N + 2 */
    int64_t N = lo - 1;
    while (N + 1 <= l && Hc[N + 1] == Hp[N + 1])
      N++;
    double *t = Hp;
    Hp = Hc;
    Hc = t;
    lo_prev = lo;
    lo = N + 2;
  }
  if (p->full) /* Hp: the last column, complete for every n (header comment) */
    memcpy(p->full + 1, Hp + 1, (size_t)l * sizeof *Hp);
cleanup:
  rw_free(&U);
  rw_free(&Hp);
  rw_free(&Hc);
  sparse_free(&su);
  sparse_free(&sv);
  hull_free(&hu);
  hull_free(&hv);
  return ierr;
}

/* The saturated column: H and P with unbounded disk slots, H(n) = min(R(n), wd + P(n)),
 * P(n) = min(R(n), min_j j + H(n - j) + rd + P(j)) (the finite-disk recurrence with m - 1 and
 * m replaced by "as many as needed"). By induction on n, H(n, m) >= H(n) for every m (the
 * options of P(n, m) are those of P(n) with larger or equal values), so when the schedule
 * that this column's decisions describe holds at most c_disk disk slots (counted by walking
 * it) it is optimal for c_disk as well: one column instead of one per slot. U = j + P(j) and
 * V = H are both filled online here, so their candidate points are classified as soon as
 * their neighbours are known; the points not yet classified (within T of the top) are
 * covered by the other side's ends (n - x <= T), as in plan_columns. The decisions go to
 * column 1 (levels = 1): plan_dec returns them for every m >= 1. */
static int plan_saturated(plan *p, const double *R, int64_t T)
{
  int ierr = 0;
  int64_t l = p->l;
  double *U = NULL, *V = NULL;
  sparse_set su = {0}, sv = {0};
  hull hu = {0}, hv = {0};
  RW_TRY(rw_calloc(3, sizeof *p->col_lo, "two-level columns", &p->col_lo));
  RW_TRY(rw_calloc(3, sizeof *p->col_run, "two-level columns", &p->col_run));
  RW_TRY(rw_calloc((size_t)l + 2, sizeof *U, "two-level U", &U));
  RW_TRY(rw_calloc((size_t)l + 2, sizeof *V, "two-level H", &V));
  RW_TRY(sparse_init(&su, l));
  RW_TRY(sparse_init(&sv, l));
  RW_TRY(hull_init(&hu, (int)l + 1));
  RW_TRY(hull_init(&hv, (int)l + 1));
  if (T < 1) T = 1;
  p->col_lo[1] = 1;
  p->col_run[1] = 0;
  int64_t hint = 1;
  uint32_t last = 0;
  for (int64_t n = 1; n <= l; n++) {
    double best = R[n];
    int64_t bj = 0, jp = (int64_t)(last & SPLIT_MASK);
    for (int64_t k = jp; k <= jp + 1; k++)
      if (jp > 0 && k <= n - 2) {
        double g = U[k] + V[n - k] + p->rd;
        if (g < best) best = g, bj = k;
      }
    p->evals += sparse_search(n, U, V, &su, &sv, &hu, &hv, p->rd, &best, &bj, &hint);
    int write = p->wd + best < R[n];
    V[n] = write ? p->wd + best : R[n];
    U[n] = (double)n + best;
    hull_push(&hu, n, U[n]);
    hull_push(&hv, n, V[n]);
    /* classify the points whose step-1 or step-T neighbours are now all known */
    if (n >= 2 && (n - 1 == 1 || U[n] - U[n - 1] != U[n - 1] - U[n - 2]))
      su.p1[su.n1++] = (int32_t)(n - 1);
    if (n <= T) /* an end: a candidate at once */
      sparse_add_t(&su, n);
    else if (n - T > T && U[n] - U[n - T] != U[n - T] - U[n - 2 * T])
      sparse_add_t(&su, n - T);
    if (n >= 3 && (n - 1 == 2 || V[n] - V[n - 1] != V[n - 1] - V[n - 2]))
      sv.p1[sv.n1++] = (int32_t)(n - 1);
    if (n >= 2 && n < T + 2)
      sparse_add_t(&sv, n);
    else if (n - T >= T + 2 && V[n] - V[n - T] != V[n - T] - V[n - 2 * T])
      sparse_add_t(&sv, n - T);
    last = (uint32_t)bj | (write ? WRITE_BIT : 0);
    RW_TRY(runs_add(p, 0, n, last));
  }
  p->col_run[2] = p->nruns;
  p->levels = 1;
  p->value = V[l];
  if (p->full) memcpy(p->full + 1, V + 1, (size_t)l * sizeof *V);
cleanup:
  rw_free(&U);
  rw_free(&V);
  sparse_free(&su);
  sparse_free(&sv);
  hull_free(&hu);
  hull_free(&hv);
  return ierr;
}

static int32_t plan_dec(const plan *p, int64_t n, int m);

/* The most slots of this tier the saturated column's schedule holds at once: for H(l), or
 * for the worst n <= l when the plan is a base (a tier above runs it for every length). By
 * the walk's structure: H(n) holds nothing (no write) or its start's slot plus what P(n)
 * holds beyond it; P(n) holds nothing more (j = 0: the slot is freed) or the larger of what
 * the right part H(n - j) holds and what P(j) holds beyond the start. */
static int plan_need(const plan *p, int *need)
{
  int ierr = 0;
  int64_t l = p->l;
  int32_t *nh = NULL, *np = NULL;
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *nh, "two-level slot count", &nh));
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *np, "two-level slot count", &np));
  *need = 0;
  for (int64_t n = 1; n <= l; n++) {
    int32_t dec = plan_dec(p, n, 1);
    int64_t j = dec & SPLIT_MASK;
    np[n] = j == 0 ? 0 : (nh[n - j] > np[j] ? nh[n - j] : np[j]);
    nh[n] = (dec & WRITE_BIT) ? 1 + np[n] : 0;
    if ((p->is_base || n == l) && nh[n] > *need) *need = nh[n];
  }
cleanup:
  rw_free(&nh);
  rw_free(&np);
  return ierr;
}

/* Finite disk: the saturated column when its schedule fits in c_disk slots, else the
 * columns m = 1 .. c_disk. The saturated column costs about one column, so it is tried
 * whenever c_disk > 2 (a wrong guess only costs that). T: the disk period of the
 * saturated tables, guessed as the x <= l minimising (R(x) + wd + rd) / x, the online-disk
 * period (rw_online_disk_period); any T >= 1 is exact. */
static int plan_finite(plan *p, const double *R)
{
  if (p->c_disk > 2) {
    int64_t T = 1;
    int need = 0;
    for (int64_t x = 2; x <= p->l; x++) /* argmin (R(x) + wd + rd) / x: the disk period */
      if ((R[x] + p->wd + p->rd) * (double)T < (R[T] + p->wd + p->rd) * (double)x) T = x;
    RW_CALL(plan_saturated(p, R, T));
    RW_CALL(plan_need(p, &need));
    if (need <= p->c_disk) return 0;
    rw_free(&p->col_lo);
    rw_free(&p->col_run);
    p->nruns = 0;
    p->levels = 0;
  }
  return plan_columns(p, R);
}

/* Plans this tier: R from the binomial closed form or from the tiers below (planned
 * first), then the finite columns or the unlimited recurrence D. */
static int plan_build(plan *p)
{
  int ierr = 0;
  int64_t l = p->l;
  double *U = NULL, *V = NULL;
  hull hu = {0}, hv = {0};
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *p->R, "two-level R(n)", &p->R));
  if (p->sub) {
    memcpy(p->R + 1, p->sub->full + 1, (size_t)l * sizeof *p->R);
  } else {
    RW_TRY(rw_calloc((size_t)l + 1, sizeof *p->ram, "two-level R(n)", &p->ram));
    for (int64_t n = 1; n <= l; n++) {
      RW_TRY(rw_binomial_advances(n, p->c_ram, NULL, &p->ram[n]));
      p->R[n] = (double)p->ram[n];
    }
  }
  const double *R = p->R;
  if (p->is_base) RW_TRY(rw_calloc((size_t)l + 1, sizeof *p->full, "tier optimum", &p->full));
  if (p->c_disk >= 0) {
    RW_TRY(plan_finite(p, R));
    goto cleanup;
  }
  /* D: U = wd + rd + j + R(j) (convex for the binomial R: its own hull), V = D online */
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *U, "two-level U", &U));
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *V, "two-level V", &V));
  RW_TRY(hull_init(&hu, (int)l + 1));
  RW_TRY(hull_init(&hv, (int)l + 1));
  p->levels = 1;
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *p->dec, "two-level decisions", &p->dec));
  for (int64_t j = 1; j <= l; j++) {
    U[j] = p->wd + p->rd + (double)j + R[j];
    hull_push(&hu, j, U[j]);
  }
  int64_t hint = 1;
  for (int64_t n = 1; n <= l; n++) {
    double best = R[n];
    int64_t bj = 0;
    p->evals += split_search(n, U, V, &hu, &hv, 0.0, &best, &bj, &hint);
    V[n] = best;
    p->dec[n] = (int32_t)bj;
    hull_push(&hv, n, best);
  }
  p->value = V[l];
  if (p->full) memcpy(p->full + 1, V + 1, (size_t)l * sizeof *V);
cleanup:
  rw_free(&U);
  rw_free(&V);
  hull_free(&hu);
  hull_free(&hv);
  return ierr;
}

/* Decision of P(n, m) / H(n, m) (finite disk), with m clamped to the kept columns: from the
 * last column k <= m that computed n (col_lo[k] <= n), its run holding n. */
static int32_t plan_dec(const plan *p, int64_t n, int m)
{
  if (p->c_disk < 0) return p->dec[n];
  if (m > p->levels) m = p->levels;
  if (m <= 0) return 0;
  int a = 1, b = m; /* col_lo[1] = 1 <= n; find the largest k with col_lo[k] <= n */
  while (a < b) {
    int mid = a + (b - a + 1) / 2;
    if (p->col_lo[mid] <= n)
      a = mid;
    else
      b = mid - 1;
  }
  int64_t r0 = p->col_run[a], r1 = p->col_run[a + 1] - 1;
  while (r0 < r1) {
    int64_t mid = r0 + (r1 - r0 + 1) / 2;
    if (p->runs[mid].n0 <= n)
      r0 = mid;
    else
      r1 = mid - 1;
  }
  const dec_run *r = &p->runs[r0];
  if (r->v & SHIFT_BIT) return (int32_t)((r->v & ~SHIFT_BIT) + (uint32_t)(n - r->n0));
  return (int32_t)r->v;
}

/* --- Segments: the explicit stack shared by the counter and the action generator ------- */
typedef enum {
  SEG_H,     /* reverse [a, a+n) from the current state y_a, m slots of tier k free (m < 0: D) */
  SEG_P,     /* y_a is current and in slot d of tier k: P(n, m) */
  SEG_READP, /* restore y_a from slot d, then P(n, m) */
  SEG_READR, /* restore y_a from slot d, free d, reverse [a, a+n) below tier k (unlimited) */
  SEG_BASE,  /* reverse [a, a+n) with the tiers below k: their plan, or the binomial engine */
  SEG_ADV    /* advance from a to a + n (unlimited: before the right part) */
} seg_kind;

typedef struct {
  seg_kind kind;
  int64_t a, n;
  int m, d, phase, k;
} segment;

/* Counts of a walk, per tier (the public rw_tiered_counts without the cost). */
typedef struct {
  int64_t advances;
  int64_t writes[RW_MAX_TIERS], reads[RW_MAX_TIERS];
  int used[RW_MAX_TIERS];
} walk_counts;

static int plan_walk(const plan *p, int64_t n0, int m0, walk_counts *c);

/* A segment of n steps reversed below p's tier. */
static int plan_base(const plan *p, int64_t n, walk_counts *c)
{
  if (!p->sub) {
    c->advances += p->ram[n];
    return 0;
  }
  return plan_walk(p->sub, n, p->sub->c_disk, c);
}

/* Walks p's tree for H(n0, m0) without emitting actions (advances, writes, reads and the
 * most slots held per tier, the tiers below walked for each of their segments). */
static int plan_walk(const plan *p, int64_t n0, int m0, walk_counts *c)
{
  int ierr = 0, top = 0, held = 0, cap = 64, k = p->tier;
  segment *st = NULL;
  RW_TRY(rw_calloc((size_t)cap, sizeof *st, "two-level count stack", &st));
  st[0] = (segment){SEG_H, 0, n0, m0, -1, 0, k};
  top = 1;
  while (top > 0) {
    segment s = st[--top];
    if (top + 3 > cap) { /* grow (the depth is at most disk slots + 3) */
      segment *bigger = NULL;
      RW_TRY(rw_calloc((size_t)cap * 2, sizeof *st, "two-level count stack", &bigger));
      memcpy(bigger, st, (size_t)cap * sizeof *st);
      rw_free(&st);
      st = bigger;
      cap *= 2;
    }
    switch (s.kind) {
    case SEG_H: {
      int32_t dec = plan_dec(p, s.n, s.m);
      int split = p->c_disk < 0 ? dec != 0 : (s.m > 0 && (dec & WRITE_BIT));
      if (!split) {
        RW_TRY(plan_base(p, s.n, c));
        break;
      }
      c->writes[k]++;
      if (++held > c->used[k]) c->used[k] = held;
      if (p->c_disk < 0) {
        int64_t j = dec;
        c->advances += j;
        st[top++] = (segment){SEG_READR, s.a, j, -1, 0, 0, k};
        st[top++] = (segment){SEG_H, s.a + j, s.n - j, -1, -1, 0, k};
      } else {
        st[top++] = (segment){SEG_P, s.a, s.n, s.m, 0, 0, k};
      }
      break;
    }
    case SEG_READP:
      c->reads[k]++;
      st[top++] = (segment){SEG_P, s.a, s.n, s.m, 0, 0, k};
      break;
    case SEG_P: {
      int64_t j = plan_dec(p, s.n, s.m) & SPLIT_MASK;
      if (j == 0) {
        held--;
        RW_TRY(plan_base(p, s.n, c));
        break;
      }
      c->advances += j;
      st[top++] = (segment){SEG_READP, s.a, j, s.m, 0, 0, k};
      st[top++] = (segment){SEG_H, s.a + j, s.n - j, s.m - 1, -1, 0, k};
      break;
    }
    case SEG_READR:
      c->reads[k]++;
      held--;
      RW_TRY(plan_base(p, s.n, c));
      break;
    case SEG_BASE:
    case SEG_ADV:
      break;
    }
  }
cleanup:
  rw_free(&st);
  return ierr;
}

/* The walk of the top plan for the whole run, its cost checked against the table value. */
static int plan_count(const plan *top, rw_tiered_counts *out)
{
  walk_counts c;
  memset(&c, 0, sizeof c);
  memset(out, 0, sizeof *out);
  RW_CALL(plan_walk(top, top->l, top->c_disk, &c));
  double cost = (double)c.advances;
  for (const plan *p = top; p; p = p->sub)
    cost += (double)c.writes[p->tier] * p->wd + (double)c.reads[p->tier] * p->rd;
  out->cost = cost;
  out->advances = c.advances;
  for (int k = 0; k < RW_MAX_TIERS; k++) {
    out->writes[k] = c.writes[k];
    out->reads[k] = c.reads[k];
    out->slots_used[k] = c.used[k];
  }
  RW_CHECK(fabs(cost - top->value) <= 1e-9 * (top->value > 1 ? top->value : 1), RW_ERR_INTERNAL,
           "tiered schedule: walked cost %.17g != table value %.17g", cost, top->value);
  return 0;
}

/* --- Tiers ------------------------------------------------------------------------------- */

/* The plans of a tiered schedule: plans[k] for the tiers k >= 1 in use (the top tier always,
 * a middle tier when it has slots), each planned on the optimum of the ones below. */
typedef struct {
  plan p[RW_MAX_TIERS];
  int ntiers, top; /* tiers given; index of the top tier (ntiers - 1) */
  rw_storage_level level[RW_MAX_TIERS];
  int refs;              /* schedules sharing these plans (rw_schedule_clone) */
  rw_tiered_counts walk; /* the top plan's walk (the capacities of every clone) */
} tier_plans;

static void tier_plans_free(tier_plans *t)
{
  for (int k = 0; k < RW_MAX_TIERS; k++)
    plan_free(&t->p[k]);
}

static int check_tiers(const char *fn, int64_t steps, int ntiers, const rw_tier *tiers)
{
  RW_CHECK(tiers, RW_ERR_ARG, "%s: tiers is NULL", fn);
  RW_CHECK(ntiers >= 2 && ntiers <= RW_MAX_TIERS, RW_ERR_ARG,
           "%s: %d tiers; a tiered schedule has 2 .. %d (the fastest, then slower ones)", fn,
           ntiers, RW_MAX_TIERS);
  RW_CHECK(steps >= 1 && steps <= MAX_TWO_LEVEL_STEPS, RW_ERR_ARG,
           "%s: steps = %lld must be in [1, %lld]", fn, (long long)steps,
           (long long)MAX_TWO_LEVEL_STEPS);
  RW_CHECK(tiers[0].slots >= 1, RW_ERR_ARG,
           "%s: ram_slots = %d must be >= 1 (one holds the segment's start)", fn, tiers[0].slots);
  RW_CHECK(tiers[0].write_cost == 0.0 && tiers[0].read_cost == 0.0, RW_ERR_ARG,
           "%s: the fastest tier's copies are not counted; its costs must be 0 (got %g, %g)", fn,
           tiers[0].write_cost, tiers[0].read_cost);
  for (int k = 1; k < ntiers; k++) {
    if (k == ntiers - 1)
      RW_CHECK(tiers[k].slots >= -1, RW_ERR_ARG,
               "%s: disk_slots = %d must be >= 0, or -1 (unlimited)", fn, tiers[k].slots);
    else
      RW_CHECK(tiers[k].slots >= 0, RW_ERR_ARG,
               "%s: tier %d has %d slots; a middle tier needs >= 0 (only the top one may be "
               "unlimited)",
               fn, k, tiers[k].slots);
    double wd = tiers[k].write_cost, rd = tiers[k].read_cost;
    RW_CHECK(isfinite(wd) && wd >= 0 && isfinite(rd) && rd >= 0, RW_ERR_ARG,
             "%s: write cost %g and read cost %g must be finite and >= 0", fn, wd, rd);
  }
  return 0;
}

/* Plans every tier in use, bottom up. */
static int tier_plans_build(tier_plans *t, int64_t steps, int ntiers, const rw_tier *tiers)
{
  const plan *below = NULL;
  t->ntiers = ntiers;
  t->top = ntiers - 1;
  t->level[0] = RW_LEVEL_RAM;
  t->level[ntiers - 1] = RW_LEVEL_DISK;
  if (ntiers == 3) t->level[1] = RW_LEVEL_HOST;
  for (int k = 1; k < ntiers; k++) {
    if (k < t->top && tiers[k].slots == 0) continue; /* a middle tier without slots */
    plan *p = &t->p[k];
    *p = (plan){.l = steps,
                .c_ram = tiers[0].slots,
                .c_disk = tiers[k].slots,
                .wd = tiers[k].write_cost,
                .rd = tiers[k].read_cost,
                .tier = k,
                .sub = below,
                .is_base = k < t->top};
    RW_CALL(plan_build(p));
    below = p;
  }
  return 0;
}

/* Computes the optimal tiered cost and its counts without iterating actions (rw_schedule.h).
 * Not collective. */
int rw_tiered_cost(int64_t steps, int ntiers, const rw_tier *tiers, rw_tiered_counts *counts)
{
  int ierr = 0;
  tier_plans t;
  memset(&t, 0, sizeof t);
  RW_CHECK(counts, RW_ERR_ARG, "rw_tiered_cost: output pointer is NULL");
  RW_CALL(check_tiers("rw_tiered_cost", steps, ntiers, tiers));
  RW_TRY(tier_plans_build(&t, steps, ntiers, tiers));
  RW_TRY(plan_count(&t.p[t.top], counts));
cleanup:
  tier_plans_free(&t);
  return ierr;
}

static void counts_two_level(const rw_tiered_counts *c, rw_two_level_counts *out)
{
  *out = (rw_two_level_counts){.cost = c->cost,
                               .advances = c->advances,
                               .disk_writes = c->writes[1],
                               .disk_reads = c->reads[1],
                               .disk_slots_used = c->slots_used[1]};
}

/* Computes the optimal two-level cost and its counts without iterating actions: the tiered
 * cost with tiers {ram_slots} and {disk_slots, write_cost, read_cost}. Not collective. */
int rw_two_level_cost(int64_t steps, int ram_slots, int disk_slots, double write_cost,
                      double read_cost, rw_two_level_counts *counts)
{
  RW_CHECK(counts, RW_ERR_ARG, "rw_two_level_cost: output pointer is NULL");
  rw_tier tiers[2] = {{ram_slots, 0.0, 0.0}, {disk_slots, write_cost, read_cost}};
  rw_tiered_counts c;
  RW_CALL(check_tiers("rw_two_level_cost", steps, 2, tiers));
  RW_CALL(rw_tiered_cost(steps, 2, tiers, &c));
  counts_two_level(&c, counts);
  return 0;
}

/* --- The schedule ----------------------------------------------------------------------- */
typedef struct {
  tier_plans *tp; /* shared by clones, freed with the last */
  rw_engine ram;
  segment *st;
  int top, cap;
  int *free_slots[RW_MAX_TIERS]; /* per tier: a stack of free slots */
  int nfree[RW_MAX_TIERS];
} tiered;

static int push(tiered *t, segment s)
{
  RW_CHECK(t->top < t->cap, RW_ERR_INTERNAL, "tiered schedule: segment stack full (%d)", t->cap);
  t->st[t->top++] = s;
  return 0;
}

static int take_slot(tiered *t, int k, int *d)
{
  RW_CHECK(t->nfree[k] > 0, RW_ERR_INTERNAL, "tiered schedule: no free slot in tier %d", k);
  *d = t->free_slots[k][--t->nfree[k]];
  return 0;
}

static int tiered_next(rw_schedule s, rw_action *a)
{
  tiered *t = s->content;
  for (;;) {
    if (t->top == 0) {
      rw_action_set(a, RW_ACTION_TERMINATE, 0, 0, -1, RW_LEVEL_RAM);
      return 0;
    }
    segment *g = &t->st[t->top - 1];
    const plan *p = &t->tp->p[g->k];
    rw_storage_level lev = t->tp->level[g->k];
    switch (g->kind) {
    case SEG_BASE: {
      if (p->sub) { /* the tiers below reverse it with all their slots */
        *g = (segment){SEG_H, g->a, g->n, p->sub->c_disk, -1, 0, p->sub->tier};
        continue;
      }
      if (g->phase == 0) {
        rw_engine_start(&t->ram, g->n, 0);
        g->phase = 1;
      }
      RW_CALL(rw_engine_next(&t->ram, a));
      if (a->type == RW_ACTION_TERMINATE) {
        t->top--;
        continue;
      }
      a->step += g->a;
      a->to += g->a;
      if (a->type == RW_ACTION_FIRST_REVERSE || a->type == RW_ACTION_REVERSE)
        a->type = a->step == s->steps - 1 ? RW_ACTION_FIRST_REVERSE : RW_ACTION_REVERSE;
      return 0;
    }
    case SEG_H: {
      int32_t dec = plan_dec(p, g->n, g->m);
      int split = p->c_disk < 0 ? dec != 0 : (g->m > 0 && (dec & WRITE_BIT));
      if (!split) {
        *g = (segment){SEG_BASE, g->a, g->n, 0, -1, 0, g->k};
        continue;
      }
      int d = -1, k = g->k;
      RW_CALL(take_slot(t, k, &d));
      rw_action_set(a, RW_ACTION_STORE, g->a, g->a, d, lev);
      if (p->c_disk < 0) { /* D: advance j next, then D(n - j), then read + the tiers below */
        int64_t j = dec, a0 = g->a, n = g->n;
        *g = (segment){SEG_READR, a0, j, -1, d, 0, k};
        RW_CALL(push(t, (segment){SEG_H, a0 + j, n - j, -1, -1, 0, k}));
        RW_CALL(push(t, (segment){SEG_ADV, a0, j, -1, -1, 0, k}));
      } else {
        *g = (segment){SEG_P, g->a, g->n, g->m, d, 0, k};
      }
      return 0;
    }
    case SEG_P: {
      int64_t j = plan_dec(p, g->n, g->m) & SPLIT_MASK;
      if (j == 0) { /* the start is not read again: free its slot, reverse with the tiers below */
        rw_action_set(a, RW_ACTION_FREE, g->a, g->a, g->d, lev);
        t->free_slots[g->k][t->nfree[g->k]++] = g->d;
        *g = (segment){SEG_BASE, g->a, g->n, 0, -1, 0, g->k};
        return 0;
      }
      int64_t a0 = g->a, n = g->n;
      int m = g->m, k = g->k; /* past the kept columns plan_dec repeats the last (saturation) */
      rw_action_set(a, RW_ACTION_ADVANCE, a0, a0 + j, -1, RW_LEVEL_RAM);
      *g = (segment){SEG_READP, a0, j, m, g->d, 0, k};
      RW_CALL(push(t, (segment){SEG_H, a0 + j, n - j, m - 1, -1, 0, k}));
      return 0;
    }
    case SEG_ADV:
      rw_action_set(a, RW_ACTION_ADVANCE, g->a, g->a + g->n, -1, RW_LEVEL_RAM);
      t->top--;
      return 0;
    case SEG_READP:
      rw_action_set(a, RW_ACTION_RESTORE, g->a, g->a, g->d, lev);
      g->kind = SEG_P;
      return 0;
    case SEG_READR:
      if (g->phase == 0) {
        rw_action_set(a, RW_ACTION_RESTORE, g->a, g->a, g->d, lev);
        g->phase = 1;
      } else {
        rw_action_set(a, RW_ACTION_FREE, g->a, g->a, g->d, lev);
        t->free_slots[g->k][t->nfree[g->k]++] = g->d;
        *g = (segment){SEG_BASE, g->a, g->n, 0, -1, 0, g->k};
      }
      return 0;
    }
  }
}

static void tiered_destroy(rw_schedule s)
{
  tiered *t = s->content;
  if (!t) return;
  if (t->tp && --t->tp->refs <= 0) {
    tier_plans_free(t->tp);
    rw_free(&t->tp);
  }
  if (t->ram.pos) rw_engine_finalize(&t->ram);
  rw_free(&t->st);
  for (int k = 0; k < RW_MAX_TIERS; k++)
    rw_free(&t->free_slots[k]);
  rw_free(&s->content);
}

static int tiered_clone(rw_schedule s, rw_schedule *out);

/* The iterator's state over shared plans tp (planned, counted in c): the binomial engine, the
 * free slots and the segment stack at the start. */
static int tiered_start(rw_schedule s, tiered *t, const rw_tiered_counts *c, int ram_slots)
{
  const tier_plans *tp = t->tp;
  int ntiers = tp->ntiers;
  int64_t steps = s->steps;
  int cap = steps - 1 < (int64_t)ram_slots ? (int)(steps - 1) : ram_slots;
  if (cap < 1) cap = 1;
  s->capacity_ram = cap;
  s->capacity_disk = c->slots_used[ntiers - 1];
  s->capacity_host = ntiers == 3 ? c->slots_used[1] : 0;
  RW_CALL(rw_engine_init(&t->ram, cap, RW_SPLIT_BINOMIAL));
  t->cap = 0;
  for (int k = 1; k < ntiers; k++) {
    int used = c->slots_used[k];
    t->cap += used + 4;
    RW_CALL(
        rw_calloc((size_t)used + 1, sizeof *t->free_slots[k], "tiered slots", &t->free_slots[k]));
    for (int q = 0; q < used; q++) /* slot 0 handed out first */
      t->free_slots[k][q] = used - 1 - q;
    t->nfree[k] = used;
  }
  RW_CALL(rw_calloc((size_t)t->cap, sizeof *t->st, "tiered segments", &t->st));
  t->st[0] = (segment){SEG_H, 0, steps, tp->p[tp->top].c_disk, -1, 0, ntiers - 1};
  t->top = 1;
  return 0;
}

/* Creates the optimal tiered offline schedule (see rw_schedule.h). Returns RW_ERR_ARG for bad
 * arguments, RW_ERR_MEM when the tables do not fit. Not collective. */
int rw_schedule_create_tiered(int64_t steps, int ntiers, const rw_tier *tiers, rw_schedule *out)
{
  static const rw_schedule_ops ops = {tiered_next, NULL, tiered_destroy, tiered_clone};
  int ierr = 0;
  rw_schedule s = NULL;
  tiered *t = NULL;
  rw_tiered_counts c;
  RW_CHECK(out, RW_ERR_ARG, "rw_schedule_create_tiered: output pointer is NULL");
  *out = NULL;
  RW_CALL(check_tiers("rw_schedule_create_tiered", steps, ntiers, tiers));
  RW_TRY(rw_schedule_alloc(ntiers == 2 ? "two_level" : "three_level", &ops, &s));
  s->steps = steps;
  RW_TRY(rw_calloc(1, sizeof *t, "tiered schedule", &t));
  s->content = t;
  RW_TRY(rw_calloc(1, sizeof *t->tp, "tiered plans", &t->tp));
  t->tp->refs = 1;
  RW_TRY(tier_plans_build(t->tp, steps, ntiers, tiers));
  RW_TRY(plan_count(&t->tp->p[t->tp->top], &c));
  t->tp->walk = c;
  RW_TRY(tiered_start(s, t, &c, tiers[0].slots));
  *out = s;
  return 0;
cleanup:
  rw_schedule_destroy(&s);
  return ierr;
}

/* A fresh iterator over the same plans (rw_schedule_clone). */
static int tiered_clone(rw_schedule s, rw_schedule *out)
{
  int ierr = 0;
  const tiered *src = s->content;
  rw_schedule n = NULL;
  tiered *t = NULL;
  RW_TRY(rw_schedule_alloc(s->kind, &s->ops, &n));
  n->steps = s->steps;
  RW_TRY(rw_calloc(1, sizeof *t, "tiered schedule", &t));
  n->content = t;
  t->tp = src->tp;
  t->tp->refs++;
  RW_TRY(tiered_start(n, t, &t->tp->walk, t->tp->p[t->tp->top].c_ram));
  *out = n;
  return 0;
cleanup:
  rw_schedule_destroy(&n);
  return ierr;
}

/* Creates the optimal two-level offline schedule (see rw_schedule.h): the tiered schedule
 * with tiers {ram_slots} and {disk_slots, write_cost, read_cost}. Not collective. */
int rw_schedule_create_two_level(int64_t steps, int ram_slots, int disk_slots, double write_cost,
                                 double read_cost, rw_schedule *out)
{
  rw_tier tiers[2] = {{ram_slots, 0.0, 0.0}, {disk_slots, write_cost, read_cost}};
  RW_CHECK(out, RW_ERR_ARG, "rw_schedule_create_two_level: output pointer is NULL");
  *out = NULL;
  RW_CALL(check_tiers("rw_schedule_create_two_level", steps, 2, tiers));
  return rw_schedule_create_tiered(steps, 2, tiers, out);
}

/* The optimum and counts of a tiered schedule's own plan (see rw_schedule.h). */
int rw_schedule_tiered_counts(rw_schedule s, rw_tiered_counts *counts)
{
  RW_CHECK(s && s->ops.next == tiered_next && counts, RW_ERR_ARG,
           "rw_schedule_tiered_counts: not a tiered schedule, or NULL output");
  tiered *t = s->content;
  RW_CALL(plan_count(&t->tp->p[t->tp->top], counts));
  return 0;
}

/* The same in the two-level form. */
int rw_schedule_two_level_counts(rw_schedule s, rw_two_level_counts *counts)
{
  RW_CHECK(s && s->ops.next == tiered_next && counts, RW_ERR_ARG,
           "rw_schedule_two_level_counts: not a two-level schedule, or NULL output");
  tiered *t = s->content;
  RW_CHECK(t->tp->ntiers == 2, RW_ERR_ARG,
           "rw_schedule_two_level_counts: a %d-tier schedule; use rw_schedule_tiered_counts",
           t->tp->ntiers);
  rw_tiered_counts c;
  RW_CALL(rw_schedule_tiered_counts(s, &c));
  counts_two_level(&c, counts);
  return 0;
}
