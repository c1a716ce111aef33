/* Heat's rows in GCC's vector types, included by rw_heat.c once per ISA with HEAT_VW (doubles
 * per vector: 8, 4 or 2), HEAT_ISA(name) (the instantiation's name for `name`) and HEAT_TARGET
 * (its target attribute) set; RW_ISA_CALL picks one at run time (rw_kernels.h). Every operation
 * is per lane and the source's lane sums keep HEAT_LANES logical lanes at every width, so the
 * width changes no bit. The names below are this instantiation's (undefined at the end). */
#define heat_v          HEAT_ISA(heat_v)
#define heat_vu         HEAT_ISA(heat_vu)
#define heat_row_vec    HEAT_ISA(heat_row_vec)
#define heat_face_below HEAT_ISA(heat_face_below)
#define heat_row_run    HEAT_ISA(heat_row_run)
#define heat_row3       HEAT_ISA(heat_row3)
#define heat_row2       HEAT_ISA(heat_row2)
#define heat_row_vec_y  HEAT_ISA(heat_row_vec_y)
#define heat_row_run_y  HEAT_ISA(heat_row_run_y)
#define heat_layer3     HEAT_ISA(heat_layer3)
#define heat_adj_vec    HEAT_ISA(heat_adj_vec)
#define heat_adj_body   HEAT_ISA(heat_adj_body)
#define heat_adj_row    HEAT_ISA(heat_adj_row)

/* Vectors of HEAT_VW nodes, and the move of a vector of faces up one lane (the last lane of the
 * previous vector moved in); HEAT_NEXT: the vector's lanes moved down one, the lane of b moved
 * in at the top. */
typedef double heat_v __attribute__((vector_size(8 * HEAT_VW)));
typedef double heat_vu __attribute__((vector_size(8 * HEAT_VW), aligned(8)));
#define HEAT_LD(p) (*(const heat_vu *)(p))
#if HEAT_VW == 8
#define HEAT_UP(prev, cur) __builtin_shufflevector((prev), (cur), 7, 8, 9, 10, 11, 12, 13, 14)
#define HEAT_NEXT(a, b)    __builtin_shufflevector((a), (b), 1, 2, 3, 4, 5, 6, 7, 8)
#elif HEAT_VW == 4
#define HEAT_UP(prev, cur) __builtin_shufflevector((prev), (cur), 3, 4, 5, 6)
#define HEAT_NEXT(a, b)    __builtin_shufflevector((a), (b), 1, 2, 3, 4)
#elif HEAT_VW == 2
#define HEAT_UP(prev, cur) __builtin_shufflevector((prev), (cur), 1, 2)
#define HEAT_NEXT(a, b)    __builtin_shufflevector((a), (b), 1, 2)
#else
#error "HEAT_VW is 8, 4 or 2"
#endif
_Static_assert(HEAT_LANES % HEAT_VW == 0, "a lane set is whole vectors");

/* heat_row_body's nodes [o, o + HEAT_VW) as one vector (x is the fastest dimension: sd[0] is
 * 1), with each x face's flux formed once:
 * node i's high face X = (k_i + k_{i+1}) (u_{i+1} - u_i), which node i + 1 takes as its low
 * face moved up one lane (xp: the previous vector's faces, its last lane the face below o).
 * heat_row_body's low term (k_i + k_{i-1}) (u_{i-1} - u_i) is -X of that face exactly (a sum
 * commutes, a difference and a product negate exactly), but for the sign of a zero where
 * u_{i-1} = u_i; a zero whose sign differs changes the x sum only when that sum is zero, and the
 * x term is the first added to f = +0, which then holds +0 either way: the same bits. */
