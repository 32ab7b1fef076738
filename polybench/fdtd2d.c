/* fdtd2d: 2-D finite-difference time-domain kernel (PolyBench fdtd-2d).
 *
 *   for t:
 *     ey[0][j]  = _fict_[t]                                          (source row)
 *     ey[i][j] -= 0.5 (hz[i][j] - hz[i-1][j])                         i >= 1
 *     ex[i][j] -= 0.5 (hz[i][j] - hz[i][j-1])                         j >= 1
 *     hz[i][j] -= 0.7 (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]) i < nx-1, j < ny-1
 *
 * Dependence pattern: uniform (distance-1 neighbours between the three fields). t is
 * serial (host loop); each of the four nests is fully parallel (band j for the source
 * row, band i, j for the others).
 *
 * Sizes: paper (Table IV, data on 1 GPU) nx = ny = 10240 (10240 x 10240);
 * CI tmax = 4, nx = 48, ny = 40. Inputs: random [0, 1) from bbmm.
 */

void fdtd2d(int tmax, int nx, int ny, float ex[nx][ny], float ey[nx][ny], float hz[nx][ny],
            float _fict_[tmax]) {
  for (int t = 0; t < tmax; t++) {
    for (int j = 0; j < ny; j++)
      ey[0][j] = _fict_[t];
    for (int i = 1; i < nx; i++)
      for (int j = 0; j < ny; j++)
        ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i - 1][j]);
    for (int i = 0; i < nx; i++)
      for (int j = 1; j < ny; j++)
        ex[i][j] = ex[i][j] - 0.5f * (hz[i][j] - hz[i][j - 1]);
    for (int i = 0; i < nx - 1; i++)
      for (int j = 0; j < ny - 1; j++)
        hz[i][j] = hz[i][j] - 0.7f * (ex[i][j + 1] - ex[i][j] + ey[i + 1][j] - ey[i][j]);
  }
}
