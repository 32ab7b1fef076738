/* PolyBench-style kernel whose scalar eps, initialised in its declaration, is assigned
 * again before '#pragma scop': bbmm models the declaration's value only. */
#include <polybench.h>
#include "gemm.h"

static
void kernel_clip(int ni, int nj,
                 DATA_TYPE POLYBENCH_2D(C,NI,NJ,ni,nj))
{
  int i, j;
  DATA_TYPE eps = SCALAR_VAL(0.1);
  eps = eps * 2;

#pragma scop
  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NJ; j++)
      C[i][j] = C[i][j] < eps ? eps : C[i][j];
#pragma endscop
}
