/* OpenMP-annotated loops over scalars. The reduction's pragma is not followed (bbmm keeps
 * the additions in the source's order, as the sequential program does; a warning says
 * so); the private scalar w is privatized over i, so the second pragma holds. */
void omp_clauses(int n, int m, float A[n][m], float x[n])
{
  float s = 0.0f, w;
#pragma omp parallel for reduction(+:s)
  for (int i = 0; i < n; i++)
    s += x[i];
#pragma omp parallel for private(w)
  for (int i = 0; i < n; i++) {
    w = 0.0f;
    for (int j = 0; j < m; j++)
      w += A[i][j];
    x[i] = w / (1.0f + s);
  }
}
