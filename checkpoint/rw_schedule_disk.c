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
 * Saturation: if H(., m) = H(., m-1) on 1..l then P(., m+1) = P(., m) and every further
 * column repeats (same recurrence, same inputs), so the tables stop there.
 *
 * Memory: the schedule keeps one int32 decision per (n, m), n <= l, m <= min(c_disk, the
 * saturation column) for finite disk, and one per n for unlimited disk: O(l levels) bytes,
 * e.g. 20 MB for l = 10^5 and 50 disk slots; the planning uses O(l) doubles more. The
 * action generator itself holds a stack of at most (disk slots + 4) segments and the
 * binomial engine's O(c_ram) state. */
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
  double *y;
  int n, cap;
} hull;

static int hull_init(hull *h, int cap)
{
  h->n = 0;
  h->cap = cap;
  RW_CALL(rw_calloc((size_t)cap, sizeof *h->x, "two-level hull x", &h->x));
  RW_CALL(rw_calloc((size_t)cap, sizeof *h->y, "two-level hull y", &h->y));
  return 0;
}

static void hull_free(hull *h)
{
  rw_free(&h->x);
  rw_free(&h->y);
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
  double t = (double)(x - h->x[lo]) / (double)(h->x[hi] - h->x[lo]);
  return h->y[lo] + t * (h->y[hi] - h->y[lo]);
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
typedef struct {
  int64_t l;
  int c_ram, c_disk; /* c_disk: -1 unlimited */
  double wd, rd;
  int levels;    /* finite: columns kept (m = 1 .. levels); unlimited: 1 */
  int32_t *dec;  /* finite: dec[(m-1) (l+1) + n]: split j of P(n, m) (0: RAM) | WRITE_BIT
                    if H(n, m) writes; unlimited: dec[n] = split j of D(n) (0: RAM) */
  int64_t *ram;  /* R(n), n = 0 .. l (int64: exact) */
  double value;  /* the optimum H(l, c_disk) or D(l) */
  int64_t evals; /* g evaluations while planning (for the record) */
} plan;

static void plan_free(plan *p)
{
  rw_free(&p->dec);
  rw_free(&p->ram);
}

static int plan_build(plan *p)
{
  int ierr = 0;
  int64_t l = p->l;
  double *R = NULL, *U = NULL, *Vp = NULL, *Vc = NULL;
  hull hu = {0}, hv = {0};
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *p->ram, "two-level R(n)", &p->ram));
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *R, "two-level R(n)", &R));
  for (int64_t n = 1; n <= l; n++) {
    RW_TRY(rw_binomial_advances(n, p->c_ram, NULL, &p->ram[n]));
    R[n] = (double)p->ram[n];
  }
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *U, "two-level U", &U));
  RW_TRY(rw_calloc((size_t)l + 1, sizeof *Vp, "two-level V", &Vp));
  RW_TRY(hull_init(&hu, (int)l + 1));
  RW_TRY(hull_init(&hv, (int)l + 1));
  if (p->c_disk < 0) { /* D: U = wd + rd + j + R(j) (convex: its own hull), V = D online */
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
      p->evals += split_search(n, U, Vp, &hu, &hv, 0.0, &best, &bj, &hint);
      Vp[n] = best;
      p->dec[n] = (int32_t)bj;
      hull_push(&hv, n, best);
    }
    p->value = Vp[l];
  } else {
    int M = p->c_disk;
    RW_TRY(rw_calloc((size_t)l + 1, sizeof *Vc, "two-level V", &Vc));
    for (int64_t n = 1; n <= l; n++)
      Vp[n] = R[n]; /* H(., 0) */
    p->levels = 0;
    if (M > 0)
      RW_TRY(
          rw_calloc((size_t)(l + 1) * (size_t)M, sizeof *p->dec, "two-level decisions", &p->dec));
    for (int m = 1; m <= M; m++) {
      int32_t *d = p->dec + (size_t)(m - 1) * (size_t)(l + 1);
      hv.n = 0;
      for (int64_t x = 1; x <= l; x++)
        hull_push(&hv, x, Vp[x]);
      hu.n = 0;
      int64_t hint = 1;
      int same = 1;
      for (int64_t n = 1; n <= l; n++) {
        double best = R[n];
        int64_t bj = 0;
        p->evals += split_search(n, U, Vp, &hu, &hv, p->rd, &best, &bj, &hint);
        int write = p->wd + best < R[n];
        Vc[n] = write ? p->wd + best : R[n];
        d[n] = (int32_t)bj | (write ? WRITE_BIT : 0);
        U[n] = (double)n + best; /* j + P(j, m) */
        hull_push(&hu, n, U[n]);
        if (Vc[n] != Vp[n]) same = 0;
      }
      double *t = Vp;
      Vp = Vc;
      Vc = t;
      p->levels = m;
      if (same) break; /* saturated: column m repeats column m - 1 (header comment) */
    }
    p->value = Vp[l];
  }
