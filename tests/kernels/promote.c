/* Array elements kept in a register across an inner loop (codegen.opencl._promotable):
 * promoted where every reference in the loop is one element (x[i], s[i] in the j < i
 * loop, which is empty for i = 0), not where the element moves with the loop (z[i][j]),
 * is only read (x[i] in the second loop), or a statement is guarded (the last loop). */
void promote(int n, float A[n][n], float x[n], float y[n], float z[n][n], float s[n])
{
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      x[i] = x[i] + A[i][j] * y[j];
    for (int j = 0; j < n; j++)
      z[i][j] = z[i][j] * 0.5f + x[i];
    for (int j = 0; j < i; j++) {
      s[i] += A[j][i] * 0.25f;
      s[i] = s[i] * 0.75f;
    }
    for (int j = 0; j < n; j++)
      if (j > i)
        s[i] += A[i][j];
  }
}
