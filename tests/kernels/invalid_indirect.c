// expect: non-affine subscript 'idx[i]' in 'A[idx[i]]' (indirect access through an array)
// at: 5:7
void f(int n, int idx[n], float A[n]) {
  for (int i = 0; i < n; i++)
    A[idx[i]] = 1.0f;
}
