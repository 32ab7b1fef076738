/* Floating-point sums into scalars whose only carried dependence is the order of the
 * additions. In the source's order the loop over the rows runs as one work-item; with
 * --reassociate each row (and strip of columns) gets a partial sum and the rows run in
 * parallel. 'drop' subtracts, in single precision. The forward substitution's dot
 * products run over j < i, bounds that move with the row: they stay in order either way.
 */
void init_dot_rows(int n, int m, double A[n][m], double w[m], double L[n][n], double b[n],
                   double out[1], float shrink[1], double x[n])
{
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < m; j++)
      A[i][j] = (double)((i * 7 + j * 3) % 11) / 7.0 - 0.5;
    b[i] = (double)(i % 5) + 0.25;
    x[i] = 0.0;
    for (int j = 0; j < n; j++)
      L[i][j] = i == j ? 3.0 : 1.0 / (double)(n + i + 2 * j);
  }
  for (int j = 0; j < m; j++)
    w[j] = 1.0 / (double)(j + 1);
  out[0] = 0.0;
  shrink[0] = 0.0f;
}

void dot_rows(int n, int m, double A[n][m], double w[m], double L[n][n], double b[n],
              double out[1], float shrink[1], double x[n])
{
  double total = 0.1;
  float drop = 1000.0f;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      total += A[i][j] * w[j];
      drop -= (float)(A[i][j] * A[i][j]);
    }
  out[0] = total;
  shrink[0] = drop;
  for (int i = 0; i < n; i++) {
    double s = b[i];
    for (int j = 0; j < i; j++)
      s -= L[i][j] * x[j];
    x[i] = s / L[i][i];
  }
}
