/* doitgen (PolyBench/C 4.2 linear-algebra/kernels): multiresolution kernel; the one
 * scratch row sum[] is shared by every (r, q). PolyBench's size np is nps here: the
 * generated Python driver refuses C names it uses itself (numpy is np there). */
void kernel_doitgen(int nr, int nq, int nps, double A[nr][nq][nps], double C4[nps][nps],
                    double sum[nps])
{
#pragma scop
  for (int r = 0; r < nr; r++)
    for (int q = 0; q < nq; q++) {
      for (int p = 0; p < nps; p++) {
        sum[p] = 0.0;
        for (int s = 0; s < nps; s++)
          sum[p] += A[r][q][s] * C4[s][p];
      }
      for (int p = 0; p < nps; p++)
        A[r][q][p] = sum[p];
    }
#pragma endscop
}
