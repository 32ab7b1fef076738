/* durbin (PolyBench/C 4.2 linear-algebra/solvers): Levinson-Durbin recursion for a
 * Toeplitz system, its scalars alpha, beta and sum kept per step k in arrays. */
void init_durbin(int n, double r[n], double y[n], double z[n], double alpha[n],
                 double beta[n], double sum[n])
{
  /* small off-diagonals: a well-conditioned Toeplitz matrix */
  for (int i = 0; i < n; i++)
    r[i] = 0.5 / ((i + 2.0) * (i + 2.0));
}

void kernel_durbin(int n, double r[n], double y[n], double z[n], double alpha[n],
                   double beta[n], double sum[n])
{
#pragma scop
  y[0] = -r[0];
  beta[0] = 1.0;
  alpha[0] = -r[0];
  for (int k = 1; k < n; k++) {
    beta[k] = (1 - alpha[k - 1] * alpha[k - 1]) * beta[k - 1];
    sum[k] = 0.0;
    for (int i = 0; i < k; i++)
      sum[k] += r[k - i - 1] * y[i];
    alpha[k] = -(r[k] + sum[k]) / beta[k];
    for (int i = 0; i < k; i++)
      z[i] = y[i] + alpha[k] * y[k - i - 1];
    for (int i = 0; i < k; i++)
      y[i] = z[i];
    y[k] = alpha[k];
  }
#pragma endscop
}
