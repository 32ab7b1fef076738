// expect: non-unit loop step 'i += 2'
// at: 4:26
void f(int n, float A[n]) {
  for (int i = 0; i < n; i += 2)
    A[i] = 0.0f;
}
