// expect: while loop not supported
// at: 5:3
void f(int n, float A[n]) {
  int i;
  while (i < n)
    A[i] = 0.0f;
}
