/* mvt-like: statements before and after the inner loop */
void mvt(int n, double A[n][n], double x[n], double y[n], double s[n]) {
  for (int i = 0; i < n; i++) {
    s[i] = 0.0;
    for (int j = 0; j < n; j++)
      s[i] += A[i][j] * x[j];
    y[i] = sqrt(s[i]) + fabs(x[i]);
  }
}
