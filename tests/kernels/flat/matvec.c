/* A matrix kept flat with m columns (A[i*m + j]) times a vector, and its transpose
 * times another (A[j*m + i]: the column walk, mvt's shape), in classic C signatures. */
void matvec(int n, int m, const double *A, const double *x, const double *y,
            double *u, double *v) {
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < m; j++)
      s += A[i * m + j] * x[j];
    u[i] = s;
  }
#pragma omp parallel for
  for (int i = 0; i < m; i++) {
    double s = 0.0;
    for (int j = 0; j < n; j++)
      s += A[j * m + i] * y[j];
    v[i] = s;
  }
}
