// expect: 'continue' not supported in the modelled region
// at: 5:5
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++) {
    continue;
  }
}
