/* Floyd-Warshall in the names that the generated host driver would give its own variables
 * (rt, tile, spec, t, t0, tiles, b0): the driver's take the prefix _bbmm_ instead, and
 * the C names stay. */
void driver_names(int rt, int tile, float tiles[rt][rt], float b0[rt]) {
  for (int t0 = 0; t0 < rt; t0++) {
#pragma omp parallel for
    for (int t = 0; t < rt; t++)
      for (int spec = 0; spec < rt; spec++)
        tiles[t][spec] = tiles[t][spec] < tiles[t][t0] + tiles[t0][spec]
                             ? tiles[t][spec] : tiles[t][t0] + tiles[t0][spec];
#pragma omp parallel for
    for (int t = 0; t < rt; t++)
      b0[t] = b0[t] * 0.5f + tiles[t][t0] + tile;
  }
}
