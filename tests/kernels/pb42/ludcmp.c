/* ludcmp (PolyBench/C 4.2 linear-algebra/solvers) as PolyBench writes it: LU
 * decomposition, then forward and back substitution (the back substitution counts i
 * down), all four with the one scalar w (bbmm gives each loop nest's use of it an array
 * of its own: the second j loop stays parallel). */
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
  int i, j, k;
  double w;
#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j < i; j++) {
      w = A[i][j];
      for (k = 0; k < j; k++)
        w -= A[i][k] * A[k][j];
      A[i][j] = w / A[j][j];
    }
    for (j = i; j < n; j++) {
      w = A[i][j];
      for (k = 0; k < i; k++)
        w -= A[i][k] * A[k][j];
      A[i][j] = w;
    }
  }
  for (i = 0; i < n; i++) {
    w = b[i];
    for (j = 0; j < i; j++)
      w -= A[i][j] * y[j];
    y[i] = w;
  }
  for (i = n - 1; i >= 0; i--) {
    w = y[i];
    for (j = i + 1; j < n; j++)
      w -= A[i][j] * x[j];
    x[i] = w / A[i][i];
  }
#pragma endscop
}
