/* The neural ODE's skinny kernels in GCC's vector types, included by rw_neuralode.c once per
 * ISA with NODE_VW (doubles per vector: 8, 4 or 2), NODE_ISA(name) (the instantiation's name
 * for `name`) and NODE_TARGET (its target attribute) set; RW_ISA_CALL picks one at run time
 * (rw_kernels.h). The kernels keep their running sums in such vectors across a whole loop, so
 * they stay in registers (their earlier forms kept them in C or db, and each step waited for
 * the store of the one before); the tiles hold about eight vectors of sums at every width.
 * The arithmetic is element-wise (a product, then a sum: -ffp-contract=off) and each sum is
 * taken in one order at every width: an entry of C or db in k (or i) order, a dot product in
 * RW_NODE_LANES logical lanes (RW_NODE_LANES / NODE_VW vectors) folded by one fixed tree. So
 * every width gives the same bits. Loads and stores through memcpy: unaligned. The names below
 * are this instantiation's (undefined at the end). */
#define node_v            NODE_ISA(node_v)
#define node_k_dots_tile  NODE_ISA(node_k_dots_tile)
#define node_k_dots       NODE_ISA(node_k_dots)
#define node_k_outer_rows NODE_ISA(node_k_outer_rows)
#define node_k_outer      NODE_ISA(node_k_outer)
#define node_k_colsum     NODE_ISA(node_k_colsum)

typedef double node_v __attribute__((vector_size(8 * NODE_VW)));
#define NODE_LD(v, p) memcpy(&(v), (p), sizeof(node_v))
#define NODE_ST(p, v) memcpy((p), &(v), sizeof(node_v))
#define NODE_NL       (RW_NODE_LANES / NODE_VW) /* vectors per dot product's lanes */
_Static_assert(RW_NODE_LANES % NODE_VW == 0, "a dot product's lanes are whole vectors");
/* rows per tile of node_k_dots (two columns): R 2 NODE_NL = 8 vectors of sums */
#define NODE_TR (4 / NODE_NL > 0 ? 4 / NODE_NL : 1)

/* R rows (i..i+R-1) times J columns (j..j+J-1) of node_k_dots, R <= 4 and J <= 2 constants
 * where it is inlined: R J independent running sums of RW_NODE_LANES lanes each. */
