void prefix_sum(int n, double A[n], double B[n]) {
  for (int i = 1; i < n; i++)
    A[i] = A[i - 1] + B[i];
}
