/* Scalars initialised in their declarations before '#pragma scop': constants (eps), an
 * expression of a parameter (fn), of another such scalar (e2), and one the region then
 * carries across iterations (acc, a running sum from 0.5). */
#include <math.h>
void kernel_corr(int m, int n, double data[n][m], double stddev[m], float out[m])
{
  int i, j;
  double eps = 0.1;
  float fn = (float)n;
  double e2 = eps * 2;
  double acc = 0.5;
#pragma scop
  for (j = 0; j < m; j++) {
    stddev[j] = 0.0;
    for (i = 0; i < n; i++)
      stddev[j] += data[i][j] * data[i][j];
    stddev[j] /= fn;
    stddev[j] = stddev[j] <= eps ? 1.0 : sqrt(stddev[j]) + e2;
  }
  for (j = 0; j < m; j++) {
    acc += stddev[j];
    out[j] = acc;
  }
#pragma endscop
}
