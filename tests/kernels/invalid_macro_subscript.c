// expect: non-affine subscript
// at: 7:22
#define AT(x, y) A[(x) * (y)]

void f(int n, float A[n], float B[n]) {
  for (int i = 0; i < n; i++)
    B[i] = 2.0f * AT(i, i);
}
