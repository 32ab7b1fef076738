/* A kernel that returns a value: bbmm stores it in result[0] (codegen/structure.py),
 * checks it against the C function's value and prints it. It also writes an array, and
 * returns early for sizes it has nothing to do for. */
double returns_value(int n, int m, const double *A, double *rows) {
  if (n < 1)
    return -1.0;
  double total = 0.0;
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < m; j++)
      s += A[i * m + j];
    rows[i] = s;
  }
  for (int i = 0; i < n; i++)
    total += rows[i] * rows[i];
  return total;
}
