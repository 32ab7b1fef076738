/* Counting while loops (codegen/structure.py, while_loops): the counter set just before
 * the loop and stepped by the body's last statement, up or down, by 1 or more, as its for
 * loop; a break inside one is a flag as in a for loop. */
void while_loops(int n, int m, float A[n][m], float B[n][m])
{
  int i = 1;
  while (i < n - 1) {
    int j = m - 2;
    while (j >= 1) {
      B[i][j] = 0.5f * (A[i - 1][j] + A[i + 1][j]);
      if (B[i][j] > 0.9f)
        break;
      j -= 1;
    }
    i = i + 1;
  }
  int k;
  k = 0;
  while (k < n) {
    A[k][0] += 1.0f;
    k += 2;
  }
}
