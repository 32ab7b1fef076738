// expect: non-affine subscript 'i * j' in 'A[i * j]' (product of two variables)
// at: 6:9
void f(int n, float A[n], float B[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      A[i * j] = B[i][j];
}
