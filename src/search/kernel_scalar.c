/* kernel_scalar.c — the portable kernels, compiled twice: plain C (any
 * CPU; the compiler's popcount is a bit trick) and with the POPCNT
 * instruction. Four queries share each target load. */
#include "search/search.h"

#define DEFINE_SCALAR_KERNELS(SUFFIX, ATTR)                                                        \
  ATTR static void tile_##SUFFIX(const fy_codes *c, size_t i0, size_t i1, size_t j0, size_t j1,    \
                                 int t, fy_pairbuf *out) {                                         \
    const int words = c->words;                                                                    \
    const uint64_t *b = c->aos;                                                                    \
    size_t i = i0;                                                                                 \
    if (words == 1) {                                                                              \
      for (; i + 4 <= i1; i += 4) {                                                                \
        uint64_t a0 = b[i], a1 = b[i + 1], a2 = b[i + 2], a3 = b[i + 3];                           \
        size_t j = j0 > i + 1 ? j0 : i + 1;                                                        \
        for (; j < j1; j++) {                                                                      \
          uint64_t x = b[j];                                                                       \
          int d0 = __builtin_popcountll(x ^ a0), d1 = __builtin_popcountll(x ^ a1);                \
          int d2 = __builtin_popcountll(x ^ a2), d3 = __builtin_popcountll(x ^ a3);                \
          if (__builtin_expect((d0 <= t) | (d1 <= t) | (d2 <= t) | (d3 <= t), 0)) {                \
            if (d0 <= t)                                                                           \
              fy_pairbuf_push(out, (uint32_t)i, (uint32_t)j, (uint32_t)d0);                        \
            if (d1 <= t && j > i + 1)                                                              \
              fy_pairbuf_push(out, (uint32_t)i + 1, (uint32_t)j, (uint32_t)d1);                    \
            if (d2 <= t && j > i + 2)                                                              \
              fy_pairbuf_push(out, (uint32_t)i + 2, (uint32_t)j, (uint32_t)d2);                    \
            if (d3 <= t && j > i + 3)                                                              \
              fy_pairbuf_push(out, (uint32_t)i + 3, (uint32_t)j, (uint32_t)d3);                    \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    for (; i < i1; i++) {                                                                          \
      const uint64_t *a = b + i * words;                                                           \
      for (size_t j = j0 > i + 1 ? j0 : i + 1; j < j1; j++) {                                      \
        const uint64_t *x = b + j * words;                                                         \
        int d = 0;                                                                                 \
        for (int w = 0; w < words; w++)                                                            \
          d += __builtin_popcountll(a[w] ^ x[w]);                                                  \
        if (d <= t)                                                                                \
          fy_pairbuf_push(out, (uint32_t)i, (uint32_t)j, (uint32_t)d);                             \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  ATTR static void dist_##SUFFIX(const fy_codes *c, const uint64_t *q, size_t j0, size_t j1,       \
                                 uint16_t *d) {                                                    \
    const int words = c->words;                                                                    \
    for (size_t j = j0; j < j1; j++) {                                                             \
      const uint64_t *x = c->aos + j * words;                                                      \
      int s = 0;                                                                                   \
      for (int w = 0; w < words; w++)                                                              \
        s += __builtin_popcountll(q[w] ^ x[w]);                                                    \
      d[j - j0] = (uint16_t)s;                                                                     \
    }                                                                                              \
  }

DEFINE_SCALAR_KERNELS(scalar, )
const fy_kernels fy_kernels_scalar = {"scalar", tile_scalar, dist_scalar, NULL};

#if defined(__x86_64__) && defined(__GNUC__)
DEFINE_SCALAR_KERNELS(popcnt, __attribute__((target("popcnt"))))
const fy_kernels fy_kernels_popcnt = {"popcnt", tile_popcnt, dist_popcnt, NULL};
#else
const fy_kernels fy_kernels_popcnt = {"popcnt", tile_scalar, dist_scalar, NULL};
#endif
