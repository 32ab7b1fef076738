/* tests/kernels/flat/jacobi.c written with C99 arrays, B one row short as bbmm infers it for the flat one: the same
 * program, to time beside the flat one (bbmm reads A[i*n + j] as A[i][j]). */
void jacobi(int tsteps, int n, float A[n][n], float B[n - 1][n]) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = 0.2f * (A[i][j] + A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = B[i][j];
  }
}
