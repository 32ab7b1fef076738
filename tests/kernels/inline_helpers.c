/* A kernel factored into helpers that take arrays: bbmm inlines their bodies at the calls
 * (codegen/inline.py). A row update through pointers, a reduction returning a value, an
 * out-parameter through '&', a helper calling a helper, a scalar parameter the helper
 * changes, and a loop variable named as the caller's. */
static void smooth_row(int n, float *dst, const float *src) {
  for (int j = 1; j < n - 1; j++)
    dst[j] = (src[j - 1] + src[j] + src[j + 1]) / 3.0f;
}

static float dot(int n, const float a[], const float b[]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

static void scale_into(int n, float *out, float *x, float f) {
  f = f * 0.5f;
  for (int i = 0; i < n; i++)
    out[i] = f * x[i];
}

static void row_max(int n, const float *row, float *best) {
  *best = row[0];
  for (int j = 1; j < n; j++)
    *best = row[j] > *best ? row[j] : *best;
}

static void step(int n, float A[n][n], float B[n][n], int i) {
  smooth_row(n, B[i], A[i]);
}

void inline_helpers(int n, float A[n][n], float B[n][n], float x[n], float y[n],
                    float z[n][n], float m[n]) {
  for (int i = 0; i < n; i++)
    step(n, A, B, i);
  for (int i = 0; i < n; i++) {
    float d = dot(n, B[i], x);
    y[i] = d + dot(n - 1, &A[i][1], x);
  }
  for (int i = 0; i < n; i++)
    scale_into(n, z[i], A[i], y[i]);
  for (int i = 0; i < n; i++)
    row_max(n, z[i], &m[i]);
}