static inline __attribute__((always_inline)) void
node_k_dots_tile(const int R, const int J, int i, int j, int K, const double *restrict A, int lda,
                 const double *restrict Bt, int ldbt, double *restrict C, int ldc)
{
  const int K8 = K - K % RW_NODE_LANES;
  node_v s[4][2][NODE_NL];
  for (int r = 0; r < R; r++)
    for (int q = 0; q < J; q++)
      for (int h = 0; h < NODE_NL; h++)
        s[r][q][h] = (node_v){0.0};
  for (int k = 0; k < K8; k += RW_NODE_LANES)
    for (int h = 0; h < NODE_NL; h++) {
      node_v b[2];
      for (int q = 0; q < J; q++)
        NODE_LD(b[q], Bt + (size_t)(j + q) * ldbt + k + h * NODE_VW);
      for (int r = 0; r < R; r++) {
        node_v a;
        NODE_LD(a, A + (size_t)(i + r) * lda + k + h * NODE_VW);
        for (int q = 0; q < J; q++)
          s[r][q][h] += a * b[q];
      }
    }
  if (K8 < K) {
    /* the last K - K8 terms into lanes 0.. (the other lanes add 0 x 0 = +0, which leaves a
     * partial sum unchanged: one that started at +0 is never -0) */
    double bt[2][RW_NODE_LANES] = {{0.0}}, at[RW_NODE_LANES];
    for (int q = 0; q < J; q++)
      memcpy(bt[q], Bt + (size_t)(j + q) * ldbt + K8, (size_t)(K - K8) * sizeof(double));
    for (int r = 0; r < R; r++) {
      memset(at, 0, sizeof at);
      memcpy(at, A + (size_t)(i + r) * lda + K8, (size_t)(K - K8) * sizeof(double));
      for (int h = 0; h < NODE_NL; h++) {
        node_v a, b;
        NODE_LD(a, at + h * NODE_VW);
        for (int q = 0; q < J; q++) {
          NODE_LD(b, bt[q] + h * NODE_VW);
          s[r][q][h] += a * b;
        }
      }
    }
  }
#if NODE_VW == 8
  if (R == 4 && J == 2) {
    /* the eight trees side by side: s_l + s_{l+4}, then (.)_l + (.)_{l+2}, then the two
     * halves, each level one sum of two shuffled values (the same sums as below) */
#define RW_SH __builtin_shufflevector
    const node_v t0 = RW_SH(s[0][0][0], s[0][1][0], 0, 1, 2, 3, 8, 9, 10, 11) +
                      RW_SH(s[0][0][0], s[0][1][0], 4, 5, 6, 7, 12, 13, 14, 15);
    const node_v t1 = RW_SH(s[1][0][0], s[1][1][0], 0, 1, 2, 3, 8, 9, 10, 11) +
                      RW_SH(s[1][0][0], s[1][1][0], 4, 5, 6, 7, 12, 13, 14, 15);
    const node_v t2 = RW_SH(s[2][0][0], s[2][1][0], 0, 1, 2, 3, 8, 9, 10, 11) +
                      RW_SH(s[2][0][0], s[2][1][0], 4, 5, 6, 7, 12, 13, 14, 15);
    const node_v t3 = RW_SH(s[3][0][0], s[3][1][0], 0, 1, 2, 3, 8, 9, 10, 11) +
                      RW_SH(s[3][0][0], s[3][1][0], 4, 5, 6, 7, 12, 13, 14, 15);
    const node_v u0 =
        RW_SH(t0, t1, 0, 1, 4, 5, 8, 9, 12, 13) + RW_SH(t0, t1, 2, 3, 6, 7, 10, 11, 14, 15);
    const node_v u1 =
        RW_SH(t2, t3, 0, 1, 4, 5, 8, 9, 12, 13) + RW_SH(t2, t3, 2, 3, 6, 7, 10, 11, 14, 15);
    const node_v d =
        RW_SH(u0, u1, 0, 2, 4, 6, 8, 10, 12, 14) + RW_SH(u0, u1, 1, 3, 5, 7, 9, 11, 13, 15);
#undef RW_SH
    for (int r = 0; r < 4; r++)
      for (int q = 0; q < 2; q++)
        C[(size_t)(i + r) * ldc + j + q] += d[2 * r + q];
    return;
  }
#endif
  for (int r = 0; r < R; r++)
    for (int q = 0; q < J; q++) {
      double v[RW_NODE_LANES];
      for (int h = 0; h < NODE_NL; h++)
        NODE_ST(v + h * NODE_VW, s[r][q][h]);
      C[(size_t)(i + r) * ldc + j + q] +=
          ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
    }
}

/* C[i,j] += A[i,:] . Bt[j,:] (length K), i < M, j < N: dot products, each summed in
 * RW_NODE_LANES interleaved partial sums combined by a fixed tree; tiles of NODE_TR rows and 2
 * columns. */
NODE_TARGET static void node_k_dots(int M, int N, int K, const double *restrict A, int lda,
                                    const double *restrict Bt, int ldbt, double *restrict C,
                                    int ldc)
{
  int i = 0;
  for (; i + NODE_TR <= M; i += NODE_TR) {
    int j = 0;
    for (; j + 2 <= N; j += 2)
      node_k_dots_tile(NODE_TR, 2, i, j, K, A, lda, Bt, ldbt, C, ldc);
    if (j < N) node_k_dots_tile(NODE_TR, 1, i, j, K, A, lda, Bt, ldbt, C, ldc);
  }
  for (; i < M; i++)
    for (int j = 0; j < N; j++)
      node_k_dots_tile(1, 1, i, j, K, A, lda, Bt, ldbt, C, ldc);
}

/* Rows m0..m0+MM-1 of node_k_outer (MM <= 4 a constant where it is inlined), columns in
 * chunks of 2 NODE_VW, NODE_VW and then one at a time: 2 MM running sums per chunk. */
