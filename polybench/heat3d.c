/* heat3d: 3-D heat equation, explicit 7-point stencil (Pochoir heat_3D / PolyBench
 * heat-3d), two arrays.
 *
 *   for t: B = stencil(A) on the interior; A = stencil(B) on the interior
 *   stencil(X)[i][j][k] = 0.125 (X[i+1][j][k] - 2 X[i][j][k] + X[i-1][j][k])
 *                       + 0.125 (X[i][j+1][k] - 2 X[i][j][k] + X[i][j-1][k])
 *                       + 0.125 (X[i][j][k+1] - 2 X[i][j][k] + X[i][j][k-1]) + X[i][j][k]
 *
 * Dependence pattern: uniform (distance-1 neighbours). t is serial (host loop); in each
 * of the two nests i, j and k are parallel (band i, j, k).
 *
 * Sizes: paper (Table IV, data on 1 GPU) n = 512 (512 x 512 x 512); CI tsteps = 3, n = 16.
 * Inputs: random [0, 1) from bbmm.
 */

void heat3d(int tsteps, int n, float A[n][n][n], float B[n][n][n]) {
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          B[i][j][k] = 0.125f * (A[i + 1][j][k] - 2.0f * A[i][j][k] + A[i - 1][j][k])
                     + 0.125f * (A[i][j + 1][k] - 2.0f * A[i][j][k] + A[i][j - 1][k])
                     + 0.125f * (A[i][j][k + 1] - 2.0f * A[i][j][k] + A[i][j][k - 1])
                     + A[i][j][k];
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          A[i][j][k] = 0.125f * (B[i + 1][j][k] - 2.0f * B[i][j][k] + B[i - 1][j][k])
                     + 0.125f * (B[i][j + 1][k] - 2.0f * B[i][j][k] + B[i][j - 1][k])
                     + 0.125f * (B[i][j][k + 1] - 2.0f * B[i][j][k] + B[i][j][k - 1])
                     + B[i][j][k];
  }
}
