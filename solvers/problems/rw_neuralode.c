/* Neural-ODE problem: an MLP vector field on a batch of trajectories, through BLAS (see
 * rw_neuralode.h). Every product is one matrix product over this rank's trajectories
 * (cblas_dgemm, or node_gemm's loops for the skinny ones); nothing loops over trajectories or
 * parameters one at a time except the bias sums and the element-wise activations. */
#include "rewind/rw_neuralode.h"

#include "../../core/rw_device_impl.h"
#include "../rw_dev_bodies.h"
#include "../rw_smallgemm.h"
#include "rewind/rw_blas.h"
#include "rewind/rw_device.h"
#include "rewind/rw_kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- vectorised tanh ----------------------------------------------------------------------
 * The loop over rw_dk_tanh (rw_kernels.h, the formula a device run shares), compiled for
 * AVX2 + FMA and AVX-512 (the polynomial on fused multiply-adds: the GPU's bits) and for the
 * baseline (each product rounded: may differ in the last bit). The compiler vectorises it
 * (with -fno-trapping-math). */
static inline __attribute__((always_inline)) void
rw_tanh_body(const double *restrict x, double *restrict y, long n, const int fused)
{
  for (long i = 0; i < n; i++)
    y[i] = rw_dk_tanh(x[i], fused);
}

/* v[i,:] = tanh(v[i,:] + b), rows of n values: a layer's bias and activation in one pass */
static inline __attribute__((always_inline)) void
rw_tanh_bias_body(const double *restrict b, double *restrict v, long rows, int n, const int fused)
{
  for (long i = 0; i < rows; i++) {
    double *restrict r = v + i * n;
    for (int j = 0; j < n; j++)
      r[j] = rw_dk_tanh(r[j] + b[j], fused);
  }
}

__attribute__((target("avx2,fma"))) static void rw_tanh_avx2(const double *restrict x,
                                                             double *restrict y, long n)
{
  rw_tanh_body(x, y, n, 1);
}

__attribute__((target("avx512f,avx512dq,fma"))) static void
rw_tanh_avx512(const double *restrict x, double *restrict y, long n)
{
  rw_tanh_body(x, y, n, 1);
}

static void rw_tanh_generic(const double *restrict x, double *restrict y, long n)
{
  rw_tanh_body(x, y, n, 0);
}

__attribute__((target("avx2,fma"))) static void
rw_tanh_bias_avx2(const double *restrict b, double *restrict v, long rows, int n)
{
  rw_tanh_bias_body(b, v, rows, n, 1);
}

__attribute__((target("avx512f,avx512dq,fma"))) static void
rw_tanh_bias_avx512(const double *restrict b, double *restrict v, long rows, int n)
{
  rw_tanh_bias_body(b, v, rows, n, 1);
}

static void rw_tanh_bias_generic(const double *restrict b, double *restrict v, long rows, int n)
{
  rw_tanh_bias_body(b, v, rows, n, 0);
}

/* 2: AVX-512 (F, DQ) + FMA, 1: AVX2 + FMA, 0: generic (rw_cpu_isa's detection) */
static int rw_tanh_isa(void)
{
  static int isa = -1;
  if (isa < 0) {
    const unsigned cpu = rw_cpu_isa();
    isa = cpu & RW_ISA_AVX512 ? 2 : cpu & RW_ISA_AVX2 ? 1 : 0;
  }
  return isa;
}

void rw_tanh_v(const double *x, double *y, long n)
{
  const int isa = rw_tanh_isa();
  /* in place is allowed: the body reads x[i] before it writes y[i] and nothing else */
  if (isa == 2)
    rw_tanh_avx512(x, y, n);
  else if (isa == 1)
    rw_tanh_avx2(x, y, n);
  else
    rw_tanh_generic(x, y, n);
}

/* v[i,:] = tanh(v[i,:] + b) for rows rows of n values (the same tanh as rw_tanh_v). */
static void rw_tanh_bias(const double *b, double *v, long rows, int n)
{
  const int isa = rw_tanh_isa();
  if (isa == 2)
    rw_tanh_bias_avx512(b, v, rows, n);
  else if (isa == 1)
    rw_tanh_bias_avx2(b, v, rows, n);
  else
    rw_tanh_bias_generic(b, v, rows, n);
}

/* ---- architecture -------------------------------------------------------------------- */
static const char *const act_names[] = {"identity", "tanh", "softplus", "relu"};

const char *rw_activation_names(void) { return "identity, tanh, softplus, relu"; }
int rw_activation_parse(const char *name)
{
  for (int k = 0; k < 4; k++)
    if (!strcmp(name, act_names[k])) return k;
  return -1;
}
const char *rw_activation_name(rw_activation a)
{
  return (a >= 0 && a <= RW_ACT_RELU) ? act_names[a] : "unknown";
}

int rw_mlp_dim(const rw_mlp_arch *a) { return a->widths[a->nlayers]; }

long rw_mlp_nparams(const rw_mlp_arch *a)
{
  long P = 0;
  for (int l = 0; l < a->nlayers; l++)
    P += (long)a->widths[l + 1] * (a->widths[l] + 1);
  return P;
}

int rw_mlp_check(const rw_mlp_arch *a, const char *what)
{
  RW_CHECK(a->nlayers >= 1 && a->nlayers <= RW_MLP_MAX_LAYERS, RW_ERR_ARG,
           "%s: %d layers; allowed 1 to %d", what, a->nlayers, RW_MLP_MAX_LAYERS);
  for (int l = 0; l <= a->nlayers; l++)
    RW_CHECK(a->widths[l] >= 1 && a->widths[l] <= 1000000, RW_ERR_ARG,
             "%s: width d_%d = %d; allowed 1 to 1000000", what, l, a->widths[l]);
  int D = a->widths[a->nlayers];
  RW_CHECK(a->widths[0] == D + (a->time_input ? 1 : 0), RW_ERR_ARG,
           "%s: the input width d_0 = %d must be the state dimension d_L = %d%s", what,
           a->widths[0], D, a->time_input ? " plus 1 for the time input" : "");
  RW_CHECK(a->activation >= RW_ACT_IDENTITY && a->activation <= RW_ACT_RELU, RW_ERR_ARG,
           "%s: activation code %d; allowed 0 (identity), 1 (tanh), 2 (softplus), 3 (relu)", what,
           (int)a->activation);
  RW_CHECK(isfinite(a->damping) && a->damping >= 0.0, RW_ERR_ARG,
           "%s: damping c = %g; must be finite and >= 0", what, a->damping);
  RW_CHECK(rw_mlp_nparams(a) <= (1L << 31) - 1, RW_ERR_ARG, "%s: %ld parameters; at most 2^31-1",
           what, rw_mlp_nparams(a));
  return 0;
}

/* splitmix64 (Steele, Lea & Flood 2014): a stateless stream from a seed, the same on every
 * rank. */
static uint64_t rw_splitmix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void rw_mlp_init_theta(const rw_mlp_arch *a, unsigned long seed, double *theta)
{
  uint64_t s = seed;
  long o = 0;
  for (int l = 0; l < a->nlayers; l++) {
    long nw = (long)a->widths[l + 1] * a->widths[l];
    double lim = sqrt(6.0 / (a->widths[l] + a->widths[l + 1]));
    for (long k = 0; k < nw; k++) {
      double u = (double)(rw_splitmix(&s) >> 11) * 0x1.0p-53; /* [0, 1) */
      theta[o++] = (2.0 * u - 1.0) * lim;
    }
    for (int k = 0; k < a->widths[l + 1]; k++)
      theta[o++] = 0.0;
  }
}

/* ---- the problem ------------------------------------------------------------------------ */
#define RW_NODE_CACHE 8 /* recent forward passes kept (>= the stages of any tableau) */

typedef struct {
  double *y;   /* the state it was evaluated at (nloc * D) */
  double *act; /* hidden activations x_1 .. x_{L-1}, layer after layer (nloc * nh) */
  double t;
  int valid;
  long used; /* when a VJP or JVP last used it (o->stamp), 0 when none has since it was made */
} rw_node_entry;

typedef struct {
  rw_mlp_arch a;
  int D, L, maxw;
  long B, first, nloc, P;
  long offw[RW_MLP_MAX_LAYERS], offb[RW_MLP_MAX_LAYERS];
  long offh[RW_MLP_MAX_LAYERS + 1]; /* offset of x_l in an entry's act (units of nloc) */
  long nh;                          /* sum of the hidden widths */
  MPI_Comm comm;
  double *targets;
  double *x0;   /* the input with the time column (nloc * d_0), time_input only */
  double *g[2]; /* back-propagated gradients (nloc * maxw each) */
  double *dx;   /* tangents (nloc * maxw), for jvp */
  double *dz;
  double *tmp;        /* small transposed operands of node_gemm and node_vjp (2 * 4 * maxw) */
  double *theta_seen; /* the theta the cached entries were computed with */
  double *wt;         /* W_l^T of the layers node_sg multiplies (P; CPU, with LIBXSMM only) */
  rw_node_entry cache[RW_NODE_CACHE];
  int next;
  int last;     /* the entry written last */
  long rhs_run; /* right-hand sides since the last VJP or JVP */
  long stamp;   /* VJPs and JVPs so far */
  /* on a device (rw_device.h): the arrays above except targets, theta_seen and tmp are device
   * arrays, the products cuBLAS's (rw_device_gemm) and the element steps device bodies */
  rw_device dev;
  double *theta_d; /* theta on the device (P) */
  double *dp_d;    /* one VJP's dJ/dtheta, or a theta tangent, on the device (P) */
  double *dp_h;    /* dp_d copied back (P): pd.host, free between the flushes that use it */
  rw_pdefer pd;    /* the held dJ/dtheta terms of the deferred pbar (P; rw_problem_params_defer) */
  double *tgt_d;   /* the targets on the device */
  double *diff_d;  /* the misfit (nloc * D) */
} rw_node;

/* Bytes of the node's per-rank arrays (at least one entry each). */
static size_t node_rows(const rw_node *o, long width)
{
  return (size_t)((o->nloc > 0 ? o->nloc : 1) * (width > 0 ? width : 1)) * sizeof(double);
}

/* A work array: device memory on a device run, host memory otherwise. */
static int node_arr_alloc(rw_node *o, size_t bytes, const char *what, double **p)
{
  if (o->dev) return rw_device_alloc(o->dev, bytes, p);
  return rw_calloc(bytes / sizeof(double), sizeof(double), what, p);
}

static void node_arr_free(rw_node *o, double **p, size_t bytes)
{
  if (o->dev)
    rw_device_free(o->dev, p, bytes);
  else
    rw_free(p);
}

/* One element step on the device (rw_body_node). */
static int node_body(rw_node *o, int mode, long items, long n, int m, int m2, double a,
                     const double *x, const double *y, double *z)
{
  rw_body_node b = {mode, (int)o->a.activation, n, m, m2, a, x, y, z};
  return rw_device_run(o->dev, RW_BODY_NODE, &b, sizeof b, items, rw_body_host);
}

static void node_destroy(void *c)
{
  rw_node *o = c;
  rw_free(&o->targets);
  node_arr_free(o, &o->x0, node_rows(o, o->a.widths[0]));
  node_arr_free(o, &o->g[0], node_rows(o, o->maxw));
  node_arr_free(o, &o->g[1], node_rows(o, o->maxw));
  node_arr_free(o, &o->dx, node_rows(o, o->maxw));
  node_arr_free(o, &o->dz, node_rows(o, o->maxw));
  rw_free(&o->tmp);
  rw_free(&o->theta_seen);
  rw_free(&o->wt);
  for (int k = 0; k < RW_NODE_CACHE; k++) {
    node_arr_free(o, &o->cache[k].y, node_rows(o, o->D));
    node_arr_free(o, &o->cache[k].act, node_rows(o, o->nh));
  }
  if (o->dev) {
    rw_device_free(o->dev, &o->theta_d, (size_t)o->P * sizeof(double));
    rw_device_free(o->dev, &o->dp_d, (size_t)o->P * sizeof(double));
    rw_device_free(o->dev, &o->tgt_d, node_rows(o, o->D));
    rw_device_free(o->dev, &o->diff_d, node_rows(o, o->D));
  }
  rw_pdefer_free(&o->pd); /* dp_h is pd.host */
  rw_free(&o);
}

/* C = beta C + op(A) op(B) (row-major): cuBLAS on a device, node_gemm's kernels on the CPU. */
static void node_gemm(rw_node *o, int ta, int tb, int M, int N, int K, const double *A, int lda,
                      const double *B, int ldb, double beta, double *C, int ldc);
static int node_mm(rw_node *o, int ta, int tb, int M, int N, int K, const double *A, int lda,
                   const double *B, int ldb, double beta, double *C, int ldc)
{
  if (o->dev) return rw_device_gemm(o->dev, ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
  node_gemm(o, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
  return 0;
}

/* *x = x_0 for the state y at time t: y itself, or y with the time column appended. */
static int node_input(rw_node *o, double t, const double *y, const double **x)
{
  *x = y;
  if (!o->a.time_input) return 0;
  int D = o->D;
  *x = o->x0;
  if (o->dev)
    return node_body(o, RW_NODE_INPUT, o->nloc * (D + 1), o->nloc, D, 0, t, y, NULL, o->x0);
  for (long i = 0; i < o->nloc; i++) {
    memcpy(o->x0 + i * (D + 1), y + i * D, (size_t)D * sizeof(double));
    o->x0[i * (D + 1) + D] = t;
  }
  return 0;
}

/* out = act(out) in place, n values. */
static void node_activate(rw_activation a, double *v, long n)
{
  if (a == RW_ACT_TANH) {
    rw_tanh_v(v, v, n);
  } else if (a == RW_ACT_RELU) {
    for (long i = 0; i < n; i++)
      v[i] = v[i] > 0.0 ? v[i] : 0.0;
  } else if (a == RW_ACT_SOFTPLUS) {
    for (long i = 0; i < n; i++)
      v[i] = (v[i] > 0.0 ? v[i] : 0.0) + log1p(exp(-fabs(v[i])));
  }
}

/* g *= act'(z), from the activation x = act(z) alone (tanh' = 1 - x^2; relu' = [x > 0];
 * softplus' = sigmoid(z) = 1 - e^{-x}). */
RW_SIMD_CLONES static void node_activate_grad(rw_activation a, const double *restrict x,
                                              double *restrict g, long n)
{
  if (a == RW_ACT_TANH) {
    for (long i = 0; i < n; i++)
      g[i] *= 1.0 - x[i] * x[i];
  } else if (a == RW_ACT_RELU) {
    for (long i = 0; i < n; i++)
      g[i] = x[i] > 0.0 ? g[i] : 0.0;
  } else if (a == RW_ACT_SOFTPLUS) {
    for (long i = 0; i < n; i++)
      g[i] *= -expm1(-x[i]);
  }
}

/* The skinny products' kernels. Those the compiler vectorises are compiled for AVX-512, AVX2
 * and the baseline (RW_SIMD_CLONES); those written in GCC's vector types once per ISA at its
 * own width (rw_neuralode_simd.h). None reduces across vector lanes in a width-dependent order,
 * so every width gives the same bits (the dot products keep RW_NODE_LANES partial sums in a
 * fixed order, whatever the vector width). */
#define RW_NODE_LANES 8

/* C[i,:] += sum_k A[i,k] B[k,:], k < K, rows of B contiguous (ldb), i < M, j < N. */
RW_SIMD_CLONES static void node_k_rows(int M, int N, int K, const double *restrict A, int lda,
                                       const double *restrict B, int ldb, double *restrict C,
                                       int ldc)
{
  for (int i = 0; i < M; i++) {
    double *restrict c = C + (size_t)i * ldc;
    for (int k = 0; k < K; k++) {
      const double a = A[(size_t)i * lda + k], *restrict b = B + (size_t)k * ldb;
      for (int j = 0; j < N; j++)
        c[j] += a * b[j];
    }
  }
}

/* C[i,:] = b + sum_k A[i,k] B[k,:] (k ascending after the bias), rows of B contiguous. For
 * K <= 3 each output is formed in one pass (the same sums in the same order as the pass per
 * term below). */
RW_SIMD_CLONES static void node_k_affine_rows(int M, int N, int K, const double *restrict A,
                                              int lda, const double *restrict B, int ldb,
                                              const double *restrict b, double *restrict C, int ldc)
{
  const double *restrict B0 = B, *restrict B1 = B + ldb, *restrict B2 = B + 2 * (size_t)ldb;
  for (int i = 0; i < M; i++) {
    double *restrict c = C + (size_t)i * ldc;
    const double *restrict a = A + (size_t)i * lda;
    if (K == 1) {
      for (int j = 0; j < N; j++)
        c[j] = b[j] + a[0] * B0[j];
    } else if (K == 2) {
      for (int j = 0; j < N; j++)
        c[j] = (b[j] + a[0] * B0[j]) + a[1] * B1[j];
    } else if (K == 3) {
      for (int j = 0; j < N; j++)
        c[j] = ((b[j] + a[0] * B0[j]) + a[1] * B1[j]) + a[2] * B2[j];
    } else {
      for (int j = 0; j < N; j++)
        c[j] = b[j];
      for (int k = 0; k < K; k++) {
        const double *restrict r = B + (size_t)k * ldb;
        for (int j = 0; j < N; j++)
          c[j] += a[k] * r[j];
      }
    }
  }
}

/* C[i,:] = b, i < M: the bias rows a product then adds to, without a library call per row. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void
node_k_bias_rows(long M, int N, const double *restrict b, double *restrict C)
{
  for (long i = 0; i < M; i++)
    for (int j = 0; j < N; j++)
      C[i * N + j] = b[j];
}

/* G[i,:] = (sum_k A[i,k] B[k,:]) * act'(X[i,:]) for tanh (act' = 1 - x^2), k ascending from
 * the first product: back-propagation through a skinny layer and a tanh in one pass, the
 * same bits as node_k_rows into a zeroed G followed by node_activate_grad (up to the sign of
 * a zero). */
RW_SIMD_CLONES static void node_k_rows_tanh_grad(int M, int N, int K, const double *restrict A,
                                                 int lda, const double *restrict B, int ldb,
                                                 const double *restrict X, double *restrict G)
{
  for (int i = 0; i < M; i++) {
    double *restrict g = G + (size_t)i * N;
    const double *restrict x = X + (size_t)i * N;
    const double *restrict a = A + (size_t)i * lda, *restrict B1 = B + ldb;
    if (K == 2) { /* the output layer of a 2-D state: one pass */
      for (int j = 0; j < N; j++)
        g[j] = (a[0] * B[j] + a[1] * B1[j]) * (1.0 - x[j] * x[j]);
      continue;
    }
    for (int j = 0; j < N; j++)
      g[j] = a[0] * B[j];
    for (int k = 1; k < K; k++) {
      const double *restrict r = B + (size_t)k * ldb;
      for (int j = 0; j < N; j++)
        g[j] += a[k] * r[j];
    }
    for (int j = 0; j < N; j++)
      g[j] *= 1.0 - x[j] * x[j];
  }
}

/* The kernels in vectors, once per ISA at its width (rw_kernels.h), and the calls that pick
 * one. */
#if RW_ISA_X86
#define NODE_VW     8
#define NODE_ISA(n) n##_avx512
#define NODE_TARGET RW_ISA_AVX512_TARGET
#include "rw_neuralode_simd.h"
#define NODE_VW     4
#define NODE_ISA(n) n##_avx2
#define NODE_TARGET RW_ISA_AVX2_TARGET
#include "rw_neuralode_simd.h"
#endif
#define NODE_VW     2
#define NODE_ISA(n) n##_base
#define NODE_TARGET
#include "rw_neuralode_simd.h"

static void node_k_dots(int M, int N, int K, const double *restrict A, int lda,
                        const double *restrict Bt, int ldbt, double *restrict C, int ldc)
{
  RW_ISA_CALL(node_k_dots, (M, N, K, A, lda, Bt, ldbt, C, ldc));
}

static void node_k_outer(int M, int N, int K, const double *restrict A, int lda,
                         const double *restrict B, int ldb, double *restrict C, int ldc)
{
  RW_ISA_CALL(node_k_outer, (M, N, K, A, lda, B, ldb, C, ldc));
}

static void node_k_colsum(long n, int m, const double *restrict G, double *restrict db)
{
  RW_ISA_CALL(node_k_colsum, (n, m, G, db));
}

/* T[j,:] = sum_k B[k,j] A[k,:] (T is N x M, zeroed here), m < M, k < K, j < N: node_k_outer
 * with the operands' roles exchanged. */
static void node_k_outer_t(int M, int N, int K, const double *restrict A, int lda,
                           const double *restrict B, int ldb, double *restrict T)
{
  memset(T, 0, (size_t)N * M * sizeof(double));
  node_k_outer(N, M, K, B, ldb, A, lda, T, M);
}

/* dst[c rows + r] = src[r lds + c], r < rows, c < cols: a small operand transposed. */
static void node_transpose(int rows, int cols, const double *restrict src, int lds,
                           double *restrict dst)
{
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      dst[(size_t)c * rows + r] = src[(size_t)r * lds + c];
}

/* C[m,j] += T[j,m], m < M, j < N (C row-major with ldc, T N x M): a transposed sum added in. */
static void node_add_transposed(int M, int N, const double *restrict T, double *restrict C, int ldc)
{
  for (int m = 0; m < M; m++)
    for (int j = 0; j < N; j++)
      C[(size_t)m * ldc + j] += T[(size_t)j * M + m];
}

/* C (M x N, row-major) = beta C + op(A) op(B), beta 0 or 1, op(X) = X or X^T (ta, tb).
 * OpenBLAS is fast on the hidden layers' products and slow on the skinny ones of the input
 * and output layers (a dimension of D = 2 or 3: packing costs more than the arithmetic), so
 * those run in the kernels above, whose innermost index walks a long contiguous row
 * (vectorised), or as dot products with a lane-wise reduction. */
#define RW_NODE_SKINNY    4
#define RW_NODE_BACK_ROWS 32 /* rows per block of node_vjp's skinny layers */

/* 1 when a hidden layer's products (weights N x K) go to LIBXSMM (rw_smallgemm.h) on the CPU:
 * with one BLAS thread, and with more while the weight matrix has at most
 * RW_SGEMM_THREADED_MAX_SIDE^2 entries, where OpenBLAS's threads cost more than they share
 * (P0's 64 x 64 layers with two threads); larger layers keep OpenBLAS's threaded products. */
static int node_sg(const rw_node *o, int N, int K)
{
  const long side = RW_SGEMM_THREADED_MAX_SIDE;
  return o->wt && (rw_blas_threads() == 1 || (long)N * K <= side * side);
}

static void node_gemm(rw_node *o, int ta, int tb, int M, int N, int K, const double *A, int lda,
                      const double *B, int ldb, double beta, double *C, int ldc)
{
  int skinny = K <= RW_NODE_SKINNY || N <= RW_NODE_SKINNY || M <= RW_NODE_SKINNY;
  if (!skinny && !tb && node_sg(o, N, ta ? M : K) &&
      !(ta ? rw_sgemm_rm_tn(M, N, K, A, lda, B, ldb, beta, C, ldc)
           : rw_sgemm_rm_nn(M, N, K, A, lda, B, ldb, beta, C, ldc)))
    return;
  if (!skinny || M == 0 || N == 0) {
    if (M > 0 && N > 0)
      cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
                  N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (beta == 0.0)
    for (int i = 0; i < M; i++)
      memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof(double));
  double *t = o->tmp;
  if (!ta && K <= RW_NODE_SKINNY) { /* C[i,:] += sum_k A[i,k] B(k,:): rows of B contiguous */
    const double *Bk = B;
    int ldk = ldb;
    if (tb) { /* B(k, j) = B[j ldb + k]: transpose the K x N operand first */
      node_transpose(N, K, B, ldb, t);
      Bk = t, ldk = N;
    }
    node_k_rows(M, N, K, A, lda, Bk, ldk, C, ldc);
  } else if (!ta && N <= RW_NODE_SKINNY) { /* C[i,j] += A[i,:] . B(:,j): dot products */
    const double *Bj = B;
    int ldj = ldb;
    if (!tb) { /* B(k, j) = B[k ldb + j]: transpose the K x N operand first */
      node_transpose(K, N, B, ldb, t);
      Bj = t, ldj = K;
    }
    node_k_dots(M, N, K, A, lda, Bj, ldj, C, ldc);
  } else if (ta && !tb && M <= RW_NODE_SKINNY) { /* C[m,:] += sum_k A[k,m] B[k,:] */
    node_k_outer(M, N, K, A, lda, B, ldb, C, ldc);
  } else if (ta && !tb && N <= RW_NODE_SKINNY) { /* C^T[j,:] = sum_k B[k,j] A[k,:], then add */
    node_k_outer_t(M, N, K, A, lda, B, ldb, t);
    node_add_transposed(M, N, t, C, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
                K, 1.0, A, lda, B, ldb, 1.0, C, ldc);
  }
}

/* out (nloc x dout) = x (nloc x din, leading dimension din) W^T + 1 b^T. With din skinny the
 * bias and the product go in one pass over each output row (the same sums in the same order
 * as the bias copy followed by node_gemm). */
static int node_affine(rw_node *o, long rows, const double *x, const double *W, const double *WT,
                       const double *b, int din, int dout, double *out)
{
  if (o->dev) { /* the bias rows, then cuBLAS adds the product */
    RW_CALL(node_body(o, RW_NODE_BIAS, o->nloc * dout, o->nloc, dout, 0, 0.0, b, NULL, out));
    return rw_device_gemm(o->dev, 0, 1, (int)o->nloc, dout, din, 1.0, x, din, W, din, 1.0, out,
                          dout);
  }
  if (din <= RW_NODE_SKINNY && dout > RW_NODE_SKINNY) {
    const double *t = WT; /* W^T, din x dout */
    if (!t) {
      node_transpose(dout, din, W, din, o->tmp);
      t = o->tmp;
    }
    node_k_affine_rows((int)rows, dout, din, x, din, t, dout, b, out, dout);
    return 0;
  }
  node_k_bias_rows(rows, dout, b, out);
  /* x W^T as x (W^T): the stored transpose, a product without transposes for LIBXSMM */
  if (WT && din > RW_NODE_SKINNY && dout > RW_NODE_SKINNY && node_sg(o, dout, din) &&
      !rw_sgemm_rm_nn((int)rows, dout, din, x, din, WT, dout, 1.0, out, dout))
    return 0;
  node_gemm(o, 0, 1, (int)rows, dout, din, x, din, W, din, 1.0, out, dout);
  return 0;
}

/* out = act(out) in place, n values, on the device or the CPU. */
static int node_act(rw_node *o, double *v, long n)
{
  if (o->dev) return node_body(o, RW_NODE_ACT, n, 0, 1, 0, 0.0, NULL, NULL, v);
  node_activate(o->a.activation, v, n);
  return 0;
}

/* out = act(x W^T + 1 b^T): a hidden layer (node_affine, then node_act). On the CPU, for tanh
 * and a layer that is not skinny, the product comes first (beta 0) and the bias is added in
 * the tanh's pass, tanh((x W^T) + b), instead of a pass that writes the bias rows for the
 * product to add to. */
static int node_hidden(rw_node *o, long rows, const double *x, const double *W, const double *WT,
                       const double *b, int din, int dout, double *out)
{
  if (!o->dev && o->a.activation == RW_ACT_TANH && din > RW_NODE_SKINNY && dout > RW_NODE_SKINNY) {
    if (!(WT && node_sg(o, dout, din) &&
          !rw_sgemm_rm_nn((int)rows, dout, din, x, din, WT, dout, 0.0, out, dout)))
      node_gemm(o, 0, 1, (int)rows, dout, din, x, din, W, din, 0.0, out, dout);
    rw_tanh_bias(b, out, rows, dout);
    return 0;
  }
  RW_CALL(node_affine(o, rows, x, W, WT, b, din, dout, out));
  return node_act(o, out, rows * dout);
}

/* g *= act'(z) from x = act(z), n values, on the device or the CPU. */
static int node_act_grad(rw_node *o, const double *x, double *g, long n)
{
  if (o->dev) return node_body(o, RW_NODE_ACT_GRAD, n, 0, 1, 0, 0.0, x, NULL, g);
  node_activate_grad(o->a.activation, x, g, n);
  return 0;
}

/* z -= c x (the damping), n values. */
static int node_damp(rw_node *o, const double *x, double *z, long n)
{
  double c = o->a.damping;
  if (o->dev) return node_body(o, RW_NODE_AXPY, n, 0, 1, 0, c, x, NULL, z);
  for (long i = 0; i < n; i++)
    z[i] -= c * x[i];
  return 0;
}

/* 1 when the device arrays a and b (n values) are equal entry for entry (a device reduction:
 * the host cannot compare device memory). */
static int node_dev_equal(rw_node *o, const double *a, const double *b, long n, int *eq)
{
  double diff = 0.0;
  RW_CALL(rw_device_reduce(o->dev, RW_DK_NEQ, a, b, n, &diff));
  *eq = diff == 0.0;
  return 0;
}

/* The hidden activations at (t, y), from the cache or computed into a fresh entry (*act);
 * f (when not NULL) receives the MLP's output (without the damping). On a device, theta is
 * copied to it when it changed, and cached states are compared there. */
static int node_forward(rw_node *o, double t, const double *y, const double *theta, double *f,
                        const double **act)
{
  size_t ybytes = (size_t)o->nloc * o->D * sizeof(double);
  if (memcmp(o->theta_seen, theta, (size_t)o->P * sizeof(double))) {
    for (int k = 0; k < RW_NODE_CACHE; k++)
      o->cache[k].valid = 0, o->cache[k].used = 0;
    if (o->dev)
      RW_CALL(
          rw_device_copy(o->dev, o->theta_d, theta, (size_t)o->P * sizeof(double), RW_COPY_H2D));
    memcpy(o->theta_seen, theta, (size_t)o->P * sizeof(double));
    if (o->wt) /* the transposed hidden weights node_affine multiplies by */
      for (int l = 0; l < o->L; l++)
        node_transpose(o->a.widths[l + 1], o->a.widths[l], theta + o->offw[l], o->a.widths[l],
                       o->wt + o->offw[l]);
  }
  const double *th = o->dev ? o->theta_d : theta;
  const int vjp = !f; /* a VJP or JVP asks (f is not wanted) */
  o->rhs_run = vjp ? 0 : o->rhs_run + 1;
  rw_node_entry *e = NULL;
  for (int k = 0; k < RW_NODE_CACHE && !e; k++) {
    rw_node_entry *c = &o->cache[k];
    if (!c->valid || c->t != t) continue;
    int eq = 0;
    if (o->dev)
      RW_CALL(node_dev_equal(o, c->y, y, o->nloc * o->D, &eq));
    else
      eq = !memcmp(c->y, y, ybytes);
    if (eq) e = c;
  }
  const int *w = o->a.widths;
  int L = o->L;
  if (!e) {
    /* A long run of right-hand sides with no VJP (or JVP) among them is a sweep that only
     * steps forward (a forward sweep, or a recomputation between checkpoints): it overwrites
     * its last entry instead of cycling through all of them, so its activations stay in the
     * core's caches instead of streaming through RW_NODE_CACHE entries in memory. The first
     * backward step after it computes two passes again (the same bits). */
    if (f && o->rhs_run >= 2 * RW_NODE_CACHE) {
      e = &o->cache[o->last];
    } else {
      /* An entry a VJP or JVP has used is done with (an adjoint step asks once per stage):
       * the one used longest ago is overwritten first, so a backward sweep recycles as many
       * entries as its steps have stages, whose memory is still in the core's caches, instead
       * of cycling through all of them. With none such, the oldest in the ring. */
      int k = -1;
      for (int j = 0; j < RW_NODE_CACHE; j++)
        if (o->cache[j].used && (k < 0 || o->cache[j].used < o->cache[k].used)) k = j;
      if (k < 0) {
        k = o->next;
        o->next = (o->next + 1) % RW_NODE_CACHE;
      }
      o->last = k;
      e = &o->cache[k];
    }
    e->valid = 0;
    e->used = 0;
    const double *x0 = NULL;
    RW_CALL(node_input(o, t, y, &x0));
    /* On the CPU the trajectories go through all the layers a block of rows at a time (the
     * block's activations stay in the first-level cache from one layer to the next, and the
     * output layer follows while they are there); each row's arithmetic is the same whatever
     * the blocks. A device takes all rows at once. */
    const long rb = o->dev ? o->nloc : RW_SGEMM_ROWS;
    for (long r0 = 0; r0 < o->nloc; r0 += rb) {
      const long rows = o->nloc - r0 < rb ? o->nloc - r0 : rb;
      const double *x = x0 + r0 * w[0];
      for (int l = 0; l < L - 1; l++) {
        double *out = e->act + o->offh[l + 1] * o->nloc + r0 * w[l + 1];
        RW_CALL(node_hidden(o, rows, x, th + o->offw[l], o->wt ? o->wt + o->offw[l] : NULL,
                            th + o->offb[l], w[l], w[l + 1], out));
        x = out;
      }
      if (f && L > 1)
        RW_CALL(node_affine(o, rows, x, th + o->offw[L - 1], o->wt ? o->wt + o->offw[L - 1] : NULL,
                            th + o->offb[L - 1], w[L - 1], w[L], f + r0 * w[L]));
    }
    if (f && L > 1) f = NULL; /* done above */
    if (o->dev)
      RW_CALL(rw_device_copy(o->dev, e->y, y, ybytes, RW_COPY_D2D));
    else
      memcpy(e->y, y, ybytes);
    e->t = t;
    e->valid = 1;
  }
  if (f) {
    const double *x = e->act + o->offh[L - 1] * o->nloc;
    if (L == 1) RW_CALL(node_input(o, t, y, &x));
    RW_CALL(node_affine(o, o->nloc, x, th + o->offw[L - 1], o->wt ? o->wt + o->offw[L - 1] : NULL,
                        th + o->offb[L - 1], w[L - 1], w[L], f));
  }
  if (vjp) e->used = ++o->stamp;
  *act = e->act;
  return 0;
}

static int node_rhs(void *c, double t, N_Vector y, const double *p, N_Vector f)
{
  rw_node *o = c;
  if (o->nloc == 0) return 0;
  double *fd = rw_vec_data(f);
  const double *yd = rw_vec_data(y), *act = NULL;
  RW_CALL(node_forward(o, t, yd, p, fd, &act));
  if (o->a.damping != 0.0) RW_CALL(node_damp(o, yd, fd, o->nloc * o->D));
  return 0;
}

/* out_y += (df/dy)^T w, out_p += (df/dtheta)^T w (either may be NULL): back-propagation
 * through the layers from the activations of one forward pass. On a device the theta part is
 * formed there (dp_d) and added to out_p on the host, or, when out_p is the pbar the driver
 * deferred (node_params_defer), added to the device's sum of held terms (pd.acc; the first one
 * is formed there), which node_params_flush adds to pbar with one copy: one copy of P values
 * per backward sweep instead of one per VJP. */
static int node_vjp(void *c, double t, N_Vector y, const double *p, N_Vector wv, N_Vector out_y,
                    double *out_p)
{
  rw_node *o = c;
  long n = o->nloc;
  if (n == 0) return 0;
  const double *yd = rw_vec_data(y), *wd = rw_vec_data(wv), *act = NULL;
  const int *w = o->a.widths;
  RW_CALL(node_forward(o, t, yd, p, NULL, &act));
  const double *th = o->dev ? o->theta_d : p;
  const int held = rw_pdefer_held(&o->pd, out_p);
  /* the device's product overwrites (beta 0) */
  double *gp = o->dev ? (held && !o->pd.live ? o->pd.acc : o->dp_d) : out_p;
  const double gbeta = o->dev ? 0.0 : 1.0;
  const double *G = wd; /* d/dz_L */
  int cur = 0;
  /* On the CPU, for a tanh MLP, the skinny output and input layers' back-propagation runs a
   * block of rows at a time through all of its kernels (the block's gradients and activations
   * stay in the first-level cache between them); every sum runs over the rows in the same
   * order as a pass over all rows, so the bits are those of the separate passes. */
  const int blocked = !o->dev && o->a.activation == RW_ACT_TANH;
  int db_done = 0;               /* the bias gradient of layer l was summed already */
  const double *pend_act = NULL; /* G still lacks the tanh' of this activation (layer 0) */
  for (int l = o->L - 1; l >= 0; l--) {
    const double *x = act + o->offh[l] * n;
    if (l == 0) RW_CALL(node_input(o, t, yd, &x));
    int din = w[l], dout = w[l + 1];
    const double *W = th + o->offw[l];
    if (blocked && l > 0 && dout <= RW_NODE_SKINNY && din > RW_NODE_SKINNY) {
      /* dW_l, db_l, G W_l with tanh' (node_k_rows_tanh_grad) and db_{l-1} */
      double *gn = o->g[cur];
      cur ^= 1;
      for (long r0 = 0; r0 < n; r0 += RW_NODE_BACK_ROWS) {
        const int rows = (int)(n - r0 < RW_NODE_BACK_ROWS ? n - r0 : RW_NODE_BACK_ROWS);
        const double *Gb = G + r0 * dout, *xb = x + r0 * din;
        double *gb = gn + r0 * din;
        if (out_p) {
          node_k_outer(dout, din, rows, Gb, dout, xb, din, gp + o->offw[l], din);
          node_k_colsum(rows, dout, Gb, gp + o->offb[l]);
        }
        node_k_rows_tanh_grad(rows, din, dout, Gb, dout, W, din, xb, gb);
        if (out_p) node_k_colsum(rows, din, gb, gp + o->offb[l - 1]);
      }
      G = gn;
      db_done = 1;
      continue;
    }
    if (pend_act) {
      /* layer 0 (skinny input): tanh' into G, then db_0, dW_0 (its transpose T summed over the
       * rows, then added, as node_gemm's node_k_outer_t does) and out_y (dot products with
       * the rows of W_0^T, as node_gemm's node_k_dots) */
      double *gm = o->g[cur ^ 1], *T = o->tmp, *Wt = o->tmp + RW_NODE_SKINNY * o->maxw;
      if (out_p) memset(T, 0, (size_t)din * dout * sizeof(double));
      node_transpose(dout, o->D, W, din, Wt); /* the state columns of W_0, transposed */
      double *oy = out_y ? rw_vec_data(out_y) : NULL;
      for (long r0 = 0; r0 < n; r0 += RW_NODE_BACK_ROWS) {
        const int rows = (int)(n - r0 < RW_NODE_BACK_ROWS ? n - r0 : RW_NODE_BACK_ROWS);
        double *gb = gm + r0 * dout;
        node_activate_grad(RW_ACT_TANH, pend_act + r0 * dout, gb, (long)rows * dout);
        if (out_p) {
          node_k_outer(din, dout, rows, x + r0 * din, din, gb, dout, T, dout);
          node_k_colsum(rows, dout, gb, gp + o->offb[0]);
        }
        if (oy) node_k_dots(rows, o->D, dout, gb, dout, Wt, dout, oy + r0 * o->D, o->D);
      }
      if (out_p) node_add_transposed(dout, din, T, gp + o->offw[0], din);
      break;
    }
    if (out_p) {
      RW_CALL(node_mm(o, 1, 0, dout, din, (int)n, G, dout, x, din, gbeta, gp + o->offw[l], din));
      if (o->dev)
        RW_CALL(node_body(o, RW_NODE_COLSUM, dout, n, dout, 0, 0.0, G, NULL, gp + o->offb[l]));
      else if (!db_done)
        node_k_colsum(n, dout, G, gp + o->offb[l]);
    }
    db_done = 0;
    if (l > 0) {
      double *gn = o->g[cur];
      cur ^= 1;
      RW_CALL(node_mm(o, 0, 0, (int)n, din, dout, G, dout, W, din, 0.0, gn, din));
      if (blocked && l == 1 && w[0] <= RW_NODE_SKINNY && din > RW_NODE_SKINNY)
        pend_act = x; /* applied with layer 0's kernels */
      else
        RW_CALL(node_act_grad(o, x, gn, n * din));
      G = gn;
    } else if (out_y) {
      /* the time column of W_0 (when there is one) is left out: t is not a state */
      RW_CALL(node_mm(o, 0, 0, (int)n, o->D, dout, G, dout, W, din, 1.0, rw_vec_data(out_y), o->D));
    }
  }
  if (out_y && o->a.damping != 0.0) RW_CALL(node_damp(o, wd, rw_vec_data(out_y), n * o->D));
  if (held) {
    /* acc -= (-1) dp_d, i.e. acc + dp_d exactly */
    if (o->pd.live)
      RW_CALL(node_body(o, RW_NODE_AXPY, o->P, 0, 1, 0, -1.0, o->dp_d, NULL, o->pd.acc));
    o->pd.live = 1;
  } else if (out_p && o->dev) {
    RW_CALL(rw_device_copy(o->dev, o->dp_h, o->dp_d, (size_t)o->P * sizeof(double), RW_COPY_D2H));
    for (long k = 0; k < o->P; k++)
      out_p[k] += o->dp_h[k];
  }
  return 0;
}

/* rw_problem_params_defer / _flush (rw_problem.h): on a device the VJPs into pbar are summed
 * there (node_vjp) and added to pbar at the flush (rw_pdefer); on the CPU every term is added at
 * once. */
static int node_params_defer(void *c, double *pbar)
{
  return rw_pdefer_set(&((rw_node *)c)->pd, pbar);
}
static int node_params_flush(void *c) { return rw_pdefer_flush(&((rw_node *)c)->pd); }

static int node_vjp_y(void *c, double t, N_Vector y, const double *p, N_Vector w, N_Vector out)
{
  return node_vjp(c, t, y, p, w, out, NULL);
}

static int node_vjp_p(void *c, double t, N_Vector y, const double *p, N_Vector w, double *out)
{
  return node_vjp(c, t, y, p, w, NULL, out);
}

/* out = (df/dy) v + (df/dtheta) dp: tangents pushed forward through the layers (dp, a host
 * array, is copied to the device first on a device run). */
static int node_jvp(void *c, double t, N_Vector y, const double *p, N_Vector v, const double *dp,
                    N_Vector out)
{
  rw_node *o = c;
  long n = o->nloc;
  if (n == 0) return 0;
  const double *yd = rw_vec_data(y), *vd = rw_vec_data(v), *act = NULL;
  const int *w = o->a.widths;
  RW_CALL(node_forward(o, t, yd, p, NULL, &act));
  const double *th = o->dev ? o->theta_d : p;
  if (dp && o->dev) {
    RW_CALL(rw_device_copy(o->dev, o->dp_d, dp, (size_t)o->P * sizeof(double), RW_COPY_H2D));
    dp = o->dp_d;
  }
  /* dx_0 = (v, 0) */
  double *dx = o->dx, *dz = o->dz;
  int d0 = w[0];
  if (o->dev) {
    RW_CALL(node_body(o, RW_NODE_WIDEN, n * d0, n, o->D, d0, 0.0, vd, NULL, dx));
  } else {
    for (long i = 0; i < n; i++) {
      memcpy(dx + i * d0, vd + i * o->D, (size_t)o->D * sizeof(double));
      if (o->a.time_input) dx[i * d0 + o->D] = 0.0;
    }
  }
  for (int l = 0; l < o->L; l++) {
    int din = w[l], dout = w[l + 1];
    const double *x = act + o->offh[l] * n;
    if (l == 0) RW_CALL(node_input(o, t, yd, &x));
    double *target = l == o->L - 1 ? rw_vec_data(out) : dz;
    /* dz = dx W^T (+ x dW^T + db) */
    if (dp)
      RW_CALL(
          node_affine(o, o->nloc, x, dp + o->offw[l], NULL, dp + o->offb[l], din, dout, target));
    RW_CALL(node_mm(o, 0, 1, (int)n, dout, din, dx, din, th + o->offw[l], din, dp ? 1.0 : 0.0,
                    target, dout));
    if (l < o->L - 1) {
      /* dx_{l+1} = act'(z) dz: scaled in place */
      RW_CALL(node_act_grad(o, act + o->offh[l + 1] * n, dz, n * dout));
      double *tmp = dx;
      dx = dz;
      dz = tmp;
    }
  }
  if (o->a.damping != 0.0) RW_CALL(node_damp(o, vd, rw_vec_data(out), n * o->D));
  return 0;
}

/* Neural SDEs: dh = (f(h, t; theta) - c h) dt + sigma dW with additive diagonal noise; g = 1
 * here and sigma is the noise amplitude (rw_problem_set_noise), so g has no derivative in h
 * or theta. The noise of trajectory i, component d has the global index i D + d (the
 * default block mapping: this rank's trajectories are one block). */
static int node_diffusion(void *c, double t, N_Vector y, const double *p, N_Vector g)
{
  (void)c, (void)t, (void)y, (void)p;
  N_VConst(1.0, g);
  return 0;
}

static int node_diffusion_vjp(void *c, double t, N_Vector y, const double *p, N_Vector w,
                              N_Vector out_y, double *out_p)
{
  (void)c, (void)t, (void)y, (void)p, (void)w, (void)out_y, (void)out_p;
  return 0; /* additive: dg/dh = 0, dg/dtheta = 0 */
}

/* The targets on the device (they are set on the host, rw_neuralode_targets). */
static int node_targets_d(rw_node *o)
{
  return rw_device_copy(o->dev, o->tgt_d, o->targets, (size_t)(o->nloc * o->D) * sizeof(double),
                        RW_COPY_H2D);
}

static int node_terminal(void *c, double t, N_Vector y, const double *p, double *g)
{
  (void)t, (void)p;
  rw_node *o = c;
  const double *yd = rw_vec_data(y);
  double s = 0.0;
  long nv = o->nloc * o->D;
  if (o->dev && nv > 0) { /* the misfit on the device, summed in its fixed order */
    RW_CALL(node_targets_d(o));
    RW_CALL(node_body(o, RW_NODE_DIFF, nv, 0, 1, 0, 1.0, yd, o->tgt_d, o->diff_d));
    RW_CALL(rw_device_reduce(o->dev, RW_DK_DOT, o->diff_d, o->diff_d, nv, &s));
  } else if (!o->dev) {
    for (long i = 0; i < nv; i++) {
      double d = yd[i] - o->targets[i];
      s += d * d;
    }
  }
  RW_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, o->comm));
  *g = s / ((double)o->B * o->D);
  return 0;
}

static int node_terminal_grad(void *c, double t, N_Vector y, const double *p, N_Vector gy,
                              double *gp)
{
  (void)t, (void)p, (void)gp;
  rw_node *o = c;
  const double *yd = rw_vec_data(y);
  double *gd = rw_vec_data(gy), s = 2.0 / ((double)o->B * o->D);
  long nv = o->nloc * o->D;
  if (o->dev) {
    if (nv == 0) return 0;
    RW_CALL(node_targets_d(o));
    return node_body(o, RW_NODE_DIFF, nv, 0, 1, 0, s, yd, o->tgt_d, gd);
  }
  for (long i = 0; i < nv; i++)
    gd[i] = s * (yd[i] - o->targets[i]);
  return 0;
}

static int node_alloc(rw_node *o)
{
  int ierr = 0;
  long n = o->nloc > 0 ? o->nloc : 1;
  RW_TRY(rw_calloc((size_t)(n * o->D), sizeof(double), "neural-ODE targets", &o->targets));
  if (o->a.time_input) RW_TRY(node_arr_alloc(o, node_rows(o, o->a.widths[0]), "MLP input", &o->x0));
  for (int k = 0; k < 2; k++)
    RW_TRY(node_arr_alloc(o, node_rows(o, o->maxw), "MLP gradients", &o->g[k]));
  RW_TRY(node_arr_alloc(o, node_rows(o, o->maxw), "MLP tangents", &o->dx));
  RW_TRY(node_arr_alloc(o, node_rows(o, o->maxw), "MLP tangents", &o->dz));
  RW_TRY(rw_calloc((size_t)(2 * RW_NODE_SKINNY * o->maxw), sizeof(double), "MLP scratch", &o->tmp));
  RW_TRY(rw_calloc((size_t)o->P, sizeof(double), "MLP weights seen", &o->theta_seen));
  if (!o->dev && rw_sgemm_available())
    RW_TRY(rw_calloc((size_t)o->P, sizeof(double), "MLP transposed weights", &o->wt));
  for (int k = 0; k < RW_NODE_CACHE; k++) {
    RW_TRY(node_arr_alloc(o, node_rows(o, o->D), "MLP cache", &o->cache[k].y));
    RW_TRY(node_arr_alloc(o, node_rows(o, o->nh), "MLP activations", &o->cache[k].act));
  }
  if (o->dev) { /* theta_d starts at 0, as theta_seen and theta do */
    RW_TRY(rw_device_alloc(o->dev, (size_t)o->P * sizeof(double), &o->theta_d));
    RW_TRY(rw_device_alloc(o->dev, (size_t)o->P * sizeof(double), &o->dp_d));
    RW_TRY(rw_pdefer_init(&o->pd, o->dev, o->P));
    RW_TRY(rw_device_alloc(o->dev, node_rows(o, o->D), &o->tgt_d));
    RW_TRY(rw_device_alloc(o->dev, node_rows(o, o->D), &o->diff_d));
    o->dp_h = o->pd.host; /* one P-value host copy for both (each use is transient) */
  }
cleanup:
  return ierr;
}

int rw_neuralode_create(rw_context ctx, const rw_mlp_arch *arch, long batch, rw_problem *out)
{
  int ierr = 0;
  rw_node *o = NULL;
  RW_CALL(rw_mlp_check(arch, "neural-ODE architecture"));
  RW_CHECK(batch >= 1, RW_ERR_ARG, "neural-ODE batch size %ld must be >= 1", batch);
  RW_CALL(rw_calloc(1, sizeof *o, "neural-ODE problem", &o));
  o->a = *arch;
  o->L = arch->nlayers;
  o->D = rw_mlp_dim(arch);
  o->P = rw_mlp_nparams(arch);
  o->B = batch;
  o->comm = rw_context_comm(ctx);
  o->dev = rw_context_device(ctx);
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);
  long q = batch / size, rem = batch % size;
  o->nloc = q + (rank < rem ? 1 : 0);
  o->first = rank * q + (rank < rem ? rank : rem);
  long off = 0;
  for (int l = 0; l <= o->L; l++) {
    if (arch->widths[l] > o->maxw) o->maxw = arch->widths[l];
    if (l < o->L) {
      o->offw[l] = off;
      o->offb[l] = off + (long)arch->widths[l + 1] * arch->widths[l];
      off = o->offb[l] + arch->widths[l + 1];
    }
    if (l >= 1 && l < o->L) {
      o->offh[l] = o->nh;
      o->nh += arch->widths[l];
    }
  }
  RW_TRY(node_alloc(o));
  /* theta_seen starts at 0 like theta, and nothing is cached yet */
  rw_problem_ops ops = {0};
  ops.rhs = node_rhs;
  ops.vjp_y = node_vjp_y;
  ops.vjp_p = node_vjp_p;
  ops.vjp = node_vjp;
  ops.jvp = node_jvp;
  ops.diffusion = node_diffusion;
  ops.diffusion_vjp = node_diffusion_vjp;
  ops.terminal = node_terminal;
  ops.terminal_grad = node_terminal_grad;
  ops.params_defer = node_params_defer;
  ops.params_flush = node_params_flush;
  ops.destroy = node_destroy;
  int on_dev = o->dev != NULL;
  RW_TRY(rw_problem_create(ctx, "neuralode", &ops, o, (sunindextype)(o->nloc * o->D), (int)o->P,
                           NULL, out));
  if (on_dev) rw_problem_set_device_ready(*out);
  return 0;
cleanup:
  if (o) node_destroy(o);
  return ierr;
}

const rw_mlp_arch *rw_neuralode_arch(rw_problem prob)
{
  return &((rw_node *)rw_problem_content(prob))->a;
}

void rw_neuralode_local_batch(rw_problem prob, long *first, long *count)
{
  rw_node *o = rw_problem_content(prob);
  *first = o->first;
  *count = o->nloc;
}

long rw_neuralode_batch(rw_problem prob) { return ((rw_node *)rw_problem_content(prob))->B; }

double *rw_neuralode_targets(rw_problem prob)
{
  return ((rw_node *)rw_problem_content(prob))->targets;
}