static inline __attribute__((always_inline)) void
heat_row_vec(const double *restrict gk, const double *restrict gu, const double *restrict sx,
             double syz, double q, double *restrict out, long o, heat_v *xp, const size_t sd[3],
             const double c[3], const int three, const int has_src)
{
  const size_t s1 = sd[1], s2 = sd[2];
  const heat_v ki = HEAT_LD(gk + o), ui = HEAT_LD(gu + o);
  const heat_v x = (ki + HEAT_LD(gk + o + 1)) * (HEAT_LD(gu + o + 1) - ui);
  heat_v fi = (heat_v){0};
  fi += c[0] * (x - HEAT_UP(*xp, x));
  fi += c[1] * ((ki + HEAT_LD(gk + o - s1)) * (HEAT_LD(gu + o - s1) - ui) +
                (ki + HEAT_LD(gk + o + s1)) * (HEAT_LD(gu + o + s1) - ui));
  if (three)
    fi += c[2] * ((ki + HEAT_LD(gk + o - s2)) * (HEAT_LD(gu + o - s2) - ui) +
                  (ki + HEAT_LD(gk + o + s2)) * (HEAT_LD(gu + o + s2) - ui));
  *(heat_vu *)(out + o) = has_src ? fi + q * (HEAT_LD(sx + o) * syz) : fi;
  *xp = x;
}

/* The face below node o, as node o - 1 forms it, in the last lane of *xp. */
static inline __attribute__((always_inline)) void
heat_face_below(const double *gk, const double *gu, long o, heat_v *xp)
{
  *xp = (heat_v){0};
  (*xp)[HEAT_VW - 1] = (gk[o - 1] + gk[o]) * (gu[o] - gu[o - 1]);
}

/* A row in whole vectors (heat_row_vec), the last HEAT_VW nodes again as one vector (a constant
 * count) rather than up to HEAT_VW - 1 nodes one by one. The overlap is computed again with the
 * same operations on the same inputs (out is written, never read), so the values are the same
 * bits. The interior rows are n - 2 nodes long (126 at 128^3: 6 scalar nodes per row, about a
 * third of the row's time in `perf`); only rows shorter than HEAT_VW (the frame's thin slabs)
 * still go node by node. */
static inline __attribute__((always_inline)) void
heat_row_run(const double *restrict gk, const double *restrict gu, const double *restrict sx,
             double syz, double q, double *restrict out, long m, const size_t sd[3],
             const double c[3], const int three, const int has_src)
{
  if (m < HEAT_VW) {
    heat_row_body(gk, gu, sx, syz, q, out, m, sd, c, three, has_src);
    return;
  }
  if (!three) { /* in 2-D the shared faces measured slower (rewind-heat -dim 2 -n 1024 forward:
                 * 1.10-1.13 against 0.93-1.01 s): the compiler's loop, the last vector again */
    const long mv = m / HEAT_VW * HEAT_VW;
    heat_row_body(gk, gu, sx, syz, q, out, mv, sd, c, 0, has_src);
    if (mv < m)
      heat_row_body(gk + m - HEAT_VW, gu + m - HEAT_VW, has_src ? sx + m - HEAT_VW : NULL, syz, q,
                    out + m - HEAT_VW, HEAT_VW, sd, c, 0, has_src);
    return;
  }
  heat_v xp;
  heat_face_below(gk, gu, 0, &xp);
  long o = 0;
  for (; o + HEAT_VW <= m; o += HEAT_VW)
    heat_row_vec(gk, gu, sx, syz, q, out, o, &xp, sd, c, three, has_src);
  if (o < m) {
    o = m - HEAT_VW;
    heat_face_below(gk, gu, o, &xp);
    heat_row_vec(gk, gu, sx, syz, q, out, o, &xp, sd, c, three, has_src);
  }
}

HEAT_TARGET static void heat_row3(const double *restrict gk, const double *restrict gu,
                                  const double *restrict sx, double syz, double q,
                                  double *restrict out, long m, const size_t sd[3],
                                  const double c[3])
{
  if (sx)
    heat_row_run(gk, gu, sx, syz, q, out, m, sd, c, 1, 1);
  else
    heat_row_run(gk, gu, NULL, 0.0, q, out, m, sd, c, 1, 0);
}

HEAT_TARGET static void heat_row2(const double *restrict gk, const double *restrict gu,
                                  const double *restrict sx, double syz, double q,
                                  double *restrict out, long m, const size_t sd[3],
                                  const double c[3])
{
  if (sx)
    heat_row_run(gk, gu, sx, syz, q, out, m, sd, c, 0, 1);
  else
    heat_row_run(gk, gu, NULL, 0.0, q, out, m, sd, c, 0, 0);
}

