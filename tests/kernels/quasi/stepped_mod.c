/* A loop with step 2 whose first value holds a remainder of a loop counting down
 * (g = i + 1 + h % 2), subscripting A[g][h] and B[g][g]: isl's compute_flow fails on
 * these access relations ("affine expression involves some of the domain dimensions"),
 * and bbmm's dependences then take a conservative flow (bbmm.codegen.deps.value_flow). */
void stepped_mod(int n, int m, double A[n + 1][m + 1], float B[n][n + 1]) {
  for (int i = 2; i < n; i++) {
    double t = 0.5f * (A[i][0] + A[i][0]);
    t = 0.5f * t + 0.25f;
    float c = A[0][0];
    for (int h = m - 2; h >= 0; h--) {
      for (int g = i + 1 + h % 2; g < n - 2; g = g + 2) {
        B[g][g] = t > 0.5f ? 0.5f * t : t + 0.25f;
        A[g][h] = t > 0.5f ? 0.5f * t : t + 0.25f;
        c = c > B[g][(i + 3) % 3] ? c : B[g][(i + 3) % 3];
      }
    }
    B[i][i] = 0.5f * c + 0.125f;
  }
}
