/* bench_rng.h — the benchmarks' random codes: splitmix64 from a fixed seed,
 * so every run (and every machine) searches the same codes. */
#ifndef FY_BENCH_RNG_H
#define FY_BENCH_RNG_H

#include <stdint.h>

static uint64_t bench_rng = 0x243F6A8885A308D3ull;
static inline uint64_t next64(void) {
  uint64_t z = (bench_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#endif
