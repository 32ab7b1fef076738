// expect: helper function 'fact': is recursive
// at: 3:50
static int fact(int k) { return k <= 1 ? 1 : k * fact(k - 1); }

void f(int n, int A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = fact(i % 5);
}
