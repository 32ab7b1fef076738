void matmul(int ni, int nj, int nk, float alpha, float C[ni][nj], float A[ni][nk],
            float B[nk][nj]) {
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++)
      for (int k = 0; k < nk; k++)
        C[i][j] += alpha * A[i][k] * B[k][j];
}
