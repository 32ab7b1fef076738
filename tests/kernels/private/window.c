/* A window of up to 8 values per row, filled and read by loops whose trip count is the
 * parameter w: a local array in memory, one copy per row (i is parallel), none per step. */
void window(int tsteps, int n, int w, float A[n][n], float B[n][n]) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) {
      float win[8];
      for (int k = 0; k < w && k < 8 && k < n; k++)
        win[k] = A[i][k] * 0.5f;
      for (int j = 0; j < n; j++) {
        float s = 0.0f;
        for (int k = 0; k < w && k < 8 && k < n; k++)
          s += win[k] * 0.125f;
        B[i][j] = s + A[i][j];
      }
    }
#pragma omp parallel for
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        A[i][j] = 0.5f * B[i][j];
  }
}
