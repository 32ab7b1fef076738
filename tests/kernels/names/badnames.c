/* C names that isl, Python or OpenCL C cannot take: every one is renamed inside bbmm
 * (iter -> iter_, ...), and --param, --init and --check keep speaking of the C names. */
void badnames(int iter, int len, int S1, float lambda, float half[len][len],
              float max[len][len], float local[len]) {
  for (int id = 0; id < iter; id++) {
#pragma omp parallel for
    for (int min = 1; min < len - 1; min++)
      for (int uint = 1; uint < len - 1; uint++)
        max[min][uint] = lambda * (half[min - 1][uint] + half[min + 1][uint]) + local[min] + id;
#pragma omp parallel for
    for (int S0 = 1; S0 < len - 1; S0++) {
      float sum = 0;
      for (int range = 1; range < len - 1; range++)
        sum = sum + max[S0][range];
      local[S0] = sum / (len + S1);
      for (int np = 1; np < len - 1; np++)
        half[S0][np] = max[S0][np] * 0.5f;
    }
  }
}

void init_badnames(int iter, int len, int S1, float lambda, float half[len][len],
                   float max[len][len], float local[len]) {
  for (int a = 0; a < len; a++) {
    local[a] = a % 7;
    for (int b = 0; b < len; b++) {
      half[a][b] = (a * b % 11) / 11.0f;
      max[a][b] = 0;
    }
  }
}
