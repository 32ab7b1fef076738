/* Classic C signatures: pointers used as arrays (x[i], *x, a result through *dot) and an
 * array whose first size is left to the caller (B[][n + 1]); bbmm sizes each by its
 * largest first subscript plus one: x[n], y[n], dot[1], B[n + 1][n + 1]. */
void pointers(int tsteps, int n, float a, const float *x, float *y, float *dot,
              float B[][n + 1]) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) {
      y[i] = a * x[i] + y[i];
      for (int j = 0; j <= n; j++)
        B[i + 1][j] = B[i + 1][j] * 0.5f + *x;
    }
  }
  float s = 0;
  for (int i = 0; i < n; i++)
    s += x[i] * y[i];
  *dot = s;
}
