/* heat_break.c without its break: heat2d's sweeps. */
void heat(int tsteps, int n, float A[n][n], float B[n][n])
{
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = 0.125f * (A[i+1][j] - 2.0f * A[i][j] + A[i-1][j])
                + 0.125f * (A[i][j+1] - 2.0f * A[i][j] + A[i][j-1]) + A[i][j];
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = 0.125f * (B[i+1][j] - 2.0f * B[i][j] + B[i-1][j])
                + 0.125f * (B[i][j+1] - 2.0f * B[i][j] + B[i][j-1]) + B[i][j];
  }
}
