// expect: local array 'w' not supported
// at: 4:9
void f(int n, float A[n], float B[n]) {
  float w[3];
  for (int i = 0; i < n; i++)
    B[i] = A[i];
}
