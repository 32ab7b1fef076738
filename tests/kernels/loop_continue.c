/* 'continue' at the top of a loop body, as C code skips cases: an affine test (the upper
 * triangle) restricts the domain, a test on the data runs at run time, with work before
 * the continue in its branch. */
void loop_continue(int n, float A[n][n], float B[n][n], float lim) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (j > i)
        continue;
      A[i][j] *= 0.5f;
    }
#pragma omp parallel for
  for (int i = 1; i < n - 1; i++)
    for (int j = 1; j < n - 1; j++) {
      float c = A[i][j];
      if (c > 0.3f) {
        B[i][j] = c;
        continue;
      }
      B[i][j] = 0.25f * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
    }
}
