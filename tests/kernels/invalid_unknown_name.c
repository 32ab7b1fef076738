// expect: unknown identifier 'm'
// at: 4:23
void f(int n, float A[n]) {
  for (int i = 0; i < m; i++)
    A[i] = 0.0f;
}
