/* Private: the stepper object layout shared by stepper implementations. */
#ifndef REWIND_RW_STEPPER_IMPL_H
#define REWIND_RW_STEPPER_IMPL_H

#include "rewind/rw_stepper.h"

typedef struct {
  int (*step)(rw_stepper st, double t, double h, N_Vector y_in, N_Vector y_out, N_Vector *stages,
              double *q);
  int (*adjoint_step)(rw_stepper st, double t, double h, N_Vector y_n, N_Vector *stages,
                      N_Vector lambda, double *pbar);
  void (*destroy)(rw_stepper st);
  /* Rebuilds y_n from y_{n+1} for the step [t, t + h] (NULL: the stepper cannot); see
   * rw_stepper_reverse_step. y_prev never aliases y_next. */
  int (*reverse)(rw_stepper st, double t, double h, N_Vector y_next, N_Vector y_prev);
  rw_reverse_kind reverse_kind;
} rw_stepper_ops;

struct rw_stepper_s {
  char name[64];
  rw_problem prob;
  rw_stepper_ops ops;
  int nstage_vectors;
  void *content;
  /* The global index of the step the next call is about (rw_stepper_set_step_index): valid
   * when `indexed`; every step, trial step, adjoint step and reverse step clears it. */
  int indexed;
  long step_index;
  /* Stage vectors lent for the next adjoint step's recomputation (rw_stepper_lend_stage_vectors;
   * NULL: none); every adjoint step clears it. */
  N_Vector *lent;
};

/* The step index the driver set for the current call, or -1 when it set none. */
static inline long rw_stepper_current_index(rw_stepper st)
{
  return st->indexed ? st->step_index : -1;
}

#endif
