/* mvt: matrix-vector product and transposed matrix-vector product (PolyBench mvt).
 *
 *   x1 += A y1          x1[i] += A[i][j] * y1[j]     i < m, j < n
 *   x2 += A^T y2        x2[i] += A[j][i] * y2[j]     i < n, j < m
 *
 * A is m x n (the paper's 20480 x 10240 is rectangular; PolyBench's is square).
 * Dependence pattern: embarrassingly parallel. Two independent nests, each with a
 * parallel i loop (band i); j is a reduction into x1[i] / x2[i], kept inside a work-item.
 *
 * Sizes: paper (Table IV, data on 1 GPU) m = 20480, n = 10240; CI m = 80, n = 48.
 * Inputs: random [0, 1) from bbmm.
 */

void mvt(int m, int n, float A[m][n], float x1[m], float x2[n], float y1[n], float y2[m]) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      x1[i] = x1[i] + A[i][j] * y1[j];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      x2[i] = x2[i] + A[j][i] * y2[j];
}
