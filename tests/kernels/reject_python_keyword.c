// expect: is a Python keyword
void f(int lambda, float x[lambda], float y[lambda]) {
  for (int i = 0; i < lambda; i++)
    y[i] = x[i] * 2.0f;
}
