/* Red-black Gauss-Seidel: each sweep updates one colour of a checkerboard, the inner
 * loop starting at 1 + i % 2 (or 2 - i % 2) with step 2. The front end models the loop
 * of j by j_s = (j - first) / 2 and reads j as 2*j_s + first. */
void redblack(int tsteps, int n, float A[n][n])
{
#pragma scop
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1 + i % 2; j < n - 1; j += 2)
        A[i][j] = 0.25f * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 2 - i % 2; j < n - 1; j += 2)
        A[i][j] = 0.25f * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
  }
#pragma endscop
}
