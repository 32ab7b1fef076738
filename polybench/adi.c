/* adi: alternating direction implicit solver (PolyBench 3.x adi, the 2013 form).
 *
 * Per time step a row sweep then a column sweep; each sweep is a forward elimination
 * (X and B), a division at the last element, and a back substitution, exactly as in
 * PolyBench 3.2 (including its back-substitution indices):
 *
 *   row sweep (along i2, for every row i1):
 *     X[i1][i2] -= X[i1][i2-1] * A[i1][i2] / B[i1][i2-1]          i2 = 1 .. n-1
 *     B[i1][i2] -= A[i1][i2] * A[i1][i2] / B[i1][i2-1]
 *     X[i1][n-1] /= B[i1][n-1]
 *     X[i1][n-2-i2] = (X[i1][n-2-i2] - X[i1][n-3-i2] * A[i1][n-3-i2]) / B[i1][n-3-i2]
 *   column sweep (along i1, for every column i2): the same with the subscripts swapped.
 *
 * PolyBench writes the column sweep with the sweep loop i1 outside; here its two nests
 * are interchanged (i2 outside, i1 inside; valid since a column only depends on itself),
 * as Pluto does for the paper: in every sweep the sweep dimension is a serial loop
 * inside a work-item and the other dimension is the parallel loop (rows are distributed
 * in the row sweep, columns in the column sweep, hence the large coherence traffic the
 * paper reports for adi).
 *
 * Dependence pattern: uniform (distance-1 along the sweep dimension). t is serial (host
 * loop); six nests per time step: band i1 (row sweep, i2 inside) x3, band i2 (column
 * sweep, i1 inside) x3.
 *
 * Sizes: paper (Table IV, data on 1 GPU) n = 8192 (8192 x 8192); CI tsteps = 3, n = 32.
 * n >= 3. init_adi: X in [0, 1), A in [0, 0.1), B in [2, 3). Random data would soon
 * divide by near-zero pivots; here each sweep lowers B by at most A^2 / B, so B stays
 * >= 1 for at least 75 time steps (keep tsteps <= 75; the paper reports times per time
 * step). X shrinks by about 1 / B^2 per time step, which only matters for the values.
 */

void init_adi(int tsteps, int n, float X[n][n], float A[n][n], float B[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      X[i][j] = (float)((i * (j + 1) + 1) % n) / (float)n;
      A[i][j] = (float)((i * (j + 2) + 2) % n) / (float)(10 * n);
      B[i][j] = 2.0f + (float)((i * (j + 3) + 3) % n) / (float)n;
    }
}

void adi(int tsteps, int n, float X[n][n], float A[n][n], float B[n][n]) {
  for (int t = 0; t < tsteps; t++) {
    /* row sweep: rows i1 in parallel, along i2 inside */
    for (int i1 = 0; i1 < n; i1++)
      for (int i2 = 1; i2 < n; i2++) {
        X[i1][i2] = X[i1][i2] - X[i1][i2 - 1] * A[i1][i2] / B[i1][i2 - 1];
        B[i1][i2] = B[i1][i2] - A[i1][i2] * A[i1][i2] / B[i1][i2 - 1];
      }
    for (int i1 = 0; i1 < n; i1++)
      X[i1][n - 1] = X[i1][n - 1] / B[i1][n - 1];
    for (int i1 = 0; i1 < n; i1++)
      for (int i2 = 0; i2 < n - 2; i2++)
        X[i1][n - i2 - 2] = (X[i1][n - 2 - i2] - X[i1][n - 2 - i2 - 1] * A[i1][n - i2 - 3])
                            / B[i1][n - 3 - i2];
    /* column sweep: columns i2 in parallel, along i1 inside */
    for (int i2 = 0; i2 < n; i2++)
      for (int i1 = 1; i1 < n; i1++) {
        X[i1][i2] = X[i1][i2] - X[i1 - 1][i2] * A[i1][i2] / B[i1 - 1][i2];
        B[i1][i2] = B[i1][i2] - A[i1][i2] * A[i1][i2] / B[i1 - 1][i2];
      }
    for (int i2 = 0; i2 < n; i2++)
      X[n - 1][i2] = X[n - 1][i2] / B[n - 1][i2];
    for (int i2 = 0; i2 < n; i2++)
      for (int i1 = 0; i1 < n - 2; i1++)
        X[n - 2 - i1][i2] = (X[n - 2 - i1][i2] - X[n - i1 - 3][i2] * A[n - 3 - i1][i2])
                            / B[n - 2 - i1][i2];
  }
}
