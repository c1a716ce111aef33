/* Online checkpointing for a run of unknown length.
 *
 * Cost model. When the length l becomes known the schedule holds checkpoints
 * 0 = p_0 < p_1 < .. < p_{n-1} and the driver's state is at E (E = l - 1 when the end is
 * announced before the last step, E = l when after it). Reversing with the held
 * checkpoints, interval i = [p_i, p_{i+1}) is reversed by the binomial schedule with its
 * own slot plus the free ones, s_i = c - i slots, and the last interval [p_{n-1}, E) with
 * s_{n-1}; the advances are
 *   E + sum_i t(p_{i+1} - p_i, c - i) + t(E - p_{n-1}, c - n + 1),
 * t(m, s) the binomial optimum (Griewank & Walther, ACM TOMS 26(1), 2000). The offline
 * optimum t(l, c) is the minimum of the same sum over all placements (its recursion
 * t(m, s) = min_j [j + t(m - j, s - 1) + t(j, s)] unrolled), so an online schedule is
 * optimal exactly when its held checkpoints are an optimal placement for the length it
 * reaches. Stumm and Walther ("New algorithms for optimal online checkpointing", SIAM J.
 * Sci. Comput. 32(2), 2010) show that this can be kept up to l = beta(c, 2) and nearly up
 * to beta(c, 3); Wang, Moin and Iaccarino (SIAM J. Sci. Comput. 31(4), 2009) give a level
 * rule for any length.
 *
 * Forward sweep (greedy thinning on the exact cost, written for Rewind). Every new state
 * y_N is stored while a slot is free. With every slot full, the schedule compares the
 * c - 1 ways of storing y_N in place of a checkpoint p_k (k >= 1: y_0 is never dropped)
 * and the choice of not storing y_N, by the cost above for the next possible end
 * (E = N + 1): dropping p_k merges the intervals on either side of it (reversed with the
 * slots of the left one) and gives every later interval one slot more. It takes the
 * cheapest (the leftmost among equals; not storing only when strictly cheaper). The held
 * checkpoints thus stay an optimal or near-optimal offline placement for the length
 * reached so far: for l <= beta(c, 2) the advances equal t(l, c) (tested for c <= 12),
 * beyond the excess is measured by the tests and tests/bench/bench_online.c.
 *
 * Anchors. That greedy is myopic: it can give up a checkpoint that later lengths need. The
 * optimal policy of the class of online policies that tests/bench/online_bound.c solves
 * exactly (c = 3, 4) keeps its first movable checkpoint at binomial numbers beta(c, r), the
 * first splits of the offline optimum for l = beta(c, r + 1) (Griewank & Walther's
 * beta(c, r) = beta(c, r - 1) + beta(c - 1, r)), and moves it only to the next one. So the
 * schedule keeps anchors a_1 < a_2 < ..: a_1 = beta(c, r) the largest one <= N, a_2 = a_1 +
 * beta(c - 1, r') the largest such <= N, and so on for max(1, c / 4) levels (fewer for
 * c <= 3: at most c - 2, so one slot stays free for the greedy; more levels help large c
 * and hurt c = 5, measured with bench_online). y_N is stored when N is an anchor, and a
 * held anchor is never the checkpoint replaced; everything else is the greedy above.
 * Measured by bench_online (c = 3, 5, 10, 20, l <= 10^5, end before the last step):
 * pooled median excess 0.49 % -> 0.21 %, 90th percentile 1.84 % -> 1.18 %, worst 5.13 % ->
 * 4.30 %, lengths with more forward steps than the online-Revolve comparator 53 -> 3.
 *
 * Guard against online Revolve (2026-11-25). The anchors alone still lost to the comparator
 * (Stumm & Walther's online Revolve: optimal up to beta(c, 2), quasi-optimal to beta(c, 3),
 * Wang, Moin & Iaccarino's levels beyond) on about 1 % of the lengths at c = 5 and 6 (by up to
 * 0.5 %), in bands just before the comparator starts a new top level: there it holds a
 * near-optimal placement on its own lattice, beta(c - 1, r) then + beta(c - 2, r'), ..
 * (c = 5, l = 58 100: 52 360 = beta(4, 31), + 5456 = beta(3, 30)). So the schedule runs a
 * shadow of the comparator's rule (O(c) per step), and at each of its lattice points N =
 * beta(c - 1, r), every slot full, looks ahead to 1.25 (beta(c - 1, r + 1) - N) steps past N:
 * its own rule with its own anchors, and with the comparator's lattice at w = 1 .. min(c - 2,
 * 5) levels, counting the states whose end would cost more than the comparator's held
 * checkpoints (every checkpoint kept; lengths above beta(c, 3)); each lattice is tried with
 * y_N stored as its first anchor and with y_N left to the rule. It takes the first of these
 * with fewer such states than its own, for that interval.
 *
 * Measured by bench_online's dense table (every l <= 10^5): lengths worse than the comparator
 * 0 for every c = 3 .. 20 (before: c = 3, 4, 5, 6, 8, 10, 12 lost at 1, 97, 1054, 1253, 130,
 * 76, 56 lengths), median excess at most 0.39 % (was 0.34 %), worst 4.37 % (was 4.30 %).
 * Without the second try (y_N left to the rule) c = 18 lost at l = 26 336 by 0.003 %: the
 * look-ahead from N = 26 334 (to 119 600) saw its own lattice lose beyond 10^5, and the
 * comparator's lattice with its forced store cost that length. The rule minimises the count of
 * losing states it can see; it does not prove there are none. Tried in a simulator first:
 * fixed-horizon roll-outs of every option (fragile, thousands of losses at some c), the
 * comparator's lattice alone (losses near 0, median up to 1 %), both lattices pinned at once
 * (thousands of losses); the look-ahead only to the interval's end left c = 3, 4, 6, 7 one to
 * three losses just past it, hence 1.25.
 *
 * Work per step: O(c) evaluations of t, each amortised O(1) (tcost keeps r per slot count and
 * call site; rw_binomial_advances is O(r)), O(c r) for the anchors, and the look-aheads at the
 * comparator's lattice points: up to 11 runs of the rule over 1.25 intervals each, where the
 * own anchors would lose, else one (rewind-plan --online --steps 100000, c = 3 .. 50: 0.04-0.14
 * s without the guard, 0.09-0.77 s with the first version of it); memory O(c).
 *
 * Reverse sweep, once rw_schedule_set_steps gives l: a checkpoint that is held need not
 * be kept. A dynamic program over the held checkpoints (O(n^2 c) once, for n <= 64 held)
 * picks the subset whose reversal by the cost above is cheapest: dropping a checkpoint
 * merges two intervals but gives every later interval a slot more. The dropped ones are
 * freed first; the reversal engine (binomial split, optimal per interval) then reverses
 * the run from the kept ones. */
