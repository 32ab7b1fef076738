/* A call to a function the polyhedral model does not know, inside the scop. */
#include <stdio.h>
#include <polybench.h>
#include "gemm.h"

DATA_TYPE scale(DATA_TYPE x);

static
void kernel_scale(int ni, int nj, DATA_TYPE POLYBENCH_2D(C,NI,NJ,ni,nj))
{
  int i, j;

#pragma scop
  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NJ; j++)
      C[i][j] = SCALAR_VAL(2.0) * scale(C[i][j]);
#pragma endscop
}

int main(int argc, char** argv)
{
  int ni = NI;
  int nj = NJ;
  POLYBENCH_2D_ARRAY_DECL(C,DATA_TYPE,NI,NJ,ni,nj);
  kernel_scale(ni, nj, POLYBENCH_ARRAY(C));
  POLYBENCH_FREE_ARRAY(C);
  return 0;
}
