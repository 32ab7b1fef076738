/* Returns inside loops (codegen/structure.py, return_flags): in helpers that bbmm inlines
 * (a search returning an index, a running sum returning early, a sweep leaving two loops
 * at once) and in the kernel itself, whose value bbmm returns. */
static int find(int n, const float *a, float x) {
  for (int j = 0; j < n; j++)
    if (a[j] > x)
      return j;
  return -1;
}

static float first_big(int m, const float *row, float returned) {
  float s = 0.0f;
  for (int j = 0; j < m; j++) {
    s += row[j];
    if (s > returned)
      return s;
  }
  return -s;
}

static void halve(int n, int m, float (*B)[m], int t) {
  if (t % 2 == 0) {
    for (int j = 0; j < m; j++)
      for (int k = 0; k < n; k++) {
        if (B[k][j] < 0.1f)
          return;
        B[k][j] *= 0.5f;
      }
    B[0][0] += 1.0f;
  }
  B[0][m - 1] += 0.5f;
}

float search(int n, int m, float A[n][m], float B[n][m], int idx[n], float S[n]) {
  for (int i = 0; i < n; i++)
    idx[i] = find(m, A[i], 0.8f);
  for (int i = 0; i < n; i++)
    S[i] = first_big(m, A[i], 3.0f);
  for (int t = 0; t < 4; t++)
    halve(n, m, B, t);
  float s = 0.0f;
  for (int i = 0; i < n; i++) {
    s += S[i];
    if (s > 20.0f)
      return s;
  }
  return -s;
}
