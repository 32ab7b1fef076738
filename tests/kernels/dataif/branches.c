/* ifs bbmm evaluates at run time, each assignment under them becoming X = c ? e : X:
 * affine conjuncts kept in the domain (they keep A[i - 1][j + 1] in bounds), else-if
 * chains, an affine test inside data tests, an increment, a '%' of a value that may be
 * negative (C's rounding, evaluated by C's operator), a reduction declared inside a data
 * if (its own statements need no guard), and a temporary computed from an array that the
 * branch then writes (kept in memory, as the condition itself). */
void branches(int tsteps, int n, float A[n][n], float B[n][n], int cnt[n], float thr) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        if (i > 0 && j < n - 1 && A[i - 1][j + 1] > thr)
          B[i][j] = A[i - 1][j + 1];
        if (A[i][j] > 0.75f)
          B[i][j] += 1.0f;
        else if (A[i][j] > 0.5f) {
          B[i][j] -= 0.5f;
          if (j % 2 == 0)
            cnt[i]++;
        } else
          B[i][j] = 0.25f * B[i][j];
        if ((j - i) % 3 == -1)
          B[i][j] *= 0.5f;
      }
      if (cnt[i] > t && thr < 0.9f) {
        float s = 0.0f;
        for (int j = 0; j < n; j++)
          s += B[i][j];
        A[i][0] = s / n;
      }
    }
#pragma omp parallel for
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        if (B[i][j] > 2.0f) {
          float c = B[i][j];
          B[i][j] = 2.0f;
          A[i][j] = A[i][j] * 0.5f + c * 0.25f;
        } else
          A[i][j] = 0.9f * A[i][j];
  }
}
