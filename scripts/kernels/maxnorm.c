/* A vector's largest change per step (a flat loop: no inner loop), the 1-D case of
 * codegen/reductions.py: strips of 8 and blocks of 64. */
#include <math.h>

void maxnorm(int n, int tmax, float x[n], float y[n], float out[1])
{
  for (int t = 0; t < tmax; t++) {
    for (int i = 0; i < n; i++)
      y[i] = 0.5f * x[i] + 0.5f * y[i];
    float err = 0.0f;
    for (int i = 0; i < n; i++) {
      float d = fabsf(x[i] - y[i]);
      err = fmaxf(err, d);
    }
    out[0] = err + t;
  }
}
