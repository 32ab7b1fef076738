// expect: array 'A' has 2 dimension(s) but 'A[i]' has 1 subscript(s)
// at: 5:12
void f(int n, float A[n][n], float B[n]) {
  for (int i = 0; i < n; i++)
    B[i] = A[i];
}
