/* kernel_avx2.c — AVX2 kernels. AVX2 has no vector popcount: bytes are
 * counted with a 16-entry nibble table (vpshufb) and summed per 64-bit
 * lane with vpsadbw (Mula's method). A 64-bit code is one lane; a 256-bit
 * code is four lanes of the word planes whose byte counts are added before
 * the sum. Four targets per vector, four queries per target load. */
#include "search/search.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,popcnt")))

AVX2 static inline __m256i byte_counts(__m256i x) {
  const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2,
                                       1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i low = _mm256_set1_epi8(0x0f);
  __m256i lo = _mm256_and_si256(x, low), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low);
  return _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi));
}

/* Per-lane counts of four targets against one query (words = 1 or 4). */
AVX2 static inline __m256i lane_dist(const fy_codes *c, const __m256i *a, size_t j) {
  __m256i bytes;
  if (c->words == 1) {
    bytes = byte_counts(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(c->aos + j)), a[0]));
  } else {
    size_t n = c->n;
    bytes =
        byte_counts(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(c->plane + j)), a[0]));
    for (int w = 1; w < 4; w++)
      bytes = _mm256_add_epi8(
          bytes, byte_counts(_mm256_xor_si256(
                     _mm256_loadu_si256((const __m256i *)(c->plane + w * n + j)), a[w])));
  }
  return _mm256_sad_epu8(bytes, _mm256_setzero_si256());
}

AVX2 static void emit(const fy_codes *c, size_t i, size_t j, unsigned bits, size_t j1, int t,
                      fy_pairbuf *out) {
  while (bits) {
    size_t jj = j + (size_t)__builtin_ctz(bits);
    bits &= bits - 1;
    if (jj > i && jj < j1) {
      int d = fy_code_distance(c->aos + i * c->words, c->aos + jj * c->words, c->words);
      if (d <= t)
        fy_pairbuf_push(out, (uint32_t)i, (uint32_t)jj, (uint32_t)d);
    }
  }
}

AVX2 static void tile_avx2(const fy_codes *c, size_t i0, size_t i1, size_t j0, size_t j1, int t,
                           fy_pairbuf *out) {
  const int words = c->words;
  const __m256i t1 = _mm256_set1_epi64x(t + 1); /* d <= t  <=>  t + 1 > d */
  for (size_t i = i0; i < i1; i += 4) {
    size_t ni = i1 - i < 4 ? i1 - i : 4;
    __m256i a[4][4];
    for (size_t k = 0; k < 4; k++)
      for (int w = 0; w < words; w++)
        a[k][w] = _mm256_set1_epi64x((long long)c->aos[(i + (k < ni ? k : 0)) * words + w]);
    size_t j = j0 > i + 1 ? j0 : i + 1;
    for (; j + 4 <= j1; j += 4) {
      __m256i le[4];
      for (int k = 0; k < 4; k++)
        le[k] = _mm256_cmpgt_epi64(t1, lane_dist(c, a[k], j));
      __m256i any = _mm256_or_si256(_mm256_or_si256(le[0], le[1]), _mm256_or_si256(le[2], le[3]));
      if (__builtin_expect(!_mm256_testz_si256(any, any), 0))
        for (size_t k = 0; k < ni; k++)
          emit(c, i + k, j, (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(le[k])), j1, t, out);
    }
    for (; j < j1; j++) /* the last few targets */
      for (size_t k = 0; k < ni; k++)
        if (j > i + k) {
          int d = fy_code_distance(c->aos + (i + k) * words, c->aos + j * words, words);
          if (d <= t)
            fy_pairbuf_push(out, (uint32_t)(i + k), (uint32_t)j, (uint32_t)d);
        }
  }
}

AVX2 static void dist_avx2(const fy_codes *c, const uint64_t *q, size_t j0, size_t j1,
                           uint16_t *d) {
  __m256i a[4];
  for (int w = 0; w < c->words; w++)
    a[w] = _mm256_set1_epi64x((long long)q[w]);
  size_t j = j0;
  for (; j + 4 <= j1; j += 4) {
    __m256i v = lane_dist(c, a, j);
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, v);
    for (int k = 0; k < 4; k++)
      d[j - j0 + k] = (uint16_t)lanes[k];
  }
  for (; j < j1; j++)
    d[j - j0] = (uint16_t)fy_code_distance(q, c->aos + j * c->words, c->words);
}

AVX2 static void below_avx2(const fy_codes *c, const uint64_t *q, size_t j0, size_t j1,
                            uint32_t limit, uint64_t *mask) {
  __m256i a[4];
  for (int w = 0; w < c->words; w++)
    a[w] = _mm256_set1_epi64x((long long)q[w]);
  /* d < limit  <=>  limit > d (signed 64-bit lanes: both small) */
  const __m256i lim = _mm256_set1_epi64x((long long)limit);
  for (size_t w0 = j0; w0 < j1; w0 += 64) { /* one mask word: sixteen vectors */
    uint64_t m = 0;
    size_t j = w0, end = w0 + 64 < j1 ? w0 + 64 : j1;
    for (; j + 4 <= end; j += 4) {
      __m256i lt = _mm256_cmpgt_epi64(lim, lane_dist(c, a, j));
      m |= (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(lt)) << (j - w0);
    }
    for (; j < end; j++)
      if ((uint32_t)fy_code_distance(q, c->aos + j * c->words, c->words) < limit)
        m |= 1ull << (j - w0);
    mask[(w0 - j0) / 64] = m;
  }
}

const fy_kernels fy_kernels_avx2 = {"avx2", tile_avx2, dist_avx2, below_avx2};
#else
const fy_kernels fy_kernels_avx2 = {"avx2", NULL, NULL, NULL};
#endif
