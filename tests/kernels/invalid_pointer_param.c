// expect: pointer parameter 'p' not supported
// at: 3:21
void f(int n, float *p) {
  for (int i = 0; i < n; i++)
    *(p + i) = 0.0f;
}
