/* Decimation and sums with a step: a scalar carried across a loop with step 3 (expanded
 * into a local array sized by that loop's trip count, a floor division of n), a filter
 * reading every other input sample at 2*i and (2*i + 1) >> 1, and an output written
 * through i / 2 on even i only (y has C's (2*n + 1) / 2 elements). */
void decimate(int n, float in[2 * n], float out[n], float y[(2 * n + 1) / 2], float sums[n])
{
#pragma scop
  for (int i = 0; i < n; i += 3) {
    float s = 0.0f;
    for (int j = i % 2; j < n; j += 2)
      s += in[i + j] * 0.5f;
    sums[i] = s;
  }
  for (int i = 1; i < n; i++)
    out[i] = 0.5f * in[2 * i] + 0.25f * (in[2 * i - 1] + in[(2 * i + 1) >> 1]);
  for (int i = 0; i < 2 * n - 1; i += 2)
    y[i / 2] = y[i / 2] * 0.5f + out[(i + 1) / 2];
#pragma endscop
}
