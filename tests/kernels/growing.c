/* A box that grows across serial iterations: at iteration k each row tile reads and
 * writes columns 0..k, so its box of A is [rows] x [0..k] and a new, larger copy
 * supersedes the previous one every k (docs/coherence.md, case 1). Several nests
 * inside the serial loop, one of them triangular, and an int array. */
void growing(int n, float A[n][n], int cnt[n], double s[n]) {
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < n; i++)
      for (int j = 0; j <= k; j++)
        A[i][j] = A[i][j] * 0.5f + A[i][k] * 0.25f + 1.0f;
    for (int i = 0; i < n; i++)
      cnt[i] = cnt[i] + (A[i][k] > 1.0f ? 1 : 0);
    for (int i = k; i < n; i++)
      s[i] = s[i] + A[i][i] * 0.5;
  }
}