static inline __attribute__((always_inline)) void
node_k_outer_rows(const int MM, int m0, int N, int K, const double *restrict A, int lda,
                  const double *restrict B, int ldb, double *restrict C, int ldc)
{
  int j = 0;
  for (; j + 2 * NODE_VW <= N; j += 2 * NODE_VW) {
    node_v c[4][2];
    for (int m = 0; m < MM; m++) {
      NODE_LD(c[m][0], C + (size_t)(m0 + m) * ldc + j);
      NODE_LD(c[m][1], C + (size_t)(m0 + m) * ldc + j + NODE_VW);
    }
    for (int k = 0; k < K; k++) {
      node_v b0, b1;
      NODE_LD(b0, B + (size_t)k * ldb + j);
      NODE_LD(b1, B + (size_t)k * ldb + j + NODE_VW);
      for (int m = 0; m < MM; m++) {
        const double a = A[(size_t)k * lda + m0 + m];
        c[m][0] += a * b0;
        c[m][1] += a * b1;
      }
    }
    for (int m = 0; m < MM; m++) {
      NODE_ST(C + (size_t)(m0 + m) * ldc + j, c[m][0]);
      NODE_ST(C + (size_t)(m0 + m) * ldc + j + NODE_VW, c[m][1]);
    }
  }
  for (; j + NODE_VW <= N; j += NODE_VW) {
    node_v c[4];
    for (int m = 0; m < MM; m++)
      NODE_LD(c[m], C + (size_t)(m0 + m) * ldc + j);
    for (int k = 0; k < K; k++) {
      node_v b0;
      NODE_LD(b0, B + (size_t)k * ldb + j);
      for (int m = 0; m < MM; m++)
        c[m] += A[(size_t)k * lda + m0 + m] * b0;
    }
    for (int m = 0; m < MM; m++)
      NODE_ST(C + (size_t)(m0 + m) * ldc + j, c[m]);
  }
  for (; j < N; j++)
    for (int m = 0; m < MM; m++) {
      double c = C[(size_t)(m0 + m) * ldc + j];
      for (int k = 0; k < K; k++)
        c += A[(size_t)k * lda + m0 + m] * B[(size_t)k * ldb + j];
      C[(size_t)(m0 + m) * ldc + j] = c;
    }
}

/* C[m,:] += sum_k A[k,m] B[k,:], m < M, k < K (ascending), j < N. */
NODE_TARGET static void node_k_outer(int M, int N, int K, const double *restrict A, int lda,
                                     const double *restrict B, int ldb, double *restrict C, int ldc)
{
  int m0 = 0;
  for (; m0 + 4 <= M; m0 += 4)
    node_k_outer_rows(4, m0, N, K, A, lda, B, ldb, C, ldc);
  switch (M - m0) {
  case 3:
    node_k_outer_rows(3, m0, N, K, A, lda, B, ldb, C, ldc);
    break;
  case 2:
    node_k_outer_rows(2, m0, N, K, A, lda, B, ldb, C, ldc);
    break;
  case 1:
    node_k_outer_rows(1, m0, N, K, A, lda, B, ldb, C, ldc);
    break;
  default:
    break;
  }
}

/* db[j] += sum_i G[i,j], i < n (ascending), j < m (G row-major, n x m): 4 NODE_VW columns at a
 * time, then NODE_VW, then one. */
NODE_TARGET static void node_k_colsum(long n, int m, const double *restrict G, double *restrict db)
{
  int j = 0;
  for (; j + 4 * NODE_VW <= m; j += 4 * NODE_VW) {
    node_v s[4], g;
    for (int q = 0; q < 4; q++)
      NODE_LD(s[q], db + j + NODE_VW * q);
    for (long i = 0; i < n; i++)
      for (int q = 0; q < 4; q++) {
        NODE_LD(g, G + i * m + j + NODE_VW * q);
        s[q] += g;
      }
    for (int q = 0; q < 4; q++)
      NODE_ST(db + j + NODE_VW * q, s[q]);
  }
  for (; j + NODE_VW <= m; j += NODE_VW) {
    node_v s, g;
    NODE_LD(s, db + j);
    for (long i = 0; i < n; i++) {
      NODE_LD(g, G + i * m + j);
      s += g;
    }
    NODE_ST(db + j, s);
  }
  for (; j < m; j++) {
    double s = db[j];
    for (long i = 0; i < n; i++)
      s += G[i * m + j];
    db[j] = s;
  }
}

#undef node_v
#undef node_k_dots_tile
#undef node_k_dots
#undef node_k_outer_rows
#undef node_k_outer
#undef node_k_colsum
#undef NODE_LD
#undef NODE_ST
#undef NODE_NL
#undef NODE_TR
#undef NODE_VW
#undef NODE_ISA
#undef NODE_TARGET
