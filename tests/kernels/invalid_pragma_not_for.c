// expect: '#pragma omp parallel for' must be followed by a for loop
// at: 4:9
void f(int n, float A[n]) {
#pragma omp parallel for
  A[0] = 1.0f;
  for (int i = 0; i < n; i++)
    A[i] = 0.0f;
}
