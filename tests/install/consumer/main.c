/* Uses the installed library: one Van der Pol adjoint solve; prints dJ/dmu. */
#include <rewind/rw_adjoint.h>
#include <rewind/rw_ode_problems.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  rw_context ctx;
  rw_problem prob;
  rw_stepper st;
  N_Vector y;
  rw_ode_config cfg = {.model = "vanderpol", .ensemble = 1, .y0 = {2, 0}, .terminal_weight = 1};
  double J, g[1];
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  int ierr = rw_context_create(MPI_COMM_WORLD, &ctx);
  if (!ierr) ierr = rw_ode_problem_create(ctx, &cfg, &prob);
  if (!ierr) ierr = rw_stepper_create_erk(prob, rw_tableau_find("rk4"), &st);
  if (!ierr) ierr = rw_problem_new_state(prob, &y);
  if (!ierr) ierr = rw_ode_initial_state(prob, y);
  if (!ierr) ierr = rw_adjoint_solve(prob, st, &opt, y, &J, g, NULL, NULL);
  if (ierr)
    fprintf(stderr, "consumer: %s\n", rw_error_message());
  else
    printf("consumer: J = %.12g, dJ/dmu = %.12g\n", J, g[0]);
  MPI_Finalize();
  return ierr ? 1 : 0;
}
