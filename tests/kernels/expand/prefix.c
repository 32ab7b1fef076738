/* A running value carried across the iterations of the loop that uses it (a prefix sum
 * and a running maximum): not private to any loop, one element, the loop runs serially. */
void prefix(int n, float a[n], float b[n], float c[n])
{
  float run = 0.0f, top = a[0];
  for (int i = 0; i < n; i++) {
    run += a[i];
    b[i] = run;
    top = a[i] > top ? a[i] : top;
    c[i] = top - run;
  }
}
