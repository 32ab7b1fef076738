// expect: write to scalar 's'
// at: 5:5
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    s = A[i];
}
