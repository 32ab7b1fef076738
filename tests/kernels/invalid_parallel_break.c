// expect: 'break' in a loop that '#pragma omp parallel for' asserts parallel
// at: 7:7
void f(int n, float A[n]) {
#pragma omp parallel for
  for (int i = 0; i < n; i++) {
    if (A[i] > 0.5f)
      break;
    A[i] = 0.0f;
  }
}
