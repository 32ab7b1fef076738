// expect: local variable 't' not supported: scalar temporaries are not modelled
// at: 5:11
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++) {
    float t = A[i] * 2.0f;
    B[i] = t;
  }
}
