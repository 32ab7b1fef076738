// expect: 'goto' not supported in the modelled region
// at: 6:3
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = 0.0f;
  goto end;
end:
  A[0] = 1.0f;
}
