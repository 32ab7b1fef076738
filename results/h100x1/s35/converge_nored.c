/* converge.c without its reduction and break: the sweeps alone, the floor of its time. */
void converge(int n, int tmax, float tol, float A[n][n], float B[n][n], int steps[1])
{
  steps[0] = 0;
  for (int t = 0; t < tmax; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = 0.25f * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = B[i][j];
    steps[0] = t + 1;
  }
}
