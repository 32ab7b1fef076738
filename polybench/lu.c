/* lu: LU decomposition without pivoting, right-looking (PolyBench 3.x lu).
 *
 *   for k:
 *     A[k][j] /= A[k][k]                  j > k       (scale row k)
 *     A[i][j] -= A[i][k] * A[k][j]        i, j > k    (update the trailing submatrix)
 *
 * Afterwards A holds L (lower triangle with the diagonal) and U (strict upper triangle,
 * unit diagonal implied): L * U equals the initial matrix.
 *
 * Dependence pattern: nonuniform (row k and column k are read by every iteration of the
 * trailing update; the iteration space shrinks with k). k is serial (host loop); the
 * row scaling is a nest with band j, the trailing update a nest with band i, j.
 *
 * Sizes: paper (Table IV, data on 1 GPU) n = 16384 (16384 x 16384); CI n = 64.
 * init_lu: a strictly diagonally dominant matrix (off-diagonal entries in [0, 1),
 * diagonal n + 1), so that no pivoting is needed and the factors stay well conditioned.
 */

void init_lu(int n, float A[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      A[i][j] = (i == j) ? (float)(n + 1) : (float)((i * 37 + j * 91 + 11) % 97) / 97.0f;
}

void lu(int n, float A[n][n]) {
  for (int k = 0; k < n; k++) {
    for (int j = k + 1; j < n; j++)
      A[k][j] = A[k][j] / A[k][k];
    for (int i = k + 1; i < n; i++)
      for (int j = k + 1; j < n; j++)
        A[i][j] = A[i][j] - A[i][k] * A[k][j];
  }
}
