/* Boxes that grow with the serial loop: tile t's rows of A and B are those below k, so a
 * tile's footprint is largest in the last iterations (bbmm's tile dry run must look there,
 * not only at the first ones, to pick a tile that fits a --device-mem cap). */
void rows_below(int n, float A[n][n], float B[n][n], float c[n]) {
  for (int k = 0; k < n; k++)
#pragma omp parallel for
    for (int i = 0; i < k; i++)
      for (int j = 0; j < n; j++)
        A[i][j] += B[i][j] * c[k];
}
