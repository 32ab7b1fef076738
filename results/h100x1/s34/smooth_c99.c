/* tests/kernels/row_tables.c's kernel with C99 arrays instead of row pointers: the same
 * model once bbmm has sized the tables, for timing the two side by side. */
void smooth(int tsteps, int n, int m, double A[n][m], double B[n - 1][m - 1])
{
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        B[i][j] = 0.25 * (A[i-1][j] + A[i+1][j] + A[i][j-1] + A[i][j+1]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        A[i][j] = B[i][j];
  }
}