/* A layer's rows of a 3-D box with each y face's flux formed once too: row j's high y face
 * Y = (k_i + k_{i+s}) (u_{i+s} - u_i) (s = sd[1]) is kept in fy and row j + 1 takes it as its
 * low face. heat_row_body's low term (k_i + k_{i-s}) (u_{i-s} - u_i) is -Y of that face exactly
 * but for the sign of a zero where u_{i-s} = u_i, and c_1 (low + high) = c_1 (high - Y) in
 * IEEE arithmetic (b - a is b + (-a), and a sum commutes). A zero whose sign differs changes
 * high - Y only when high is a zero of the other sign, and then the y term is a zero added to
 * f, which after the x term is a sum that started at +0: +0 + (-0) and +0 + (+0) are both +0,
 * and a nonzero f is unchanged by either. So the bits are heat_row_body's (`test_heat` compares
 * this loop with the device bodies' node-by-node formula, `device_emulated` with the CPU run).
 * The first row of each call forms its low faces as heat_row_body does. */
static inline __attribute__((always_inline)) void
heat_row_vec_y(const double *restrict gk, const double *restrict gu, const double *restrict sx,
               double syz, double q, double *restrict out, long o, heat_v *xp, const size_t sd[3],
               const double c[3], const int has_src, const int first, const heat_v *yin,
               double *restrict yout)
{
  const size_t s1 = sd[1], s2 = sd[2];
  const heat_v ki = HEAT_LD(gk + o), ui = HEAT_LD(gu + o);
  const heat_v x = (ki + HEAT_LD(gk + o + 1)) * (HEAT_LD(gu + o + 1) - ui);
  const heat_v y = (ki + HEAT_LD(gk + o + s1)) * (HEAT_LD(gu + o + s1) - ui);
  heat_v fi = (heat_v){0};
  fi += c[0] * (x - HEAT_UP(*xp, x));
  if (first)
    fi += c[1] * ((ki + HEAT_LD(gk + o - s1)) * (HEAT_LD(gu + o - s1) - ui) + y);
  else
    fi += c[1] * (y - *yin);
  fi += c[2] * ((ki + HEAT_LD(gk + o - s2)) * (HEAT_LD(gu + o - s2) - ui) +
                (ki + HEAT_LD(gk + o + s2)) * (HEAT_LD(gu + o + s2) - ui));
  *(heat_vu *)(out + o) = has_src ? fi + q * (HEAT_LD(sx + o) * syz) : fi;
  *(heat_vu *)yout = y;
  *xp = x;
}

/* One row of m >= HEAT_VW nodes as heat_row_run's 3-D loop, its high y faces into fy[0, m) and,
 * unless first, its low ones from there (the previous row's). The last vector, computed again
 * where m is not a multiple of HEAT_VW, takes the previous row's faces read before the row
 * overwrote them. */
static inline __attribute__((always_inline)) void
heat_row_run_y(const double *restrict gk, const double *restrict gu, const double *restrict sx,
               double syz, double q, double *restrict out, long m, const size_t sd[3],
               const double c[3], const int has_src, const int first, double *restrict fy)
{
  const heat_v tail = first ? (heat_v){0} : HEAT_LD(fy + m - HEAT_VW);
  heat_v xp;
  heat_face_below(gk, gu, 0, &xp);
  long o = 0;
  for (; o + HEAT_VW <= m; o += HEAT_VW) {
    const heat_v yin = first ? (heat_v){0} : HEAT_LD(fy + o);
    heat_row_vec_y(gk, gu, sx, syz, q, out, o, &xp, sd, c, has_src, first, &yin, fy + o);
  }
  if (o < m) {
    o = m - HEAT_VW;
    heat_face_below(gk, gu, o, &xp);
    heat_row_vec_y(gk, gu, sx, syz, q, out, o, &xp, sd, c, has_src, first, &tail, fy + o);
  }
}

/* Rows [0, nj) of one layer of a 3-D box (row j at gk + j sd[1] and out + j os), m nodes each,
 * by heat_row_run_y in runs of up to HEAT_FY nodes along x (the last run takes up to HEAT_VW
 * more, so no run is shorter than a vector). The source's row j is sx[i] * (sy[j] * sz) (sx
 * NULL: none). */
