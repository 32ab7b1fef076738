/* An if on the data, with an else assigning the same element: one statement
 * B[i][j] = A[i][j] < lo ? lo : A[i][j], so B is only written, never read in. */
void clamp(int tsteps, int n, float A[n][n], float B[n][n], float lo) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        if (A[i][j] < lo)
          B[i][j] = lo;
        else
          B[i][j] = A[i][j];
      }
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 0; j < n; j++)
        A[i][j] = 0.25f * (B[i - 1][j] + 2.0f * B[i][j] + B[i + 1][j]) - 0.125f;
  }
}
