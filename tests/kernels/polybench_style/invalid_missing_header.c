/* A header that is in no include folder. */
#include <stdio.h>
#include <polybench.h>
#include "not_there.h"

static void kernel_x(int n, double A[n])
{
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = 0;
#pragma endscop
}