#define HEAT_FY 512
HEAT_TARGET static void heat_layer3(const double *restrict gk, const double *restrict gu,
                                    const double *restrict sx, const double *restrict sy, double sz,
                                    double q, double *restrict out, long m, long nj, long os,
                                    const size_t sd[3], const double c[3])
{
  if (m < HEAT_VW || nj < 2) {
    for (long j = 0; j < nj; j++)
      heat_row3(gk + j * sd[1], gu + j * sd[1], sx, sx ? sy[j] * sz : 0.0, q, out + j * os, m, sd,
                c);
    return;
  }
  double fy[HEAT_FY + HEAT_VW];
  for (long x0 = 0; x0 < m;) {
    const long mc = m - x0 <= HEAT_FY + HEAT_VW ? m - x0 : HEAT_FY;
    for (long j = 0; j < nj; j++) {
      const double *k = gk + x0 + j * sd[1], *u = gu + x0 + j * sd[1];
      const double syz = sx ? sy[j] * sz : 0.0;
      double *f = out + x0 + j * os;
      if (j == 0 && sx)
        heat_row_run_y(k, u, sx + x0, syz, q, f, mc, sd, c, 1, 1, fy);
      else if (j == 0)
        heat_row_run_y(k, u, NULL, 0.0, q, f, mc, sd, c, 0, 1, fy);
      else if (sx)
        heat_row_run_y(k, u, sx + x0, syz, q, f, mc, sd, c, 1, 0, fy);
      else
        heat_row_run_y(k, u, NULL, 0.0, q, f, mc, sd, c, 0, 0, fy);
    }
    x0 += mc;
  }
}

/* The row's nodes in vectors of HEAT_VW, each x face's two products computed once and
 * shared by the face's two nodes. Node i's x terms are c0 (P + Q) in f and c0 (A + B) in g,
 * with Q = (k_i + k_{i+1}) (w_{i+1} - w_i) and B = (w_{i+1} - w_i) (u_{i+1} - u_i) its high
 * face's, and P = (k_i + k_{i-1}) (w_{i-1} - w_i), A = (w_{i-1} - w_i) (u_{i-1} - u_i) its low
 * face's, which node i - 1 has just formed as Q' = -P and B' = A: a sum is commutative, a
 * difference changes sign exactly when it is negated and a product with it, so P + Q is
 * Q - Q' and A is B' bit for bit, but for the sign of a zero: where w_{i-1} = w_i, P and A are
 * zeros whose sign can differ from -Q' and B'. Such a term is c0 times a zero whose sign can
 * differ only when the whole sum is zero, and it is the first added to f = +0 and subtracted
 * from g = +0, which gives +0 either way; so f and g keep heat_adj_node's bits. The low face of
 * the row's first node comes from its ghosts; the vector of low faces is the vector of high
 * faces moved up one lane, the last lane of the previous one moved in. */
/* The y faces the same way, through two row buffers (shy; heat_row_vec_y's scheme): node i's
 * high y face Q1 = (k_i + k_{i+s}) (w_{i+s} - w_i) and B1 = (w_{i+s} - w_i) (u_{i+s} - u_i) go
 * to fq and fb, where the next row (one layer up along y) reads them as its low faces: its
 * B-term (w_{i-s} - w_i) (u_{i-s} - u_i) is the previous row's B1 bit for bit (both factors
 * negated), its f-term (k_i + k_{i-s}) (w_{i-s} - w_i) is -Q1 but for the sign of a zero, which
 * changes the y sum only when that sum is zero, a zero then added to an f that holds no -0 after
 * its x term (as above): the same bits. Without shy the low faces are formed from the rows (the
 * first row of a run); the high faces are stored either way. pf: heat_adj_kernel's prefetches
 * (NULL: none), a line per vector of the row, issued in the loop among the arithmetic: pf[0]
 * to L1, pf[1] (written) and pf[2] to L2, pf[2] only with pf[1]. */
