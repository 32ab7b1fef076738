/* polybench.c: heap allocation and timers for polybench.h (link it to build a test
 * program on its own: cc -I utilities gemm.c utilities/polybench.c -lm). */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "polybench.h"

static double polybench_t_start, polybench_t_end;

static double rtclock(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1.0e-9;
}

void* polybench_alloc_data(unsigned long long int n, int elt_size)
{
  void* ret = NULL;
  if (posix_memalign(&ret, 4096, n * elt_size) != 0 || ret == NULL) {
    fprintf(stderr, "[PolyBench] posix_memalign: cannot allocate memory\n");
    exit(1);
  }
  return ret;
}

void polybench_free_data(void* ptr)
{
  free(ptr);
}

void polybench_timer_start(void)
{
  polybench_t_start = rtclock();
}

void polybench_timer_stop(void)
{
  polybench_t_end = rtclock();
}

void polybench_timer_print(void)
{
  printf("%0.6f\n", polybench_t_end - polybench_t_start);
}
