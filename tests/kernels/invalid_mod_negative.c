// expect: '(i - 4) % 3': 'i - 4' can be negative here (C's '%' of a negative value rounds toward zero
// at: 5:8
void f(int n, float A[n], float B[3]) {
  for (int i = 0; i < n; i++)
    B[(i - 4) % 3] += A[i];
}
