/* Element-wise kernels shared by the CPU and CUDA paths: one formula, two compilers. */
#ifndef REWIND_RW_KERNELS_H
#define REWIND_RW_KERNELS_H

#include <math.h>
#include <string.h>

#if defined(__CUDACC__)
#define RW_HD __host__ __device__
#else
#define RW_HD
#endif

/* RW_SIMD_CLONES before a hot CPU loop's definition compiles it for AVX-512, AVX2 and the
 * baseline, and the loader picks the widest the CPU has (GCC's target_clones, an ifunc). The
 * clones compute the same bits: the build does not contract into fused multiply-adds
 * (-std=c11 implies -ffp-contract=off), so only the vector width changes. Empty elsewhere
 * (other compilers, sanitizer builds, CUDA). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&       \
    !defined(__CUDACC__) && !defined(__SANITIZE_ADDRESS__)
#define RW_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RW_SIMD_CLONES
#endif

/* Rows written by hand in GCC's vector types (the grid problems' stencils) are compiled once
 * per ISA, each at the width its registers hold: 8 doubles for AVX-512, 4 for AVX2, 2 for the
 * baseline. One body compiled by target_clones has one width, and GCC 12 lowers 64-byte vectors
 * on AVX2 badly: their stores go through the stack in 16-byte pieces and their lane shuffles
 * element by element (on a Zen 3 core Gray-Scott's forward row ran 3x slower than at 4 wide).
 * A file includes its rows once per ISA with the width and a name suffix set
 * (rw_grayscott_simd.h), and calls them through RW_ISA_CALL(fn, (args)), which picks fn_avx512,
 * fn_avx2 or fn_base by rw_simd_isa(). Every operation is per lane and lane sums keep a fixed
 * number of logical lanes, so the width changes no bit. RW_ISA_X86: the x86-64 instantiations
 * exist (GCC on x86-64; with sanitizers too, since the dispatch is a plain branch, not an
 * ifunc). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__CUDACC__)
#define RW_ISA_X86           1
#define RW_ISA_AVX512_TARGET __attribute__((target("avx512f")))
#define RW_ISA_AVX2_TARGET   __attribute__((target("avx2")))
#else
#define RW_ISA_X86 0
#endif

#if !defined(__CUDACC__)
/* The instantiation this process runs: 2 AVX-512F, 1 AVX2, 0 the baseline; the widest the CPU
 * has, at most the one the environment variable REWIND_SIMD names (avx512, avx2 or baseline;
 * tests run the others with it). Decided at the first call. Not collective. */
int rw_simd_isa(void);
/* rw_simd_isa's choice in words, e.g. "avx2 (4 doubles a vector)", for benchmark headers. */
const char *rw_simd_isa_name(void);
#endif

#if RW_ISA_X86
#define RW_ISA_CALL(fn, args)                                                                      \
  do {                                                                                             \
    const int rw_isa_ = rw_simd_isa();                                                             \
    if (rw_isa_ == 2)                                                                              \
      fn##_avx512 args;                                                                            \
    else if (rw_isa_ == 1)                                                                         \
      fn##_avx2 args;                                                                              \
    else                                                                                           \
      fn##_base args;                                                                              \
  } while (0)
#else
#define RW_ISA_CALL(fn, args) fn##_base args
#endif

/* sum_k c[k] * x[k][i], accumulated in index order with explicit fma so host and device
 * round identically. */
static inline RW_HD double rw_kernel_lincomb(int nv, const double *c, const double *const *x,
                                             long i)
{
  double s = c[0] * x[0][i];
  for (int k = 1; k < nv; k++)
    s = fma(c[k], x[k][i], s);
  return s;
}

