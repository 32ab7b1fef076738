// expect: file-scope variable 'total' is assigned by the kernel
// at: 7:5
float total;

void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    total += A[i];
}
