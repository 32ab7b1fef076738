/* Gauss-Seidel sweeps over a line, tiled in the style of polycc (Pluto) output: the time
 * loop t and the skewed space loop j = t + i in 8 x 8 tiles, tiles run by wavefronts
 * w = T1 + T2, the tiles of one wavefront in parallel. Pluto's macros, its loop bounds
 * kept in 'lbp'/'ubp' (and 'lbv'/'ubv' before the innermost loop), assigned just before
 * the loops. The source this stands for:
 *   for (t = 0; t < tsteps; t++)
 *     for (i = 1; i < n - 1; i++)
 *       A[i] = (A[i - 1] + A[i] + A[i + 1]) / 3; */
#include <math.h>
#define ceild(n,d)  (((n)<0) ? -((-(n))/(d)) : ((n)+(d)-1)/(d))
#define floord(n,d) (((n)<0) ? -((-(n)+(d)-1)/(d)) : (n)/(d))
#define max(x,y)    ((x) > (y)? (x) : (y))
#define min(x,y)    ((x) < (y)? (x) : (y))

void kernel_seidel_1d(int tsteps, int n, double A[n])
{
  int t1, t2, t3, t4;
  int lb, ub, lbp, ubp, lb2, ub2;
  register int lbv, ubv;
/* Start of CLooG code */
if ((n >= 3) && (tsteps >= 1)) {
  for (t1=0;t1<=floord(tsteps+n-3,8)+floord(tsteps-1,8);t1++) {
    lbp=max(0,ceild(8*t1-tsteps-n+3,8));
    ubp=min(floord(tsteps-1,8),t1);
#pragma omp parallel for private(lbv,ubv,t3,t4)
    for (t2=lbp;t2<=ubp;t2++) {
      for (t3=max(max(8*t2,8*t1-8*t2-n+2),0);t3<=min(min(tsteps-1,8*t2+7),8*t1-8*t2+6);t3++) {
        lbv=max(8*t1-8*t2,t3+1);
        ubv=min(8*t1-8*t2+7,t3+n-2);
#pragma ivdep
#pragma vector always
        for (t4=lbv;t4<=ubv;t4++) {
          A[-t3+t4] = (A[-t3+t4-1] + A[-t3+t4] + A[-t3+t4+1]) / 3;
        }
      }
    }
  }
}
/* End of CLooG code */
}
