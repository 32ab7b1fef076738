/* Strips of consecutive rows per work-item (BBMM_CO1 > 1): a window of rows i-1, i, i+1;
 * rows i-2 and i+2 of C (a gap: no window); row 2i; the diagonal A[i][i]; a column read at
 * row j (the row index i in the second subscript); reads that do not depend on i (y[j],
 * A[1][j]); and the row number itself. */
void strips(int n, float A[n][n], float C[2 * n][n], float y[n], float B[n][n]) {
  for (int i = 2; i < n - 2; i++)
    for (int j = 1; j < n - 1; j++)
      B[i][j] = A[i - 1][j] + A[i][j] * A[i + 1][j] - C[i - 2][j] * C[i + 2][j]
              + C[2 * i][j] + A[i][i] * A[j][i] + y[j] * A[1][j] + 0.25f * i;
}
