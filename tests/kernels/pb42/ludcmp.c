/* ludcmp (PolyBench/C 4.2 linear-algebra/solvers): LU decomposition, then forward and
 * back substitution (the back substitution counts i down), the scalar w kept in the
 * elements it ends in. */
void init_ludcmp(int n, double A[n][n], double b[n], double x[n], double y[n])
{
  for (int i = 0; i < n; i++) {
    b[i] = (i + 1) / (double) n / 2.0 + 4;
    for (int j = 0; j < n; j++)
      A[i][j] = i == j ? n + 1.0 : ((i + 2 * j) % n) / (double) n;
  }
}

void kernel_ludcmp(int n, double A[n][n], double b[n], double x[n], double y[n])
{
#pragma scop
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < j; k++)
        A[i][j] -= A[i][k] * A[k][j];
      A[i][j] = A[i][j] / A[j][j];
    }
    for (int j = i; j < n; j++)
      for (int k = 0; k < i; k++)
        A[i][j] -= A[i][k] * A[k][j];
  }
  for (int i = 0; i < n; i++) {
    y[i] = b[i];
    for (int j = 0; j < i; j++)
      y[i] -= A[i][j] * y[j];
  }
  for (int i = n - 1; i >= 0; i--) {
    x[i] = y[i];
    for (int j = i + 1; j < n; j++)
      x[i] -= A[i][j] * x[j];
    x[i] = x[i] / A[i][i];
  }
#pragma endscop
}
