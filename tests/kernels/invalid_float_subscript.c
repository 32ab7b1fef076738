// expect: non-affine subscript 'alpha' in 'A[alpha]' ('alpha' is a floating-point parameter)
// at: 5:14
void f(int n, float alpha, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = A[alpha] + 1.0f;
}
