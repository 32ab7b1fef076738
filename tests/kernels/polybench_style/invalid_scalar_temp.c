/* PolyBench's symm keeps a running sum in the scalar temp2: bbmm models array elements
 * only (no scalar expansion). */
#include <polybench.h>
#include "gemm.h"

static
void kernel_rowsum(int ni, int nj,
                   DATA_TYPE POLYBENCH_2D(C,NI,NJ,ni,nj),
                   DATA_TYPE POLYBENCH_1D(s,NI,ni))
{
  int i, j;
  DATA_TYPE temp2;

#pragma scop
  for (i = 0; i < _PB_NI; i++) {
    temp2 = 0;
    for (j = 0; j < _PB_NJ; j++)
      temp2 += C[i][j];
    s[i] = temp2;
  }
#pragma endscop
}
