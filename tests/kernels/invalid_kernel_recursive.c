// expect: 'k' calls itself: recursion is not supported
// at: 6:3
void k(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = A[i] + 1;
  k(n, A);
}
