// expect: loop step is 0 (the loop never ends): 'i += 0'
// at: 4:31
void f(int n, float A[n]) {
  for (int i = 0; i < n; i += 0)
    A[i] = 0.0f;
}
