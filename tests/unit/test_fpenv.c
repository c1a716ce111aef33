/* rw_fp_flush_subnormals (rw_context.h): with it on, a result below DBL_MIN is 0 (flush to
 * zero) and a subnormal operand reads as 0 (denormals are zero); off again, IEEE gradual
 * underflow is back; the query agrees. Criterion runs each test in its own process, so the
 * setting cannot leak into other tests. */
#include "rewind/rw_context.h"
#include "rw_test.h"

#include <float.h>

static double scaled(double x, double s)
{
  volatile double a = x, b = s;
  return a * b;
}

Test(fpenv, flush_subnormals_on_and_off)
{
#if defined(__x86_64__) || defined(__aarch64__)
  const double sub = DBL_MIN / 4.0; /* a subnormal constant, exact */
  cr_assert(scaled(DBL_MIN, 0.25) == sub && sub > 0.0, "IEEE default: gradual underflow");
  cr_assert(!rw_fp_subnormals_flushed());
  RW_TEST_OK(rw_fp_flush_subnormals(1));
  cr_assert(rw_fp_subnormals_flushed());
  cr_assert(scaled(DBL_MIN, 0.25) == 0.0, "flush to zero: a subnormal result must be 0");
  cr_assert(scaled(sub, 4.0) == 0.0, "denormals are zero: a subnormal operand must read as 0");
  cr_assert(scaled(DBL_MIN, 2.0) == 2.0 * DBL_MIN, "normal numbers are untouched");
  RW_TEST_OK(rw_fp_flush_subnormals(0));
  cr_assert(!rw_fp_subnormals_flushed());
  cr_assert(scaled(DBL_MIN, 0.25) == sub, "off again: gradual underflow is back");
  cr_assert(scaled(sub, 4.0) == DBL_MIN);
#else
  cr_skip_test("flushing subnormals is implemented for x86-64 and aarch64 only");
#endif
}
