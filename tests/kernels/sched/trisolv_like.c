/* Forward substitution with a lower triangular matrix: y[r] needs every y before it, and
 * each row's dot product runs in order. As written no loop is parallel; column by column,
 * the updates of the rows below a solved entry are. */
void init_forward(int m, float T[m][m], float rhs[m], float y[m])
{
  for (int r = 0; r < m; r++) {
    rhs[r] = (float)(r % 7) - 3.0f;
    y[r] = 0.0f;
    for (int c = 0; c < m; c++)
      T[r][c] = (r == c) ? 4.0f : 1.0f / (m + r + 2 * c);
  }
}

void forward(int m, float T[m][m], float rhs[m], float y[m])
{
  for (int r = 0; r < m; r++) {
    y[r] = rhs[r];
    for (int c = 0; c < r; c++)
      y[r] -= T[r][c] * y[c];
    y[r] = y[r] / T[r][r];
  }
}
