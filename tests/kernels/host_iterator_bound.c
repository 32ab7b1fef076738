/* A nest whose loops are bounded by the host iterator k (i and j start at k + 1): its
 * per-statement tile set used to name k both as a parameter and as a dimension, which
 * islpy cannot pickle, so over MPI rank 0 failed in broadcasting the compiled program
 * while rank 1 waited (found by random programs over ranks). The tile sets now keep their
 * own dimension names, and a program that still cannot be pickled is compiled by every
 * rank. */
void host_iterator_bound(int n, float A[n], float B[n + 2], int C[n + 2][n]) {
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < n; i++) {
      for (int j = 0; j <= k; j++)
        A[j] = 0.5f * fabs(C[i][j] - C[j + 1][j]);
    }
    for (int i = k + 1; i < n - 2; i++) {
      for (int j = k + 1; j < n; j++)
        B[i] = B[j] < B[j] ? B[j] : B[j];
    }
  }
}
