/* tests/kernels/quasi/redblack.c written without steps: every j visited, one colour kept
 * by a guard on (i + j) % 2 (red: odd sums, black: even). The same updates in the same
 * order, half the work-items idle: the comparison for the strided loops. */
void redblack(int tsteps, int n, float A[n][n])
{
#pragma scop
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        if ((i + j) % 2 == 1)
          A[i][j] = 0.25f * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        if ((i + j) % 2 == 0)
          A[i][j] = 0.25f * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
  }
#pragma endscop
}
