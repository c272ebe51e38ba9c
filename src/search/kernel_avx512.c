/* kernel_avx512.c — AVX-512 kernels with VPOPCNTQ (AVX512_VPOPCNTDQ): one
 * instruction counts eight 64-bit lanes. Eight targets per vector, four
 * queries per target load, the hit masks OR-ed so that a tile without
 * hits costs one test per 32 pairs. */
#include "search/search.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512vpopcntdq,avx512bw,avx512vl,popcnt")))

/* Distances of eight targets from j (lanes beyond `valid` are garbage). */
AVX512 static inline __m512i lane_dist(const fy_codes *c, const __m512i *a, size_t j,
                                       __mmask8 valid) {
  if (c->words == 1)
    return _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_maskz_loadu_epi64(valid, c->aos + j), a[0]));
  size_t n = c->n;
  __m512i s =
      _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_maskz_loadu_epi64(valid, c->plane + j), a[0]));
  for (int w = 1; w < 4; w++)
    s = _mm512_add_epi64(s, _mm512_popcnt_epi64(_mm512_xor_si512(
                                _mm512_maskz_loadu_epi64(valid, c->plane + w * n + j), a[w])));
  return s;
}

AVX512 static void emit(const fy_codes *c, size_t i, size_t j, unsigned bits, int t,
                        fy_pairbuf *out) {
  while (bits) {
    size_t jj = j + (size_t)__builtin_ctz(bits);
    bits &= bits - 1;
    if (jj > i) {
      int d = fy_code_distance(c->aos + i * c->words, c->aos + jj * c->words, c->words);
      if (d <= t)
        fy_pairbuf_push(out, (uint32_t)i, (uint32_t)jj, (uint32_t)d);
    }
  }
}

/* 64-bit codes: eight queries share each load of eight targets. */
AVX512 static void tile64(const fy_codes *c, size_t i0, size_t i1, size_t j0, size_t j1, int t,
                          fy_pairbuf *out) {
  const uint64_t *b = c->aos;
  const __m512i tv = _mm512_set1_epi64(t);
  for (size_t i = i0; i < i1; i += 8) {
    size_t ni = i1 - i < 8 ? i1 - i : 8;
    __m512i a[8];
    for (size_t k = 0; k < 8; k++)
      a[k] = _mm512_set1_epi64((long long)b[i + (k < ni ? k : 0)]);
    size_t j = j0 > i + 1 ? j0 : i + 1;
    for (; j < j1; j += 8) {
      __mmask8 valid = j1 - j >= 8 ? 0xFF : (__mmask8)((1u << (j1 - j)) - 1);
      __m512i x = _mm512_maskz_loadu_epi64(valid, b + j);
      __mmask8 m[8], any = 0;
      for (int k = 0; k < 8; k++) {
        m[k] =
            _mm512_mask_cmple_epu64_mask(valid, _mm512_popcnt_epi64(_mm512_xor_si512(x, a[k])), tv);
        any |= m[k];
      }
      if (__builtin_expect(any != 0, 0))
        for (size_t k = 0; k < ni; k++)
          emit(c, i + k, j, m[k], t, out);
    }
  }
}

/* 256-bit codes from the word planes: four queries per load of eight. */
AVX512 static void tile256(const fy_codes *c, size_t i0, size_t i1, size_t j0, size_t j1, int t,
                           fy_pairbuf *out) {
  const __m512i tv = _mm512_set1_epi64(t);
  for (size_t i = i0; i < i1; i += 4) {
    size_t ni = i1 - i < 4 ? i1 - i : 4;
    __m512i a[4][4];
    for (size_t k = 0; k < 4; k++)
      for (int w = 0; w < 4; w++)
        a[k][w] = _mm512_set1_epi64((long long)c->aos[(i + (k < ni ? k : 0)) * 4 + w]);
    for (size_t j = j0 > i + 1 ? j0 : i + 1; j < j1; j += 8) {
      __mmask8 valid = j1 - j >= 8 ? 0xFF : (__mmask8)((1u << (j1 - j)) - 1);
      __mmask8 m0 = _mm512_mask_cmple_epu64_mask(valid, lane_dist(c, a[0], j, valid), tv);
      __mmask8 m1 = _mm512_mask_cmple_epu64_mask(valid, lane_dist(c, a[1], j, valid), tv);
      __mmask8 m2 = _mm512_mask_cmple_epu64_mask(valid, lane_dist(c, a[2], j, valid), tv);
      __mmask8 m3 = _mm512_mask_cmple_epu64_mask(valid, lane_dist(c, a[3], j, valid), tv);
      if (__builtin_expect((m0 | m1 | m2 | m3) != 0, 0)) {
        __mmask8 m[4] = {m0, m1, m2, m3};
        for (size_t k = 0; k < ni; k++)
          emit(c, i + k, j, m[k], t, out);
      }
    }
  }
}

AVX512 static void tile_avx512(const fy_codes *c, size_t i0, size_t i1, size_t j0, size_t j1, int t,
                               fy_pairbuf *out) {
  if (c->words == 1)
    tile64(c, i0, i1, j0, j1, t, out);
  else
    tile256(c, i0, i1, j0, j1, t, out);
}

AVX512 static void dist_avx512(const fy_codes *c, const uint64_t *q, size_t j0, size_t j1,
                               uint16_t *d) {
  __m512i a[4];
  for (int w = 0; w < c->words; w++)
    a[w] = _mm512_set1_epi64((long long)q[w]);
  for (size_t j = j0; j < j1; j += 8) {
    __mmask8 valid = j1 - j >= 8 ? 0xFF : (__mmask8)((1u << (j1 - j)) - 1);
    __m128i v = _mm512_cvtepi64_epi16(lane_dist(c, a, j, valid));
    _mm_mask_storeu_epi16(d + (j - j0), valid, v);
  }
}

AVX512 static void below_avx512(const fy_codes *c, const uint64_t *q, size_t j0, size_t j1,
                                uint32_t limit, uint64_t *mask) {
  __m512i a[4];
  for (int w = 0; w < c->words; w++)
    a[w] = _mm512_set1_epi64((long long)q[w]);
  const __m512i lim = _mm512_set1_epi64((long long)limit);
  for (size_t w0 = j0; w0 < j1; w0 += 64) { /* one mask word: eight vectors */
    uint64_t m = 0;
    for (size_t j = w0; j < w0 + 64 && j < j1; j += 8) {
      __mmask8 valid = j1 - j >= 8 ? 0xFF : (__mmask8)((1u << (j1 - j)) - 1);
      m |= (uint64_t)_mm512_mask_cmplt_epu64_mask(valid, lane_dist(c, a, j, valid), lim)
           << (j - w0);
    }
    mask[(w0 - j0) / 64] = m;
  }
}

const fy_kernels fy_kernels_avx512 = {"avx512", tile_avx512, dist_avx512, below_avx512};
#else
const fy_kernels fy_kernels_avx512 = {"avx512", NULL, NULL, NULL};
#endif
