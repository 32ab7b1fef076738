/* floyd: Floyd-Warshall all-pairs shortest paths (PolyBench floyd-warshall).
 *
 *   for k: for i: for j: path[i][j] = MIN(path[i][j], path[i][k] + path[k][j])
 *
 * Dependence pattern: nonuniform. Iteration k reads row k and column k of path, which
 * iteration k itself writes too (path[k][j] and path[i][k] are written with their own
 * value because path[k][k] == 0), so dependence analysis alone finds a carried dependence
 * on i; the paper (like every parallel Floyd-Warshall) relies on i being parallel within
 * one k, asserted by the pragma below (collapse(2): i and j form a 2-D band of work-items). k is serial (host loop).
 *
 * Sizes: paper (Table IV, data on 1 GPU) n = 16384 (16384 x 16384); CI n = 64.
 * init_floyd: a graph with integer edge weights 1..17, about a quarter of the pairs
 * without an edge ("infinity" = 1e6, finite so that sums do not overflow), diagonal 0.
 * All values are small integers, exact in float, so any evaluation order gives the same
 * result bit for bit.
 */

#define MIN(a, b) ((a) < (b) ? (a) : (b))

void init_floyd(int n, float path[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j)
        path[i][j] = 0.0f;
      else if ((i * 5 + j * 3) % 4 == 0)
        path[i][j] = 1.0e6f;
      else
        path[i][j] = (float)((i * 7 + j * 13) % 17 + 1);
    }
}

void floyd(int n, float path[n][n]) {
  for (int k = 0; k < n; k++) {
#pragma omp parallel for collapse(2)
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        path[i][j] = MIN(path[i][j], path[i][k] + path[k][j]);
  }
}
