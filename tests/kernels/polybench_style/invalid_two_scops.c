/* Two functions hold a scop: the kernel must be chosen with --function. */
#include <polybench.h>
#include "gemm.h"

static void kernel_a(int ni, DATA_TYPE POLYBENCH_1D(x,NI,ni))
{
  int i;
#pragma scop
  for (i = 0; i < _PB_NI; i++)
    x[i] = x[i] + 1;
#pragma endscop
}

static void kernel_b(int ni, DATA_TYPE POLYBENCH_1D(x,NI,ni))
{
  int i;
#pragma scop
  for (i = 0; i < _PB_NI; i++)
    x[i] = x[i] * 2;
#pragma endscop
}
