// expect: iterator 'i' used outside its loop
// at: 6:5
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = 0.0f;
  A[i] = 1.0f;
}
