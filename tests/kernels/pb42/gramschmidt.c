/* gramschmidt (PolyBench/C 4.2 linear-algebra/solvers) as PolyBench writes it: QR by
 * modified Gram-Schmidt, the norm's running sum in the scalar nrm. */
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
  int i, j, k;
  double nrm;
#pragma scop
  for (k = 0; k < n; k++) {
    nrm = 0.0;
    for (i = 0; i < m; i++)
      nrm += A[i][k] * A[i][k];
    R[k][k] = sqrt(nrm);
    for (i = 0; i < m; i++)
      Q[i][k] = A[i][k] / R[k][k];
    for (j = k + 1; j < n; j++) {
      R[k][j] = 0.0;
      for (i = 0; i < m; i++)
        R[k][j] += Q[i][k] * A[i][j];
      for (i = 0; i < m; i++)
        A[i][j] = A[i][j] - Q[i][k] * R[k][j];
    }
  }
#pragma endscop
}
