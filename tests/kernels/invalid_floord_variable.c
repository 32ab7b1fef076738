// expect: upper loop bound is not affine: 'floord(n - 1, m)'
// at: 7:24
#define floord(n,d) (((n)<0) ? -((-(n)+(d)-1)/(d)) : (n)/(d))

void f(int n, int m, float A[n])
{
  for (int t = 0; t <= floord(n - 1, m); t++)
    A[t] = 0;
}
