// expect: pointer dereference not supported
// at: 5:13
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++)
    A[i] = *B + 1.0f;
}
