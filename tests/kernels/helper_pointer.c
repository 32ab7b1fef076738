/* A helper reading through a pointer inside an expression: its call runs first, into a
 * temporary (it writes nothing), then the expression. */
static float first(const float *p) { return p[0]; }

void helper_pointer(int n, float A[n], float B[n]) {
#pragma omp parallel for
  for (int i = 0; i < n; i++)
    A[i] = first(&B[i]) + 2.0f * first(B);
}
