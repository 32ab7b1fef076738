/* Max, min and integer-sum reductions over a loop with no inner loop (codegen/reductions.py
 * strip-mines the loop itself: strips of 8, blocks of 64), beside one over a row inside
 * a parallel loop; the result must be the C program's bit for bit. */
#include <math.h>

void reductions1d(int n, int m, int tsteps, float x[n], float y[n], float M[m][n],
                  float out[4], int count[1], float rmax[m])
{
  for (int t = 0; t < tsteps; t++) {
    for (int i = 0; i < n; i++)
      y[i] = 0.5f * x[i] + 0.25f * y[i];
    float err = sqrtf(x[0] - 2.0f), lo = 2.0f, zf = 1.0f, zg = 1.0f;
    int big = 0;
    for (int i = 1; i < n; i++) {
      float d = fabsf(x[i] - y[i]);
      err = fmaxf(err, d);                      /* from a NaN: the first number */
      if (y[i] < lo)
        lo = y[i];
      big += d > 0.25f;
      float w = i < n - 600 ? x[i] - x[i] : -(x[i] - x[i]);
      if (w < zf)                               /* the first zero: +0, not the last -0s */
        zf = w;
      float v = i < 100 ? x[i] - x[i] : -(x[i] - x[i]);
      zg = v < zg ? v : zg;                     /* +0 again, -0 from the 100th on */
    }
    out[0] = err;
    out[1] = lo;
    out[2] = 1.0f / zf;
    out[3] = 1.0f / zg;
    count[0] = big;
    for (int r = 0; r < m; r++) {             /* a max per row: the rows in parallel */
      float h = -1.0f;
      for (int i = 0; i < n; i++)
        h = M[r][i] > h ? M[r][i] : h;
      rmax[r] = h + t;
    }
  }
}
