// expect: 'k' is a scalar temporary: subscripts, loop bounds and conditions must be affine
// at: 8:7
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++) {
    int k = 0;
    for (int j = 0; j < i; j++)
      k += 1;
    A[k] = B[i];
  }
}
