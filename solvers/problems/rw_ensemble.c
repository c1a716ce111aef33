/* Where the ensemble problems' member loops run and how their terms are summed (rw_ensemble.h). */
#include "rw_ensemble.h"

#include "rewind/rw_vector.h"

#include <string.h>

int rw_ens_work_init(rw_ens_work *w, rw_context ctx, long n, int nt, long np)
{
  memset(w, 0, sizeof *w);
  w->dev = rw_context_device(ctx);
  w->n = n, w->nt = nt;
  size_t bytes = ((size_t)nt * (size_t)n + 1) * sizeof(double);
  if (w->dev) {
    RW_CALL(rw_device_alloc(w->dev, bytes, &w->terms));
    int ierr = rw_pdefer_init(&w->pd, w->dev, np);
    if (ierr) {
      rw_ens_work_free(w);
      return rw_error_push(ierr, __func__, __FILE__, __LINE__);
    }
    return 0;
  }
  RW_CALL(rw_calloc((size_t)nt * (size_t)n + 1, sizeof(double), "ensemble terms", &w->terms));
  return 0;
}

void rw_ens_work_free(rw_ens_work *w)
{
  if (w->dev)
    rw_device_free(w->dev, &w->terms, ((size_t)w->nt * (size_t)w->n + 1) * sizeof(double));
  else
    rw_free(&w->terms);
  rw_pdefer_free(&w->pd);
}

/* The host loop of one model: a loop per mode, each compiled with the model and mode as
 * constants (rw_body_ens_item is forced inline), so no branch on them is left per member. */
#define ENS_LOOP(MODE)                                                                             \
  case MODE:                                                                                       \
    for (long e = 0; e < b->n; e++)                                                                \
      rw_body_ens_item(b, e, kind, MODE);                                                          \
    break
static inline __attribute__((always_inline)) void ens_host_loops(const rw_body_ens *b,
                                                                 const int kind)
{
  switch (b->mode) {
    ENS_LOOP(RW_ENS_RHS);
    ENS_LOOP(RW_ENS_VJPY);
    ENS_LOOP(RW_ENS_VJPP);
    ENS_LOOP(RW_ENS_JVP);
    ENS_LOOP(RW_ENS_MISFIT);
    ENS_LOOP(RW_ENS_TGRAD);
    ENS_LOOP(RW_ENS_RGRAD);
    ENS_LOOP(RW_ENS_DIFF);
    ENS_LOOP(RW_ENS_DIFFVJP);
  default:
    break;
  }
}
#undef ENS_LOOP

static void ens_host(const rw_body_ens *b)
{
  switch (b->kind) {
  case RW_ENS_VDP:
    ens_host_loops(b, RW_ENS_VDP);
    break;
  case RW_ENS_LV:
    ens_host_loops(b, RW_ENS_LV);
    break;
  case RW_ENS_OU:
    ens_host_loops(b, RW_ENS_OU);
    break;
  default:
    ens_host_loops(b, RW_ENS_GBM);
    break;
  }
}

int rw_ens_work_run(rw_ens_work *w, rw_body_ens *b)
{
  b->n = w->n;
  if (w->dev) {
    if (w->n > 0) RW_CALL(rw_device_run(w->dev, RW_BODY_ENS, b, sizeof *b, w->n, rw_body_host));
    return 0;
  }
  ens_host(b);
  return 0;
}

int rw_ens_work_add(rw_ens_work *w, int r, double *out, long k)
{
  const double *x = w->terms + (size_t)r * (size_t)w->n;
  if (w->dev) return rw_pdefer_sum(&w->pd, out, k, x, w->n);
  double s = 0.0;
  for (long e = 0; e < w->n; e++)
    s += x[e];
  out[k] += s;
  return 0;
}

int rw_ens_work_add_rows(rw_ens_work *w, int nr, double *out)
{
  if (w->dev || nr == 1) {
    for (int r = 0; r < nr; r++)
      RW_CALL(rw_ens_work_add(w, r, out, r));
    return 0;
  }
  /* the rows' sums side by side (independent chains), each in member order */
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  RW_CHECK(nr <= 4, RW_ERR_ARG, "rw_ens_work_add_rows: %d rows; at most 4", nr);
  for (long e = 0; e < w->n; e++)
    for (int r = 0; r < nr; r++)
      s[r] += w->terms[(size_t)r * (size_t)w->n + (size_t)e];
  for (int r = 0; r < nr; r++)
    out[r] += s[r];
  return 0;
}

int rw_ens_work_total(rw_ens_work *w, double *s)
{
  *s = 0.0;
  if (w->dev) return rw_device_reduce(w->dev, RW_DK_SUM, w->terms, NULL, w->n, s);
  for (long e = 0; e < w->n; e++)
    *s += w->terms[e];
  return 0;
}

