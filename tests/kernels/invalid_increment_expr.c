// expect: increment inside an expression
// at: 5:12
void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++)
    A[i] = B[i]++;
}
