/* Gray-Scott's rows in GCC's vector types, included by rw_grayscott.c once per ISA with GS_W
 * (doubles per vector: 8, 4 or 2), GS_ISA(name) (the instantiation's name for `name`) and
 * GS_TARGET (its target attribute) set; RW_ISA_CALL picks one at run time (rw_kernels.h). Every
 * operation is per lane, so the width changes no bit: GS_W / 2 nodes' (u, v) pairs a vector.
 * gs_vu is the same type for loads and stores at any double's address (GCC's vector types alias
 * their element type). The names below are this instantiation's (undefined at the end). */
#define gs_v            GS_ISA(gs_v)
#define gs_vu           GS_ISA(gs_vu)
#define gs_rhs_row_body GS_ISA(gs_rhs_row_body)
#define gs_rhs_row2     GS_ISA(gs_rhs_row2)
#define gs_rhs_row3     GS_ISA(gs_rhs_row3)
#define gs_vjp_in       GS_ISA(gs_vjp_in)
#define gs_vjp_k        GS_ISA(gs_vjp_k)
#define gs_vjp_coefs    GS_ISA(gs_vjp_coefs)
#define gs_vjp_load     GS_ISA(gs_vjp_load)
#define gs_vjp_store    GS_ISA(gs_vjp_store)
#define gs_vjp_rowv     GS_ISA(gs_vjp_rowv)
#define gs_vjp_rows     GS_ISA(gs_vjp_rows)

typedef double gs_v __attribute__((vector_size(8 * GS_W)));
typedef double gs_vu __attribute__((vector_size(8 * GS_W), aligned(8)));
#define GS_LD(p) (*(const gs_vu *)(p))
/* Lanes of a and b (0 to GS_W - 1 a's, the rest b's) as one vector, the pattern (i, j) repeated
 * for each node (i, j for the first node; +2 for each next one): a single shuffle or blend.
 * Written as initialisers ({x[0], x[0], x[2], x[2]}), GCC 12 built some of these element by
 * element (scalar extracts, unpacks and inserts, and 2.0 * y[0] as a scalar add). Moving lanes
 * is exact, so the bits are the initialiser's. The splats are initialisers too, not 0 + x (which
 * would turn -0 into +0). */
#if GS_W == 8
#define GS_SPLAT(x)   ((gs_v){(x), (x), (x), (x), (x), (x), (x), (x)})
#define GS_PAIR(a, b) ((gs_v){(a), (b), (a), (b), (a), (b), (a), (b)})
#define GS_SHUF(a, b, i, j)                                                                        \
  __builtin_shufflevector((a), (b), i, j, (i) + 2, (j) + 2, (i) + 4, (j) + 4, (i) + 6, (j) + 6)
#elif GS_W == 4
#define GS_SPLAT(x)         ((gs_v){(x), (x), (x), (x)})
#define GS_PAIR(a, b)       ((gs_v){(a), (b), (a), (b)})
#define GS_SHUF(a, b, i, j) __builtin_shufflevector((a), (b), i, j, (i) + 2, (j) + 2)
#elif GS_W == 2
#define GS_SPLAT(x)         ((gs_v){(x), (x)})
#define GS_PAIR(a, b)       ((gs_v){(a), (b)})
#define GS_SHUF(a, b, i, j) __builtin_shufflevector((a), (b), i, j)
#else
#error "GS_W is 8, 4 or 2"
#endif

/* One row of f: m nodes from ghosted index a (the first node), results to q; `three` is a
 * constant at each call site, so each row is a branch-free loop. The state keeps each node's
 * u and v side by side, and the row works on the pairs as they lie, a lane per entry: the
 * neighbour sums are the same flat loads for both species, and only u v^2 needs a node's u and
 * v duplicated within a 128-bit lane (per-node code made the compiler split the row into u and
 * v vectors and back: about 40 shuffles per four nodes). Every lane computes exactly gs_lap's
 * and the scalar form's operations in their order: - uvv as + (-1) uvv, - gk v as
 * + gk (-0 - v) (a sign change is exact, and x + (-y) rounds as x - y). Rows of fewer than
 * four nodes go through the scalar form. */
