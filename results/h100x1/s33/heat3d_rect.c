/* tests/kernels/flat/heat3d.c written with C99 arrays (session 33: the same kernels?) */
void heat3d(int tsteps, int nx, int ny, int nz, double A[nx][ny][nz], double B[nx][ny][nz]) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < nx - 1; i++)
      for (int j = 1; j < ny - 1; j++)
        for (int k = 1; k < nz - 1; k++)
          B[i][j][k] = 0.125 * (A[i + 1][j][k]
              - 2.0 * A[i][j][k] + A[i - 1][j][k])
            + 0.125 * (A[i][j + 1][k] - 2.0 * A[i][j][k]
              + A[i][j - 1][k])
            + 0.125 * (A[i][j][k + 1] - 2.0 * A[i][j][k]
              + A[i][j][k - 1])
            + A[i][j][k];
#pragma omp parallel for
    for (int i = 1; i < nx - 1; i++)
      for (int j = 1; j < ny - 1; j++)
        for (int k = 1; k < nz - 1; k++)
          A[i][j][k] = B[i][j][k];
  }
}
