// expect: the size of local array 'w' depends on the loop iterator 'i'
// at: 5:13
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++) {
    float w[i + 1];
    w[0] = A[i];
    B[i] = w[0];
  }
}
