/* tests/kernels/dataif/argmax.c with the branch's two assignments swapped (w = j before
 * b = A[i][j]): the condition reads b, which is now written after the condition's last
 * use, so the condition stays a value (a register) instead of a local array in memory. */
void argmax(int n, int m, float A[n][m], float best[n], int where[n], int count[n],
            float thr) {
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    float b = A[i][0];
    int w = 0;
    int k = 0;
    for (int j = 1; j < m; j++) {
      if (A[i][j] > b) {
        w = j;
        b = A[i][j];
      }
      if (A[i][j] > thr)
        k++;
    }
    best[i] = b;
    where[i] = w;
    count[i] = k;
  }
}
