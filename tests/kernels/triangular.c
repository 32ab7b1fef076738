void upper_tri(int n, double L[n][n], double x[n]) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      L[i][j] = L[i][j] * x[i] - x[j];
}
