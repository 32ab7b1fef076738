// expect: non-unit loop step 'i -= 2'
// at: 4:31
void f(int n, float A[n]) {
  for (int i = n - 1; i >= 0; i -= 2)
    A[i] = 0.0f;
}
