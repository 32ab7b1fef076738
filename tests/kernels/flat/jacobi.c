/* A stencil on flat arrays (float *A, A[i*n + j]), the way much C code keeps a matrix:
 * bbmm reads A and B as rows of n elements, A[i][j]. */
void jacobi(int tsteps, int n, float *A, float *B) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i * n + j] = 0.2f * (A[i * n + j] + A[(i - 1) * n + j] + A[(i + 1) * n + j]
                               + A[n * i + j - 1] + A[i * n + (j + 1)]);
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i * n + j] = B[i * n + j];
  }
}
