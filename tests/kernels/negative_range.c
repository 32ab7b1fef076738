/* Parallel loops whose iterators run below 0: the global tile grid starts at the first
 * tile that holds them (before, such tiles landed on negative devices). */
void negative_range(int tsteps, int n, float A[n][n], float v[n])
{
  for (int i = -n + 1; i <= 0; i++)
    v[-i] = v[-i] * 2.0f + 1.0f;
  for (int t = 0; t < tsteps; t++)
    for (int i = 1 - n; i < -1; i++)
      for (int j = 0; j < n; j++)
        A[-i][j] = A[-i][j] * 0.5f + A[-i - 1][j] * 0.25f + v[j];
}
