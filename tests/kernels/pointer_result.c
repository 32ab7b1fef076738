/* Results returned through pointers to scalars (a dot product, a count, the largest
 * element): bbmm takes float *dot used as *dot (or dot[0]) as the array float dot[1]. */
void pointer_result(int n, float x[n], float y[n], float *dot, int *count, double *top) {
  float s = 0.0f;
  int c = 0;
  for (int i = 0; i < n; i++) {
    s += x[i] * y[i];
    if (x[i] > y[i])
      c++;
  }
  *dot = s;
  count[0] = c;
  *top = x[0];
  for (int i = 1; i < n; i++)
    if (x[i] > *top)
      *top = x[i];
}
