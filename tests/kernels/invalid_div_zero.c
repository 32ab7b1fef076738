// expect: undefined in C: '%' by 0
// at: 5:9
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    if (i % 0 == 1)
      A[i] = 0.0f;
}
