/* durbin (PolyBench/C 4.2 linear-algebra/solvers) as PolyBench writes it: Levinson-Durbin
 * recursion for a Toeplitz system, with the local array z and the scalars alpha, beta and
 * sum carried from one step k to the next. */
void init_durbin(int n, double r[n], double y[n])
{
  /* small off-diagonals: a well-conditioned Toeplitz matrix */
  for (int i = 0; i < n; i++)
    r[i] = 0.5 / ((i + 2.0) * (i + 2.0));
}

void kernel_durbin(int n, double r[n], double y[n])
{
  double z[n];
  double alpha;
  double beta;
  double sum;
  int i, k;
#pragma scop
  y[0] = -r[0];
  beta = 1.0;
  alpha = -r[0];
  for (k = 1; k < n; k++) {
    beta = (1 - alpha * alpha) * beta;
    sum = 0.0;
    for (i = 0; i < k; i++)
      sum += r[k - i - 1] * y[i];
    alpha = -(r[k] + sum) / beta;
    for (i = 0; i < k; i++)
      z[i] = y[i] + alpha * y[k - i - 1];
    for (i = 0; i < k; i++)
      y[i] = z[i];
    y[k] = alpha;
  }
#pragma endscop
}
