/* gray.c — Pillow's convert("L") of RGB rows, L = (19595 R + 38470 G +
 * 7471 B + 0x8000) >> 16, the one full-resolution pass of compatible mode
 * besides decoding. Written so that the compiler vectorises it (12 million
 * pixels take about 2 ms with AVX2 instead of 20 scalar). */
#include "hash/hash.h"

#if defined(__GNUC__) && !defined(__clang__)
/* -O2 leaves the interleaved loads scalar; the vectoriser needs -O3 here. */
#pragma GCC optimize("O3")
#endif

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) &&       \
    !defined(FERRY_NO_CLONES)
#define FY_GRAY_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FY_GRAY_CLONES
#endif

FY_GRAY_CLONES
static void row_to_l(const uint8_t *restrict p, uint8_t *restrict g, size_t n) {
  for (size_t x = 0; x < n; x++)
    g[x] = (uint8_t)((p[3 * x] * 19595u + p[3 * x + 1] * 38470u + p[3 * x + 2] * 7471u + 0x8000u) >>
                     16);
}

void fy_rgb_to_l(const uint8_t *rgb, int w, int h, size_t stride, uint8_t *gray, size_t gstride) {
  for (int y = 0; y < h; y++)
    row_to_l(rgb + (size_t)y * stride, gray + (size_t)y * gstride, (size_t)w);
}

int fy_source_is_gray(const uint8_t *d, size_t n, ferry_format f) {
  if (f == FERRY_FORMAT_PNG) /* IHDR colour type: 0 gray, 4 gray + alpha */
    return n > 25 && (d[25] == 0 || d[25] == 4);
  if (f != FERRY_FORMAT_JPEG)
    return 0;
  size_t i = 2;
  while (i + 4 <= n) { /* walk the segments to the frame header */
    if (d[i] != 0xFF)
      return 0;
    int m = d[i + 1];
    if (m == 0xFF) {
      i++;
      continue;
    }
    size_t len = (size_t)d[i + 2] << 8 | d[i + 3];
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC)
      return i + 9 < n && d[i + 9] == 1; /* Nf */
    if (m == 0xDA || m == 0xD9 || len < 2)
      return 0;
    i += 2 + len;
  }
  return 0;
}
