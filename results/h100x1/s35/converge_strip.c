/* converge.c as codegen/reductions.py would write it with the inner loop strip-mined by
 * 8 (a partial per row and strip, combined per row, then over the rows): a prototype,
 * written by hand, to time before building it. */
#include <math.h>

void converge(int n, int tmax, float tol, float A[n][n], float B[n][n], int steps[1],
              float part[n][n / 8 + 1], float rowp[n])
{
  steps[0] = 0;
  for (int t = 0; t < tmax; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = 0.25f * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
    float diff = 0.0f;
    for (int i = 1; i < n - 1; i++)
      for (int jb = 0; jb <= (n - 3) / 8; jb++) {
        part[i][jb] = diff;
        for (int j = 1 + 8 * jb; j < n - 1 && j < 9 + 8 * jb; j++) {
          float d = fabsf(B[i][j] - A[i][j]);
          part[i][jb] = d > part[i][jb] ? d : part[i][jb];
          A[i][j] = B[i][j];
        }
      }
    for (int i = 1; i < n - 1; i++) {
      rowp[i] = diff;
      for (int jb = 0; jb <= (n - 3) / 8; jb++)
        rowp[i] = part[i][jb] > rowp[i] ? part[i][jb] : rowp[i];
    }
    for (int i = 1; i < n - 1; i++)
      diff = rowp[i] > diff ? rowp[i] : diff;
    steps[0] = t + 1;
    if (diff < tol)
      break;
  }
}
