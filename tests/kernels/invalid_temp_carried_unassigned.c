// expect: temporary 's' (declared at
// at: 7:7
void f(int n, float A[n][n], float x[n]) {
  for (int i = 0; i < n; i++) {
    float s;
    for (int j = 0; j < n; j++)
      s += A[i][j];
    x[i] = s;
  }
}
