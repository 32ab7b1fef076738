/* A random program (tests/support/randprog.py, seed 739) whose exact value flow isl's
   compute_flow did not find in minutes: a data-dependent condition inside a loop that
   steps by 2 from a start holding a remainder. bbmm over-approximates the flow past
   codegen/deps.py's FLOW_OPERATIONS and compiles it in seconds. */
static void put0(int n, int l, int A[n][n])
{
  A[l][l] += A[l / 2][l] % 3;
}

static void put1(int n, int l, int i, int j, int tmp0, int A[n][n])
{
  A[j][l] = ((tmp0 > A[l][i % 2]) ? (tmp0) : (A[l][i % 2])) % 3;
}

void slow_flow(int n, int A[n][n])
{
  for (int i = 1; i < (n - 2); i++)
  {
    int j = i + (i % 2);
    while (j < n)
    {
      int tmp0 = ((A[j][i] + A[j % 2][i]) + 2) % 5;
      for (int l = 0; l < n; l++)
        if ((A[l][l] % 3) == 1)
        {
          if ((j % 3) != 1)
            put0(n, l, A);
          put1(n, l, i, j, tmp0, A);
        }
      j += 2;
    }
  }
}
