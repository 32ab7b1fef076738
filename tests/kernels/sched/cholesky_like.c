/* Left-looking Cholesky factorisation of a symmetric positive definite matrix, in place
 * (lower triangle): row r uses the rows above it, finished earlier. As written, no loop
 * is parallel; after an interchange, the rows below a finished column are. */
#include <math.h>

/* A diagonally dominant symmetric matrix: positive definite, so every square root is real. */
void init_factor(int m, double L[m][m])
{
  for (int r = 0; r < m; r++)
    for (int c = 0; c < m; c++)
      L[r][c] = (r == c) ? 2.0 * m : 1.0 / (1 + r + c);
}

void factor(int m, double L[m][m])
{
  for (int r = 0; r < m; r++) {
    for (int c = 0; c < r; c++) {
      for (int p = 0; p < c; p++)
        L[r][c] = L[r][c] - L[r][p] * L[c][p];
      L[r][c] = L[r][c] / L[c][c];
    }
    for (int p = 0; p < r; p++)
      L[r][r] = L[r][r] - L[r][p] * L[r][p];
    L[r][r] = sqrt(L[r][r]);
  }
}