int rw_ens_work_sumsq(rw_ens_work *w, const double *x, long len, double *s)
{
  *s = 0.0;
  if (w->dev) return rw_device_reduce(w->dev, RW_DK_DOT, x, x, len, s);
  for (long i = 0; i < len; i++)
    *s += x[i] * x[i];
  return 0;
}

int rw_ens_work_set_state(N_Vector y, const double *h)
{
  if (rw_vec_device(y)) return rw_vec_from_host(y, h);
  memcpy(rw_vec_data(y), h, (size_t)rw_vec_local_length(y) * sizeof(double));
  return 0;
}

int rw_ens_problem_init(rw_ens_problem *e, rw_context ctx, int kind, int dim, int np, int nt,
                        long members, const double *target, double wT, double wR)
{
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);
  /* a rank without a member would hold vectors of no entries, which SUNDIALS' parallel vector
   * refuses (and the other ranks would wait for it in a collective): refused here, the same on
   * every rank */
  RW_CHECK(members >= size, RW_ERR_ARG,
           "an ensemble of %ld members on %d ranks: every rank needs at least one member (at most "
           "%ld ranks for it)",
           members, size, members);
  long q = members / size, rem = members % size;
  e->kind = kind, e->dim = dim, e->np = np;
  e->nloc = q + (rank < rem ? 1 : 0);
  e->offset = rank * q + (rank < rem ? rank : rem);
  memset(e->target, 0, sizeof e->target);
  memcpy(e->target, target, (size_t)dim * sizeof(double));
  e->wT = wT, e->wR = wR;
  return rw_ens_work_init(&e->work, ctx, e->nloc, nt, np);
}

rw_body_ens rw_ens_body(const rw_ens_problem *e, int mode, const double *p)
{
  rw_body_ens b;
  memset(&b, 0, sizeof b);
  b.kind = e->kind, b.mode = mode;
  if (p) memcpy(b.p, p, (size_t)e->np * sizeof(double));
  return b;
}

static int ens_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  (void)t, (void)p;
  rw_ens_problem *e = c;
  rw_body_ens b = rw_ens_body(e, RW_ENS_MISFIT, NULL);
  b.u = rw_vec_data(y), b.terms = e->work.terms;
  memcpy(b.target, e->target, sizeof b.target);
  double s = 0.0;
  RW_CALL(rw_ens_work_run(&e->work, &b));
  RW_CALL(rw_ens_work_total(&e->work, &s));
  s *= 0.5 * e->wT;
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, rw_vec_comm(y)));
  *g = s;
  return 0;
}

static int ens_terminal_grad(void *c, double t, N_Vector y, const double *p, N_Vector gy,
                             double *gp)
{
  (void)t, (void)p, (void)gp;
  rw_ens_problem *e = c;
  rw_body_ens b = rw_ens_body(e, RW_ENS_TGRAD, NULL);
  b.u = rw_vec_data(y), b.out = rw_vec_data(gy), b.a = e->wT;
  memcpy(b.target, e->target, sizeof b.target);
  return rw_ens_work_run(&e->work, &b);
}

static int ens_running(void *c, double t, N_Vector y, const double *p, double *r)
{
  (void)t, (void)p;
  rw_ens_problem *e = c;
  double s = 0.0;
  RW_CALL(rw_ens_work_sumsq(&e->work, rw_vec_data(y), e->dim * e->nloc, &s));
  *r = 0.5 * e->wR * s;
  return 0;
}

static int ens_running_grad(void *c, double t, N_Vector y, const double *p, double w, N_Vector ry,
                            double *rp)
{
  (void)t, (void)p, (void)rp;
  rw_ens_problem *e = c;
  rw_body_ens b = rw_ens_body(e, RW_ENS_RGRAD, NULL);
  b.u = rw_vec_data(y), b.out = rw_vec_data(ry), b.a = w * e->wR;
  return rw_ens_work_run(&e->work, &b);
}

static int ens_params_defer(void *c, double *pbar)
{
  return rw_pdefer_set(&((rw_ens_problem *)c)->work.pd, pbar);
}
static int ens_params_flush(void *c) { return rw_pdefer_flush(&((rw_ens_problem *)c)->work.pd); }

static void ens_destroy(void *c)
{
  rw_ens_problem *e = c;
  if (e) rw_ens_work_free(&e->work);
  rw_free(&e);
}

void rw_ens_problem_ops(const rw_ens_problem *e, rw_problem_ops *ops)
{
  if (e->wT != 0.0) {
    ops->terminal = ens_terminal;
    ops->terminal_grad = ens_terminal_grad;
  }
  if (e->wR != 0.0) {
    ops->running = ens_running;
    ops->running_grad = ens_running_grad;
  }
  ops->params_defer = ens_params_defer;
  ops->params_flush = ens_params_flush;
  ops->destroy = ens_destroy;
}
