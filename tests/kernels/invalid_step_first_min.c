// expect: the first value of a loop with step 2 must be affine (no min, max or ?:)
// at: 5:14
void f(int n, float A[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = i > 2 ? i - 2 : 0; j < n; j += 2)
      A[i][j] = 0.0f;
}
