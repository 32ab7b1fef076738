/* File-scope scalars (codegen/globals.py, file_scalars): constants written where the
 * kernel reads them (an integer one bounds loops and sizes arrays, a float one keeps its
 * type: alpha is the float nearest 0.1, as in C), and variables main sets, which become
 * parameters of the model (--param n=..., --param scale=...). */
#include <stdlib.h>

const int M = 24;
static const float alpha = 0.1;
static int half = 7 / 2;
double bias = -1.5e-1;
int n;
float scale;

void smooth(int tsteps, double A[n][M], double B[n][M])
{
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = half - 2; j < M - 1; j++)
        B[i][j] = scale * (A[i - 1][j] + A[i + 1][j]) + alpha * A[i][j] + bias;
    for (int i = 1; i < n - 1; i++)
      for (int j = half - 2; j < M - 1; j++)
        A[i][j] = 0.5 * B[i][j];
  }
}

int main(int argc, char **argv)
{
  n = argc > 1 ? atoi(argv[1]) : 100;
  scale = 0.25f;
  double (*A)[M] = calloc(n, sizeof *A), (*B)[M] = calloc(n, sizeof *B);
  smooth(10, A, B);
  free(A);
  free(B);
  return 0;
}
