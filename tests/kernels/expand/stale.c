/* Temporaries computed from arrays that are written before they are read: a value bbmm
 * recomputes where it is read would see the new elements, so these are kept in memory
 * (local arrays, one element per row): old, read after A[i] is written; first, read on
 * later trips of a loop that writes what it was computed from; and sum, a value computed
 * from old (a temporary in memory) read after old's array changes. */
void stale(int n, int m, float A[n][m + 1], float B[n][m]) {
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    float old = A[i][0];
    A[i][0] = 2.0f * A[i][0];
    float first = A[i][1];
    for (int j = 1; j < m; j++) {
      B[i][j] = first + old;
      A[i][1] = 0.5f * B[i][j];
    }
    float sum = old + first;
    old = 0.25f;
    B[i][0] = sum + old;
  }
}
