// expect: file-scope array 'w' has an initializer
// at: 3:7
float w[3] = {0.25f, 0.5f, 0.25f};

void f(int n, float A[n], float B[n]) {
  for (int i = 1; i < n - 1; i++)
    B[i] = w[0] * A[i - 1] + w[1] * A[i] + w[2] * A[i + 1];
}
