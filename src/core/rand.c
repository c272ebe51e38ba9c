/* rand.c — counter-based random numbers, reproducible whatever the thread. */
#include "core/internal.h"

static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fy_rand_u64(uint64_t seed, uint64_t stream, uint64_t index) {
  return splitmix(splitmix(splitmix(seed) ^ stream) ^ index);
}

double fy_rand_unit(uint64_t r) { return (double)(r >> 11) * (1.0 / 9007199254740992.0); }