static inline __attribute__((always_inline)) long
heat_adj_vec(const double *restrict gk, const double *restrict gw, const double *restrict uc,
             const double *restrict um1, const double *restrict up1, const double *restrict um2,
             const double *restrict up2, const double *restrict sx, const double syz,
             double *restrict acc, double *restrict out, double *restrict fo, double *restrict fq,
             double *restrict fb, long m, const size_t sd[3], const double c[3], const int three,
             const int ws, const int shy, const double ulo, const double uhi, const int ghu,
             const double *const *pf)
{
  const size_t s1 = sd[1], s2 = sd[2];
  const double *pfy = pf[0], *pff = pf[1], *pfk = pf[2];
  const heat_v SYZ = (heat_v){0} + syz;
  const double c0 = c[0], c1 = c[1], c2 = c[2];
  enum { NA = HEAT_LANES / HEAT_VW }; /* vectors per lane set */
  const long mv = m / HEAT_LANES * HEAT_LANES;
  if (mv == 0) return 0;
  heat_v qp = (heat_v){0}, bp = (heat_v){0}, A[NA];
  for (int h = 0; h < NA; h++)
    A[h] = ws ? HEAT_LD(acc + h * HEAT_VW) : (heat_v){0};
  { /* the first node's low face, as node -1 would form it (its only lane read) */
    const double d = gw[0] - gw[-1];
    qp[HEAT_VW - 1] = (gk[-1] + gk[0]) * d, bp[HEAT_VW - 1] = d * (uc[0] - ulo);
  }
  for (long b = 0; b < mv; b += HEAT_LANES)
    for (int h = 0; h < NA; h++) { /* lane set b's vector h: its own sums A[h] */
      const long i = b + h * HEAT_VW;
      if (h * HEAT_VW % 8 == 0) { /* a line (8 doubles) per prefetch */
        if (pfy) __builtin_prefetch(pfy + i, 0, 3);
        if (pff) __builtin_prefetch(pff + i, 1, 2), __builtin_prefetch(pfk + i, 0, 2);
      }
      const heat_v wi = HEAT_LD(gw + i), ki = HEAT_LD(gk + i), ui = HEAT_LD(uc + i);
      const heat_v dp0 = HEAT_LD(gw + i + 1) - wi;
      /* u_{i+1}: with ghu the row has no ghosts, and its last node's high neighbour is uhi */
      const heat_v un =
          ghu && i + HEAT_VW == m ? HEAT_NEXT(ui, (heat_v){0} + uhi) : HEAT_LD(uc + i + 1);
      const heat_v q = (ki + HEAT_LD(gk + i + 1)) * dp0, bb = dp0 * (un - ui);
      const heat_v qm = HEAT_UP(qp, q), am = HEAT_UP(bp, bb);
      const heat_v dp1 = HEAT_LD(gw + i + s1) - wi;
      const heat_v q1 = (ki + HEAT_LD(gk + i + s1)) * dp1, b1 = dp1 * (HEAT_LD(up1 + i) - ui);
      heat_v fi = (heat_v){0}, g = (heat_v){0};
      fi += c0 * (q - qm);
      if (shy) {
        fi += c1 * (q1 - HEAT_LD(fq + i));
      } else {
        const heat_v dm1 = HEAT_LD(gw + i - s1) - wi;
        fi += c1 * ((ki + HEAT_LD(gk + i - s1)) * dm1 + q1);
      }
      g -= c0 * (am + bb);
      if (shy) {
        g -= c1 * (HEAT_LD(fb + i) + b1);
      } else {
        const heat_v dm1 = HEAT_LD(gw + i - s1) - wi;
        g -= c1 * (dm1 * (HEAT_LD(um1 + i) - ui) + b1);
      }
      *(heat_vu *)(fq + i) = q1, *(heat_vu *)(fb + i) = b1;
      if (three) {
        const heat_v dm2 = HEAT_LD(gw + i - s2) - wi, dp2 = HEAT_LD(gw + i + s2) - wi;
        fi += c2 * ((ki + HEAT_LD(gk + i - s2)) * dm2 + (ki + HEAT_LD(gk + i + s2)) * dp2);
        g -= c2 * (dm2 * (HEAT_LD(um2 + i) - ui) + dp2 * (HEAT_LD(up2 + i) - ui));
      }
      *(heat_vu *)(out + i) = fi;
      *(heat_vu *)(fo + i) = HEAT_LD(fo + i) + g;
      if (ws) A[h] += wi * (HEAT_LD(sx + i) * SYZ);
      qp = q, bp = bb;
    }
  for (int h = 0; ws && h < NA; h++)
    *(heat_vu *)(acc + h * HEAT_VW) = A[h];
  return mv;
}

