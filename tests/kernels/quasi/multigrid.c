/* One V-cycle leg of a 1-d multigrid, with ping-pong smoothing: restriction reads the
 * fine grid at 2*i, prolongation reads the coarse grid at i / 2 (an even point copies,
 * an odd one averages its two neighbours), and the smoother writes B from A on even
 * time steps and A from B on odd ones (t % 2). */
void multigrid(int tsteps, int n, float fine[2 * n + 1], float tmp[2 * n + 1],
               float coarse[n + 1])
{
#pragma scop
  for (int i = 1; i < n; i++)
    coarse[i] = 0.25f * fine[2 * i - 1] + 0.5f * fine[2 * i] + 0.25f * fine[2 * i + 1];
  for (int t = 0; t < tsteps; t++)
    for (int i = 1; i < n; i++) {
      if (t % 2 == 0)
        tmp[i] = 0.5f * coarse[i] + 0.25f * (coarse[i - 1] + coarse[i + 1]);
      else
        coarse[i] = 0.5f * tmp[i] + 0.25f * (tmp[i - 1] + tmp[i + 1]);
    }
  for (int i = 2; i < 2 * n - 1; i++) {
    if (i % 2 == 0)
      fine[i] += coarse[i / 2];
    else
      fine[i] += 0.5f * (coarse[i / 2] + coarse[(i + 1) / 2]);
  }
#pragma endscop
}
