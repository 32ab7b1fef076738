// expect: kernel 'f' must return nothing, an integer, float or double
// at: 3:8
float *f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = 0.0f;
  return A;
}
