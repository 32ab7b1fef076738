/* A pointer walk inside the scop: not an affine array access. */
#include <polybench.h>
#include "gemm.h"

static
void kernel_diag(int ni, DATA_TYPE POLYBENCH_2D(C,NI,NI,ni,ni), DATA_TYPE POLYBENCH_1D(d,NI,ni))
{
  int i;
  DATA_TYPE *p = &d[0];

#pragma scop
  for (i = 0; i < _PB_NI; i++)
    *p++ = C[i][i];
#pragma endscop
}
