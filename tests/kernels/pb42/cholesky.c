/* cholesky (PolyBench/C 4.2 linear-algebra/solvers): A = L L^T in place, row by row. */
#include <math.h>

void init_cholesky(int n, double A[n][n])
{
  /* symmetric and diagonally dominant: positive definite */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      A[i][j] = i == j ? n + 1.0 : 0.5 / (1 + i + j);
}

void kernel_cholesky(int n, double A[n][n])
{
#pragma scop
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < j; k++)
        A[i][j] -= A[i][k] * A[j][k];
      A[i][j] /= A[j][j];
    }
    for (int k = 0; k < i; k++)
      A[i][i] -= A[i][k] * A[i][k];
    A[i][i] = sqrt(A[i][i]);
  }
#pragma endscop
}
