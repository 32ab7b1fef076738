// expect: C syntax error
// at: 5:12
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = = 0.0f;
}
