/* matmul: C = alpha * A * B + beta * C (PolyBench gemm).
 *
 *   for i, j: C[i][j] *= beta; for k: C[i][j] += alpha * A[i][k] * B[k][j]
 *
 * Dependence pattern: embarrassingly parallel. One nest with band i, j; k is a
 * reduction into C[i][j], kept inside a work-item.
 *
 * Sizes: not in Table IV (the paper uses matmul in Section 11.2.6 / Fig. 10(e) to show
 * box-in/box-out beyond one GPU's memory); CI ni = 48, nj = 40, nk = 32.
 * Inputs: random [0, 1) from bbmm; alpha, beta are scalar parameters.
 */

void matmul(int ni, int nj, int nk, float alpha, float beta, float C[ni][nj],
            float A[ni][nk], float B[nk][nj]) {
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++) {
      C[i][j] = C[i][j] * beta;
      for (int k = 0; k < nk; k++)
        C[i][j] = C[i][j] + alpha * A[i][k] * B[k][j];
    }
}
