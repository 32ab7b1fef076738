// expect: helper function 'first': parameter 'p' must be a named integer, float or double
// at: 3:26
static float first(float *p) { return p[0]; }

void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = first(A);
}
