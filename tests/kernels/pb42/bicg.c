/* bicg (PolyBench/C 4.2 linear-algebra/kernels): s := A^T r and q := A p in one sweep. */
void kernel_bicg(int m, int n, double A[n][m], double s[m], double q[n], double p[m],
                 double r[n])
{
#pragma scop
  for (int i = 0; i < m; i++)
    s[i] = 0;
  for (int i = 0; i < n; i++) {
    q[i] = 0.0;
    for (int j = 0; j < m; j++) {
      s[j] = s[j] + r[i] * A[i][j];
      q[i] = q[i] + A[i][j] * p[j];
    }
  }
#pragma endscop
}