/* tanh(x) = -m / (2 + m) with m = expm1(-2|x|), the sign of x restored. expm1(z) by range
 * reduction z = k ln2 + r (|r| <= ln2/2, k by the round-to-nearest magic constant), e^r - 1
 * by its Taylor polynomial to degree 13 (truncation below 2e-17 relative), and
 * expm1(z) = 2^k (e^r - 1) + (2^k - 1), which cancels only for k = 0, where it is exact.
 * |x| is clamped at 40 (tanh is 1 to the last bit well before); a NaN stays a NaN.
 * Branch-free, so a CPU loop over it vectorises. `fused` (a constant where it is inlined):
 * 1 evaluates with explicit fused multiply-adds, 0 rounds each product; the CPU's AVX2 and
 * AVX-512 loops and the GPU use 1 and so give the same bits.
 *
 * Laid out for a short dependency chain (a vectorised loop over it is bound by the chain and
 * the multiply-add ports, not by the divide): k straight from |x| by one multiply-add; the
 * polynomial's twelve coefficients 1/2!, ..., 1/13! in three Horner groups of four run side
 * by side and joined with r^4 (an Estrin split: depth 5 multiply-adds instead of 13);
 * numerator and denominator formed side by side from e^r - 1 with the sign put on the
 * numerator before the division; 2^k from the integer bits of k + magic by one 64-bit add
 * and shift (the 1.5 2^52 in the high bits shifts out; k + 1023 is in [908, 1023]). */
static inline RW_HD double rw_dk_tanh(double x, const int fused)
{
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  const double m2_inv_ln2 = -2.0 * 1.44269504088896338700e+00; /* -2 / ln2 */
  const double magic = 6755399441055744.0;                     /* 1.5 2^52 */
#define RW_DK_MADD(a_, b_, c_) (fused ? fma((a_), (b_), (c_)) : (a_) * (b_) + (c_))
  double a = fabs(x);
  a = 40.0 < a ? 40.0 : a; /* a NaN stays a NaN */
  const double z = -2.0 * a;
  double kd = RW_DK_MADD(a, m2_inv_ln2, magic); /* k + magic: k = round(z / ln2) */
  unsigned long long kb;
  memcpy(&kb, &kd, sizeof kb);
  kd -= magic;
  /* r = z - k ln2 (ln2_hi has trailing zeros: k ln2_hi is exact even unfused) */
  const double r = RW_DK_MADD(-kd, ln2_lo, RW_DK_MADD(-kd, ln2_hi, z));
  const double r2 = r * r, r4 = r2 * r2;
  const double c0 =
      RW_DK_MADD(RW_DK_MADD(RW_DK_MADD(1.0 / 120.0, r, 1.0 / 24.0), r, 1.0 / 6.0), r, 0.5);
  const double c1 = RW_DK_MADD(
      RW_DK_MADD(RW_DK_MADD(1.0 / 362880.0, r, 1.0 / 40320.0), r, 1.0 / 5040.0), r, 1.0 / 720.0);
  const double c2 = RW_DK_MADD(
      RW_DK_MADD(RW_DK_MADD(1.0 / 6227020800.0, r, 1.0 / 479001600.0), r, 1.0 / 39916800.0), r,
      1.0 / 3628800.0);
  const double q = RW_DK_MADD(RW_DK_MADD(c2, r4, c1), r4, c0);
  const double em1 = RW_DK_MADD(q, r2, r); /* e^r - 1 = r + r^2 q */
  const unsigned long long eb = (kb + 1023u) << 52;
  double s; /* 2^k */
  memcpy(&s, &eb, sizeof s);
  const double num = RW_DK_MADD(-s, em1, 1.0 - s); /* -expm1(z) = 1 - 2^k e^r, >= 0 */
  const double den = RW_DK_MADD(s, em1, s + 1.0);  /* 2 + expm1(z) */
#undef RW_DK_MADD
  return copysign(num, x) / den;
}

/* --- Device vectors (rw_device.h) ---------------------------------------------------------
 *
 * The element formulas of the device vector's operations, compiled for the CPU (the
 * emulated device) and for CUDA (built with --fmad=false, so no multiply-add is contracted
 * and both round alike). They reproduce the CPU vectors' bits: rw_lincomb's order and
 * SUNDIALS' N_VLinearSum forms, so a run on device vectors and one on CPU vectors give the
 * same states when no reduction feeds the result. */

/* z_i = sum_j c[j] x[j][i] rounded as rw_lincomb rounds it: for n = 2 the forms
 * c (x0 + x1) when c0 == c1 and c (x0 - x1) when c0 == -c1 (neither coefficient +-1), else
 * c0 x0 + c1 x1 + ... accumulated in index order. */
