/* Rows read backwards in flat arrays (A[i*n + n - 1 - j]): bbmm reads the column as
 * n - 1 - j of row i, the same element as the C offset, and proves it within the row. */
void mirror(int tsteps, int n, float *A, float *B) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 0; j < n; j++)
        B[i * n + j] = 0.5f * A[i * n + n - 1 - j] + 0.25f * (A[(i + 1) * n - 1 - j]
                       + A[(i - 1) * n + j]);
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 0; j < n; j++)
        A[i * n + j] = B[(i + 1) * n - 1 - j];
  }
}
