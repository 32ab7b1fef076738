void guarded(int n, float A[n][n], float d[n]) {
  for (int i = 0; i < n; i++) {
    d[i] = 0;
    for (int j = 0; j < n; j++)
      if (i != j && j < n - 1)
        A[i][j] = A[i][j] / 2;
      else
        A[i][j] = 1.0f;
  }
}
