/* Gradients agree across rank counts. Run under mpiexec with 1, 2 and 4 ranks: the ensemble
 * is split over all ranks, and rank 0 also solves the whole ensemble alone on
 * MPI_COMM_SELF. Each member's adjoint is computed by the same operations whatever the
 * distribution, so dJ/dy0 must match bit for bit; dJ/dp and J are sums over members whose
 * grouping follows the distribution (per-rank partial sums, then MPI_Allreduce), so they
 * may differ by rounding only: 1e-12 relative is asserted. Exit 0 on success. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_ode_problems.h"
#include "rw_mpi_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void solve(MPI_Comm comm, const char *model, const char *method, double *J, double *g,
                  double **dy0, long *n)
{
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  N_Vector y, gy;
  CHECK(rw_context_create(comm, &ctx));
  rw_ode_config cfg = {.model = model,
                       .ensemble = 7,
                       .y0 = {1.5, 0.5},
                       .spread = 0.1,
                       .target = {0.3, 0.2},
                       .terminal_weight = 1.0,
                       .running_weight = 0.2};
  CHECK(rw_ode_problem_create(ctx, &cfg, &prob));
  CHECK(rw_stepper_create_erk(prob, rw_tableau_find(method), &st));
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_problem_new_state(prob, &gy));
  CHECK(rw_ode_initial_state(prob, y));
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.tf = 3.0;
  opt.dt = 0.01;
  CHECK(rw_adjoint_solve(prob, st, &opt, y, J, g, gy, NULL));
  /* Gather dJ/dy0 on rank 0 of comm. */
  int size, rank;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int loc = (int)rw_vec_local_length(gy), *counts = calloc((size_t)size, sizeof(int)),
      *displ = calloc((size_t)size, sizeof(int));
  MPI_Gather(&loc, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
  *n = rw_vec_global_length(gy);
  *dy0 = calloc((size_t)*n, sizeof(double));
  for (int r = 1; r < size; r++)
    displ[r] = displ[r - 1] + counts[r - 1];
  MPI_Gatherv(rw_vec_data(gy), loc, MPI_DOUBLE, *dy0, counts, displ, MPI_DOUBLE, 0, comm);
  free(counts);
  free(displ);
  rw_vec_destroy(&y);
  rw_vec_destroy(&gy);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size, fails = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *models[] = {"vanderpol", "lotkavolterra"};
  for (int m = 0; m < 2; m++) {
    double J, g[4] = {0}, Js = 0, gs[4] = {0}, *dy = NULL, *dys = NULL;
    long n, ns = 0;
    solve(MPI_COMM_WORLD, models[m], "rk4", &J, g, &dy, &n);
    if (rank == 0) {
      solve(MPI_COMM_SELF, models[m], "rk4", &Js, gs, &dys, &ns);
      double worst = fabs(J - Js) / fabs(Js);
      for (int k = 0; k < (m ? 4 : 1); k++)
        worst = fmax(worst, fabs(g[k] - gs[k]) / fabs(gs[k]));
      int same = ns == n && memcmp(dy, dys, (size_t)n * sizeof(double)) == 0;
      printf("%s on %d ranks: J = %.17g (1 rank: %.17g), worst relative difference in J and "
             "dJ/dp %.3e, dJ/dy0 %s\n",
             models[m], size, J, Js, worst, same ? "bitwise equal" : "DIFFERENT");
      if (!(worst <= 1e-12) || !same) fails++;
      free(dys);
    }
    free(dy);
  }
  MPI_Bcast(&fails, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (size > 1) { /* fewer members than ranks: refused on every rank, nothing made */
    rw_context ctx;
    CHECK(rw_context_create(MPI_COMM_WORLD, &ctx));
    rw_ode_config cfg = {.model = "vanderpol", .ensemble = size - 1, .y0 = {2.0, 0.0}};
    rw_problem prob = NULL;
    const int ierr = rw_ode_problem_create(ctx, &cfg, &prob);
    int ok = ierr == RW_ERR_ARG && prob == NULL && strstr(rw_error_message(), "at least one"),
        all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0)
      printf("%s an ensemble of %d members on %d ranks refused on every rank: %s\n",
             all ? "ok  " : "FAIL", size - 1, size, ierr ? rw_error_message() : "(accepted)");
    if (!all) fails++;
    rw_problem_destroy(&prob);
    rw_context_destroy(&ctx);
  }
  MPI_Finalize();
  return fails ? 1 : 0;
}
