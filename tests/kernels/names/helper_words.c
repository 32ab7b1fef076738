/* A helper function whose parameter and local are words of OpenCL C (its kernels' copy
 * of the helper calls them half_ and local_). */
static inline float sq(float half) {
  float local = half * half;
  return local;
}

void helper_words(int n, float A[n], float B[n]) {
#pragma omp parallel for
  for (int i = 0; i < n; i++)
    B[i] = sq(A[i]) + 0.5f * A[i];
}
