/* blackscholes: European call and put prices by the Black-Scholes formula (NVIDIA
 * CUDA/OpenCL SDK BlackScholes, BlackScholesBodyCPU).
 *
 *   d1 = (log(S / X) + (r + v^2 / 2) T) / (v sqrt(T)),   d2 = d1 - v sqrt(T)
 *   call = S CND(d1) - X exp(-r T) CND(d2)
 *   put  = X exp(-r T) (1 - CND(d2)) - S (1 - CND(d1))
 *
 * CND is the SDK's polynomial approximation of the cumulative normal distribution
 * (Abramowitz & Stegun 26.2.17): K = 1 / (1 + 0.2316419 |d|),
 * CND(d) = 1/sqrt(2 pi) exp(-d^2/2) K (A1 + K (A2 + K (A3 + K (A4 + K A5)))), and
 * 1 - that for d > 0. d1, d2 and the rest are scalar temporaries in the loop body, as in
 * the SDK's BlackScholesBodyCPU: values, not memory (bbmm recomputes them where they are
 * read and moves no bytes for them). Everything is single precision
 * (expf/sqrtf/logf/fabsf and f literals), like the SDK.
 *
 * Dependence pattern: embarrassingly parallel; one nest, band i (two statements).
 *
 * Sizes: paper (Table IV, data on 1 GPU) n = 67,108,864 options; CI n = 4096.
 * Scalars: riskfree (SDK: 0.02), volatility (SDK: 0.30).
 * init_blackscholes: S in [5, 30], X in [1, 100], T in [0.25, 10] (the SDK's ranges),
 * from a deterministic integer hash; outputs zeroed.
 */

#include <math.h>

#define CND_A1 0.31938153f
#define CND_A2 -0.356563782f
#define CND_A3 1.781477937f
#define CND_A4 -1.821255978f
#define CND_A5 1.330274429f
#define RSQRT2PI 0.39894228040143267793994605993438f
#define CND_K(d) (1.0f / (1.0f + 0.2316419f * fabsf(d)))
#define CND_P(d) (RSQRT2PI * expf(-0.5f * (d) * (d)) * (CND_K(d) * (CND_A1 + CND_K(d) \
    * (CND_A2 + CND_K(d) * (CND_A3 + CND_K(d) * (CND_A4 + CND_K(d) * CND_A5))))))
#define CND(d) ((d) > 0.0f ? 1.0f - CND_P(d) : CND_P(d))

static float bs_uniform(long long i, long long salt, float lo, float hi) {
  long long h = (i * 2654435761LL + salt * 40503LL) % 1000003LL;
  return lo + (hi - lo) * (float)h / 1000002.0f;
}

void init_blackscholes(int n, float riskfree, float volatility, float call_result[n],
                       float put_result[n], float stock_price[n], float option_strike[n],
                       float option_years[n]) {
  for (int i = 0; i < n; i++) {
    stock_price[i] = bs_uniform(i, 1, 5.0f, 30.0f);
    option_strike[i] = bs_uniform(i, 2, 1.0f, 100.0f);
    option_years[i] = bs_uniform(i, 3, 0.25f, 10.0f);
    call_result[i] = 0.0f;
    put_result[i] = 0.0f;
  }
}

void blackscholes(int n, float riskfree, float volatility, float call_result[n],
                  float put_result[n], float stock_price[n], float option_strike[n],
                  float option_years[n]) {
  for (int i = 0; i < n; i++) {
    float sqrtT = sqrtf(option_years[i]);
    float d1 = (logf(stock_price[i] / option_strike[i])
                + (riskfree + 0.5f * volatility * volatility) * option_years[i])
               / (volatility * sqrtT);
    float d2 = d1 - volatility * sqrtT;
    float cndd1 = CND(d1);
    float cndd2 = CND(d2);
    float expRT = expf(-riskfree * option_years[i]);
    call_result[i] = stock_price[i] * cndd1 - option_strike[i] * expRT * cndd2;
    put_result[i] = option_strike[i] * expRT * (1.0f - cndd2) - stock_price[i] * (1.0f - cndd1);
  }
}
