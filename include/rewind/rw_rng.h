/* Counter-based random numbers for stochastic forcing (issue 12): Philox-4x32-10 and the
 * mapping of Rewind's noise coordinates onto its counter and key.
 *
 * Why counter-based. Checkpointing recomputes forward steps, and a recomputed step must
 * draw the same noise as the first pass or the gradient is silently wrong. A stateful
 * generator would tie the numbers to the order in which they are drawn (the schedule, the
 * rank count, the loop order, the device). Here every number is a pure function of its
 * coordinates
 *
 *     (seed, step, stage, index, stream)  ->  one double
 *
 * with no state carried between calls, so a recomputation, any checkpoint schedule, any
 * domain decomposition and any evaluation order draw the same bits.
 *
 * Generator. Philox-4x32-10 (Salmon, Moraes, Dror & Shaw, "Parallel random numbers: as easy
 * as 1, 2, 3", SC 2011), written here from the paper's description: a 128-bit counter
 * (four 32-bit words x0..x3) and a 64-bit key (two words k0, k1) pass through 10 rounds of
 *
 *     (hi0, lo0) = M0 * x0,  (hi1, lo1) = M1 * x2          (32x32 -> 64-bit products)
 *     (x0, x1, x2, x3) <- (hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0)
 *
 * with M0 = 0xD2511F53, M1 = 0xCD9E8D57, the key bumped by the Weyl constants
 * (0x9E3779B9, 0xBB67AE85) between rounds. The output is the four words after round 10.
 * The implementation is checked against the Random123 known-answer vectors
 * (tests/unit/test_rng.c).
 *
 * Key. key = seed, a 64-bit integer: k0 = low 32 bits, k1 = high 32 bits. Ensembles of
 * paths use seeds seed, seed+1, ..., which Philox keys make independent streams.
 *
 * Counter. A noise coordinate is
 *   step   the time-step index n (the step whose increment dW_n is drawn), 0 <= step < 2^48;
 *   stage  the stage within the step (or the sub-increment of a Brownian refinement),
 *          0 <= stage < 2^16;
 *   index  the global index of the number within one (step, stage, stream): for a PDE the
 *          global node number times the number of noisy components plus the component,
 *          for an ensemble of ODE trajectories trajectory * dimension + component;
 *          0 <= index < 2^49;
 *   stream the purpose of the draw (RW_RNG_STREAM_*), so that e.g. forcing noise and an
 *          initial perturbation never share numbers, 0 <= stream < 2^16.
 * Each Philox call yields two doubles (below), so index i uses block b = i >> 1 and lane
 * i & 1 of that block. The 128-bit counter is packed as
 *     x0 = b & 0xffffffff
 *     x1 = (b >> 32) | stage << 16          (b < 2^48)
 *     x2 = step & 0xffffffff
 *     x3 = (step >> 32) | stream << 16      (step < 2^48)
 * This packing is injective over the stated ranges, so distinct coordinates never share a
 * counter. The functions below check the ranges (RW_ERR_ARG past them); the check costs a
 * few comparisons per call and one per bulk fill.
 *
 * Uniforms. The output words (x0, x1) of a block give its first double, (x2, x3) its
 * second: w = x0 * 2^32 + x1 (resp. x2 * 2^32 + x3), m = w >> 12, the top 52 bits, an
 * integer in [0, 2^52), and
 *     u = (m + 1/2) * 2^-52,
 * the midpoint of one of 2^52 equal cells of (0, 1). This is exact in double precision,
 * lies strictly inside (0, 1) (min 2^-53, max 1 - 2^-53) and is symmetric (u and 1 - u are
 * equally likely). 52 rather than 53 bits: with 53 the midpoint needs 54 significant bits
 * and rounds to 1.0 at the top cell.
 *
 * Normals. Box-Muller on the two uniforms of one block:
 *     r = sqrt(-2 log u1),  z0 = r cos(2 pi u2),  z1 = r sin(2 pi u2),
 * so index 2b gets z0 and 2b+1 gets z1. The transform is exact in distribution (no
 * rejection, no table, no data-dependent branch); the only approximation is the
 * discreteness of u1, which truncates |z| at sqrt(2 * 53 log 2) = 8.57 (a tail of
 * probability ~1e-17, far below anything a simulation samples) and the double-precision
 * rounding of log, sqrt, cos and sin (a few ulp). It is deterministic: the same inputs give
 * the same bits on one machine and library. The integer part (Philox, the uniforms) is
 * bit-for-bit reproducible on every platform; the normals use libm's log, sqrt, cos and sin,
 * so bitwise agreement ACROSS machines (or between glibc and a GPU's math library) depends
 * on those functions rounding alike. Within one build on one machine any schedule, rank
 * count, index split or recomputation draws the same bits, which is what the adjoint needs.
 *
 * Cost. A block costs ten rounds of two 32x32 multiplies; the bulk fills below are written
 * as plain loops over blocks the compiler can vectorise, followed by the libm transform.
 * For a PDE rank that owns nodes [first, first+n) of a field with c noisy components, call
 * rw_rng_normal_fill(seed, step, stage, stream, first * c, n * c, out): the result is
 * independent of how the global index range is split across ranks.
 *
 * All functions here are pure and not collective. */
