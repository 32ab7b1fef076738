// expect: helper 'find' returns inside a loop
// at: 4:48
static void find(int n, float *a, float *at) {
  for (int j = 0; j < n; j++) if (a[j] > 0.5f) return;
  at[0] = 1.0f;
}

void f(int n, float A[n][n], float B[n][1]) {
  for (int i = 0; i < n; i++)
    find(n, A[i], B[i]);
}
