// expect: call to unknown function 'foo'
// at: 5:12
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = foo(A[i]) + 1.0f;
}