static inline RW_HD double rw_dk_lincomb(int n, const double *c, const double *const *x, long i)
{
  if (n == 2) {
    const double a = c[0], b = c[1];
    const int unit = a == 1.0 || a == -1.0 || b == 1.0 || b == -1.0;
    if (!unit && a == b) return a * (x[0][i] + x[1][i]);
    if (!unit && a == -b) return a * (x[0][i] - x[1][i]);
  }
  double s = c[0] * x[0][i];
  for (int j = 1; j < n; j++)
    s += c[j] * x[j][i];
  return s;
}

/* Element-wise maps z_i = op(a, x_i, y_i), each as SUNDIALS' parallel vector computes it. */
enum {
  RW_DK_CONST,    /* a */
  RW_DK_SCALE,    /* a x */
  RW_DK_ADDCONST, /* x + a */
  RW_DK_ABS,      /* |x| */
  RW_DK_INV,      /* 1 / x */
  RW_DK_PROD,     /* x y */
  RW_DK_DIV,      /* x / y */
  RW_DK_COMPARE   /* |x| >= a ? 1 : 0 */
};

static inline RW_HD double rw_dk_map(int op, double a, const double *x, const double *y, long i)
{
  switch (op) {
  case RW_DK_CONST:
    return a;
  case RW_DK_SCALE:
    return a * x[i];
  case RW_DK_ADDCONST:
    return x[i] + a;
  case RW_DK_ABS:
    return fabs(x[i]);
  case RW_DK_INV:
    return 1.0 / x[i];
  case RW_DK_PROD:
    return x[i] * y[i];
  case RW_DK_DIV:
    return x[i] / y[i];
  default:
    return fabs(x[i]) >= a ? 1.0 : 0.0;
  }
}

/* Reductions in a fixed order, so a device run repeats bit for bit and the emulated device
 * computes what the GPU computes: the entries are cut into chunks of RW_DK_RED_CHUNK; in a
 * chunk, "thread" t (of RW_DK_RED_THREADS) combines entries t, t + THREADS, ... in that
 * order, the threads' values are combined by the halving tree a[t] = a[t] + a[t + s],
 * s = THREADS/2, ..., 1, and the chunks' values are combined in chunk order on the host. */
enum {
  RW_DK_DOT,    /* sum x y */
  RW_DK_WSQ,    /* sum (x w)^2 (weighted RMS and L2 norms) */
  RW_DK_MAXABS, /* max |x| */
  RW_DK_MIN,    /* min x */
  RW_DK_L1,     /* sum |x| */
  RW_DK_SUM,    /* sum x */
  RW_DK_NEQ     /* the number of entries with x != y (a NaN differs from everything) */
};
#define RW_DK_RED_THREADS 256
#define RW_DK_RED_ITEMS   16
#define RW_DK_RED_CHUNK   (RW_DK_RED_THREADS * RW_DK_RED_ITEMS)

static inline RW_HD double rw_dk_red_identity(int op) { return op == RW_DK_MIN ? HUGE_VAL : 0.0; }

static inline RW_HD double rw_dk_red_term(int op, const double *x, const double *y, long i)
{
  switch (op) {
  case RW_DK_DOT:
    return x[i] * y[i];
  case RW_DK_WSQ: {
    const double p = x[i] * y[i];
    return p * p;
  }
  case RW_DK_MAXABS:
  case RW_DK_L1:
    return fabs(x[i]);
  case RW_DK_NEQ:
    return x[i] != y[i] ? 1.0 : 0.0;
  default:
    return x[i];
  }
}

static inline RW_HD double rw_dk_red_combine(int op, double a, double b)
{
  if (op == RW_DK_MAXABS) return b > a ? b : a;
  if (op == RW_DK_MIN) return b < a ? b : a;
  return a + b;
}

/* Thread t's value in chunk p of an n-entry reduction. */
static inline RW_HD double rw_dk_red_thread(int op, const double *x, const double *y, long n,
                                            long p, int t)
{
  double acc = rw_dk_red_identity(op);
  const long base = p * (long)RW_DK_RED_CHUNK + t;
  for (int k = 0; k < RW_DK_RED_ITEMS; k++) {
    const long i = base + (long)k * RW_DK_RED_THREADS;
    if (i < n) acc = rw_dk_red_combine(op, acc, rw_dk_red_term(op, x, y, i));
  }
  return acc;
}

#endif
