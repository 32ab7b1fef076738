/* A finite-volume sweep in the style of CFD codes: per cell, small local arrays of
 * fluxes and states, filled by inner loops, read back in another loop, one of them
 * declared in a block of its own and one inside the serial loop over stages. */
void flux(int nstages, int n, int m, double U[n][m][4], double R[n][m][4]) {
  for (int s = 0; s < nstages; s++) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++) {
        double f[4];
        double g[2][4];
        for (int c = 0; c < 4; c++) {
          g[0][c] = 0.5 * (U[i - 1][j][c] + U[i][j][c]);
          g[1][c] = 0.5 * (U[i][j][c] + U[i + 1][j][c]);
        }
        for (int c = 0; c < 4; c++)
          f[c] = g[1][c] - g[0][c] + 0.25 * (U[i][j + 1][c] - U[i][j - 1][c]);
        {
          double scale[1];
          scale[0] = 1.0 / (1 + s);
          for (int c = 0; c < 4; c++)
            R[i][j][c] = f[3 - c] * scale[0];
        }
      }
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        for (int c = 0; c < 4; c++)
          U[i][j][c] = U[i][j][c] - 0.125 * R[i][j][c];
  }
}