#include "rewind/rw_context.h"
#include "rw_schedule_impl.h"

#include <limits.h>
#include <string.h>

/* The reverse sweep's dynamic program runs when at most this many checkpoints are held
 * (its work is O(n^2 c)); with more, every held checkpoint is kept. */
#define ONLINE_DP_MAX 64
/* Call sites of tcost with a memory of their own (see tcost). */
#define ONLINE_LANES 10

typedef struct {
  int c;        /* slots, counting the slot of y_0 */
  int n;        /* checkpoints held in the forward sweep (then: left to free) */
  int64_t *pos; /* [c] their steps, increasing */
  int *slot;    /* [c] their slots */
  int64_t cur;  /* step of the current state */
  int handled;  /* y_cur is stored (or deliberately not) */
  int pending;  /* a slot was freed for y_cur: store it next */
  int reversing;
  int64_t *pre;      /* [c + 1] scratch: prefix sums of interval costs */
  int64_t *suf;      /* [c + 1] scratch: suffix sums of interval costs with one slot more */
  int64_t *f;        /* [dp * dp] reverse-sweep program: cost right of a kept checkpoint */
  int *nxt;          /* [dp * dp] its choice: the next kept checkpoint, or -1 */
  int *keep;         /* [c] the reverse sweep keeps held checkpoint i */
  int dp;            /* min(c, ONLINE_DP_MAX) */
  int lat;           /* anchor lattice: 0 the own one, w >= 1 the comparator's with w levels */
  int64_t lat_until; /* the own lattice returns at this step */
  int64_t lat_skip;  /* the comparator's lattice taken here without storing y_here (-1: stored) */
  int64_t checked;   /* last step whose lattice point was examined */
  int wn;            /* the comparator's shadow: how many it holds, */
  int64_t *wpos;     /* [c] their steps, */
  int *wlev;         /* [c] their levels */
  int64_t *rpos;     /* [c] scratch: held steps in a look-ahead */
  int64_t *rwpos;    /* [c] scratch: the shadow in a look-ahead */
  int *rwlev;        /* [c] */
  int64_t *tcache;   /* [ONLINE_LANES][c + 2][5] tcost's memory per call site and slot count */
  rw_engine e;
} online_content;

