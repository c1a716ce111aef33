/* Binomial checkpointing (Revolve): closed forms, the optimal split and the reversal
 * engine shared by every schedule.
 *
 * References: A. Griewank, "Achieving logarithmic growth of temporal and spatial complexity
 * in reverse automatic differentiation", Optim. Methods Softw. 1(1), 1992; A. Griewank and
 * A. Walther, "Algorithm 799: revolve", ACM TOMS 26(1), 2000. Written from the papers'
 * results (the recursion t(l, c) = min_j [j + t(l - j, c - 1) + t(j, c)] and its closed
 * form), not from the Revolve code. */
#include "rewind/rw_context.h"
#include "rw_schedule_impl.h"

#include <limits.h>

static int64_t gcd64(int64_t a, int64_t b)
{
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* b * mul / div where the quotient is an integer, saturating at INT64_MAX (a saturated b
 * stays saturated). All arguments >= 0, div > 0. */
static int64_t mul_div_sat(int64_t b, int64_t mul, int64_t div)
{
  if (b == INT64_MAX) return INT64_MAX;
  if (b == 0 || mul == 0) return 0;
  int64_t g = gcd64(b, div);
  b /= g;
  div /= g; /* now div divides mul */
  mul /= div;
  if (mul > INT64_MAX / b) return INT64_MAX;
  return b * mul;
}

/* beta(c, r) = C(c + r, c) with r < 0 giving 0; saturating. */
static int64_t beta_sat(int64_t c, int64_t r)
{
  if (r < 0 || c < 0) return 0;
  int64_t k = c < r ? c : r, n = c + r, b = 1;
  for (int64_t i = 1; i <= k && b != INT64_MAX; i++)
    b = mul_div_sat(b, n - k + i, i);
  return b;
}

/* Computes a binomial coefficient C(c + r, c), saturating at INT64_MAX so that a
 * comparison with any step count stays right. Not collective. */
int rw_binomial_beta(int64_t c, int64_t r, int64_t *beta)
{
  RW_CHECK(beta, RW_ERR_ARG, "rw_binomial_beta: output pointer is NULL");
  RW_CHECK(c >= 0 && r >= 0, RW_ERR_ARG, "rw_binomial_beta: c = %lld and r = %lld must be >= 0",
           (long long)c, (long long)r);
  *beta = beta_sat(c, r);
  return 0;
}

/* Repetition number: the smallest r with beta(s, r) >= m (m >= 1, s >= 1). Returns also
 * beta(s, r - 1) and beta(s, r). O(r) work. */
static int64_t repetitions(int64_t m, int64_t s, int64_t *beta_prev, int64_t *beta_r)
{
  int64_t r = 0, b = 1, bp = 0;
  if (s == 1) { /* beta(1, r) = r + 1 */
    r = m - 1;
    if (beta_prev) *beta_prev = r;
    if (beta_r) *beta_r = r + 1;
    return r;
  }
  while (b < m) {
    r++;
    bp = b;
    b = mul_div_sat(b, s + r, r);
  }
  if (beta_prev) *beta_prev = bp;
  if (beta_r) *beta_r = b;
  return r;
}

/* Computes the repetition number r and the minimal number of advances
 * t(l, c) = r l - C(c + r, r - 1) for l steps and c slots counting the slot of y_0
 * (Griewank & Walther 2000). Returns RW_ERR_ARG for l < 1, c < 1, or a count past
 * INT64_MAX. Not collective. */
int rw_binomial_advances(int64_t steps, int slots, int64_t *reps, int64_t *advances)
{
  RW_CHECK(steps >= 1, RW_ERR_ARG, "rw_binomial_advances: steps = %lld must be >= 1",
           (long long)steps);
  RW_CHECK(slots >= 1, RW_ERR_ARG,
           "rw_binomial_advances: slots = %d must be >= 1 (the slot of the initial state)", slots);
  int64_t r = repetitions(steps, slots, NULL, NULL);
  if (reps) *reps = r;
  if (advances) {
    RW_CHECK(r == 0 || steps <= INT64_MAX / r, RW_ERR_ARG,
             "rw_binomial_advances: %lld steps with %d slots need more than 2^63 advances",
             (long long)steps, slots);
    /* C(c + r, r - 1) = beta(c + 1, r - 1) <= r l since t >= 0. */
    *advances = r * steps - beta_sat((int64_t)slots + 1, r - 1);
  }
  return 0;
}

/* The optimal split (see rw_schedule_impl.h). With r the repetition number of (m, s), the
 * cost j + t(m - j, s - 1) + t(j, s) is convex and piecewise linear in j (t(., s) has slope
 * q on (beta(s, q - 1), beta(s, q)]), so it is minimal where the left part needs r - 1
 * repetitions and the right part r:
 *   beta(s, r - 2) <= j <= beta(s, r - 1),  beta(s - 1, r - 1) <= m - j <= beta(s - 1, r).
 * These intervals meet because beta(s, r - 1) + beta(s - 1, r) = beta(s, r) >= m and
 * beta(s, r - 2) + beta(s - 1, r - 1) = beta(s, r - 1) < m. Every j in the range gives
 * the same advances; the smallest one stores fewer states in practice (3062 instead of 3288
 * stores for l = 5000, c = 10). The tests check the counts against an independent dynamic
 * program. */
int rw_binomial_split(int64_t m, int64_t s, int64_t *j)
{
  RW_CHECK(m >= 2 && s >= 2 && j, RW_ERR_INTERNAL, "rw_binomial_split: m = %lld, s = %lld",
           (long long)m, (long long)s);
  int64_t b1 = 0, b0 = 0; /* beta(s, r - 1), beta(s, r) */
  int64_t r = repetitions(m, s, &b1, &b0);
  /* beta(s - 1, q) = beta(s, q) s / (s + q); beta(s, r - 2) = beta(s, r - 1)(r - 1)/(s + r - 1) */
  int64_t bs1_r = mul_div_sat(b0, s, s + r);
  int64_t bs1_r1 = r >= 1 ? mul_div_sat(b1, s, s + r - 1) : 0;
  int64_t b2 = r >= 1 ? mul_div_sat(b1, r - 1, s + r - 1) : 0;
  int64_t lo = 1, hi = m - 1;
  if (b2 > lo) lo = b2;
  if (bs1_r != INT64_MAX && m - bs1_r > lo) lo = m - bs1_r;
  if (b1 < hi) hi = b1;
  if (m - bs1_r1 < hi) hi = m - bs1_r1;
  RW_CHECK(lo <= hi, RW_ERR_INTERNAL,
           "rw_binomial_split: empty optimal range [%lld, %lld] for m = %lld, s = %lld",
           (long long)lo, (long long)hi, (long long)m, (long long)s);
  *j = lo;
  return 0;
}

/* --- Reversal engine ----------------------------------------------------------------- */

int rw_engine_init(rw_engine *e, int capacity, rw_split_rule rule)
{
  RW_CHECK(capacity >= 1, RW_ERR_INTERNAL, "rw_engine_init: capacity %d", capacity);
  e->capacity = capacity;
  e->top = -1;
  e->rule = rule;
  e->fine = 0;
  e->cur = 0;
  e->first = 1;
  RW_CALL(rw_calloc((size_t)capacity, sizeof *e->pos, "schedule checkpoint steps", &e->pos));
  RW_CALL(rw_calloc((size_t)capacity, sizeof *e->slot, "schedule checkpoint slots", &e->slot));
  RW_CALL(rw_calloc((size_t)capacity, sizeof *e->free_ids, "schedule free slots", &e->free_ids));
  /* Free slots handed out in increasing order: slot 0 first. */
  for (int k = 0; k < capacity; k++)
    e->free_ids[k] = capacity - 1 - k;
  e->nfree = capacity;
  return 0;
}

void rw_engine_finalize(rw_engine *e)
{
  rw_free(&e->pos);
  rw_free(&e->slot);
  rw_free(&e->free_ids);
}

int rw_engine_take_slot(rw_engine *e) { return e->nfree > 0 ? e->free_ids[--e->nfree] : -1; }

void rw_engine_give_slot(rw_engine *e, int slot) { e->free_ids[e->nfree++] = slot; }

int rw_engine_push(rw_engine *e, int64_t step, int slot)
{
  RW_CHECK(e->top + 1 < e->capacity && (e->top < 0 || e->pos[e->top] < step), RW_ERR_INTERNAL,
           "rw_engine_push: step %lld on a stack of %d", (long long)step, e->top + 1);
  e->top++;
  e->pos[e->top] = step;
  e->slot[e->top] = slot;
  return 0;
}

void rw_engine_start(rw_engine *e, int64_t steps, int64_t cur)
{
  e->fine = steps;
  e->cur = cur;
  e->first = 1;
}

/* The engine's actions are all on RAM slots. */
static void set_action(rw_action *a, rw_action_type type, int64_t step, int64_t to, int slot)
{
  rw_action_set(a, type, step, to, slot, RW_LEVEL_RAM);
}

int rw_engine_next(rw_engine *e, rw_action *a)
{
  if (e->fine == 0) { /* everything reversed: free what is left, then terminate */
    if (e->top >= 0) {
      set_action(a, RW_ACTION_FREE, e->pos[e->top], e->pos[e->top], e->slot[e->top]);
      rw_engine_give_slot(e, e->slot[e->top]);
      e->top--;
    } else {
      set_action(a, RW_ACTION_TERMINATE, 0, 0, -1);
    }
    return 0;
  }
  if (e->cur == e->fine - 1) { /* the state is where the next reversal starts */
    set_action(a, e->first ? RW_ACTION_FIRST_REVERSE : RW_ACTION_REVERSE, e->cur, e->cur, -1);
    e->first = 0;
    e->fine--;
    e->cur = -1;
    return 0;
  }
  if (e->top < 0) { /* nothing stored yet: store the initial state */
    RW_CHECK(e->cur == 0, RW_ERR_INTERNAL, "rw_engine_next: no checkpoint and state at %lld",
             (long long)e->cur);
    int k = rw_engine_take_slot(e);
    RW_CHECK(k >= 0, RW_ERR_INTERNAL, "rw_engine_next: no slot for the initial state");
    set_action(a, RW_ACTION_STORE, 0, 0, k);
    return rw_engine_push(e, 0, k);
  }
  int64_t p = e->pos[e->top];
  if (p >= e->fine) { /* the top checkpoint's steps are all reversed */
    set_action(a, RW_ACTION_FREE, p, p, e->slot[e->top]);
    rw_engine_give_slot(e, e->slot[e->top]);
    e->top--;
    return 0;
  }
  if (e->cur < p || e->cur >= e->fine) { /* state undefined or useless: restore */
    set_action(a, RW_ACTION_RESTORE, p, p, e->slot[e->top]);
    e->cur = p;
    return 0;
  }
  if (e->cur > p) { /* arrived at a split point: store it if a slot is free */
    int k = rw_engine_take_slot(e);
    if (k >= 0) {
      set_action(a, RW_ACTION_STORE, e->cur, e->cur, k);
      return rw_engine_push(e, e->cur, k);
    }
    set_action(a, RW_ACTION_ADVANCE, e->cur, e->fine - 1, -1);
    e->cur = e->fine - 1;
    return 0;
  }
  /* e->cur == p: choose how far to advance before the next store */
  int64_t m = e->fine - p, s = (int64_t)e->nfree + 1, j = m - 1;
  if (s >= 2) {
    if (e->rule == RW_SPLIT_UNIT)
      j = 1;
    else
      RW_CALL(rw_binomial_split(m, s, &j));
  }
  set_action(a, RW_ACTION_ADVANCE, p, p + j, -1);
  e->cur = p + j;
  return 0;
}

/* --- The binomial schedule ------------------------------------------------------------ */

static int binomial_next(rw_schedule s, rw_action *a) { return rw_engine_next(s->content, a); }

static void binomial_destroy(rw_schedule s)
{
  if (s->content) rw_engine_finalize(s->content);
  rw_free(&s->content);
}

/* Creates the offline binomial schedule (see rw_schedule.h). Not collective. */
int rw_schedule_create_binomial(int64_t steps, int slots, rw_schedule *out)
{
  static const rw_schedule_ops ops = {binomial_next, NULL, binomial_destroy, NULL};
  int ierr = 0;
  rw_schedule s = NULL;
  rw_engine *e = NULL;
  RW_CHECK(out, RW_ERR_ARG, "rw_schedule_create_binomial: output pointer is NULL");
  *out = NULL;
  RW_CHECK(steps >= 1, RW_ERR_ARG, "rw_schedule_create_binomial: steps = %lld must be >= 1",
           (long long)steps);
  RW_CHECK(slots >= 1, RW_ERR_ARG,
           "rw_schedule_create_binomial: slots = %d must be >= 1 (one holds the initial state)",
           slots);
  /* Slots beyond l - 1 are never used: the schedule then stores y_0 .. y_{l-2}. */
  int cap = steps - 1 < (int64_t)slots ? (int)(steps - 1) : slots;
  if (cap < 1) cap = 1;
  RW_TRY(rw_schedule_alloc("binomial", &ops, &s));
  s->steps = steps;
  s->capacity_ram = cap;
  RW_TRY(rw_calloc(1, sizeof *e, "binomial schedule", &e));
  s->content = e;
  RW_TRY(rw_engine_init(e, cap, RW_SPLIT_BINOMIAL));
  rw_engine_start(e, steps, 0);
  *out = s;
  return 0;
cleanup:
  rw_schedule_destroy(&s);
  return ierr;
}
