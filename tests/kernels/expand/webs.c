/* One scalar w serving three loop nests (ludcmp's style): each nest's use gets an array of
 * its own (w, w_1, w_2), so the second and third nests stay parallel. An update under an
 * affine 'if', and a value temporary computed from w, named half (a word of OpenCL C: the
 * kernel names it half_1). */
void webs(int n, int m, float A[n][m], float rmax[n], float csum[m], float B[n][m])
{
  int i, j;
  float w;
#pragma scop
  for (i = 0; i < n; i++) {
    w = A[i][0];
    for (j = 1; j < m; j++)
      if (j < 3 || j > m - 3)
        w = A[i][j] > w ? A[i][j] : w;
    rmax[i] = w;
  }
  for (j = 0; j < m; j++) {
    w = 0.0f;
    for (i = 0; i < n; i++)
      w += 0.125f * A[i][j];
    csum[j] = w;
  }
  for (i = 0; i < n; i++) {
    w = rmax[i];
    for (j = 0; j < m; j++) {
      float half = 0.5f * w;
      B[i][j] = A[i][j] - half;
      w = w * 0.75f + csum[j];
    }
  }
#pragma endscop
}
