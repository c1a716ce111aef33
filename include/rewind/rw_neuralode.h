/* Neural ODEs: dh/dt = f(h, t; theta) - c h with f a multilayer perceptron, on a batch of B
 * trajectories of dimension D held in one distributed state vector (trajectory-major: this
 * rank's trajectories, each D values), split over MPI ranks by trajectory.
 *
 * The MLP has L affine layers of widths d_0 -> d_1 -> ... -> d_L, with d_0 = D (+1 when the
 * time is appended as the last input column) and d_L = D:
 *   x_0 = (h, [t]),  z_{l+1} = W_l x_l + b_l,  x_{l+1} = act(z_{l+1}) (l < L-1),  f = z_L,
 * W_l a d_{l+1} x d_l matrix. The whole batch goes through BLAS at once (cblas_dgemm over
 * this rank's B_r rows), forward and backward; the VJPs in h and theta share one forward
 * recomputation, and its activations are reused when the same state was evaluated recently
 * (the stages an adjoint step recomputes).
 *
 * theta is the problem's parameter vector (rw_problem_params, unnamed, P values) in the
 * order of the shared reference format: W_0 (row-major, out x in), b_0, W_1, b_1, ...,
 * W_{L-1}, b_{L-1}. dJ/dtheta accumulates locally and is summed over ranks once per backward
 * sweep by the adjoint driver.
 *
 * Objective: L = 1/(B D) sum_i sum_d (h_i(T)_d - target_i_d)^2 (the mean squared error at
 * T), with targets set per trajectory (rw_neuralode_targets). */
#ifndef REWIND_RW_NEURALODE_H
#define REWIND_RW_NEURALODE_H

#include "rw_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RW_MLP_MAX_LAYERS 16

/* Activation of the hidden layers; the codes are those of the weights file format (tanh = 1
 * there; the others are Rewind's extension of it). */
typedef enum {
  RW_ACT_IDENTITY = 0,
  RW_ACT_TANH = 1,
  RW_ACT_SOFTPLUS = 2, /* log(1 + e^z) */
  RW_ACT_RELU = 3
} rw_activation;

typedef struct {
  int nlayers;                       /* L, 1 .. RW_MLP_MAX_LAYERS */
  int widths[RW_MLP_MAX_LAYERS + 1]; /* d_0 .. d_L */
  rw_activation activation;          /* of the hidden layers */
  int time_input;                    /* 1: t is the last input column (d_0 = D + 1) */
  double damping;                    /* c >= 0 in dh/dt = f - c h */
} rw_mlp_arch;

/* Names "identity, tanh, softplus, relu"; parse one (-1 when unknown). */
const char *rw_activation_names(void);
int rw_activation_parse(const char *name);
const char *rw_activation_name(rw_activation a);

/* The state dimension D of an architecture (d_L), and P, its number of parameters. */
int rw_mlp_dim(const rw_mlp_arch *a);
long rw_mlp_nparams(const rw_mlp_arch *a);
/* Checks an architecture; the message names what is wrong. `what` names its origin (a file,
 * a deck key) in the message. */
int rw_mlp_check(const rw_mlp_arch *a, const char *what);
/* Glorot-uniform weights (U(-s, s), s = sqrt(6 / (d_in + d_out))) and zero biases from a
 * seed: the same theta on every rank and for every rank count. */
void rw_mlp_init_theta(const rw_mlp_arch *a, unsigned long seed, double *theta);

/* Creates the problem for a batch of B trajectories (B >= 1). Targets start at 0; theta at
 * 0. Collective. */
int rw_neuralode_create(rw_context ctx, const rw_mlp_arch *arch, long batch, rw_problem *out);
const rw_mlp_arch *rw_neuralode_arch(rw_problem prob);
/* This rank's trajectories: [*first, *first + *count) of the batch. */
void rw_neuralode_local_batch(rw_problem prob, long *first, long *count);
long rw_neuralode_batch(rw_problem prob);
/* This rank's targets (count x D, trajectory-major), writable. */
double *rw_neuralode_targets(rw_problem prob);

/* y = tanh(x) for n values, vectorised (AVX-512 or AVX2, with FMA, where the CPU has them);
 * absolute error below 4.5e-16 (4 units in the last place of 1), relative error below 1e-15. x and
 * y may be the same array. */
void rw_tanh_v(const double *x, double *y, long n);

#ifdef __cplusplus
}
#endif
#endif
