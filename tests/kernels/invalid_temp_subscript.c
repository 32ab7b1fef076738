// expect: 'k' is a scalar temporary
// at: 6:14
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++) {
    int k = n - 1 - i;
    B[i] = A[k];
  }
}
