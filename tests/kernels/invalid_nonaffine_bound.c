// expect: upper loop bound is not affine: 'n * n' (product of two variables)
// at: 4:23
void f(int n, float A[n]) {
  for (int i = 0; i < n * n; i++)
    A[i] = 0.0f;
}
