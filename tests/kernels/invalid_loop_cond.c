// expect: loop condition must bound the iterator from above
// at: 4:19
void f(int n, float A[n]) {
  for (int i = 0; n != i; i++)
    A[i] = 0.0f;
}
