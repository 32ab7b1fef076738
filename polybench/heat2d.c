/* heat2d: 2-D heat equation, explicit 5-point stencil (Pochoir heat_2D), two arrays.
 *
 *   for t: B = stencil(A) on the interior; A = stencil(B) on the interior
 *   stencil(X)[i][j] = 0.125 (X[i+1][j] - 2 X[i][j] + X[i-1][j])
 *                    + 0.125 (X[i][j+1] - 2 X[i][j] + X[i][j-1]) + X[i][j]
 *
 * Each time step applies the stencil twice (A -> B, then B -> A), as PolyBench's
 * heat-3d / jacobi-2d do; the boundary rows and columns keep their initial values.
 *
 * Dependence pattern: uniform (distance-1 neighbours). t is serial (host loop); in each
 * of the two nests both i and j are parallel (band i, j).
 *
 * Sizes: paper (Table IV, data on 1 GPU) n = 12288 (12288 x 12288); CI tsteps = 4, n = 64.
 * Inputs: random [0, 1) from bbmm.
 */

void heat2d(int tsteps, int n, float A[n][n], float B[n][n]) {
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = 0.125f * (A[i + 1][j] - 2.0f * A[i][j] + A[i - 1][j])
                + 0.125f * (A[i][j + 1] - 2.0f * A[i][j] + A[i][j - 1])
                + A[i][j];
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = 0.125f * (B[i + 1][j] - 2.0f * B[i][j] + B[i - 1][j])
                + 0.125f * (B[i][j + 1] - 2.0f * B[i][j] + B[i][j - 1])
                + B[i][j];
  }
}
