/* Helpers that return early ('if (c) return;' at the top level of their body): bbmm
 * inlines them with the rest of the body in the else branch. Conditions on the data
 * take both ways with random inputs in [0, 1). */
static void clip_row(int n, float *a, float lo) {
  if (lo < 0.5f)
    return;
  for (int j = 0; j < n; j++)
    a[j] = a[j] < lo ? lo : a[j];
}

static float first_big(const float *a) {
  if (a[0] > 0.7f)
    return a[0];
  if (a[1] > 0.3f) {
    float h = a[1] * 0.5f;
    return h;
  }
  return -1.0f;
}

void helper_early_return(int n, float A[n][n], float y[n], float lo[n]) {
  for (int i = 0; i < n; i++) {
    clip_row(n, A[i], lo[i]);
    y[i] = first_big(A[i]);
  }
}
