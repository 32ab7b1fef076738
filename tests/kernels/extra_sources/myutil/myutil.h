/* myutil.h: helpers that lu_alloc.c's init_array calls, defined in myutil.c (a stand-in
 * for PolyBench's utilities/polybench.h and polybench.c). */
#ifndef MYUTIL_H
#define MYUTIL_H

#include <stddef.h>

void *my_alloc(size_t n);
void my_free(void *p);
double my_value(int i, int j, int n);

#define MY_2D_ALLOC(type, n1, n2) ((type (*)[n2]) my_alloc((size_t)(n1) * (n2) * sizeof(type)))

#endif
