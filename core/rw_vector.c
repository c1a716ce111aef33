/* N_Vector factory over the counting allocator. */
#include "rewind/rw_vector.h"

#include <string.h>

static int rw_vec_make(MPI_Comm comm, SUNContext sunctx, sunindextype local_n,
                       sunindextype global_n, N_Vector *out)
{
  double *data = NULL;
  *out = NULL;
  /* One extra element keeps the pointer non-NULL for ranks that own no entries. */
  RW_CALL(rw_calloc((size_t)local_n + 1, sizeof(double), "state vector", &data));
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
  *out = v;
  return 0;
}

int rw_vec_create(rw_context ctx, sunindextype local_n, N_Vector *out)
{
  RW_CHECK(local_n >= 0, RW_ERR_ARG, "rw_vec_create: negative local length %lld",
           (long long)local_n);
  long long loc = (long long)local_n, glob = 0;
  RW_CALL_MPI(MPI_Allreduce(&loc, &glob, 1, MPI_LONG_LONG, MPI_SUM, rw_context_comm(ctx)));
  RW_CALL(
      rw_vec_make(rw_context_comm(ctx), rw_context_sunctx(ctx), local_n, (sunindextype)glob, out));
  return 0;
}

int rw_vec_clone(N_Vector tmpl, N_Vector *out)
{
  RW_CHECK(tmpl, RW_ERR_ARG, "rw_vec_clone: template is NULL");
  RW_CALL(
      rw_vec_make(NV_COMM_P(tmpl), tmpl->sunctx, NV_LOCLENGTH_P(tmpl), NV_GLOBLENGTH_P(tmpl), out));
  return 0;
}

void rw_vec_destroy(N_Vector *v)
{
  if (!v || !*v) return;
  N_Vector vv = *v;
  double *data = NV_DATA_P(vv);
  N_VDestroy(*v);
  rw_free(&data);
  *v = NULL;
}

int rw_vec_view_create(N_Vector tmpl, N_Vector *out)
{
  RW_CHECK(tmpl && out, RW_ERR_ARG, "rw_vec_view_create: NULL argument");
  *out = N_VMake_Parallel(NV_COMM_P(tmpl), NV_LOCLENGTH_P(tmpl), NV_GLOBLENGTH_P(tmpl),
                          NV_DATA_P(tmpl), tmpl->sunctx);
  RW_CHECK(*out, RW_ERR_SUNDIALS, "N_VMake_Parallel failed for a view");
  if (N_VEnableFusedOps_Parallel(*out, SUNTRUE) != 0) {
    N_VDestroy(*out);
    *out = NULL;
    return RW_ERROR(RW_ERR_SUNDIALS, "N_VEnableFusedOps_Parallel failed");
  }
  return 0;
}

void rw_vec_view_point(N_Vector view, double *data) { NV_DATA_P(view) = data; }

void rw_vec_view_destroy(N_Vector *view)
{
  if (!view || !*view) return;
  N_VDestroy(*view);
  *view = NULL;
}

int rw_vec_clone_array(N_Vector tmpl, int n, N_Vector **out)
{
  int ierr = 0;
  N_Vector *vs = NULL;
  *out = NULL;
  if (n <= 0) return 0;
  RW_CALL(rw_calloc((size_t)n, sizeof *vs, "vector array", &vs));
  for (int i = 0; i < n; i++)
    RW_TRY(rw_vec_clone(tmpl, &vs[i]));
  *out = vs;
  return 0;
cleanup:
  rw_vec_destroy_array(&vs, n);
  return ierr;
}

void rw_vec_destroy_array(N_Vector **vs, int n)
{
  if (!vs || !*vs) return;
  for (int i = 0; i < n; i++)
    rw_vec_destroy(&(*vs)[i]);
  rw_free(vs);
}

double *rw_vec_data(N_Vector v) { return NV_DATA_P(v); }
sunindextype rw_vec_local_length(N_Vector v) { return NV_LOCLENGTH_P(v); }
sunindextype rw_vec_global_length(N_Vector v) { return NV_GLOBLENGTH_P(v); }
size_t rw_vec_bytes(N_Vector v) { return (size_t)NV_LOCLENGTH_P(v) * sizeof(double); }

void rw_vec_copy(N_Vector x, N_Vector y)
{
  if (NV_LOCLENGTH_P(x) > 0)
    memcpy(NV_DATA_P(y), NV_DATA_P(x), (size_t)NV_LOCLENGTH_P(x) * sizeof(double));
}
