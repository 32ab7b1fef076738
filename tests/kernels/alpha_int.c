void histo_scale(int n, int m, float alpha, double beta, int counts[n][m], float out[n][m]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      counts[i][j] = counts[i][j] * 2 + i - j;
      out[i][j] = alpha * (float) counts[i][j] + (beta > 0.5 ? beta : 0.0) + exp(out[i][j]);
    }
}
