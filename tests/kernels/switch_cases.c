/* switch statements whose cases end in break: bbmm reads them as if/else chains. One on
 * the data (run at run time), one on the iterator (its cases restrict the domains). */
void switch_cases(int n, int K[n], float A[n][n], float B[n][n]) {
#pragma omp parallel for
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      switch (K[j] % 4) {
        case 0:
          B[i][j] = A[i][j];
          break;
        case 1:
        case 2:
          B[i][j] = 0.5f * A[i][j];
          break;
        default:
          B[i][j] = -A[i][j];
      }
    }
#pragma omp parallel for
  for (int i = 1; i < n - 1; i++)
    switch (i % 3) {
      case 0: A[i][0] = B[i - 1][1]; break;
      case 1: A[i][0] = B[i + 1][1]; break;
      default: break;
    }
}
