/* PolyBench-style kernel whose scalar temp2, declared without a value before '#pragma
 * scop', is read inside it before the region assigns it: its value is unknown to bbmm. */
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
    for (j = 0; j < _PB_NJ; j++)
      C[i][j] += 1;
    s[i] = temp2 * 2;
  }
#pragma endscop
}
