// expect: helper 'zero': argument 'A + i' for 'a' must be an array, a row of one (B[i])
// at: 7:10
static void zero(float *a) { a[0] = 0.0f; }

void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    zero(A + i);
}