cleanup:
  rw_free(&R);
  rw_free(&U);
  rw_free(&Vp);
  rw_free(&Vc);
  hull_free(&hu);
  hull_free(&hv);
  return ierr;
}

/* Decision of P(n, m) / H(n, m) (finite disk), with m clamped to the kept columns. */
static int32_t plan_dec(const plan *p, int64_t n, int m)
{
  if (p->c_disk < 0) return p->dec[n];
  if (m > p->levels) m = p->levels;
  if (m <= 0) return 0;
  return p->dec[(size_t)(m - 1) * (size_t)(p->l + 1) + (size_t)n];
}

/* --- Segments: the explicit stack shared by the counter and the action generator ------- */
typedef enum {
  SEG_H,     /* reverse [a, a+n) from the current state y_a, m disk slots free (m < 0: D) */
  SEG_P,     /* y_a is current and on disk slot d: P(n, m) */
  SEG_READP, /* restore y_a from disk d, then P(n, m) */
  SEG_READR, /* restore y_a from disk d, free d, reverse [a, a+n) in RAM (unlimited disk) */
  SEG_RAM,   /* the binomial engine reverses [a, a+n) */
  SEG_ADV    /* advance from a to a + n (unlimited disk: before the right part) */
} seg_kind;

typedef struct {
  seg_kind kind;
  int64_t a, n;
  int m, d, phase;
} segment;

/* Walks the plan's tree without emitting actions: advances, writes, reads, peak disk. */
static int plan_count(const plan *p, rw_two_level_counts *c)
{
  int ierr = 0, top = 0, held = 0, cap = 64;
  segment *st = NULL;
  memset(c, 0, sizeof *c);
  RW_TRY(rw_calloc((size_t)cap, sizeof *st, "two-level count stack", &st));
  st[0] = (segment){SEG_H, 0, p->l, p->c_disk, -1, 0};
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
        c->advances += p->ram[s.n];
        break;
      }
      c->disk_writes++;
      if (++held > c->disk_slots_used) c->disk_slots_used = held;
      if (p->c_disk < 0) {
        int64_t j = dec;
        c->advances += j;
        st[top++] = (segment){SEG_READR, s.a, j, -1, 0, 0};
        st[top++] = (segment){SEG_H, s.a + j, s.n - j, -1, -1, 0};
      } else {
        st[top++] = (segment){SEG_P, s.a, s.n, s.m, 0, 0};
      }
      break;
    }
    case SEG_READP:
      c->disk_reads++;
      st[top++] = (segment){SEG_P, s.a, s.n, s.m, 0, 0};
      break;
    case SEG_P: {
      int64_t j = plan_dec(p, s.n, s.m) & SPLIT_MASK;
      if (j == 0) {
        held--;
        c->advances += p->ram[s.n];
        break;
      }
      c->advances += j;
      st[top++] = (segment){SEG_READP, s.a, j, s.m, 0, 0};
      st[top++] = (segment){SEG_H, s.a + j, s.n - j, s.m - 1, -1, 0};
      break;
    }
    case SEG_READR:
      c->disk_reads++;
      held--;
      c->advances += p->ram[s.n];
      break;
    case SEG_RAM:
    case SEG_ADV:
      break;
    }
  }
  c->cost = (double)c->advances + (double)c->disk_writes * p->wd + (double)c->disk_reads * p->rd;
cleanup:
  rw_free(&st);
  return ierr;
}

static int check_args(const char *fn, int64_t steps, int ram_slots, int disk_slots, double wd,
                      double rd)
{
  RW_CHECK(steps >= 1 && steps <= MAX_TWO_LEVEL_STEPS, RW_ERR_ARG,
           "%s: steps = %lld must be in [1, %lld]", fn, (long long)steps,
           (long long)MAX_TWO_LEVEL_STEPS);
  RW_CHECK(ram_slots >= 1, RW_ERR_ARG,
           "%s: ram_slots = %d must be >= 1 (one holds the segment's start)", fn, ram_slots);
  RW_CHECK(disk_slots >= -1, RW_ERR_ARG, "%s: disk_slots = %d must be >= 0, or -1 (unlimited)", fn,
           disk_slots);
  RW_CHECK(isfinite(wd) && wd >= 0 && isfinite(rd) && rd >= 0, RW_ERR_ARG,
           "%s: write cost %g and read cost %g must be finite and >= 0", fn, wd, rd);
  return 0;
}

