/* Pure helper functions of the file called from the kernel: an inline square, the SDK's
 * cumulative normal distribution with locals and branches (float math with f suffixes), a
 * double helper calling another, an int helper with a loop and C's abs of an int. */
#include <math.h>

static inline float sqr(float x) { return x * x; }

static float cnd(float d)
{
  const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f;
  float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
  float p = 0.39894228f * expf(-0.5f * sqr(d)) * (k * (a1 + k * (a2 + k * a3)));
  if (d > 0)
    return 1.0f - p;
  return p;
}

double blend(double a, double b) { return 0.75 * a + 0.25 * (double) sqr((float) b); }

int ipow_mod(int b, int e)
{
  int r = 1;
  for (int k = 0; k < e; k++)
    r = (r * b) % 97;
  return abs(r - 50) - 20;
}

void helpers(int n, float x[n], float y[n], double z[n], int c[n])
{
#pragma scop
  for (int i = 0; i < n; i++) {
    y[i] = cnd(x[i] - 0.5f) + sqr(y[i]);
    z[i] = blend(z[i], x[i]);
    c[i] = ipow_mod(c[i] % 13 + 2, i % 7 + 1) + (ipow_mod(3, 2) < 0);
  }
#pragma endscop
}
