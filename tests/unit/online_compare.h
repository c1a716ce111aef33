/* Comparators for the online schedule, shared by tests/unit/test_schedule_online.c and
 * tests/bench/bench_online.c. Position-only models: they track which steps an online rule
 * holds and price the reversal from them with the binomial optimum per interval, the way
 * Revolve reverses from held checkpoints (interval i = [p_i, p_{i+1}) with c - i slots).
 *
 * online_wmi: the level rule of Wang, Moin & Iaccarino (SIAM J. Sci. Comput. 31(4), 2009),
 * which Stumm & Walther's online Revolve (SIAM J. Sci. Comput. 32(2), 2010) switches to
 * once l > beta(c, 3). Below beta(c, 3) the comparator is "online Revolve at its best":
 * t(l, c), the offline optimum (the paper proves optimality up to beta(c, 2) and
 * quasi-optimality up to beta(c, 3), so this can only make the comparator stronger). */
#ifndef REWIND_TESTS_ONLINE_COMPARE_H
#define REWIND_TESTS_ONLINE_COMPARE_H

#include "rewind/rw_schedule.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
  int c, n;
  int64_t pos[512];
  int lev[512];
} online_wmi;

static inline int64_t oc_t(int64_t m, int s)
{
  int64_t t = 0;
  if (m <= 1) return 0;
  if (rw_binomial_advances(m, s, NULL, &t)) abort();
  return t;
}

/* Starts the model for c slots (c <= 512). */
static inline void online_wmi_init(online_wmi *w, int c)
{
  w->c = c;
  w->n = 0;
}

/* The rule's decision for the new state y_N (called for N = 0, 1, 2, ..). */
static inline void online_wmi_step(online_wmi *w, int64_t N)
{
  if (N > 0 && w->c < 2) return;
  int lev = N == 0 ? INT_MAX : 0;
  if (w->n == w->c) { /* drop the most recent dispensable one, else the latest, one up */
    int d = -1, later = -1;
    for (int i = w->n - 1; i >= 0 && d < 0; i--) {
      if (w->lev[i] < later) d = i;
      if (w->lev[i] > later) later = w->lev[i];
    }
    if (d < 0) {
      d = w->n - 1;
      lev = w->lev[d] + 1;
    }
    for (int k = d; k + 1 < w->n; k++) {
      w->pos[k] = w->pos[k + 1];
      w->lev[k] = w->lev[k + 1];
    }
    w->n--;
  }
  w->pos[w->n] = N;
  w->lev[w->n] = lev;
  w->n++;
}

/* Advances of reversing l steps from the held checkpoints with the state at E (l - 1: the
 * end announced before the last step, nothing stored at l - 1 yet; l: after it), plus the
 * E advances of the forward sweep. */
static inline int64_t online_model_cost(const int64_t *pos, int n, int c, int64_t E)
{
  int64_t a = E;
  for (int i = 0; i + 1 < n; i++)
    a += oc_t(pos[i + 1] - pos[i], c - i);
  return a + oc_t(E - pos[n - 1], c - n + 1);
}

#endif