/* Computes the optimal two-level cost and its counts without iterating actions: the minimum
 * of advances + wd x disk writes + rd x disk reads for `steps` steps, `ram_slots` RAM slots
 * (counting the slot of the segment's start) and `disk_slots` disk slots (-1: unlimited),
 * i.e. H(steps, disk_slots) or D(steps) (see rw_schedule.h), with the advances, writes,
 * reads and the most disk slots held of the schedule rw_schedule_create_two_level emits.
 * Returns RW_ERR_ARG for steps outside [1, 2^30 - 1], ram_slots < 1, disk_slots < -1 or a
 * cost that is negative or not finite; RW_ERR_MEM when the tables do not fit.
 * Not collective. */
int rw_two_level_cost(int64_t steps, int ram_slots, int disk_slots, double write_cost,
                      double read_cost, rw_two_level_counts *counts)
{
  int ierr = 0;
  RW_CHECK(counts, RW_ERR_ARG, "rw_two_level_cost: output pointer is NULL");
  RW_CALL(check_args("rw_two_level_cost", steps, ram_slots, disk_slots, write_cost, read_cost));
  plan p = {steps, ram_slots, disk_slots, write_cost, read_cost, 0, NULL, NULL, 0, 0};
  RW_TRY(plan_build(&p));
  RW_TRY(plan_count(&p, counts));
  RW_CHECK_GOTO(fabs(counts->cost - p.value) <= 1e-9 * (p.value > 1 ? p.value : 1), RW_ERR_INTERNAL,
                "rw_two_level_cost: walked cost %.17g != table value %.17g", counts->cost, p.value);
cleanup:
  plan_free(&p);
  return ierr;
}

/* --- The schedule ----------------------------------------------------------------------- */
typedef struct {
  plan p;
  rw_engine ram;
  segment *st;
  int top, cap;
  int *free_disk; /* stack of free disk slots */
  int nfree_disk;
} two_level;

static int push(two_level *t, segment s)
{
  RW_CHECK(t->top < t->cap, RW_ERR_INTERNAL, "two-level schedule: segment stack full (%d)", t->cap);
  t->st[t->top++] = s;
  return 0;
}

static int take_disk(two_level *t, int *d)
{
  RW_CHECK(t->nfree_disk > 0, RW_ERR_INTERNAL, "two-level schedule: no free disk slot");
  *d = t->free_disk[--t->nfree_disk];
  return 0;
}

static int two_level_next(rw_schedule s, rw_action *a)
{
  two_level *t = s->content;
  const plan *p = &t->p;
  for (;;) {
    if (t->top == 0) {
      rw_action_set(a, RW_ACTION_TERMINATE, 0, 0, -1, RW_LEVEL_RAM);
      return 0;
    }
    segment *g = &t->st[t->top - 1];
    switch (g->kind) {
    case SEG_RAM: {
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
        a->type = a->step == p->l - 1 ? RW_ACTION_FIRST_REVERSE : RW_ACTION_REVERSE;
      return 0;
    }
    case SEG_H: {
      int32_t dec = plan_dec(p, g->n, g->m);
      int split = p->c_disk < 0 ? dec != 0 : (g->m > 0 && (dec & WRITE_BIT));
      if (!split) {
        *g = (segment){SEG_RAM, g->a, g->n, 0, -1, 0};
        continue;
      }
      int d = -1;
      RW_CALL(take_disk(t, &d));
      rw_action_set(a, RW_ACTION_STORE, g->a, g->a, d, RW_LEVEL_DISK);
      if (p->c_disk < 0) { /* D: advance j next, then D(n - j), then read + RAM */
        int64_t j = dec, a0 = g->a, n = g->n;
        *g = (segment){SEG_READR, a0, j, -1, d, 0};
        RW_CALL(push(t, (segment){SEG_H, a0 + j, n - j, -1, -1, 0}));
        RW_CALL(push(t, (segment){SEG_ADV, a0, j, -1, -1, 0}));
      } else {
        *g = (segment){SEG_P, g->a, g->n, g->m, d, 0};
      }
      return 0;
    }
    case SEG_P: {
      int64_t j = plan_dec(p, g->n, g->m) & SPLIT_MASK;
      if (j == 0) { /* the start is not read again: free its disk slot, reverse in RAM */
        rw_action_set(a, RW_ACTION_FREE, g->a, g->a, g->d, RW_LEVEL_DISK);
        t->free_disk[t->nfree_disk++] = g->d;
        *g = (segment){SEG_RAM, g->a, g->n, 0, -1, 0};
        return 0;
      }
      int64_t a0 = g->a, n = g->n;
      int m = g->m; /* past the kept columns plan_dec repeats the last (saturation) */
      rw_action_set(a, RW_ACTION_ADVANCE, a0, a0 + j, -1, RW_LEVEL_RAM);
      *g = (segment){SEG_READP, a0, j, m, g->d, 0};
      RW_CALL(push(t, (segment){SEG_H, a0 + j, n - j, m - 1, -1, 0}));
      return 0;
    }
    case SEG_ADV:
      rw_action_set(a, RW_ACTION_ADVANCE, g->a, g->a + g->n, -1, RW_LEVEL_RAM);
      t->top--;
      return 0;
    case SEG_READP:
      rw_action_set(a, RW_ACTION_RESTORE, g->a, g->a, g->d, RW_LEVEL_DISK);
      g->kind = SEG_P;
      return 0;
    case SEG_READR:
      if (g->phase == 0) {
        rw_action_set(a, RW_ACTION_RESTORE, g->a, g->a, g->d, RW_LEVEL_DISK);
        g->phase = 1;
      } else {
        rw_action_set(a, RW_ACTION_FREE, g->a, g->a, g->d, RW_LEVEL_DISK);
        t->free_disk[t->nfree_disk++] = g->d;
        *g = (segment){SEG_RAM, g->a, g->n, 0, -1, 0};
      }
      return 0;
    }
  }
}

