/* SDE paths and pathwise gradients agree across rank counts (issue 12). Run under mpiexec with
 * 1, 2 and 4 ranks: 13 paths (an uneven split) of OU and GBM with em and sheun, split over all
 * ranks, against rank 0 solving all of them alone on MPI_COMM_SELF. The noise of a path is keyed
 * by its global index, not by the rank that owns it, and each path's step and adjoint step are
 * the same operations whatever the distribution, so y(T) and dJ/dy0 must match BIT FOR BIT. J and
 * dJ/dp are sums over paths whose grouping follows the distribution (per-rank partial sums, then
 * MPI_Allreduce), so they may differ by rounding only: 1e-13 relative is asserted. On the
 * distributed run, binomial checkpointing with 3 slots must equal store mode bit for bit.
 * Exit 0 on success. */
#include "rewind/rw_adjoint.h"
#include "rewind/rw_sde.h"
#include "rewind/rw_sde_problems.h"
#include "rw_mpi_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPATHS 13

/* Gathers the distributed vector v onto rank 0 of comm (out: NPATHS doubles on rank 0). */
static void gather(MPI_Comm comm, N_Vector v, double *out)
{
  int size, loc = (int)rw_vec_local_length(v);
  MPI_Comm_size(comm, &size);
  int *counts = calloc((size_t)size, sizeof(int)), *displ = calloc((size_t)size, sizeof(int));
  MPI_Gather(&loc, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
  for (int r = 1; r < size; r++)
    displ[r] = displ[r - 1] + counts[r - 1];
  MPI_Gatherv(rw_vec_data(v), loc, MPI_DOUBLE, out, counts, displ, MPI_DOUBLE, 0, comm);
  free(counts);
  free(displ);
}

typedef struct {
  double J, dJdp[2], yT[NPATHS], dy0[NPATHS];
} result;

static void solve(MPI_Comm comm, const char *model, const char *method, rw_adjoint_mode mode,
                  result *res)
{
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  N_Vector y, gy;
  CHECK(rw_context_create(comm, &ctx));
  rw_sde_config cfg = {.model = model,
                       .paths = NPATHS,
                       .y0 = 0.9,
                       .spread = 0.05,
                       .target = 0.4,
                       .terminal_weight = 1.0,
                       .running_weight = 0.3};
  CHECK(rw_sde_problem_create(ctx, &cfg, &prob));
  CHECK(rw_problem_set_noise(prob, 4242, 1.0, 1));
  CHECK(rw_stepper_create_sde(prob, method, &st));
  CHECK(rw_problem_new_state(prob, &y));
  CHECK(rw_problem_new_state(prob, &gy));
  CHECK(rw_sde_initial_state(prob, y));
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.tf = 1.0;
  opt.dt = 0.02;
  opt.mode = mode;
  opt.ram_slots = 3;
  CHECK(rw_adjoint_solve(prob, st, &opt, y, &res->J, res->dJdp, gy, NULL));
  gather(comm, y, res->yT);
  gather(comm, gy, res->dy0);
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
  const char *models[] = {"ou", "gbm"}, *methods[] = {"em", "sheun"};
  for (int m = 0; m < 2; m++)
    for (int k = 0; k < 2; k++) {
      result d, c, s;
      memset(&d, 0, sizeof d);
      memset(&c, 0, sizeof c);
      memset(&s, 0, sizeof s);
      solve(MPI_COMM_WORLD, models[m], methods[k], RW_ADJOINT_STORE, &d);
      solve(MPI_COMM_WORLD, models[m], methods[k], RW_ADJOINT_CHECKPOINT, &c);
      if (rank != 0) continue;
      solve(MPI_COMM_SELF, models[m], methods[k], RW_ADJOINT_STORE, &s);
      double worst = rw_test_rel(d.J, s.J);
      for (int j = 0; j < 2; j++)
        worst = fmax(worst, rw_test_rel(d.dJdp[j], s.dJdp[j]));
      int path = memcmp(d.yT, s.yT, sizeof d.yT) == 0;
      int adj = memcmp(d.dy0, s.dy0, sizeof d.dy0) == 0;
      int ckpt = memcmp(&c, &d, sizeof c) == 0;
      printf("%s/%s on %d ranks: J = %.17g (1 rank: %.17g), worst relative difference in J and "
             "dJ/dp %.3e; y(T) %s, dJ/dy0 %s; checkpointed %s store mode\n",
             models[m], methods[k], size, d.J, s.J, worst, path ? "bitwise equal" : "DIFFERENT",
             adj ? "bitwise equal" : "DIFFERENT", ckpt ? "==" : "!=");
      if (!(worst <= 1e-13) || !path || !adj || !ckpt) fails++;
    }
  MPI_Bcast(&fails, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return fails ? 1 : 0;
}
