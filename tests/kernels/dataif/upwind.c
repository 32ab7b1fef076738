/* Upwind fluxes chosen by the sign of the velocity: both branches assign the same
 * temporaries in the same order (fl, fr), so they become fl = c ? a : d; fr = c ? b : e;
 * with nothing read before its assignment; a limiter picked by an else-if chain on the
 * data (one temporary, nested selects). */
void upwind(int tsteps, int n, float u[n], float A[n + 1], float B[n + 1]) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < n; i++) {
      float fl, fr, lim;
      if (u[i] > 0) {
        fl = u[i] * A[i - 1];
        fr = u[i] * A[i];
      } else {
        fl = u[i] * A[i];
        fr = u[i] * A[i + 1];
      }
      if (A[i] > A[i - 1] + 0.25f)
        lim = 0.5f;
      else if (A[i] < A[i - 1] - 0.25f)
        lim = 0.25f;
      else
        lim = 1.0f;
      B[i] = A[i] - 0.5f * lim * (fr - fl);
    }
#pragma omp parallel for
    for (int i = 1; i < n; i++)
      A[i] = B[i];
  }
}
