#include <stdio.h>
#include <stdlib.h>
#define MIN(a, b) ((a) < (b) ? (a) : (b))

void init_floyd(int n, float path[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      path[i][j] = (i == j) ? 0.0f : (float)((i * 7 + j * 13) % 17 + 1);
}

void floyd(int n, float path[n][n]) {
  int i, j, k;
#pragma scop
  for (k = 0; k < n; k++) {
#pragma omp parallel for private(j)
    for (i = 0; i < n; i++)
      for (j = 0; j < n; j++)
        path[i][j] = MIN(path[i][j], path[i][k] + path[k][j]);
  }
#pragma endscop
}

int main(void) {
  return 0;
}
