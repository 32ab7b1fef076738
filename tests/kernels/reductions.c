/* Max and min reductions into scalars over 2-D sweeps (bbmm.codegen.reductions): each row
 * gets its own partial, so the rows run in parallel, and the result must be the C
 * program's bit for bit, -0 against +0 and NaNs included (1/m tells the zeros apart);
 * integer sums likewise. */
#include <math.h>

void reductions(int n, int m, int tsteps, float A[n][m], float B[n][m], float out[8],
                int count[4])
{
  for (int t = 0; t < tsteps; t++) {
    float hi = -1.0f, lo = 2.0f, zmax = -1.0f, keep = -1.0f, fz = sqrtf(A[0][0] - 2.0f);
    int most = 0, big = 0, bits = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < m; j++) {
        float a = A[i][j];
        /* zeros of both signs and NaNs, from the data */
        float z = a < 0.1f ? sqrtf(a - 2.0f) : (a < 0.55f ? a - a : -(a - a));
        hi = a > hi ? a : hi;                    /* strict max, ternary */
        if (a < lo)                              /* strict min, if */
          lo = a;
        zmax = zmax < z ? z : zmax;              /* ties between -0 and +0, NaNs */
        fz = fmaxf(fz, a < 0.3f ? z : a);        /* from a NaN: the first number, then max */
        int v = (int)(a * 10.0f) + t;
        most = v >= most ? v : most;             /* integers: any form */
        big += a > 0.5f;                         /* integer sums: any order */
        bits += v % 3 == 1 ? v * 7 : -v;
        B[i][j] = a * 0.5f + B[i][j];
      }
    out[0] = hi;
    out[1] = lo;
    out[2] = zmax;
    out[3] = 1.0f / zmax;
    out[7] = fz;      /* (not 1/fz: fmax's choice between -0 and +0 is the library's) */
    count[0] = most;
    count[2] = big;
    count[3] = bits;
    float zero = 1.0f, zcol = 1.0f;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < m; j++) {
        float z = i < n - 1 - t ? A[i][j] - A[i][j] : -(A[i][j] - A[i][j]);
        zero = z < zero ? z : zero;              /* the first zero wins: +0, not the last rows' -0 */
        float w = j < m - 9 - t ? A[i][j] - A[i][j] : -(A[i][j] - A[i][j]);
        if (w < zcol)                            /* +0, not the last columns' -0 */
          zcol = w;
      }
    out[5] = 1.0f / zero;
    out[6] = 1.0f / zcol;
    count[1] = count[1] + (zero == 0.0f);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < m; j++)
        keep = keep > A[i][j] ? keep : A[i][j]; /* takes A[i][j] unless keep > it: serial */
    out[4] = keep;
  }
}
