/* Reductions under ifs on the data: the largest value of each row and where it is (the
 * condition reads b, which the first guarded statement writes, so the condition is kept
 * in memory: the second statement must see the value it had), and a count (k++). */
void argmax(int n, int m, float A[n][m], float best[n], int where[n], int count[n],
            float thr) {
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    float b = A[i][0];
    int w = 0;
    int k = 0;
    for (int j = 1; j < m; j++) {
      if (A[i][j] > b) {
        b = A[i][j];
        w = j;
      }
      if (A[i][j] > thr)
        k++;
    }
    best[i] = b;
    where[i] = w;
    count[i] = k;
  }
}
