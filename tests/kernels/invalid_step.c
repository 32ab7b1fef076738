// expect: loop step must be an integer constant: 'i += m'
// at: 4:31
void f(int n, int m, float A[n]) {
  for (int i = 0; i < n; i += m)
    A[i] = 0.0f;
}
