/* Tables of row pointers (double **A, a matrix allocated as rows of one block): used only
 * as A[i][j], they are arrays sized from their subscripts (codegen/scalarize.py); the
 * sequential C program gets a table of pointers into the rows of bbmm's arrays. The
 * allocator 'matrix' is no kernel candidate (it returns a pointer). --init init_array
 * works where init_array stays inside those sizes. */
#include <stdlib.h>

static void init_array(int n, int m, double **A, double **B)
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      A[i][j] = (double) (i * j % 7) / m;
      if (i < n - 1 && j < m - 1) B[i][j] = 0.0;
    }
}

void smooth(int tsteps, int n, int m, double **A, double **B)
{
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        B[i][j] = 0.25 * (A[i-1][j] + A[i+1][j] + A[i][j-1] + A[i][j+1]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        A[i][j] = B[i][j];
  }
}

static double **matrix(int n, int m)
{
  double **r = malloc(n * sizeof *r);
  r[0] = malloc((size_t) n * m * sizeof **r);
  for (int i = 1; i < n; i++)
    r[i] = r[0] + (size_t) i * m;
  return r;
}

int main(void)
{
  int n = 100, m = 80;
  double **A = matrix(n, m), **B = matrix(n, m);
  init_array(n, m, A, B);
  smooth(10, n, m, A, B);
  return 0;
}
