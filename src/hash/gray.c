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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The same with AVX2, 32 pixels a step: 19595 R + 38470 G + 7471 B as two
 * 16-bit multiply-adds per pixel, (R, G) x (19595, 19235) + (B, G) x (7471,
 * 19235), exact in 32 bits. */
__attribute__((target("avx2"))) static size_t row_to_l_avx2(const uint8_t *p, uint8_t *g,
                                                            size_t n) {
  /* in each 128-bit lane, 4 pixels at bytes 0..11: pixel j -> (R, 0, G, 0)
   * and (B, 0, G, 0) in 32-bit lane j */
  const __m256i rg = _mm256_setr_epi8(0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1, 0,
                                      -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1);
  const __m256i bg = _mm256_setr_epi8(2, -1, 1, -1, 5, -1, 4, -1, 8, -1, 7, -1, 11, -1, 10, -1, 2,
                                      -1, 1, -1, 5, -1, 4, -1, 8, -1, 7, -1, 11, -1, 10, -1);
  const __m256i w1 = _mm256_set1_epi32(19235 << 16 | 19595);
  const __m256i w2 = _mm256_set1_epi32(19235 << 16 | 7471);
  const __m256i half = _mm256_set1_epi32(0x8000);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  size_t x = 0;
  /* 8 pixels read as 12 + 16 bytes from 3x and 3x + 12: stop 4 bytes
   * before the row's end */
  for (; x + 32 + 2 <= n; x += 32) {
    __m256i l[4];
    for (int q = 0; q < 4; q++) {
      const uint8_t *s = p + 3 * (x + 8 * (size_t)q);
      __m256i v =
          _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)s)),
                                  _mm_loadu_si128((const __m128i *)(s + 12)), 1);
      __m256i a = _mm256_madd_epi16(_mm256_shuffle_epi8(v, rg), w1);
      __m256i b = _mm256_madd_epi16(_mm256_shuffle_epi8(v, bg), w2);
      l[q] = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(a, b), half), 16);
    }
    /* pixels 0-3 | 4-7 per register: pack to bytes, then restore order */
    __m256i w01 = _mm256_packus_epi32(l[0], l[1]); /* 0-3 8-11 | 4-7 12-15 */
    __m256i w23 = _mm256_packus_epi32(l[2], l[3]);
    __m256i b8 = _mm256_packus_epi16(w01, w23); /* 0-3 8-11 16-19 24-27 | 4-7 ... */
    _mm256_storeu_si256((__m256i *)(g + x), _mm256_permutevar8x32_epi32(b8, order));
  }
  return x;
}
#endif

void fy_rgb_to_l(const uint8_t *rgb, int w, int h, size_t stride, uint8_t *gray, size_t gstride) {
  for (int y = 0; y < h; y++) {
    const uint8_t *p = rgb + (size_t)y * stride;
    uint8_t *g = gray + (size_t)y * gstride;
    size_t x = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (fy_cpu_avx2())
      x = row_to_l_avx2(p, g, (size_t)w);
#endif
    row_to_l(p + 3 * x, g + x, (size_t)w - x);
  }
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
