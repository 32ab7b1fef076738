/* Data in file-scope arrays, as in PolyBench before 4.0: bbmm takes A, B and x as more
 * parameters of the kernel; --check copies the same values into the C file's arrays
 * around the sequential call. init_array fills them for the --init path. */
#define N 48
#define TSTEPS 4

static double A[N][N], B[N][N];
double x[N];

void init_array(void) {
  for (int i = 0; i < N; i++) {
    x[i] = (double) i / N;
    for (int j = 0; j < N; j++) {
      A[i][j] = ((double) i * (j + 2) + 2) / N;
      B[i][j] = ((double) i * (j + 3) + 3) / N;
    }
  }
}

void file_arrays(int tsteps) {
  for (int t = 0; t < tsteps; t++) {
#pragma omp parallel for
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i + 1][j] + A[i - 1][j]) + x[j];
#pragma omp parallel for
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][j + 1] + B[i + 1][j] + B[i - 1][j]);
  }
}

int main(void) {
  init_array();
  file_arrays(TSTEPS);
  return 0;
}
