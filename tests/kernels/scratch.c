/* Scratch arrays written before they are read in each band point (no read-in needed:
 * bbmm.codegen.flow's sourced_within) beside arrays whose reads are live-in. */
void scratch(int tsteps, int n, float A[n][n], float T[n][n], float u[n], float out[n],
             float w[n])
{
#pragma scop
  for (int t = 0; t < tsteps; t++) {
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        T[i][j] = A[i][j] * 0.5f + t;          /* T: written, then read, same point */
        A[i][j] = T[i][j] + T[i][j] * 0.25f;
      }
    for (int i = 0; i < n; i++) {
      u[i] = A[i][0] + 1.0f;                   /* u: scratch */
      out[i] = u[i] * 2.0f + out[i];           /* out: live-in */
      w[i] = u[i] + A[i][n - 1];               /* w: written every step, read next one */
    }
    for (int i = 1; i < n; i++)
      A[i][1] = A[i][1] + w[i - 1];            /* w[i-1]: written by another point */
  }
#pragma endscop
}
