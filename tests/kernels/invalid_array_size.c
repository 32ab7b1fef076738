// expect: array size not affine in the integer parameters: 'n * m' in 'A'
// at: 3:30
void f(int n, int m, float A[n * m]) {
  for (int i = 0; i < n; i++)
    A[i] = 0.0f;
}
