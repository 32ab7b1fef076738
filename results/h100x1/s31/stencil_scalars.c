/* tests/kernels/private/stencil.c with w[3] as three scalars (temporaries: values, no
 * memory), for the timing beside it (s31.sh). */
void stencil_scalars(int tsteps, int n, float A[n][n], float B[n][n]) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++) {
        float w0, w1, w2;
        w0 = A[i - 1][j];
        w1 = A[i][j];
        w2 = A[i + 1][j];
        B[i][j] = 0.25f * w0 + 0.5f * w1 + 0.25f * w2;
      }
    for (int i = 1; i < n - 1; i++) {
      float row[n];
      for (int j = 0; j < n; j++)
        row[j] = B[i][j] * 2.0f;
      for (int j = 1; j < n - 1; j++)
        A[i][j] = 0.5f * (row[j - 1] + row[j + 1]) * 0.5f;
    }
  }
}