#ifndef REWIND_RW_RNG_H
#define REWIND_RW_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of the counter fields (exclusive upper bounds). */
#define RW_RNG_STEP_LIMIT   (UINT64_C(1) << 48)
#define RW_RNG_INDEX_LIMIT  (UINT64_C(1) << 49)
#define RW_RNG_STAGE_LIMIT  (UINT32_C(1) << 16)
#define RW_RNG_STREAM_LIMIT (UINT32_C(1) << 16)

/* Stream numbers: one per purpose of a draw. New purposes take new numbers; never reuse. */
enum {
  RW_RNG_STREAM_FORCING = 0, /* additive / multiplicative noise increments of an SDE step */
  RW_RNG_STREAM_INITIAL = 1, /* random initial perturbations */
  RW_RNG_STREAM_BRIDGE = 2,  /* Brownian-bridge refinement of an increment */
  RW_RNG_STREAM_TEST = 3     /* tests and benchmarks */
};

/* Philox-4x32 with `rounds` rounds (1..16; 10 is the standard generator, other counts exist
 * for the known-answer tests): `ctr` (4 words) and `key` (2 words, k0 then k1) -> `out`
 * (4 words). `out` may alias `ctr`. Pure, not collective; no checks (rounds is clamped to
 * 1..16). */
void rw_philox4x32_r(int rounds, const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Philox-4x32-10 of `ctr` under the 64-bit key `key` (k0 = low word, k1 = high word).
 * Pure, not collective. */
void rw_philox4x32_10(const uint32_t ctr[4], uint64_t key, uint32_t out[4]);

/* Packs the noise coordinate (step, stage, block, stream) into the Philox counter `ctr` as
 * documented above. Returns RW_ERR_ARG if a field is out of range. Not collective. */
int rw_rng_counter(uint64_t step, uint32_t stage, uint64_t block, uint32_t stream, uint32_t ctr[4]);

/* The two uniforms in (0, 1) of block `block` (indices 2*block and 2*block+1) of the
 * coordinate (seed, step, stage, stream). Returns RW_ERR_ARG past the limits. Not
 * collective. */
int rw_rng_uniform2(uint64_t seed, uint64_t step, uint32_t stage, uint64_t block, uint32_t stream,
                    double out[2]);

/* The uniform in (0, 1) with global index `index` of (seed, step, stage, stream). Equals
 * element `index - first` of rw_rng_uniform_fill over any range containing it. Not
 * collective. */
int rw_rng_uniform(uint64_t seed, uint64_t step, uint32_t stage, uint64_t index, uint32_t stream,
                   double *out);

/* The standard normal sample with global index `index` of (seed, step, stage, stream)
 * (Box-Muller, see above). Equals element `index - first` of rw_rng_normal_fill over any
 * range containing it. Not collective. */
int rw_rng_normal(uint64_t seed, uint64_t step, uint32_t stage, uint64_t index, uint32_t stream,
                  double *out);

/* Fills out[j] (j = 0..n-1) with the uniform of global index first + j of (seed, step, stage,
 * stream). `out` has n entries (n = 0 is allowed, out may then be NULL). The result does not
 * depend on how [first, first+n) is split between calls or ranks. Returns RW_ERR_ARG when
 * first + n exceeds RW_RNG_INDEX_LIMIT or a field is out of range. Not collective. */
int rw_rng_uniform_fill(uint64_t seed, uint64_t step, uint32_t stage, uint32_t stream,
                        uint64_t first, size_t n, double *out);

/* Same for standard normal samples. Not collective. */
int rw_rng_normal_fill(uint64_t seed, uint64_t step, uint32_t stage, uint32_t stream,
                       uint64_t first, size_t n, double *out);

#ifdef __cplusplus
}
#endif

#endif
