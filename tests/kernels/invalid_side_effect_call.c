// expect: call to 'printf' has side effects
// at: 6:5
#include <stdio.h>
void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    printf("%f", A[i]);
}
