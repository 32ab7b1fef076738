/* Loops counting down (PolyBench's nussinov and ludcmp): the front end models each as
 * the loop of -i counting up. A parallel one (tiled, its range below 0 in the model), a
 * serial one with a min lower bound, one inside a time loop, and a reduction counting
 * down (back substitution). */
void counting_down(int tsteps, int n, float A[n], float B[n][n], float x[n], float y[n])
{
  for (int i = n - 1; i >= 0; i--)
    A[i] = A[i] * 0.5f + i;
  for (int t = 0; t < tsteps; t++) {
    for (int i = n - 2; i > 0; --i)
      for (int j = n - 1; j >= i && j >= 2; j -= 1)
        B[i][j] = B[i][j] * 0.5f + B[i + 1][j] * 0.25f + x[n - 1 - i];
    for (int j = n - 1; 0 <= j; j = j - 1)
      y[j] = y[j] * 0.5f + B[0][j] * t + A[n - 1 - j];
  }
  for (int i = n - 1; i >= 0; i--) {
    x[i] = x[i] * 2.0f;
    for (int j = i + 1; j < n; j++)
      x[i] -= B[i][j] * x[j] * 0.125f;
  }
}
