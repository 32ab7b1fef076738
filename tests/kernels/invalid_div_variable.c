// expect: non-affine subscript 'i / m' in 'A[i / m]' ('/' by a variable)
// at: 5:7
void f(int n, int m, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i / m] = 0.0f;
}