static inline __attribute__((always_inline)) void gs_rhs_row_body(const gs_coef *k,
                                                                  const double *restrict a,
                                                                  double *restrict q, long m,
                                                                  const int three)
{
  const double Du = k->Du, Dv = k->Dv, ga = k->ga, gk = k->gk, ih2 = k->ih2, nd = k->nd;
  const size_t sy = k->sy, sz = k->sz;
  const gs_v D = GS_PAIR(Du, Dv), S = GS_PAIR(-1.0, 1.0), G = GS_PAIR(ga, gk);
  const gs_v C = GS_PAIR(1.0, -0.0), ND = GS_SPLAT(nd), IH = GS_SPLAT(ih2);
  long i = 0;
  /* whole vectors; a row of at least four nodes ends with its last four again as one vector
   * (q is written, never read: the overlap gets the same bits), so only shorter rows take the
   * scalar form */
  for (int more = 2 * m >= GS_W; more; more = i < 2 * m) {
    if (i + GS_W > 2 * m) i = 2 * m - GS_W;
    const gs_v x = GS_LD(a + i);
    gs_v t = GS_LD(a + i - 2) + GS_LD(a + i + 2) + GS_LD(a + i - sy) + GS_LD(a + i + sy);
    if (three) t += GS_LD(a + i - sz) + GS_LD(a + i + sz);
    const gs_v uu = GS_SHUF(x, x, 0, 0), vv = GS_SHUF(x, x, 1, 1);
    const gs_v r = (D * ((t - ND * x) * IH) + S * (uu * vv * vv)) + G * (C - x);
    *(gs_vu *)(q + i) = r;
    i += GS_W;
  }
  for (; i < 2 * m; i += 2) {
    double u = a[i], v = a[i + 1], uvv = u * v * v;
    double tu = a[i - 2] + a[i + 2] + a[i - sy] + a[i + sy];
    double tv = a[i - 1] + a[i + 3] + a[i + 1 - sy] + a[i + 1 + sy];
    if (three) {
      tu += a[i - sz] + a[i + sz];
      tv += a[i + 1 - sz] + a[i + 1 + sz];
    }
    q[i] = Du * ((tu - nd * u) * ih2) - uvv + ga * (1.0 - u);
    q[i + 1] = Dv * ((tv - nd * v) * ih2) + uvv - gk * v;
  }
}

GS_TARGET static void gs_rhs_row2(const gs_coef *k, const double *restrict a, double *restrict q,
                                  long m)
{
  gs_rhs_row_body(k, a, q, m, 0);
}

GS_TARGET static void gs_rhs_row3(const gs_coef *k, const double *restrict a, double *restrict q,
                                  long m)
{
  gs_rhs_row_body(k, a, q, m, 1);
}

/* The loads and lane shuffles of gs_vjp_rowv's vector at interleaved index i (four nodes), and
 * its state VJP f stored to q (q = f, or q += f with add). The coefficients come as vectors
 * built once per row (gs_vjp_k): built from gs_coef in the loop, the compiler reloaded and
 * rebuilt them for every vector, the stores to q possibly aliasing them for it. */
typedef struct {
  gs_v x, yy, L, yv, wu, wv;
} gs_vjp_in;

typedef struct {
  gs_v ND, IH, K1, K2, D;
  size_t sy, sz;
} gs_vjp_k;

static inline __attribute__((always_inline)) gs_vjp_k gs_vjp_coefs(const gs_coef *k)
{
  const gs_vjp_k c = {GS_SPLAT(k->nd),
                      GS_SPLAT(k->ih2),
                      GS_PAIR(0.0, k->gk),
                      GS_PAIR(k->ga, -0.0),
                      GS_PAIR(k->Du, k->Dv),
                      k->sy,
                      k->sz};
  return c;
}

