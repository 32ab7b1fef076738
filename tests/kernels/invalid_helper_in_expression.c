// expect: helper 'bump' takes arrays or returns nothing, so bbmm inlines it and needs its call as a statement of its own
// at: 8:12
static float bump(float *p) { p[0] += 1.0f; return p[0]; }

void f(int n, float A[n], float B[1]) {
#pragma omp parallel for
  for (int i = 0; i < n; i++)
    A[i] = bump(B) + A[i];
}
