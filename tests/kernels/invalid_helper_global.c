// expect: helper function 'scaled': 'gain' is neither a parameter nor a local
// at: 5:39
float gain = 2.0f;

static float scaled(float x) { return gain * x; }

void f(int n, float A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = scaled(A[i]);
}
