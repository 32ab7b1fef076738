// expect: do-while loop not supported
// at: 5:5
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++) {
    do { A[i] = 1.0f; } while (0);
  }
}
