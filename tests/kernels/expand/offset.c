/* Expansion over loops that start away from zero: i from -2 (a negative range), j from
 * i + 3 (triangular); s[i][j] is stored at [i + 2][j - 1]. An int reduction beside it. */
void offset(int n, float A[n][n + 1], float B[n][n + 1], int cnt[n])
{
  for (int i = -2; i < n - 2; i++) {
    int c = 0;
    for (int j = i + 3; j < n + 1; j++) {
      float s = A[i + 2][j - 1];
      for (int k = 0; k < i + 2; k++) {
        s -= 0.125f * A[k][j - 1];
        c = (c + (k % 3)) % 7;
      }
      B[i + 2][j - 1] = s;
    }
    cnt[i + 2] = c;
  }
}
