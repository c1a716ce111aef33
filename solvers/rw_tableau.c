/* Butcher tableaux of the built-in explicit Runge-Kutta methods.
 * Sources: Hairer, Norsett & Wanner, Solving ODEs I (2nd ed.), Sec. II.1 and II.5
 * (Euler, Heun, classic RK4, Kutta's 3/8 rule, Dormand-Prince 5(4) with its embedded
 * 4th-order weights); Shu & Osher, J. Comput. Phys. 77 (1988) for SSPRK3. */
#include "rewind/rw_stepper.h"

#include <stddef.h>
#include <string.h>

static const double euler_c[] = {0.0};
static const double euler_a[] = {0.0};
static const double euler_b[] = {1.0};

static const double heun_c[] = {0.0, 1.0};
static const double heun_a[] = {0.0, 0.0, 1.0, 0.0};
static const double heun_b[] = {0.5, 0.5};

static const double ssp3_c[] = {0.0, 1.0, 0.5};
static const double ssp3_a[] = {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.25, 0.25, 0.0};
static const double ssp3_b[] = {1.0 / 6.0, 1.0 / 6.0, 2.0 / 3.0};

static const double rk4_c[] = {0.0, 0.5, 0.5, 1.0};
static const double rk4_a[] = {0, 0, 0, 0, 0.5, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, 1.0, 0};
static const double rk4_b[] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};

static const double rk38_c[] = {0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0};
static const double rk38_a[] = {0,          0,   0, 0, 1.0 / 3.0, 0,    0,   0,
                                -1.0 / 3.0, 1.0, 0, 0, 1.0,       -1.0, 1.0, 0};
static const double rk38_b[] = {0.125, 0.375, 0.375, 0.125};

static const double dp5_c[] = {0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0};
static const double dp5_a[] = {0,
                               0,
                               0,
                               0,
                               0,
                               0,
                               0,
                               1.0 / 5.0,
                               0,
                               0,
                               0,
                               0,
                               0,
                               0,
                               3.0 / 40.0,
                               9.0 / 40.0,
                               0,
                               0,
                               0,
                               0,
                               0,
                               44.0 / 45.0,
                               -56.0 / 15.0,
                               32.0 / 9.0,
                               0,
                               0,
                               0,
                               0,
                               19372.0 / 6561.0,
                               -25360.0 / 2187.0,
                               64448.0 / 6561.0,
                               -212.0 / 729.0,
                               0,
                               0,
                               0,
                               9017.0 / 3168.0,
                               -355.0 / 33.0,
                               46732.0 / 5247.0,
                               49.0 / 176.0,
                               -5103.0 / 18656.0,
                               0,
                               0,
                               35.0 / 384.0,
                               0,
                               500.0 / 1113.0,
                               125.0 / 192.0,
                               -2187.0 / 6784.0,
                               11.0 / 84.0,
                               0};
static const double dp5_b[] = {35.0 / 384.0, 0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0,
                               11.0 / 84.0,  0};
static const double dp5_bhat[] = {
    5179.0 / 57600.0, 0,         7571.0 / 16695.0, 393.0 / 640.0, -92097.0 / 339200.0,
    187.0 / 2100.0,   1.0 / 40.0};

static const rw_tableau rw_tableaux[] = {
    {"euler", "forward Euler, order 1", 1, 1, 0, euler_c, euler_a, euler_b, NULL},
    {"heun", "Heun's method (explicit trapezoid), order 2", 2, 2, 0, heun_c, heun_a, heun_b, NULL},
    {"ssprk3", "Shu-Osher strong-stability-preserving RK, order 3", 3, 3, 0, ssp3_c, ssp3_a, ssp3_b,
     NULL},
    {"rk4", "classic Runge-Kutta, order 4", 4, 4, 0, rk4_c, rk4_a, rk4_b, NULL},
    {"rk38", "Kutta's 3/8 rule, order 4", 4, 4, 0, rk38_c, rk38_a, rk38_b, NULL},
    {"dopri5", "Dormand-Prince 5(4), fixed step uses the 5th-order weights", 7, 5, 4, dp5_c, dp5_a,
     dp5_b, dp5_bhat},
};

const rw_tableau *rw_tableau_get(int i)
{
  if (i < 0 || i >= (int)(sizeof rw_tableaux / sizeof rw_tableaux[0])) return NULL;
  return &rw_tableaux[i];
}

const rw_tableau *rw_tableau_find(const char *name)
{
  for (int i = 0; rw_tableau_get(i); i++)
    if (name && strcmp(rw_tableaux[i].name, name) == 0) return &rw_tableaux[i];
  return NULL;
}

const char *rw_tableau_names(void) { return "euler, heun, ssprk3, rk4, rk38, dopri5"; }
