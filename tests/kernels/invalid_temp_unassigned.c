// expect: temporary 't' is read before it is assigned
// at: 6:12
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++) {
    float t;
    B[i] = t + A[i];
  }
}
