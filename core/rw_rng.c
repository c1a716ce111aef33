/* Philox-4x32-10 and the noise coordinates of Rewind (see include/rewind/rw_rng.h for the
 * counter layout, the uniform and normal transforms and their reproducibility). */
#include "rewind/rw_rng.h"

#include "rewind/rw_error.h"
#include "rw_rng_body.h"

#include <math.h>

/* Blocks per chunk in the bulk fills: the Philox rounds run over arrays of this length so the
 * compiler can keep them in vector registers. */
#define RW_RNG_CHUNK 64

void rw_philox4x32_r(int rounds, const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
  if (rounds < 1) rounds = 1;
  if (rounds > 16) rounds = 16;
  uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < rounds; r++) {
    if (r > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    philox_round(&x0, &x1, &x2, &x3, k0, k1);
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

void rw_philox4x32_10(const uint32_t ctr[4], uint64_t key, uint32_t out[4])
{
  const uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
  rw_philox4x32_r(10, ctr, k, out);
}

static int rw_rng_check(const char *func, uint64_t step, uint32_t stage, uint64_t index_end,
                        uint32_t stream)
{
  RW_CHECK(step < RW_RNG_STEP_LIMIT, RW_ERR_ARG,
           "%s: step %llu is past the noise counter's limit 2^48; the step index must fit in "
           "48 bits",
           func, (unsigned long long)step);
  RW_CHECK(stage < RW_RNG_STAGE_LIMIT, RW_ERR_ARG,
           "%s: stage %u is past the noise counter's limit 2^16", func, (unsigned)stage);
  RW_CHECK(stream < RW_RNG_STREAM_LIMIT, RW_ERR_ARG,
           "%s: stream %u is past the noise counter's limit 2^16", func, (unsigned)stream);
  RW_CHECK(index_end <= RW_RNG_INDEX_LIMIT, RW_ERR_ARG,
           "%s: global index range ends at %llu, past the noise counter's limit 2^49", func,
           (unsigned long long)index_end);
  return 0;
}

int rw_rng_counter(uint64_t step, uint32_t stage, uint64_t block, uint32_t stream, uint32_t ctr[4])
{
  RW_CHECK(ctr, RW_ERR_ARG, "rw_rng_counter: ctr is NULL");
  RW_CHECK(block < RW_RNG_INDEX_LIMIT / 2, RW_ERR_ARG,
           "rw_rng_counter: block %llu is past the noise counter's limit 2^48 (global index "
           "2^49)",
           (unsigned long long)block);
  RW_CALL(rw_rng_check(__func__, step, stage, 0, stream));
  ctr[0] = (uint32_t)block;
  ctr[1] = (uint32_t)(block >> 32) | (stage << 16);
  ctr[2] = (uint32_t)step;
  ctr[3] = (uint32_t)(step >> 32) | (stream << 16);
  return 0;
}

int rw_rng_uniform2(uint64_t seed, uint64_t step, uint32_t stage, uint64_t block, uint32_t stream,
                    double out[2])
{
  uint32_t ctr[4], x[4];
  RW_CHECK(out, RW_ERR_ARG, "rw_rng_uniform2: out is NULL");
  RW_CALL(rw_rng_counter(step, stage, block, stream, ctr));
  rw_philox4x32_10(ctr, seed, x);
  out[0] = rw_rng_u01(x[0], x[1]);
  out[1] = rw_rng_u01(x[2], x[3]);
  return 0;
}

int rw_rng_uniform(uint64_t seed, uint64_t step, uint32_t stage, uint64_t index, uint32_t stream,
                   double *out)
{
  double u[2];
  RW_CHECK(out, RW_ERR_ARG, "rw_rng_uniform: out is NULL");
  RW_CALL(rw_rng_uniform2(seed, step, stage, index >> 1, stream, u));
  *out = u[index & 1];
  return 0;
}

int rw_rng_normal(uint64_t seed, uint64_t step, uint32_t stage, uint64_t index, uint32_t stream,
                  double *out)
{
  double u[2], z[2];
  RW_CHECK(out, RW_ERR_ARG, "rw_rng_normal: out is NULL");
  RW_CALL(rw_rng_uniform2(seed, step, stage, index >> 1, stream, u));
  rw_rng_box_muller(u[0], u[1], &z[0], &z[1]);
  *out = z[index & 1];
  return 0;
}

/* Uniforms of blocks [b0, b0 + nb) (nb <= RW_RNG_CHUNK) into u[0 .. 2 nb): the rounds run
 * lane-parallel over arrays, a loop shape the compiler vectorises (32x32->64 multiplies). The
 * integer results equal rw_philox4x32_10's for each block. */
static void rw_rng_chunk(uint64_t seed, uint32_t c1hi, uint32_t c2, uint32_t c3, uint64_t b0,
                         int nb, double *u)
{
  uint32_t x0[RW_RNG_CHUNK], x1[RW_RNG_CHUNK], x2[RW_RNG_CHUNK], x3[RW_RNG_CHUNK];
  for (int i = 0; i < nb; i++) {
    uint64_t b = b0 + (uint64_t)i;
    x0[i] = (uint32_t)b;
    x1[i] = (uint32_t)(b >> 32) | c1hi;
    x2[i] = c2;
    x3[i] = c3;
  }
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    for (int i = 0; i < nb; i++)
      philox_round(&x0[i], &x1[i], &x2[i], &x3[i], k0, k1);
  }
  for (int i = 0; i < nb; i++) {
    u[2 * i] = rw_rng_u01(x0[i], x1[i]);
    u[2 * i + 1] = rw_rng_u01(x2[i], x3[i]);
  }
}

/* Common driver of the two fills: blocks covering [first, first + n) chunk by chunk, the
 * in-range part copied to out. `normal` selects the Box-Muller transform. */
static int rw_rng_fill(const char *func, int normal, uint64_t seed, uint64_t step, uint32_t stage,
                       uint32_t stream, uint64_t first, size_t n, double *out)
{
  RW_CHECK(n == 0 || out, RW_ERR_ARG, "%s: out is NULL for %zu entries", func, n);
  RW_CHECK(first < RW_RNG_INDEX_LIMIT && (uint64_t)n <= RW_RNG_INDEX_LIMIT - first, RW_ERR_ARG,
           "%s: global index range [%llu, %llu + %zu) is past the noise counter's limit 2^49", func,
           (unsigned long long)first, (unsigned long long)first, n);
  RW_CALL(rw_rng_check(func, step, stage, first + n, stream));
  if (n == 0) return 0;
  const uint32_t c1hi = stage << 16;
  const uint32_t c2 = (uint32_t)step;
  const uint32_t c3 = (uint32_t)(step >> 32) | (stream << 16);
  const uint64_t last = first + n; /* exclusive */
  const uint64_t b_end = (last + 1) >> 1;
  double u[2 * RW_RNG_CHUNK];
  for (uint64_t b0 = first >> 1; b0 < b_end; b0 += RW_RNG_CHUNK) {
    int nb = (int)(b_end - b0 < RW_RNG_CHUNK ? b_end - b0 : RW_RNG_CHUNK);
    rw_rng_chunk(seed, c1hi, c2, c3, b0, nb, u);
    if (normal)
      for (int i = 0; i < nb; i++)
        rw_rng_box_muller(u[2 * i], u[2 * i + 1], &u[2 * i], &u[2 * i + 1]);
    /* Indices 2 b0 .. 2 (b0 + nb) - 1 are in u; copy those inside [first, last). */
    uint64_t lo = 2 * b0 < first ? first : 2 * b0;
    uint64_t hi = 2 * (b0 + (uint64_t)nb) > last ? last : 2 * (b0 + (uint64_t)nb);
    for (uint64_t i = lo; i < hi; i++)
      out[i - first] = u[i - 2 * b0];
  }
  return 0;
}

int rw_rng_uniform_fill(uint64_t seed, uint64_t step, uint32_t stage, uint32_t stream,
                        uint64_t first, size_t n, double *out)
{
  RW_CALL(rw_rng_fill(__func__, 0, seed, step, stage, stream, first, n, out));
  return 0;
}

int rw_rng_normal_fill(uint64_t seed, uint64_t step, uint32_t stage, uint32_t stream,
                       uint64_t first, size_t n, double *out)
{
  RW_CALL(rw_rng_fill(__func__, 1, seed, step, stage, stream, first, n, out));
  return 0;
}
