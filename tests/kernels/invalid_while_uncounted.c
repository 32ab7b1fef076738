// expect: while loop not supported in the modelled region (bbmm takes one that counts
// at: 6:3
void f(int n, float A[n]) {
  int i = 0;
  /* the step is not the body's last statement */
  while (i < n) {
    i++;
    A[i - 1] = 0.0f;
  }
}