static void two_level_destroy(rw_schedule s)
{
  two_level *t = s->content;
  if (!t) return;
  plan_free(&t->p);
  if (t->ram.pos) rw_engine_finalize(&t->ram);
  rw_free(&t->st);
  rw_free(&t->free_disk);
  rw_free(&s->content);
}

/* Creates the optimal two-level offline schedule (see rw_schedule.h): `steps` steps,
 * `ram_slots` >= 1 RAM slots counting the slot of the segment's start, `disk_slots` >= 0
 * disk slots or -1 for unlimited, disk write and read costs >= 0 in units of one step.
 * Its advances + write_cost x disk writes + read_cost x disk reads equal the optimum H or D
 * (rw_two_level_cost); rw_schedule_capacity reports the RAM and disk slots it uses at most.
 * Plans in O(l levels) memory. Returns RW_ERR_ARG for bad arguments (as rw_two_level_cost),
 * RW_ERR_MEM when the tables do not fit. Not collective. */
int rw_schedule_create_two_level(int64_t steps, int ram_slots, int disk_slots, double write_cost,
                                 double read_cost, rw_schedule *out)
{
  static const rw_schedule_ops ops = {two_level_next, NULL, two_level_destroy};
  int ierr = 0;
  rw_schedule s = NULL;
  two_level *t = NULL;
  rw_two_level_counts c;
  RW_CHECK(out, RW_ERR_ARG, "rw_schedule_create_two_level: output pointer is NULL");
  *out = NULL;
  RW_CALL(check_args("rw_schedule_create_two_level", steps, ram_slots, disk_slots, write_cost,
                     read_cost));
  RW_TRY(rw_schedule_alloc("two_level", &ops, &s));
  s->steps = steps;
  RW_TRY(rw_calloc(1, sizeof *t, "two-level schedule", &t));
  s->content = t;
  t->p = (plan){steps, ram_slots, disk_slots, write_cost, read_cost, 0, NULL, NULL, 0, 0};
  RW_TRY(plan_build(&t->p));
  RW_TRY(plan_count(&t->p, &c));
  int cap = steps - 1 < (int64_t)ram_slots ? (int)(steps - 1) : ram_slots;
  if (cap < 1) cap = 1;
  s->capacity_ram = cap;
  s->capacity_disk = c.disk_slots_used;
  RW_TRY(rw_engine_init(&t->ram, cap, RW_SPLIT_BINOMIAL));
  t->cap = c.disk_slots_used + 4;
  RW_TRY(rw_calloc((size_t)t->cap, sizeof *t->st, "two-level segments", &t->st));
  RW_TRY(rw_calloc((size_t)c.disk_slots_used + 1, sizeof *t->free_disk, "two-level disk slots",
                   &t->free_disk));
  for (int k = 0; k < c.disk_slots_used; k++) /* slot 0 handed out first */
    t->free_disk[k] = c.disk_slots_used - 1 - k;
  t->nfree_disk = c.disk_slots_used;
  t->st[0] = (segment){SEG_H, 0, steps, disk_slots, -1, 0};
  t->top = 1;
  *out = s;
  return 0;
cleanup:
  rw_schedule_destroy(&s);
  return ierr;
}
