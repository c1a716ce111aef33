/* The arithmetic of one Philox-4x32-10 draw and its normal transform, for host code and device
 * bodies alike (RW_HD, rw_kernels.h): core/rw_rng.c's fills and the device noise body
 * (solvers/rw_dev_bodies.h, RW_BODY_NOISE) run these same functions, so the emulated device
 * draws the CPU's bits; on a GPU the normals go through CUDA's log, sqrt, cos and sin, which may
 * round otherwise than glibc's (see rw_rng.h on reproducibility across math libraries).
 * The counter layout and the transforms are documented in include/rewind/rw_rng.h. */
#ifndef REWIND_CORE_RW_RNG_BODY_H
#define REWIND_CORE_RW_RNG_BODY_H

#include "rewind/rw_kernels.h"

#include <math.h>
#include <stdint.h>

/* Round multipliers and key-schedule (Weyl) constants of Philox-4x32 (Salmon et al. 2011,
 * section 4.2 and table 2). */
#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

/* One Philox-4x32 round on (x0..x3) with round key (k0, k1). */
static inline RW_HD void philox_round(uint32_t *x0, uint32_t *x1, uint32_t *x2, uint32_t *x3,
                                      uint32_t k0, uint32_t k1)
{
  uint64_t p0 = (uint64_t)PHILOX_M0 * *x0;
  uint64_t p1 = (uint64_t)PHILOX_M1 * *x2;
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t y0 = hi1 ^ *x1 ^ k0;
  uint32_t y2 = hi0 ^ *x3 ^ k1;
  *x0 = y0;
  *x1 = lo1;
  *x2 = y2;
  *x3 = lo0;
}

/* Word pair (hi, lo) -> (m + 1/2) 2^-52 with m the top 52 of the 64 bits: exact, in (0, 1). */
static inline RW_HD double rw_rng_u01(uint32_t hi, uint32_t lo)
{
  uint64_t m = (((uint64_t)hi << 32) | lo) >> 12;
  return ((double)m + 0.5) * 0x1p-52;
}

/* Box-Muller on one pair of uniforms. Shared by the point and bulk functions so that both give
 * the same bits. No a*b+c appears, so floating-point contraction cannot change the result. */
static inline RW_HD void rw_rng_box_muller(double u1, double u2, double *z0, double *z1)
{
  const double two_pi = 6.283185307179586476925286766559;
  double r = sqrt(-2.0 * log(u1));
  double t = two_pi * u2;
  *z0 = r * cos(t);
  *z1 = r * sin(t);
}

/* The standard normal with global index `index` under key `seed`, the counter's other words
 * given as rw_rng.c's fills form them (c1hi = stage << 16, c2 = low word of the step, c3 = its
 * high word | stream << 16): block index >> 1 through ten rounds, Box-Muller on its two
 * uniforms, lane index & 1. The bits rw_rng_normal_fill gives for that index. */
static inline RW_HD double rw_rng_normal_at(uint64_t seed, uint32_t c1hi, uint32_t c2, uint32_t c3,
                                            uint64_t index)
{
  uint64_t b = index >> 1;
  uint32_t x0 = (uint32_t)b, x1 = (uint32_t)(b >> 32) | c1hi, x2 = c2, x3 = c3;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    philox_round(&x0, &x1, &x2, &x3, k0, k1);
  }
  double z0, z1;
  rw_rng_box_muller(rw_rng_u01(x0, x1), rw_rng_u01(x2, x3), &z0, &z1);
  return (index & 1) ? z1 : z0;
}

#endif
