#define N_STEPS tsteps

void heat_3d(int tsteps, int n, float A[n][n][n], float B[n][n][n]) {
  for (int t = 1; t <= N_STEPS; t++) {
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
          A[i][j][k] = B[i][j][k];
  }
}
