/* A reduction into a scalar declared in the parallel loop's body, its inner loop counting
 * down: s becomes a local array s[n], one element per row. */
void rowsum(int n, int m, float A[n][m], float x[m], float y[n])
{
  for (int i = 0; i < n; i++) {
    float s = 0.0f;
    for (int j = m - 1; j >= 0; j--)
      s += A[i][j] * x[j];
    y[i] = 0.5f * s + y[i];
  }
}
