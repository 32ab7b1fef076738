/* atax (PolyBench/C 4.2 linear-algebra/kernels): y := A^T (A x). The i loop carries the
 * reduction into y. */
void kernel_atax(int m, int n, double A[m][n], double x[n], double y[n], double tmp[m])
{
#pragma scop
  for (int i = 0; i < n; i++)
    y[i] = 0;
  for (int i = 0; i < m; i++) {
    tmp[i] = 0.0;
    for (int j = 0; j < n; j++)
      tmp[i] = tmp[i] + A[i][j] * x[j];
    for (int j = 0; j < n; j++)
      y[j] = y[j] + A[i][j] * tmp[i];
  }
#pragma endscop
}
