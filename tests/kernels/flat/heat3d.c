/* A 3-D stencil on flat arrays (A[(i*ny + j)*nz + k]), the way C code often keeps a grid:
 * bbmm reads A and B as blocks of ny x nz elements, A[i][j][k]. */
void heat3d(int tsteps, int nx, int ny, int nz, double *A, double *B) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < nx - 1; i++)
      for (int j = 1; j < ny - 1; j++)
        for (int k = 1; k < nz - 1; k++)
          B[(i * ny + j) * nz + k] = 0.125 * (A[((i + 1) * ny + j) * nz + k]
              - 2.0 * A[(i * ny + j) * nz + k] + A[((i - 1) * ny + j) * nz + k])
            + 0.125 * (A[(i * ny + j + 1) * nz + k] - 2.0 * A[i * ny * nz + j * nz + k]
              + A[(i * ny + j - 1) * nz + k])
            + 0.125 * (A[(i * ny + j) * nz + k + 1] - 2.0 * A[(i * ny + j) * nz + k]
              + A[(i * ny + j) * nz + k - 1])
            + A[(i * ny + j) * nz + k];
#pragma omp parallel for
    for (int i = 1; i < nx - 1; i++)
      for (int j = 1; j < ny - 1; j++)
        for (int k = 1; k < nz - 1; k++)
          A[(i * ny + j) * nz + k] = B[(i * ny + j) * nz + k];
  }
}
