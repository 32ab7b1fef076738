/* gramschmidt (PolyBench/C 4.2 linear-algebra/solvers): QR by modified Gram-Schmidt,
 * the norm's running sum kept in R[k][k] (bbmm does no scalar expansion). */
#include <math.h>

void init_gramschmidt(int m, int n, double A[m][n], double R[n][n], double Q[m][n])
{
  /* columns far from dependent: no norm near zero */
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      A[i][j] = (i == j ? 4.0 : 0.0) + ((i * j) % m) / (double) m + 0.1;
}

void kernel_gramschmidt(int m, int n, double A[m][n], double R[n][n], double Q[m][n])
{
#pragma scop
  for (int k = 0; k < n; k++) {
    R[k][k] = 0.0;
    for (int i = 0; i < m; i++)
      R[k][k] += A[i][k] * A[i][k];
    R[k][k] = sqrt(R[k][k]);
    for (int i = 0; i < m; i++)
      Q[i][k] = A[i][k] / R[k][k];
    for (int j = k + 1; j < n; j++) {
      R[k][j] = 0.0;
      for (int i = 0; i < m; i++)
        R[k][j] += Q[i][k] * A[i][j];
      for (int i = 0; i < m; i++)
        A[i][j] = A[i][j] - Q[i][k] * R[k][j];
    }
  }
#pragma endscop
}
