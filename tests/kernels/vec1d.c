void saxpy(int n, float a, float x[n], float y[n + 1]) {
  for (int i = 0; i < n; i++)
    y[i + 1] = a * x[i] + y[i + 1];
}
