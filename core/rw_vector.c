/* N_Vector factory over the counting allocator. */
#include "rewind/rw_vector.h"

#include "rewind/rw_kernels.h"
#include "rw_device_impl.h"

#include <string.h>

/* N_VLinearCombination in one pass over memory: z = sum_j c[j] X[j].
 *
 * SUNDIALS' parallel implementation (fused ops enabled) makes one pass per vector
 * (z = c0 x0, then z += c_j x_j for j = 1, 2, ...): with the 4-6 vectors of an RK stage
 * combination that is 4-6 reads and writes of z. Here every entry is computed in registers,
 * with the same operations in the same order, so the result is bitwise the one SUNDIALS
 * computes (the build does not contract a*b + c into fused multiply-adds: C11 without GNU
 * extensions compiles with -ffp-contract=off). The two-vector case keeps SUNDIALS'
 * N_VLinearSum special forms whose rounding differs from c0 x0 + c1 x1: c (x0 + x1) when
 * c0 == c1 and c (x0 - x1) when c0 == -c1 (|c0| != 1). z may alias X[0] (only X[0]). */
static inline __attribute__((always_inline)) void
rw_lincomb_loop(int n, const double *c, const double *const *x, double *z, long len)
{
  switch (n) {
  case 3: {
    const double c0 = c[0], c1 = c[1], c2 = c[2];
    const double *x0 = x[0], *x1 = x[1], *x2 = x[2];
    for (long i = 0; i < len; i++) {
      double a = c0 * x0[i];
      a += c1 * x1[i];
      z[i] = a + c2 * x2[i];
    }
    return;
  }
  case 4: {
    const double c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    for (long i = 0; i < len; i++) {
      double a = c0 * x0[i];
      a += c1 * x1[i];
      a += c2 * x2[i];
      z[i] = a + c3 * x3[i];
    }
    return;
  }
  case 5: {
    const double c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4];
    const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4];
    for (long i = 0; i < len; i++) {
      double a = c0 * x0[i];
      a += c1 * x1[i];
      a += c2 * x2[i];
      a += c3 * x3[i];
      z[i] = a + c4 * x4[i];
    }
    return;
  }
  default:
    for (long i = 0; i < len; i++) {
      double a = c[0] * x[0][i];
      for (int j = 1; j < n; j++)
        a += c[j] * x[j][i];
      z[i] = a;
    }
  }
}

/* Built for AVX-512, AVX2 and the baseline (RW_SIMD_CLONES: the same bits, only the vector
 * width changes); the baseline alone ran these loops two doubles at a time, which showed where
 * the vectors live in cache (Gray-Scott 128^2: 19 % of the default job). */
RW_SIMD_CLONES void rw_lincomb(int n, const double *c, const double *const *x, double *z, long len)
{
  if (n == 1) {
    const double c0 = c[0], *x0 = x[0];
    for (long i = 0; i < len; i++)
      z[i] = c0 * x0[i];
    return;
  }
  if (n == 2) {
    const double a = c[0], b = c[1], *x0 = x[0], *x1 = x[1];
    const int unit = a == 1.0 || a == -1.0 || b == 1.0 || b == -1.0;
    if (!unit && a == b) {
      for (long i = 0; i < len; i++)
        z[i] = a * (x0[i] + x1[i]);
    } else if (!unit && a == -b) {
      for (long i = 0; i < len; i++)
        z[i] = a * (x0[i] - x1[i]);
    } else {
      for (long i = 0; i < len; i++)
        z[i] = a * x0[i] + b * x1[i];
    }
    return;
  }
  if (n > RW_LINCOMB_MAX) { /* pass per vector, as SUNDIALS does: the same bits */
    rw_lincomb(1, c, x, z, len);
    for (int j = 1; j < n; j++) {
      const double cj = c[j], *xj = x[j];
      for (long i = 0; i < len; i++)
        z[i] += cj * xj[i];
    }
    return;
  }
  rw_lincomb_loop(n, c, x, z, len);
}

static int rw_vec_linear_combination(int n, sunrealtype *c, N_Vector *X, N_Vector z)
{
  const double *xd[RW_LINCOMB_MAX];
  if (n < 1) return -1;
  if (n > RW_LINCOMB_MAX) { /* pass per vector, as SUNDIALS does: the same bits */
    xd[0] = NV_DATA_P(X[0]);
    rw_lincomb(1, c, xd, NV_DATA_P(z), (long)NV_LOCLENGTH_P(z));
    for (int j = 1; j < n; j++) {
      const double cj = c[j], *xj = NV_DATA_P(X[j]);
      double *zd = NV_DATA_P(z);
      for (long i = 0; i < (long)NV_LOCLENGTH_P(z); i++)
        zd[i] += cj * xj[i];
    }
    return 0;
  }
  for (int j = 0; j < n; j++)
    xd[j] = NV_DATA_P(X[j]);
  rw_lincomb(n, c, xd, NV_DATA_P(z), (long)NV_LOCLENGTH_P(z));
  return 0;
}

