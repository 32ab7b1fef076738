/* Arrays of C's integer types and of _Bool, checked exactly against the sequential C:
 * unsigned short arithmetic that wraps modulo 2^16 when stored, 64-bit products beyond 32
 * bits, _Bool stores that C makes 0 or 1 (an OpenCL uchar would keep the low byte), a low
 * byte, signed char going negative, a typedef of an unsigned type. */
#include <stdint.h>
#include <stdbool.h>

typedef unsigned int count_t;

void int_types(int n, int m, const unsigned short src[n][m], unsigned short out[n][m],
               int64_t acc[n][m], long long tot[n], _Bool mask[n][m], bool any[n],
               uint8_t bytes[n][m], signed char delta[n][m], count_t hits[n])
{
  for (int i = 0; i < n; i++) {
    any[i] = 0;
    tot[i] = 0;
    hits[i] = 0;
    for (int j = 0; j < m; j++) {
      out[i][j] = src[i][j] * 700 + 3;
      acc[i][j] += (int64_t)src[i][j] * 100000 * 100000 - 7;
      tot[i] += acc[i][j];
      mask[i][j] = src[i][j] & 6;
      any[i] += mask[i][j];
      bytes[i][j] = out[i][j];
      delta[i][j] = bytes[i][j] - 100;
      hits[i] += delta[i][j] < 0;
      hits[i] -= 1;
    }
  }
}
