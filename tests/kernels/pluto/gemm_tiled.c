/* C := alpha*A*B + beta*C in 16 x 16 x 16 tiles, in the style of polycc (Pluto) output:
 * its macros, bounds kept in 'lbp'/'ubp' and 'lbv'/'ubv' just before the loops, '#pragma
 * omp parallel for' on the loop of row tiles, '#pragma ivdep' on the innermost. */
#define ceild(n,d)  (((n)<0) ? -((-(n))/(d)) : ((n)+(d)-1)/(d))
#define floord(n,d) (((n)<0) ? -((-(n)+(d)-1)/(d)) : (n)/(d))
#define max(x,y)    ((x) > (y)? (x) : (y))
#define min(x,y)    ((x) < (y)? (x) : (y))

void kernel_gemm(int ni, int nj, int nk, double alpha, double beta,
                 double C[ni][nj], double A[ni][nk], double B[nk][nj])
{
  int t1, t2, t3, t4, t5, t6, t7;
  int lb, ub, lbp, ubp, lb2, ub2;
  register int lbv, ubv;
/* Start of CLooG code */
if ((ni >= 1) && (nj >= 1)) {
  lbp=0;
  ubp=floord(ni-1,16);
#pragma omp parallel for private(lbv,ubv,t3,t4,t5,t6,t7)
  for (t2=lbp;t2<=ubp;t2++) {
    for (t3=0;t3<=floord(nj-1,16);t3++) {
      for (t4=16*t2;t4<=min(ni-1,16*t2+15);t4++) {
        lbv=16*t3;
        ubv=min(nj-1,16*t3+15);
#pragma ivdep
#pragma vector always
        for (t5=lbv;t5<=ubv;t5++) {
          C[t4][t5] *= beta;
        }
      }
    }
  }
  if (nk >= 1) {
    lbp=0;
    ubp=floord(ni-1,16);
#pragma omp parallel for private(lbv,ubv,t3,t4,t5,t6,t7)
    for (t2=lbp;t2<=ubp;t2++) {
      for (t3=0;t3<=floord(nj-1,16);t3++) {
        for (t4=0;t4<=floord(nk-1,16);t4++) {
          for (t5=16*t2;t5<=min(ni-1,16*t2+15);t5++) {
            for (t6=16*t4;t6<=min(nk-1,16*t4+15);t6++) {
              lbv=16*t3;
              ubv=min(nj-1,16*t3+15);
#pragma ivdep
#pragma vector always
              for (t7=lbv;t7<=ubv;t7++) {
                C[t5][t7] += alpha * A[t5][t6] * B[t6][t7];
              }
            }
          }
        }
      }
    }
  }
}
/* End of CLooG code */
}
