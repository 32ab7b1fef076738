#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* banded update: min/max bounds via a macro, a function-style min() and a ternary */
void band(int n, int w, float A[n][n], float B[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = MAX(0, i - w); j <= min(n - 1, i + w); j++)
      B[i][j] = 2.0f * A[i][j];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < (i < n - 2 ? i : n - 2); j++)
      A[i][j] = B[i][j + 1];
}
