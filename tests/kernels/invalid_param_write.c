// expect: write to parameter 'alpha'
// at: 5:5
void f(int n, float alpha, float A[n]) {
  for (int i = 0; i < n; i++)
    alpha = A[i];
}
