/* symm (PolyBench/C 4.2 linear-algebra/blas), its running sum temp2 kept in an array
 * element (bbmm does no scalar expansion): C := alpha*A*B + beta*C, A symmetric and
 * stored in its lower triangle. */
void kernel_symm(int m, int n, double alpha, double beta, double C[m][n], double A[m][m],
                 double B[m][n], double temp2[m][n])
{
#pragma scop
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      temp2[i][j] = 0;
      for (int k = 0; k < i; k++) {
        C[k][j] += alpha * B[i][j] * A[i][k];
        temp2[i][j] += B[k][j] * A[i][k];
      }
      C[i][j] = beta * C[i][j] + alpha * B[i][j] * A[i][i] + alpha * temp2[i][j];
    }
#pragma endscop
}