static inline __attribute__((always_inline)) gs_vjp_in gs_vjp_load(const gs_vjp_k *k,
                                                                   const double *restrict y,
                                                                   const double *restrict gw,
                                                                   long i, const int three)
{
  const size_t sy = k->sy, sz = k->sz;
  const gs_v x = GS_LD(gw + i), yy = GS_LD(y + i);
  gs_v t = GS_LD(gw + i - 2) + GS_LD(gw + i + 2) + GS_LD(gw + i - sy) + GS_LD(gw + i + sy);
  if (three) t += GS_LD(gw + i - sz) + GS_LD(gw + i + sz);
  const gs_vjp_in in = {x,
                        yy,
                        (t - k->ND * x) * k->IH,
                        GS_SHUF(yy, yy, 1, 1),
                        GS_SHUF(x, x, 0, 0),
                        GS_SHUF(x, x, 1, 1)};
  return in;
}

static inline __attribute__((always_inline)) void
gs_vjp_store(const gs_vjp_k *k, const gs_vjp_in *in, double *restrict q, long i, const int add)
{
  const gs_v mm = GS_SHUF(in->yy, 2.0 * in->yy, 1, GS_W), P = mm * in->yv;
  const gs_v f = ((P - k->K1) * in->wv - (P + k->K2) * in->wu) + k->D * in->L;
  *(gs_vu *)(q + i) = add ? GS_LD(q + i) + f : f;
}

/* The row (2-D or 3-D) on the interleaved pairs as they lie (as gs_rhs_row_body): four nodes per
 * vector, a lane per entry. L w is the same flat gather for both species; the reaction's transpose
 * (vv wv - (vv + ga) wu in a u lane, (uv2 - gk) wv - uv2 wu in a v lane) is one expression with P =
 * (v v | 2u v) per lane, its constants +0 / -0 where the scalar form has none (x - 0 and x + (-0)
 * are x exactly). With acc the parameter VJP's lane sums (node m of a block of GS_LANES adds to
 * lane m: u lu, v lv, wu (1 - u) and wv (0 - v)) are carried in vectors of (S_Du, S_Dv) and (S_g,
 * S_k) pairs for a block of 8 nodes (two vectors of each), loaded from acc at the row's start and
 * stored back before the scalar tail, so every sum adds the same terms in the same order as node by
 * node. pf (NULL: none) is the state row the caller reads next: a line of it is prefetched to
 * L2 per vector. In a sweep the stored stage state comes from memory (4 x 4 MB a step at
 * 512^2); the hardware's prefetchers alone left the step waiting for it (Gray-Scott 512^2: 5.1
 * ms an adjoint step against 3.3 with the stages in cache); spread through the row, the loads
 * arrive while the row computes (3.6-3.7 ms; one row ahead was best, a burst per row worse).
 * The prefetch changes no value. */
