/* Scalar temporaries (bbmm.codegen.scop.Temp): each statement that reads one recomputes the
 * assignments it needs; side-by-side statements share them. Every pattern the front end
 * accepts, in a time loop so that tiles, boxes and coherence are exercised too. */
void temps(int tsteps, int n, float alpha, float A[n][n], float x[n], float y[n],
           float C[n], float D[n], double E[n], int Q[n])
{
#pragma scop
  for (int t = 0; t < tsteps; t++) {
    for (int i = 0; i < n; i++) {
      float s = alpha * x[i] + 0.25f;          /* recomputed by the inner statement */
      for (int j = 0; j < n; j++)
        A[i][j] = 0.5f * A[i][j] + s * y[j];
    }
    for (int i = 1; i < n - 1; i++) {
      float d1 = (y[i - 1] + y[i + 1]) * 0.5f;
      float d2 = d1 - x[i];
      d1 = fabsf(d1) > 1.0f ? 1.0f / d1 : d1;  /* reassigned from itself */
      d2 += 0.125f;
      d2 *= 0.5f;
      d2++;
      C[i] = d1 * A[i][i] - d2;                /* these two share d1 and d2 */
      D[i] = d2 + (1.0f - d1);
      double e = (double) C[i] * 0.5;          /* from an array written just above */
      E[i] = e + E[i] * 0.25;
      int q = (i * 3 + t) % 5;
      Q[i] = Q[i] % 7 + q;
      float old = D[i];
      D[i] = old * 0.5f + 1.0f;                /* reads D through old, then writes it */
    }
    for (int i = 0; i < n; i++) {
      float u = x[i];
      {
        float u = y[i] * 2.0f;                 /* shadows the outer u */
        C[i] = C[i] + u;
      }
      if (2 * i < n) {
        float v = u + 1.0f;
        y[i] = 0.5f * y[i] + 0.0625f * v;
      } else {
        float v = u - 1.0f;
        y[i] = 0.5f * y[i] - 0.0625f * v;
      }
      float w = x[i];
      w = i > 2 ? w * 0.5f : w;                /* a conditional assignment as a value */
      x[i] = 0.75f * x[i] + 0.125f * w + 0.125f * u;
    }
  }
#pragma endscop
}
