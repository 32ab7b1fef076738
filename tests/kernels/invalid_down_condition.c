// expect: the condition of a loop counting down must bound the iterator from below
// at: 4:23
void f(int n, float A[n]) {
  for (int i = n - 1; i < n; i--)
    A[i] = 0.0f;
}
