/* A reduction over the whole of x and y (no parallel loop: one work-item), whose result the
 * next, parallel, nest reads on every device: the one-element local array s flows out to
 * the host and in to the others. */
void dot(int n, double x[n], double y[n], double z[n])
{
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i] * y[i];
  for (int i = 0; i < n; i++)
    z[i] = x[i] / (1.0 + s) + z[i];
}