static void set_slot_action(rw_action *a, rw_action_type t, int64_t step, int slot)
{
  a->type = t;
  a->step = a->to = step;
  a->slot = slot;
  a->level = RW_LEVEL_RAM;
  a->first_sweep = 0;
}

/* t(m, s): the binomial optimum for m steps and s slots, 0 for m <= 1, t = r m - beta(s + 1,
 * r - 1) with r the repetition number, beta(s, r - 1) < m <= beta(s, r) (rw_binomial_advances
 * finds r in O(r)). The schedule asks for the same s with slowly changing m step after step
 * (and its look-ahead many times over), so per s and call site (lane) it keeps the last r with
 * beta(s, r - 1), beta(s, r) and beta(s + 1, r - 1), and moves r up or down by the exact
 * recurrences beta(a, q + 1) = beta(a, q) (a + q + 1) / (q + 1) and beta(a, q - 1) = beta(a, q) q /
 * (a + q). Where a product could overflow it falls back to rw_binomial_advances. */
static int tcost(online_content *o, int lane, int64_t m, int s, int64_t *t)
{
  *t = 0;
  if (m <= 1) return 0;
  /* r, beta(s, r - 1), beta(s, r), beta(s + 1, r - 1), INT64_MAX / r; one memory per call
   * site (lane), so sites asking about different intervals with the same s do not undo each
   * other */
  int64_t *tc = o->tcache + 5 * ((size_t)lane * ((size_t)o->c + 2) + (size_t)s);
  if (tc[0] == 0) tc[0] = 1, tc[1] = 1, tc[2] = s + 1, tc[3] = 1, tc[4] = INT64_MAX;
  const int64_t r0 = tc[0];
  while (m > tc[2]) {
    const int64_t r = tc[0];
    if (tc[2] > INT64_MAX / (s + r + 1) || tc[3] > INT64_MAX / (s + r + 1)) {
      tc[0] = 0;
      return rw_binomial_advances(m, s, NULL, t);
    }
    tc[1] = tc[2];
    tc[2] = tc[2] * (s + r + 1) / (r + 1);
    tc[3] = tc[3] * (s + r + 1) / r;
    tc[0] = r + 1;
  }
  while (m <= tc[1]) { /* r >= 2 here: at r = 1, beta(s, 0) = 1 < m */
    const int64_t r = tc[0];
    tc[2] = tc[1];
    tc[1] = tc[1] * (r - 1) / (s + r - 1);
    tc[3] = tc[3] * (r - 1) / (s + r);
    tc[0] = r - 1;
  }
  if (tc[0] != r0) tc[4] = INT64_MAX / tc[0];
  RW_CHECK(m <= tc[4], RW_ERR_ARG,
           "online schedule: %lld steps with %d slots need more than 2^63 advances", (long long)m,
           s);
  *t = tc[0] * m - tc[3];
  return 0;
}