/* The row; with the source parameter differentiated (ws), its lanes too (heat_ws_row's sums,
 * lane l of the row's set taking nodes l, l + HEAT_LANES, ...), in the same loop. The source's
 * row is not read: its node i is formed as sx[i] * syz (sx the shape's factor along the row,
 * syz the product of the row's other two, heat_fill_shape), the product the shape's array holds
 * bit for bit, so the sums are the stage-by-stage VJP's. Whole vectors first (heat_adj_vec),
 * the rest node by node. */
static inline __attribute__((always_inline)) void
heat_adj_body(const double *restrict gk, const double *restrict gw, const double *restrict uc,
              const double *restrict um1, const double *restrict up1, const double *restrict um2,
              const double *restrict up2, const double *restrict sx, const double syz,
              double *restrict lanes, double *restrict out, double *restrict fo,
              double *restrict fq, double *restrict fb, long m, const size_t sd[3],
              const double c[3], const int three, const int ws, const int shy, const double ulo,
              const double uhi, const int ghu, const double *const *pf)
{
  double acc[HEAT_LANES];
  for (int l = 0; ws && l < HEAT_LANES; l++)
    acc[l] = lanes[l];
  const long b = heat_adj_vec(gk, gw, uc, um1, up1, um2, up2, sx, syz, acc, out, fo, fq, fb, m, sd,
                              c, three, ws, shy, ulo, uhi, ghu, pf);
  for (long q = b; q < m; q += HEAT_LANES) { /* the prefetches past the vectors' lines */
    if (pf[0]) __builtin_prefetch(pf[0] + q, 0, 3);
    if (pf[1]) __builtin_prefetch(pf[1] + q, 1, 2), __builtin_prefetch(pf[2] + q, 0, 2);
  }
  if (!ws) {
    for (long i = b; i < m; i++)
      heat_adj_node(gk, gw, uc, um1, up1, um2, up2, out, fo, i, sd, c, three);
    return;
  }
  for (int l = 0; b + l < m; l++) {
    heat_adj_node(gk, gw, uc, um1, up1, um2, up2, out, fo, b + l, sd, c, three);
    acc[l] += gw[b + l] * (sx[b + l] * syz);
  }
  for (int l = 0; l < HEAT_LANES; l++)
    lanes[l] = acc[l];
}

/* One row (three: 3-D; shy: the low y faces from fq and fb, the previous row's high ones), the
 * variants chosen once per row. */
#define HEAT_ADJ_BODY(three, ws, shy)                                                              \
  heat_adj_body(gk, gw, uc, um1, up1, (three) ? um2 : NULL, (three) ? up2 : NULL,                  \
                (ws) ? sx : NULL, syz, (ws) ? lanes : NULL, out, fo, fq, fb, m, sd, c, three, ws,  \
                shy, ulo, uhi, ghu, pf)
HEAT_TARGET static void
heat_adj_row(const double *restrict gk, const double *restrict gw, const double *restrict uc,
             const double *restrict um1, const double *restrict up1, const double *restrict um2,
             const double *restrict up2, const double *restrict sx, double syz,
             double *restrict lanes, double *restrict out, double *restrict fo, double *restrict fq,
             double *restrict fb, long m, const size_t sd[3], const double c[3], int three, int shy,
             double ulo, double uhi, int ghu, const double *const *pf)
{
  if (three && lanes)
    shy ? HEAT_ADJ_BODY(1, 1, 1) : HEAT_ADJ_BODY(1, 1, 0);
  else if (three)
    shy ? HEAT_ADJ_BODY(1, 0, 1) : HEAT_ADJ_BODY(1, 0, 0);
  else if (lanes)
    shy ? HEAT_ADJ_BODY(0, 1, 1) : HEAT_ADJ_BODY(0, 1, 0);
  else
    shy ? HEAT_ADJ_BODY(0, 0, 1) : HEAT_ADJ_BODY(0, 0, 0);
}
#undef HEAT_ADJ_BODY

#undef heat_v
#undef heat_vu
#undef heat_row_vec
#undef heat_face_below
#undef heat_row_run
#undef heat_row3
#undef heat_row2
#undef heat_row_vec_y
#undef heat_row_run_y
#undef heat_layer3
#undef heat_adj_vec
#undef heat_adj_body
#undef heat_adj_row
#undef HEAT_LD
#undef HEAT_UP
#undef HEAT_NEXT
#undef HEAT_FY
#undef HEAT_VW
#undef HEAT_ISA
#undef HEAT_TARGET
