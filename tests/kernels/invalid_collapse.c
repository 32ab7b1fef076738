// expect: needs perfectly nested for loops
// at: 5:9
void f(int n, float A[n][n], float b[n]) {
  for (int k = 0; k < n; k++) {
#pragma omp parallel for collapse(2)
    for (int i = 0; i < n; i++) {
      b[i] = 0.0f;
      for (int j = 0; j < n; j++)
        A[i][j] = A[i][j] + b[i];
    }
  }
}