static inline __attribute__((always_inline)) void
gs_vjp_rowv(const gs_coef *k, const double *restrict y, const double *restrict gw,
            double *restrict q, long m, const int add, const int three, double *restrict acc,
            const double *pf)
{
  const gs_vjp_k kv = gs_vjp_coefs(k);
  const gs_v E1 = GS_PAIR(1.0, 0.0);
  enum { NPV = GS_W / 2, NV = GS_LANES / NPV }; /* nodes per vector, vectors per block */
  _Static_assert(2 * GS_LANES == NV * GS_W, "a pair of sums is NV vectors");
  gs_v A[NV], B[NV];
  if (acc)
    for (int v = 0; v < NV; v++)
      A[v] = GS_LD(acc + v * GS_W), B[v] = GS_LD(acc + 2 * GS_LANES + v * GS_W);
  long mv = m / GS_LANES * GS_LANES; /* nodes in whole blocks */
  for (long b = 0; b < mv; b += GS_LANES)
    for (int v = 0; v < NV; v++) {
      const long i = 2 * (b + NPV * v);
      if (pf) __builtin_prefetch(pf + i, 0, 2); /* a line of the next row per vector, to L2 */
      const gs_vjp_in in = gs_vjp_load(&kv, y, gw, i, three);
      if (q) gs_vjp_store(&kv, &in, q, i, add);
      if (acc) {
        A[v] += in.yy * in.L;
        B[v] += in.x * (E1 - in.yy);
      }
    }
  /* q = f alone (no lane sums, nothing added): the rest of the row in vectors too, the last
   * one overlapping the one before (q is written, never read: the same bits) */
  if (!acc && !add && q && m >= NPV && mv < m) {
    for (long n = mv; n < m; n += NPV) {
      const long i = 2 * (n + NPV > m ? m - NPV : n);
      if (pf) __builtin_prefetch(pf + i, 0, 2);
      const gs_vjp_in in = gs_vjp_load(&kv, y, gw, i, three);
      gs_vjp_store(&kv, &in, q, i, 0);
    }
    mv = m;
  }
  if (acc)
    for (int v = 0; v < NV; v++)
      *(gs_vu *)(acc + v * GS_W) = A[v], *(gs_vu *)(acc + 2 * GS_LANES + v * GS_W) = B[v];
  double lu, lv;
  for (long l = 0; mv + l < m; l++) { /* the last, partial block node by node */
    const long i = 2 * (mv + l);
    gs_vjp_node(k, y, gw, q, i, add, three, &lu, &lv);
    if (acc) {
      const double u = y[i], v = y[i + 1], wu = gw[i], wv = gw[i + 1];
      acc[gs_lane_at(0, (int)l)] += u * lu;
      acc[gs_lane_at(1, (int)l)] += v * lv;
      acc[gs_lane_at(2, (int)l)] += wu * (1.0 - u);
      acc[gs_lane_at(3, (int)l)] += wv * (0.0 - v);
    }
  }
}

/* The rows, compiled for three ISAs; each flag combination is a branch-free loop of its own.
 * acc NULL: out += (add) or = the state VJP; acc: out overwritten (or not written when q is
 * NULL) and the parameter VJP's lane sums accumulated. */
GS_TARGET static void gs_vjp_rows(const gs_coef *k, const double *restrict y,
                                  const double *restrict gw, double *restrict q, long m, int add,
                                  int three, double *restrict acc, const double *pf)
{
  if (!acc && add && three)
    gs_vjp_rowv(k, y, gw, q, m, 1, 1, NULL, pf);
  else if (!acc && add)
    gs_vjp_rowv(k, y, gw, q, m, 1, 0, NULL, pf);
  else if (!acc && three)
    gs_vjp_rowv(k, y, gw, q, m, 0, 1, NULL, pf);
  else if (!acc)
    gs_vjp_rowv(k, y, gw, q, m, 0, 0, NULL, pf);
  else if (q && three)
    gs_vjp_rowv(k, y, gw, q, m, 0, 1, acc, pf);
  else if (q)
    gs_vjp_rowv(k, y, gw, q, m, 0, 0, acc, pf);
  else if (three)
    gs_vjp_rowv(k, y, gw, NULL, m, 0, 1, acc, pf);
  else
    gs_vjp_rowv(k, y, gw, NULL, m, 0, 0, acc, pf);
}

#undef gs_v
#undef gs_vu
#undef gs_rhs_row_body
#undef gs_rhs_row2
#undef gs_rhs_row3
#undef gs_vjp_in
#undef gs_vjp_k
#undef gs_vjp_coefs
#undef gs_vjp_load
#undef gs_vjp_store
#undef gs_vjp_rowv
#undef gs_vjp_rows
#undef GS_LD
#undef GS_SPLAT
#undef GS_PAIR
#undef GS_SHUF
#undef GS_W
#undef GS_ISA
#undef GS_TARGET
