// expect: non-unit loop step 'i--'
// at: 4:31
void f(int n, float A[n]) {
  for (int i = n - 1; i >= 0; i--)
    A[i] = 0.0f;
}
