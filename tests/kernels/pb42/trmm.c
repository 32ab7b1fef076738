/* trmm (PolyBench/C 4.2 linear-algebra/blas): B := alpha*A^T*B, A unit lower triangular. */
void kernel_trmm(int m, int n, double alpha, double A[m][m], double B[m][n])
{
#pragma scop
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      for (int k = i + 1; k < m; k++)
        B[i][j] += A[k][i] * B[k][j];
      B[i][j] = alpha * B[i][j];
    }
#pragma endscop
}