/* Rewind's operations in a vector's ops table (after SUNDIALS' fused ops are enabled). */
static void rw_vec_set_ops(N_Vector v) { v->ops->nvlinearcombination = rw_vec_linear_combination; }

/* A vector over data (rw_calloc'd, local_n + 1 doubles), which it owns from here on: freed
 * with it, or here on failure. */
static int rw_vec_adopt(MPI_Comm comm, SUNContext sunctx, sunindextype local_n,
                        sunindextype global_n, double *data, N_Vector *out)
{
  *out = NULL;
  N_Vector v = N_VMake_Parallel(comm, local_n, global_n, data, sunctx);
  if (!v) {
    rw_free(&data);
    return RW_ERROR(RW_ERR_SUNDIALS, "N_VMake_Parallel failed for %lld local entries",
                    (long long)local_n);
  }
  /* Fused operations (N_VLinearCombination and friends) in one pass over memory. */
  if (N_VEnableFusedOps_Parallel(v, SUNTRUE) != 0) {
    N_VDestroy(v);
    rw_free(&data);
    return RW_ERROR(RW_ERR_SUNDIALS, "N_VEnableFusedOps_Parallel failed");
  }
  rw_vec_set_ops(v);
  *out = v;
  return 0;
}

static int rw_vec_make(MPI_Comm comm, SUNContext sunctx, sunindextype local_n,
                       sunindextype global_n, int whole, N_Vector *out)
{
  double *data = NULL;
  *out = NULL;
  /* One extra element keeps the pointer non-NULL for ranks that own no entries. */
  if (whole)
    RW_CALL(rw_calloc_whole((size_t)local_n + 1, sizeof(double), "checkpoint slot vector", &data));
  else
    RW_CALL(rw_calloc((size_t)local_n + 1, sizeof(double), "state vector", &data));
  return rw_vec_adopt(comm, sunctx, local_n, global_n, data, out);
}

int rw_vec_create(rw_context ctx, sunindextype local_n, N_Vector *out)
{
  RW_CHECK(local_n >= 0, RW_ERR_ARG, "rw_vec_create: negative local length %lld",
           (long long)local_n);
  long long loc = (long long)local_n, glob = 0;
  RW_CALL_MPI(MPI_Allreduce(&loc, &glob, 1, MPI_LONG_LONG, MPI_SUM, rw_context_comm(ctx)));
  if (rw_context_device(ctx)) {
    RW_CALL(rw_dvec_make(rw_context_device(ctx), rw_context_comm(ctx), rw_context_sunctx(ctx),
                         local_n, (sunindextype)glob, 1, out));
    return 0;
  }
  RW_CALL(rw_vec_make(rw_context_comm(ctx), rw_context_sunctx(ctx), local_n, (sunindextype)glob, 0,
                      out));
  return 0;
}

static int rw_vec_clone_as(N_Vector tmpl, int whole, N_Vector *out)
{
  RW_CHECK(tmpl, RW_ERR_ARG, "rw_vec_clone: template is NULL");
  if (rw_dvec_is(tmpl)) {
    RW_CALL(rw_dvec_make(rw_vec_device(tmpl), rw_dvec_comm(tmpl), tmpl->sunctx,
                         rw_dvec_local_length(tmpl), rw_dvec_global_length(tmpl), 1, out));
    return 0;
  }
  RW_CALL(rw_vec_make(NV_COMM_P(tmpl), tmpl->sunctx, NV_LOCLENGTH_P(tmpl), NV_GLOBLENGTH_P(tmpl),
                      whole, out));
  return 0;
}

int rw_vec_clone(N_Vector tmpl, N_Vector *out) { return rw_vec_clone_as(tmpl, 0, out); }

void rw_vec_destroy(N_Vector *v)
{
  if (!v || !*v) return;
  N_Vector vv = *v;
  if (rw_dvec_is(vv)) {
    N_VDestroy(vv);
    *v = NULL;
    return;
  }
  double *data = NV_DATA_P(vv);
  N_VDestroy(*v);
  rw_free(&data);
  *v = NULL;
}

