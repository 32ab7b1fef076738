// expect: helper 'clip' returns before its end
// at: 3:49
static void clip(float *a) { if (a[0] < 0.0f) { return; } a[0] = 0.0f; }

void f(int n, float A[n][1]) {
  for (int i = 0; i < n; i++)
    clip(A[i]);
}