static void remove_at(online_content *o, int i)
{
  for (int k = i; k + 1 < o->n; k++) {
    o->pos[k] = o->pos[k + 1];
    o->slot[k] = o->slot[k + 1];
  }
  o->n--;
}

static int append(online_content *o, int64_t step, int slot)
{
  RW_CHECK(o->n < o->c && (o->n == 0 || o->pos[o->n - 1] < step), RW_ERR_INTERNAL,
           "online schedule: cannot append step %lld", (long long)step);
  o->pos[o->n] = step;
  o->slot[o->n] = slot;
  o->n++;
  return 0;
}

/* The anchors of the state at N: a_0 = 0 and, for levels i = 1 .. min(c - 2, L,
 * ONLINE_ANCHOR_MAX), a_i = a_{i-1} + beta(s_i, r_i) with r_i >= 1 the largest repetition
 * number that keeps a_i <= N (a level with no such r ends the list). The own lattice (lat =
 * 0): s_i = c - i + 1, L = max(1, c / 4); the comparator's (lat = w >= 1): s_i = c - i, L =
 * w. Returns how many, in a[]; *at = 1 when N is one of them. */
#define ONLINE_ANCHOR_MAX 16
static int online_anchors(int c, int64_t N, int lat, int64_t skip, int64_t *a, int *at)
{
  int na = 0, levels = lat > 0 ? lat : c / 4 > 1 ? c / 4 : 1;
  int64_t a0 = 0;
  *at = 0;
  for (int lev = 1; lev <= c - 2 && lev <= levels && na < ONLINE_ANCHOR_MAX; lev++) {
    const int s = c - lev + 1 - (lat > 0);
    int64_t b = 1, best = -1; /* b = beta(s, r) = C(s + r, r) */
    for (int r = 1; b <= INT64_MAX / (s + r); r++) {
      b = b * (s + r) / r;
      if (a0 + b > N) break;
      best = b;
    }
    if (best < 0) break;
    a0 += best;
    a[na++] = a0;
    if (a0 == N && !(lat > 0 && N == skip)) *at = 1;
  }
  return na;
}

/* With every slot full (n = c >= 2) and the state at N: which checkpoint to replace by
 * y_N (*drop in [1, n - 1]), or -1 to leave y_N unstored. Let q = (p_0, .., p_{n-1}, N),
 * interval i = [q_i, q_{i+1}) for i < n. Dropping p_k leaves intervals i < k - 1 with
 * their slots c - i, merges k - 1 and k (slots c - k + 1) and moves each interval i > k
 * one place left (slots c - i + 1); the interval [N, N + 1) then costs nothing. Not
 * storing keeps intervals i < n - 1 and reverses [p_{n-1}, N + 1) with c - n + 1 slots.
 * A held anchor (online_anchors) is not dropped, and y_N is stored when N is an anchor. */
static int choose_drop(online_content *o, const int64_t *pos, int n, int64_t N, int lat,
                       int64_t skip, int *drop)
{
  int c = o->c, at = 0;
  int64_t *pre = o->pre, *suf = o->suf, t = 0, anchor[ONLINE_ANCHOR_MAX];
  int na = online_anchors(c, N, lat, skip, anchor, &at);
#define Q(i) ((i) < n ? pos[(i)] : N)
  pre[0] = 0;
  for (int i = 0; i < n - 1; i++) {
    RW_CALL(tcost(o, 0, Q(i + 1) - Q(i), c - i, &t));
    pre[i + 1] = pre[i] + t;
  }
  suf[n] = 0;
  for (int i = n - 1; i >= 2; i--) {
    RW_CALL(tcost(o, 1, Q(i + 1) - Q(i), c - i + 1, &t));
    suf[i] = suf[i + 1] + t;
  }
  int64_t best = INT64_MAX;
  *drop = -1;
  for (int k = 1; k < n; k++) {
    int pinned = 0;
    for (int i = 0; i < na; i++)
      pinned = pinned || anchor[i] == pos[k];
    if (pinned) continue;
    RW_CALL(tcost(o, 2, Q(k + 1) - Q(k - 1), c - k + 1, &t));
    int64_t v = pre[k - 1] + t + (k + 1 <= n - 1 ? suf[k + 1] : 0);
    if (v < best) {
      best = v;
      *drop = k;
    }
  }
#undef Q
  RW_CALL(tcost(o, 3, N + 1 - pos[n - 1], c - n + 1, &t));
  if (pre[n - 1] + t < best && !at) *drop = -1;
  return 0;
}