int rw_vec_view_create(N_Vector tmpl, N_Vector *out)
{
  RW_CHECK(tmpl && out, RW_ERR_ARG, "rw_vec_view_create: NULL argument");
  if (rw_dvec_is(tmpl)) {
    RW_CALL(rw_dvec_make(rw_vec_device(tmpl), rw_dvec_comm(tmpl), tmpl->sunctx,
                         rw_dvec_local_length(tmpl), rw_dvec_global_length(tmpl), 0, out));
    rw_dvec_set_data(*out, rw_dvec_data(tmpl));
    return 0;
  }
  *out = N_VMake_Parallel(NV_COMM_P(tmpl), NV_LOCLENGTH_P(tmpl), NV_GLOBLENGTH_P(tmpl),
                          NV_DATA_P(tmpl), tmpl->sunctx);
  RW_CHECK(*out, RW_ERR_SUNDIALS, "N_VMake_Parallel failed for a view");
  if (N_VEnableFusedOps_Parallel(*out, SUNTRUE) != 0) {
    N_VDestroy(*out);
    *out = NULL;
    return RW_ERROR(RW_ERR_SUNDIALS, "N_VEnableFusedOps_Parallel failed");
  }
  rw_vec_set_ops(*out);
  return 0;
}

void rw_vec_view_point(N_Vector view, double *data)
{
  if (rw_dvec_is(view))
    rw_dvec_set_data(view, data);
  else
    NV_DATA_P(view) = data;
}

void rw_vec_view_destroy(N_Vector *view)
{
  if (!view || !*view) return;
  N_VDestroy(*view);
  *view = NULL;
}

static int rw_vec_clone_array_as(N_Vector tmpl, int n, int whole, N_Vector **out)
{
  int ierr = 0;
  N_Vector *vs = NULL;
  *out = NULL;
  void **data = NULL;
  if (n <= 0) return 0;
  RW_CALL(rw_calloc((size_t)n, sizeof *vs, "vector array", &vs));
  if (whole && tmpl && !rw_dvec_is(tmpl)) { /* slots: their data as a group (huge pages) */
    const sunindextype ln = NV_LOCLENGTH_P(tmpl);
    RW_TRY(rw_calloc((size_t)n, sizeof *data, "slot data", &data));
    RW_TRY(rw_calloc_whole_many((size_t)n, (size_t)ln + 1, sizeof(double), "checkpoint slot vector",
                                data));
    for (int i = 0; i < n; i++) {
      double *d = data[i];
      data[i] = NULL; /* the vector's from here on */
      RW_TRY(rw_vec_adopt(NV_COMM_P(tmpl), tmpl->sunctx, ln, NV_GLOBLENGTH_P(tmpl), d, &vs[i]));
    }
    rw_free(&data);
    *out = vs;
    return 0;
  }
  for (int i = 0; i < n; i++)
    RW_TRY(rw_vec_clone_as(tmpl, whole, &vs[i]));
  *out = vs;
  return 0;
cleanup:
  for (int i = 0; data && i < n; i++)
    rw_free(&data[i]);
  rw_free(&data);
  rw_vec_destroy_array(&vs, n);
  return ierr;
}

int rw_vec_clone_array(N_Vector tmpl, int n, N_Vector **out)
{
  return rw_vec_clone_array_as(tmpl, n, 0, out);
}

int rw_vec_clone_array_slots(N_Vector tmpl, int n, N_Vector **out)
{
  return rw_vec_clone_array_as(tmpl, n, 1, out);
}

void rw_vec_destroy_array(N_Vector **vs, int n)
{
  if (!vs || !*vs) return;
  for (int i = 0; i < n; i++)
    rw_vec_destroy(&(*vs)[i]);
  rw_free(vs);
}

/* Device vectors (rw_device.h) answer with their device pointer and lengths. */
double *rw_vec_data(N_Vector v) { return rw_dvec_is(v) ? rw_dvec_data(v) : NV_DATA_P(v); }
sunindextype rw_vec_local_length(N_Vector v)
{
  return rw_dvec_is(v) ? rw_dvec_local_length(v) : NV_LOCLENGTH_P(v);
}
sunindextype rw_vec_global_length(N_Vector v)
{
  return rw_dvec_is(v) ? rw_dvec_global_length(v) : NV_GLOBLENGTH_P(v);
}
MPI_Comm rw_vec_comm(N_Vector v) { return rw_dvec_is(v) ? rw_dvec_comm(v) : NV_COMM_P(v); }
size_t rw_vec_bytes(N_Vector v) { return (size_t)rw_vec_local_length(v) * sizeof(double); }

void rw_vec_copy(N_Vector x, N_Vector y)
{
  if (rw_dvec_is(y)) {
    rw_dvec_copy(x, y);
    return;
  }
  if (NV_LOCLENGTH_P(x) > 0)
    memcpy(NV_DATA_P(y), NV_DATA_P(x), (size_t)NV_LOCLENGTH_P(x) * sizeof(double));
}
