/* Local arrays declared inside loops: every iteration has its own (w per (i, j), row per
 * i); bbmm keeps one copy per iteration of the parallel loops around them, none per time
 * step. */
void stencil(int tsteps, int n, float A[n][n], float B[n][n]) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++) {
        float w[3];
        w[0] = A[i - 1][j];
        w[1] = A[i][j];
        w[2] = A[i + 1][j];
        B[i][j] = 0.25f * w[0] + 0.5f * w[1] + 0.25f * w[2];
      }
    for (int i = 1; i < n - 1; i++) {
      float row[n];
      for (int j = 0; j < n; j++)
        row[j] = B[i][j] * 2.0f;
      for (int j = 1; j < n - 1; j++)
        A[i][j] = 0.5f * (row[j - 1] + row[j + 1]) * 0.5f;
    }
  }
}
