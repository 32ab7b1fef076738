// expect: local array 'w' declared inside a loop not supported
// at: 5:11
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++) {
    float w[3];
    w[0] = A[i];
    B[i] = w[0];
  }
}
