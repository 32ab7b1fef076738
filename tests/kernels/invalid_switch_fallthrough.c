// expect: switch statement not supported in the modelled region
// at: 5:5
void f(int n, int K[n], float A[n]) {
  for (int i = 0; i < n; i++)
    switch (K[i]) {
      case 0: A[i] = 1.0f;
      case 1: A[i] += 2.0f; break;
    }
}
