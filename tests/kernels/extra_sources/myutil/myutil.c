/* myutil.c: definitions of myutil.h's helpers. */
#include <stdio.h>
#include <stdlib.h>

#include "myutil.h"

void *my_alloc(size_t n)
{
  void *p = calloc(n ? n : 1, 1);
  if (p == NULL) {
    fprintf(stderr, "my_alloc: out of memory\n");
    exit(1);
  }
  return p;
}

void my_free(void *p)
{
  free(p);
}

double my_value(int i, int j, int n)
{
  return (double)((i * 7 + j * 3) % n) / n + (i == j ? 1.0 : 0.0);
}
