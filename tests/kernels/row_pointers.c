/* Pointers to rows, the C99 way to pass a malloc'ed matrix (float (*A)[n]) or grid
 * (double (*G)[ny][nz]): bbmm reads them as A[][n] and G[][ny][nz], sized by their
 * subscripts. */
void row_pointers(int n, int ny, int nz, float (*A)[n], float (*B)[n],
                  double (*G)[ny][nz], double *s) {
  for (int i = 1; i < n - 1; i++)
    for (int j = 1; j < n - 1; j++)
      B[i][j] = 0.5f * (A[i - 1][j] + A[i + 1][j]) + (*A)[j];
  for (int i = 0; i < n; i++) {
    double acc = 0.0;
    for (int j = 0; j < ny; j++)
      for (int k = 0; k < nz; k++)
        acc += G[i][j][k];
    s[i] = acc;
  }
}