/* --- Guard against online Revolve ------------------------------------------------------
 * A shadow of the comparator's rule (Wang, Moin & Iaccarino's levels, which Stumm & Walther's
 * online Revolve uses beyond beta(c, 3)): each held checkpoint has a level; a new state
 * replaces the latest checkpoint that has a later one of higher level, else the latest one,
 * taking its level plus one. Written for Rewind from the rule's description. */
static void shadow_step(int c, int64_t *pos, int *lev, int *n, int64_t N)
{
  if (N > 0 && c < 2) return;
  int l = N == 0 ? INT_MAX : 0;
  if (*n == c) {
    int d = -1, later = -1;
    for (int i = *n - 1; i >= 0 && d < 0; i--) {
      if (lev[i] < later) d = i;
      if (lev[i] > later) later = lev[i];
    }
    if (d < 0) {
      d = *n - 1;
      l = lev[d] + 1;
    }
    for (int k = d; k + 1 < *n; k++) {
      pos[k] = pos[k + 1];
      lev[k] = lev[k + 1];
    }
    (*n)--;
  }
  pos[*n] = N;
  lev[*n] = l;
  (*n)++;
}

/* E + the reversal's advances from held pos[0..n) with every checkpoint kept (the reverse
 * sweep's program can only lower it). */
static int held_cost(online_content *o, int lane, const int64_t *pos, int n, int64_t E,
                     int64_t *cost)
{
  const int c = o->c;
  int64_t t = 0;
  *cost = E;
  for (int i = 0; i + 1 < n; i++) {
    RW_CALL(tcost(o, lane, pos[i + 1] - pos[i], c - i, &t));
    *cost += t;
  }
  RW_CALL(tcost(o, lane + 1, E - pos[n - 1], c - n + 1, &t));
  *cost += t;
  return 0;
}

/* Looks ahead from the decision on y_N to the state at Eend: the schedule's own rule with
 * lattice `lat`, the shadow beside it; *loss counts the states E in (N, Eend] where ending
 * (l = E + 1, so only l > beta(c, 3), where the comparator leaves the offline optimum) would
 * cost more advances than the comparator's held checkpoints. Changes only scratch. */
static int look_ahead(online_content *o, int64_t N, int64_t Eend, int lat, int64_t skip, int64_t b3,
                      int64_t *loss)
{
  int n = o->n, wn = o->wn, d = 0;
  memcpy(o->rpos, o->pos, sizeof *o->pos * (size_t)n);
  memcpy(o->rwpos, o->wpos, sizeof *o->wpos * (size_t)wn);
  memcpy(o->rwlev, o->wlev, sizeof *o->wlev * (size_t)wn);
  *loss = 0;
  for (int64_t M = N; M < Eend; M++) {
    RW_CALL(choose_drop(o, o->rpos, n, M, lat, skip, &d));
    if (d >= 1) {
      for (int k = d; k + 1 < n; k++)
        o->rpos[k] = o->rpos[k + 1];
      o->rpos[n - 1] = M;
    }
    shadow_step(o->c, o->rwpos, o->rwlev, &wn, M);
    if (M + 2 <= b3) continue;
    int64_t ours = 0, theirs = 0;
    RW_CALL(held_cost(o, 4, o->rpos, n, M + 1, &ours));
    RW_CALL(held_cost(o, 6, o->rwpos, wn, M + 1, &theirs));
    *loss += ours > theirs;
  }
  return 0;
}

