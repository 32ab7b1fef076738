/* Loops with steps other than 1: a parallel loop with step 3 (tiled, its iterator's
 * value in the right-hand side), a loop counting down by 2 inside a serial loop, an
 * inner loop with step 4 and a min upper bound, a guard on the parity of a sum, and a
 * reduction over every other element. */
void strides(int tsteps, int n, float A[n], float B[n][n], float x[n])
{
#pragma scop
  for (int i = 1; i < n; i += 3)
    A[i] = A[i] * 0.5f + i;
  for (int t = 0; t < tsteps; t++) {
    for (int i = n - 1; i >= 1; i -= 2)
      for (int j = 0; j < n && j <= i + 5; j += 4)
        B[i][j] = B[i][j] * 0.5f + B[i - 1][j] * 0.25f + x[n - 1 - i] + t;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        if ((i + j + t) % 2 == 1)
          B[i][j] -= 0.125f * A[j];
  }
  for (int i = 0; i < n; i++)
    for (int j = i % 2; j < n; j += 2)
      x[i] += B[i][j] * 0.25f;
#pragma endscop
}
