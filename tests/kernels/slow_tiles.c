/* Each tile's kernel is slow (r passes over its rows), and a tight --device-mem makes
   every tile reuse the memory of boxes freed before it: the next tile's read-in, which
   runs beside this tile's kernel, must wait for the last use of that memory. */
void slow_tiles(int n, int m, int r, float A[n][m], float B[n][m]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      for (int k = 0; k < r; k++)
        B[i][j] = B[i][j] * 0.5f + A[i][j];
}
