/* lu_alloc.c: LU decomposition without pivoting of a symmetric positive definite matrix.
 * init_array builds it as B * B^T in a scratch matrix B it allocates with my_alloc, which
 * myutil/myutil.c defines: the sequential build (--init, --check) needs that file too,
 *   bbmm run lu_alloc.c myutil/myutil.c -I myutil --param n=24 --init init_array --check */
#include "myutil.h"

void init_array(int n, double A[n][n])
{
  double (*B)[n] = MY_2D_ALLOC(double, n, n);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      B[i][j] = my_value(i, j, n);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      A[i][j] = 0;
      for (int k = 0; k < n; k++)
        A[i][j] += B[i][k] * B[j][k];
    }
  my_free(B);
}

void kernel_lu(int n, double A[n][n])
{
  for (int k = 0; k < n; k++) {
    for (int j = k + 1; j < n; j++)
      A[k][j] = A[k][j] / A[k][k];
    for (int i = k + 1; i < n; i++)
      for (int j = k + 1; j < n; j++)
        A[i][j] = A[i][j] - A[i][k] * A[k][j];
  }
}
