/* maxnorm.c without its reduction: the step's sweep alone. */
void maxnorm(int n, int tmax, float x[n], float y[n], float out[1])
{
  for (int t = 0; t < tmax; t++)
    for (int i = 0; i < n; i++)
      y[i] = 0.5f * x[i] + 0.5f * y[i];
}