/* At a point of the comparator's lattice, N = beta(c - 1, r) (where it starts a new top
 * level; its good lengths come just before beta(c - 1, r + 1)), with every slot full: looks
 * ahead to 1.25 times that interval with the own anchors and with the comparator's lattice at
 * 1 .. min(c - 2, 5) levels, first with y_N stored as its first anchor, then with y_N left to
 * the rule (the deeper anchors still pinned when reached), and takes the first of these that
 * loses to the comparator at fewer states than the own anchors, for that interval. */
#define ONLINE_LATTICE_LEVELS 5
static int lattice_check(online_content *o, int64_t N)
{
  const int c = o->c, s = c - 1;
  if (o->lat && N >= o->lat_until) o->lat = 0;
  if (c < 3 || o->n < c || o->lat) return 0;
  int64_t b = 1, next = -1;
  for (int r = 1; b <= N && b <= INT64_MAX / (s + r + 1); r++) {
    b = b * (s + r) / r;
    if (b == N && b <= INT64_MAX / (s + r + 1)) next = b * (s + r + 1) / (r + 1);
  }
  if (next < 0) return 0;
  int64_t b3 = 0, loss0 = 0, best = 0, loss = 0;
  RW_CALL(rw_binomial_beta(c, 3, &b3));
  const int64_t Eend = next + (next - N) / 4;
  RW_CALL(look_ahead(o, N, Eend, 0, -1, b3, &loss0));
  best = loss0;
  int w_best = 0, nf_best = 0, wmax = c - 2 < ONLINE_LATTICE_LEVELS ? c - 2 : ONLINE_LATTICE_LEVELS;
  for (int nf = 0; nf <= 1; nf++)
    for (int w = 1; w <= wmax && best > 0; w++) {
      RW_CALL(look_ahead(o, N, Eend, w, nf ? N : -1, b3, &loss));
      if (loss < best) best = loss, w_best = w, nf_best = nf;
    }
  if (w_best) {
    o->lat = w_best;
    o->lat_until = next;
    o->lat_skip = nf_best ? N : -1;
  }
  return 0;
}

static int online_next(rw_schedule s, rw_action *a)
{
  online_content *o = s->content;
  if (o->reversing) {
    if (o->n > 0) { /* free the checkpoints the reverse sweep does not keep */
      o->n--;
      set_slot_action(a, RW_ACTION_FREE, o->pos[o->n], o->slot[o->n]);
      rw_engine_give_slot(&o->e, o->slot[o->n]);
      return 0;
    }
    return rw_engine_next(&o->e, a);
  }
  int64_t i = o->cur;
  if (o->pending) { /* store y_i in the slot just freed */
    int k = rw_engine_take_slot(&o->e);
    RW_CHECK(k >= 0, RW_ERR_INTERNAL, "online schedule: no slot after a free");
    RW_CALL(append(o, i, k));
    o->pending = 0;
    o->handled = 1;
    set_slot_action(a, RW_ACTION_STORE, i, k);
    return 0;
  }
  if (!o->handled && (i == 0 || o->c >= 2)) {
    if (o->checked < i) {
      o->checked = i;
      RW_CALL(lattice_check(o, i));
    }
    if (o->n < o->c) { /* a free slot */
      int k = rw_engine_take_slot(&o->e);
      RW_CHECK(k >= 0, RW_ERR_INTERNAL, "online schedule: slot count out of step");
      RW_CALL(append(o, i, k));
      o->handled = 1;
      set_slot_action(a, RW_ACTION_STORE, i, k);
      return 0;
    }
    int d = -1;
    RW_CALL(choose_drop(o, o->pos, o->n, i, o->lat, o->lat_skip, &d));
    if (d >= 1) {
      set_slot_action(a, RW_ACTION_FREE, o->pos[d], o->slot[d]);
      rw_engine_give_slot(&o->e, o->slot[d]);
      remove_at(o, d);
      o->pending = 1;
      return 0;
    }
    o->handled = 1; /* y_i is not worth a slot */
  }
  /* y_i is handled: one step forward (the shadow decides on y_i too) */
  shadow_step(o->c, o->wpos, o->wlev, &o->wn, i);
  a->type = RW_ACTION_ADVANCE;
  a->step = i;
  a->to = i + 1;
  a->slot = -1;
  a->level = RW_LEVEL_RAM;
  a->first_sweep = 0;
  o->cur = i + 1;
  o->handled = 0;
  return 0;
}

