// expect: 'return' not supported in the modelled region
// at: 6:5
void f(int n, float A[n]) {
#pragma scop
  for (int i = 0; i < n; i++) {
    return;
  }
#pragma endscop
}
