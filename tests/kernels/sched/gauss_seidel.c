/* In-place Gauss-Seidel relaxation on a 2-D grid: every sweep reads the values the same
 * sweep already updated (north and west) and the old ones (south and east). No loop is
 * parallel as written; a skewed schedule (a wavefront) has parallel loops. */
void relax(int steps, int m, float U[m][m])
{
  for (int s = 0; s < steps; s++)
    for (int r = 1; r < m - 1; r++)
      for (int c = 1; c < m - 1; c++)
        U[r][c] = 0.2f * (U[r - 1][c] + U[r][c - 1] + U[r][c] + U[r][c + 1] + U[r + 1][c]);
}