/* Marks in keep[] (0/1 per held checkpoint) the subset whose reversal from the state at E
 * is cheapest. f(i, j) is the cost of the intervals right of held checkpoint i when it is
 * the j-th kept one (its interval then has c - j slots):
 *   f(i, j) = min( t(E - p_i, c - j), min_{i' > i} t(p_{i'} - p_i, c - j) + f(i', j + 1) ).
 * Ties keep the next checkpoint, so all are kept when dropping gains nothing. */
static int choose_kept(online_content *o, int64_t E, int *keep)
{
  int n = o->n, c = o->c, w = o->dp;
  int64_t t = 0;
  for (int i = 0; i < n; i++)
    keep[i] = 1;
  if (n > o->dp || n < 2) return 0;
  for (int i = n - 1; i >= 0; i--)
    for (int j = 0; j <= i; j++) {
      int64_t best = INT64_MAX;
      int choice = -1;
      for (int i2 = i + 1; i2 < n; i2++) {
        RW_CALL(tcost(o, 8, o->pos[i2] - o->pos[i], c - j, &t));
        int64_t v = t + o->f[i2 * w + j + 1];
        if (v < best) {
          best = v;
          choice = i2;
        }
      }
      RW_CALL(tcost(o, 9, E - o->pos[i], c - j, &t));
      if (t < best) {
        best = t;
        choice = -1;
      }
      o->f[i * w + j] = best;
      o->nxt[i * w + j] = choice;
    }
  for (int i = 0; i < n; i++)
    keep[i] = 0;
  for (int i = 0, j = 0; i >= 0; i = o->nxt[i * w + j], j++)
    keep[i] = 1;
  return 0;
}

/* The reversal's advances from the held checkpoints with the state at E: the cost that
 * choose_kept minimises (all held checkpoints kept when it does not run). */
static int reversal_advances(online_content *o, int64_t E, int64_t *adv)
{
  const int n = o->n;
  *adv = 0;
  if (n == 0) return 0;
  RW_CALL(choose_kept(o, E, o->keep));
  if (n <= o->dp && n >= 2) {
    *adv = o->f[0];
    return 0;
  }
  RW_CALL(held_cost(o, 8, o->pos, n, E, adv)); /* every one kept */
  *adv -= E;
  return 0;
}

int rw_schedule_online_lattice(rw_schedule s, int *levels)
{
  RW_CHECK(s && levels && s->ops.next == online_next, RW_ERR_ARG,
           "rw_schedule_online_lattice: not an online schedule, or a NULL argument");
  *levels = ((online_content *)s->content)->lat;
  return 0;
}

int rw_schedule_online_advances_if_ended(rw_schedule s, int64_t *advances)
{
  RW_CHECK(s && advances && s->ops.next == online_next, RW_ERR_ARG,
           "rw_schedule_online_advances_if_ended: not an online schedule, or a NULL argument");
  online_content *o = s->content;
  RW_CHECK(!o->reversing, RW_ERR_ARG,
           "rw_schedule_online_advances_if_ended: the number of steps is already known");
  int64_t rev = 0;
  RW_CALL(reversal_advances(o, o->cur, &rev));
  *advances = s->stats.advances + rev;
  return 0;
}

