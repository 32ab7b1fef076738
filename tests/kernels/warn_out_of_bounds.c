/* Reads A[i + 1][i + 1] for i up to n - 1: one row and column past the end. */
void oob(int n, float A[n][n], float B[n]) {
  for (int i = 0; i < n; i++)
    B[i] = A[i + 1][i + 1];
}
