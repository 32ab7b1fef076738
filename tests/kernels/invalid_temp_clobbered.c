// expect: temporary 'old' (assigned at
// at: 7:12
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++) {
    float old = A[i];
    A[i] = 2.0f * A[i];
    B[i] = old;
  }
}
