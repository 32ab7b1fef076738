/* Inner loops that staged kernels run (a 1-D band whose body is one loop with bounds free
 * of the band iterator): a column walk (y[i] from B[j][i]), a row walk (x[i] from
 * A[i][j]) with an offset range of j, a '+=' of a double expression with two staged
 * reads, two statements per trip each updating an element held in a register; and one
 * nest not staged, whose written element moves with the loop (z[i][j]). Each nest is
 * its own kernel. */
void staged(int m, int n, float A[m][n], float B[m][n], float C[n][m], float x[m],
            float y[n], float w[n], float z[m][n])
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      y[i] = y[i] + B[j][i] * x[j];
  for (int i = 0; i < m; i++)
    for (int j = 1; j < n - 1; j++)
      x[i] += A[i][j] * w[j];
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      z[i][j] = A[i][j] * 0.5f + C[j][i];
      x[i] = x[i] * 0.75f + A[i][j];
    }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      w[i] += (double)B[j][i] / 3.0 + A[j][i];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      y[i] = y[i] * 0.5f + B[j][i];
      w[i] = w[i] + y[i] * A[j][i];
    }
}
