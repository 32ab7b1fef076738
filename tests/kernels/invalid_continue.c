// expect: 'continue' not supported in the modelled region
// at: 7:18
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++) {
    if (A[i] > 0.0f) {
      A[i] = 1.0f;
      if (i > 2) continue;
    }
    A[i] += 1.0f;
  }
}
