// expect: if condition is not an affine comparison of iterators and parameters: 'A[i] > 0'
// at: 5:9
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    if (A[i] > 0)
      A[i] = 0.0f;
}
