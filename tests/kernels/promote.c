/* Inner loops that update one element on every trip (x[i], s[i] in the j < i loop, empty
 * for i = 0), beside loops where the element moves with the loop (z[i][j]), is only read
 * (x[i] in the second loop), or is updated under a guard (the last loop). Kept from an
 * experiment that held such elements in registers (no faster on the H200, whose compiler
 * already does it): the shapes a kernel generator must get right. */
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
