/* mvt-const.c: x1 += A y_1, x2 += A^T y_2 (PolyBench's mvt) in a program whose sizes are
 * compile-time constants: no size parameter anywhere, static arrays, the dataset macro
 * picks N. */
#include <stdio.h>
#include <stdlib.h>

#ifdef MINI_DATASET
# define N 40
#elif defined(SMALL_DATASET)
# define N 120
#else
# define N 2000
#endif

static double A[N][N], x1[N], x2[N], y_1[N], y_2[N];

static void init_array(double x1[N], double x2[N], double y_1[N], double y_2[N],
                       double A[N][N])
{
  for (int i = 0; i < N; i++) {
    x1[i] = (double) (i % N) / N;
    x2[i] = (double) ((i + 1) % N) / N;
    y_1[i] = (double) ((i + 3) % N) / N;
    y_2[i] = (double) ((i + 4) % N) / N;
    for (int j = 0; j < N; j++)
      A[i][j] = (double) (i * j % N) / N;
  }
}

static void kernel_mvt(double x1[N], double x2[N], double y_1[N], double y_2[N],
                       double A[N][N])
{
#pragma scop
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      x1[i] = x1[i] + A[i][j] * y_1[j];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      x2[i] = x2[i] + A[j][i] * y_2[j];
#pragma endscop
}

int main(void)
{
  init_array(x1, x2, y_1, y_2, A);
  kernel_mvt(x1, x2, y_1, y_2, A);
  double sum = 0;
  for (int i = 0; i < N; i++)
    sum += x1[i] + x2[i];
  printf("%f\n", sum);
  return 0;
}
