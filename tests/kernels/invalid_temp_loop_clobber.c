// expect: 'x' is written here, but temporary 's'
// at: 8:7
void f(int n, float A[n][n], float x[n]) {
  for (int i = 0; i < n; i++) {
    float s = x[i];
    for (int j = 0; j < n; j++) {
      A[i][j] = A[i][j] + s;
      x[i] = 0.5f * x[i];
    }
  }
}
