// expect: helper 'halve' calls itself (directly or not)
// at: 3:63
static void halve(int k, float *a) { a[0] *= 0.5f; if (k > 0) halve(k - 1, a); }

void f(int n, float A[n][1]) {
  for (int i = 0; i < n; i++)
    halve(3, A[i]);
}
