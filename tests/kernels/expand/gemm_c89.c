/* C89 style: the accumulator is declared before the scop and assigned in every (i, j) of a
 * time loop; bbmm privatizes it over (t, i, j), then contracts t (serial): acc[ni][nj]. */
void gemm_c89(int tsteps, int ni, int nj, int nk, float C[ni][nj], float A[ni][nk],
              float B[nk][nj])
{
  int t, i, j, k;
  float acc;
#pragma scop
  for (t = 0; t < tsteps; t++)
    for (i = 0; i < ni; i++)
      for (j = 0; j < nj; j++) {
        acc = 0.0f;
        for (k = 0; k < nk; k++)
          acc += A[i][k] * B[k][j];
        C[i][j] = 0.5f * C[i][j] + 0.25f * acc;
      }
#pragma endscop
}
