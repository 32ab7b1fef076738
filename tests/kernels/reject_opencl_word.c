/* An array named with a word of OpenCL C: refused at its declaration by bbmm compile. */
void f(int n, float local[n], float B[n]) {
  for (int i = 0; i < n; i++)
    B[i] = local[i];
}
