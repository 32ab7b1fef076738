// expect: 'break' not supported in the modelled region
// at: 6:7
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++) {
    if (i > 3)
      break;
    A[i] = 0.0f;
  }
}
