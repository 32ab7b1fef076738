/* 'break' and 'continue' anywhere in a loop body (codegen/structure.py, loop_jumps): a
 * search for the first large element of each row, with small ones skipped and a count
 * of the even columns kept; then a capped inner loop and a sweep that stops on the data.
 * Each jump becomes a flag that the statements after it test. */
void jumps(int n, int m, float A[n][m], float B[n][m], int first[n], int count[n])
{
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    first[i] = -1;
    count[i] = 0;
    for (int j = 0; j < m; j++) {
      if (A[i][j] < 0.1f)
        continue;
      if (A[i][j] > 0.9f) {
        first[i] = j;
        break;
      }
      if (j % 2 == 0) {
        if (A[i][j] > 0.5f)
          continue;
        count[i] += 1;
      }
      B[i][j] = A[i][j] * 2.0f;
    }
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      for (int k = 0; k < 3; k++) {
        if (B[i][j] > 1.0f)
          break;
        B[i][j] = B[i][j] + 0.25f;
      }
      if (A[i][j] > 0.95f)
        break;
    }
}