static int online_set_steps(rw_schedule s, int64_t steps)
{
  online_content *o = s->content;
  RW_CHECK(steps >= 1 && (steps == o->cur || steps == o->cur + 1), RW_ERR_ARG,
           "rw_schedule_set_steps: the current state is at step %lld, so the number of steps "
           "must be %lld (the last step was taken) or %lld (the next step is the last); got "
           "%lld",
           (long long)o->cur, (long long)o->cur, (long long)(o->cur + 1), (long long)steps);
  /* A slot freed for a store that will not happen goes back with the others. */
  o->pending = 0;
  int *keep = o->keep;
  RW_CALL(choose_kept(o, o->cur, keep));
  int nd = 0;
  for (int k = 0; k < o->n; k++) {
    if (keep[k]) {
      RW_CALL(rw_engine_push(&o->e, o->pos[k], o->slot[k]));
    } else { /* compact the dropped ones to the front: online_next frees them */
      o->pos[nd] = o->pos[k];
      o->slot[nd] = o->slot[k];
      nd++;
    }
  }
  o->n = nd;
  rw_engine_start(&o->e, steps, o->cur);
  o->reversing = 1;
  return 0;
}

static void online_destroy(rw_schedule s)
{
  online_content *o = s->content;
  if (o) {
    rw_engine_finalize(&o->e);
    rw_free(&o->pos);
    rw_free(&o->slot);
    rw_free(&o->pre);
    rw_free(&o->suf);
    rw_free(&o->f);
    rw_free(&o->nxt);
    rw_free(&o->keep);
    rw_free(&o->wpos);
    rw_free(&o->wlev);
    rw_free(&o->rpos);
    rw_free(&o->rwpos);
    rw_free(&o->rwlev);
    rw_free(&o->tcache);
  }
  rw_free(&s->content);
}

/* Creates the online schedule (see rw_schedule.h): `slots` >= 1 RAM slots counting the
 * slot of y_0; *out receives the schedule. Returns RW_ERR_ARG for bad arguments,
 * RW_ERR_MEM when an allocation fails (nothing is leaked). Not collective. */
int rw_schedule_create_online(int slots, rw_schedule *out)
{
  static const rw_schedule_ops ops = {online_next, online_set_steps, online_destroy, NULL};
  int ierr = 0;
  rw_schedule s = NULL;
  online_content *o = NULL;
  RW_CHECK(out, RW_ERR_ARG, "rw_schedule_create_online: output pointer is NULL");
  *out = NULL;
  RW_CHECK(slots >= 1, RW_ERR_ARG,
           "rw_schedule_create_online: slots = %d must be >= 1 (one holds the initial state)",
           slots);
  RW_TRY(rw_schedule_alloc("online", &ops, &s));
  s->capacity_ram = slots;
  RW_TRY(rw_calloc(1, sizeof *o, "online schedule", &o));
  s->content = o;
  o->c = slots;
  o->dp = slots < ONLINE_DP_MAX ? slots : ONLINE_DP_MAX;
  size_t dp2 = (size_t)o->dp * (size_t)o->dp;
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->pos, "online checkpoint steps", &o->pos));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->slot, "online checkpoint slots", &o->slot));
  RW_TRY(rw_calloc((size_t)slots + 1, sizeof *o->pre, "online cost scratch", &o->pre));
  RW_TRY(rw_calloc((size_t)slots + 1, sizeof *o->suf, "online cost scratch", &o->suf));
  RW_TRY(rw_calloc(dp2, sizeof *o->f, "online reverse-sweep program", &o->f));
  RW_TRY(rw_calloc(dp2, sizeof *o->nxt, "online reverse-sweep choices", &o->nxt));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->keep, "online kept checkpoints", &o->keep));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->wpos, "online comparator shadow", &o->wpos));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->wlev, "online comparator shadow", &o->wlev));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->rpos, "online look-ahead", &o->rpos));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->rwpos, "online look-ahead", &o->rwpos));
  RW_TRY(rw_calloc((size_t)slots, sizeof *o->rwlev, "online look-ahead", &o->rwlev));
  RW_TRY(rw_calloc(5 * ONLINE_LANES * ((size_t)slots + 2), sizeof *o->tcache, "online cost memory",
                   &o->tcache));
  o->checked = -1;
  o->lat_skip = -1;
  RW_TRY(rw_engine_init(&o->e, slots, RW_SPLIT_BINOMIAL));
  *out = s;
  return 0;
cleanup:
  rw_schedule_destroy(&s);
  return ierr;
}
