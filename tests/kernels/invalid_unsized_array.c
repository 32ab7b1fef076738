// expect: array parameter 'A' needs an explicit size in every dimension but the first
// at: 3:21
void f(int n, float A[n][]) {
  for (int i = 0; i < n; i++)
    A[i][0] = 0.0f;
}
