/* BLAS threads and a description of the kernels (see rw_blas.h). */
#include "rewind/rw_blas.h"

#include "rewind/rw_error.h"
#include "rw_smallgemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* OpenBLAS's own entry points, not in cblas.h; weak so that another CBLAS links too. */
extern void openblas_set_num_threads(int) __attribute__((weak));
extern char *openblas_get_corename(void) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

int rw_blas_threads(void) { return openblas_get_num_threads ? openblas_get_num_threads() : 1; }

int rw_blas_set_threads(int threads)
{
  if (threads < 1) return RW_ERR_ARG;
  if (openblas_set_num_threads) openblas_set_num_threads(threads);
  return RW_SUCCESS;
}

/* OpenBLAS's x86-64 dynamic dispatch (driver/others/dynamic.c) returns its oldest kernels for
 * a CPU model its table does not list: Prescott (SSE3) for an unknown Intel model, Barcelona
 * or Opteron for AMD, Katmai and the like on older releases. OpenBLAS 0.3.21 (Debian 12)
 * does so on Intel's Emerald Rapids (family 6, model 0xCF), where its square DGEMM then runs
 * at 15.8 GFLOP/s against 56-58 with the SkylakeX/Cooperlake kernels (bench_dgemm,
 * 2026-11-28). */
const char *rw_blas_better_core(const char *core, unsigned isa)
{
  static const char *const fallbacks[] = {
      "Prescott",     "Katmai", "Coppermine", "Northwood",  "Banias",  "Athlon",   "Opteron",
      "Opteron_SSE3", "Core2",  "Penryn",     "Dunnington", "Nehalem", "Barcelona"};
  if (!core) return NULL;
  int fallback = 0;
  for (size_t k = 0; k < sizeof fallbacks / sizeof fallbacks[0]; k++)
    if (strcasecmp(core, fallbacks[k]) == 0) fallback = 1;
  if (!fallback) return NULL;
  if (isa & RW_ISA_AVX512) return "SkylakeX";
  if (isa & RW_ISA_AVX2) return "Haswell";
  return NULL;
}

unsigned rw_cpu_isa(void)
{
  unsigned isa = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  int fma = __builtin_cpu_supports("fma");
  if (fma && __builtin_cpu_supports("avx2")) isa |= RW_ISA_AVX2;
  if (fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    isa |= RW_ISA_AVX512;
#endif
  return isa;
}

const char *rw_blas_advice(void)
{
  static char buf[320];
  if (!openblas_get_corename) return NULL;
  const char *env = getenv("OPENBLAS_CORETYPE");
  if (env && env[0]) return NULL; /* the site chose */
  const char *core = openblas_get_corename();
  const char *better = rw_blas_better_core(core, rw_cpu_isa());
  if (!better) return NULL;
  snprintf(buf, sizeof buf,
           "OpenBLAS chose its generic %s kernels: it does not know this CPU, which has %s. "
           "Its products then run several times slower; OPENBLAS_CORETYPE=%s in the "
           "environment of every rank (mpirun -x OPENBLAS_CORETYPE=%s) selects the faster ones",
           core, better[0] == 'S' ? "AVX-512" : "AVX2", better, better);
  return buf;
}

void rw_blas_describe(char *buf, size_t len)
{
  if (!openblas_get_corename) {
    snprintf(buf, len, "CBLAS (not OpenBLAS)");
    return;
  }
  const char *core = openblas_get_corename();
  const char *env = getenv("OPENBLAS_CORETYPE");
  if (env && env[0])
    snprintf(buf, len, "OpenBLAS, %s kernels (OPENBLAS_CORETYPE=%s)", core ? core : "unknown", env);
  else if (rw_blas_advice())
    snprintf(buf, len, "OpenBLAS, %s kernels (detected, a fallback: see the warning)",
             core ? core : "unknown");
  else
    snprintf(buf, len, "OpenBLAS, %s kernels (detected)", core ? core : "unknown");
}

const char *rw_blas_small_describe(long threads)
{
  static char buf[160];
  if (!rw_sgemm_available())
    snprintf(buf, sizeof buf, "BLAS (%s)", rw_sgemm_describe());
  else if (threads != 1)
    snprintf(buf, sizeof buf,
             "%s for layers up to %d x %d, threaded BLAS for larger ones (%ld threads)",
             rw_sgemm_describe(), RW_SGEMM_THREADED_MAX_SIDE, RW_SGEMM_THREADED_MAX_SIDE, threads);
  else
    snprintf(buf, sizeof buf, "%s", rw_sgemm_describe());
  return buf;
}
