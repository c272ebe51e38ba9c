/* passes_fast.c — the loader's resampling passes for 3-channel u8 images:
 * the same windows as passes.c, with 14-bit weights so that AVX2's 16-bit
 * multiply-add (vpmaddwd: two taps per instruction) does the work, as
 * Pillow-SIMD does. Each output value is within 1 of the 22-bit result of
 * passes.c but for rounding ties that both passes break the same way (2
 * for about 5 values in 10^7 of photographs: tests/unit/test_resize_fast.c
 * checks the bounds), and the tables of coeffs.c and tables.c, which the GPU
 * kernels share, are untouched. Only the loader uses these passes
 * (fy_resize_u8_fast); fy_resize_u8 stays Pillow-exact.
 *
 * Horizontal: four rows at once (two registers, a row per 128-bit lane).
 * For each output pixel, 16 source bytes (5 RGB pixels) are loaded per
 * group of 4 taps; a byte shuffle spreads taps (0, 1) and (2, 3) into
 * 16-bit pairs [R R][G G][B B][0 0], and vpmaddwd with the pair's weights
 * adds them into 32-bit R, G, B sums. Vertical: 16-bit pairs of two source
 * rows, vpmaddwd with the pair of weights, 32 bytes per step. Measured on
 * 410x307 -> 224x224 (triangle): 1.2 M instructions, 83 us, against 2.7 M
 * and 185 us for passes.c. */
#include "image/resample.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(FERRY_NO_AVX2)
#define FY_FAST 1
#include <immintrin.h>
#define FY_AVX2 __attribute__((target("avx2")))
#define FY_AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline
#else
#define FY_FAST 0
#endif

#define FAST_BITS 14
#define FAST_BIAS (1 << (FAST_BITS - 1))

int fy_fast_supported(void) {
#if FY_FAST
  return __builtin_cpu_supports("avx2");
#else
  return 0;
#endif
}

int fy_fast_taps(const fy_coeffs *c, int horizontal) {
  int unit = horizontal ? 4 : 2;
  return (c->taps + unit - 1) / unit * unit;
}

/* 22-bit weights to 14 bits, padded with zeros to `taps`. The running sum
 * is rounded, not each weight: every weight stays within 1 of its exact
 * value, their sum is the rounded exact sum (a flat area keeps its value),
 * and the rounding errors of neighbouring taps cancel rather than add. */
void fy_fast_weights(const fy_coeffs *c, int taps, int16_t *k16) {
  const int shift = FY_PRECISION_BITS - FAST_BITS;
  for (int i = 0; i < c->out; i++) {
    const int32_t *k = c->k + (size_t)i * c->taps;
    int16_t *d = k16 + (size_t)i * taps;
    int64_t sum = 0, prev = 0;
    for (int t = 0; t < taps; t++) {
      sum += t < c->taps ? k[t] : 0;
      int64_t now = (sum + (1 << (shift - 1))) >> shift;
      int64_t r = now - prev;
      d[t] = (int16_t)(r > 32767 ? 32767 : r < -32768 ? -32768 : r);
      prev = now;
    }
  }
}

/* Two adjacent 16-bit weights as the 32-bit lane vpmaddwd pairs them in. */
static inline int32_t pair_of(const int16_t *k) {
  int32_t v;
  memcpy(&v, k, 4);
  return v;
}

#if FY_FAST

/* Byte shuffles of 5 RGB pixels (16 bytes) into 16-bit tap pairs
 * [R_a R_b][G_a G_b][B_a B_b][0 0]: taps (0, 1) and taps (2, 3). */
#define Z (-128)
FY_AVX2 static inline __m256i shuffle_mask(int a) {
  const int b = a + 1;
  return _mm256_setr_epi8((char)(3 * a), Z, (char)(3 * b), Z, (char)(3 * a + 1), Z,
                          (char)(3 * b + 1), Z, (char)(3 * a + 2), Z, (char)(3 * b + 2), Z, Z, Z, Z,
                          Z, (char)(3 * a), Z, (char)(3 * b), Z, (char)(3 * a + 1), Z,
                          (char)(3 * b + 1), Z, (char)(3 * a + 2), Z, (char)(3 * b + 2), Z, Z, Z, Z,
                          Z);
}

/* 16 source bytes of two rows, one per 128-bit lane. */
FY_AVX2 static inline __m256i load2(const uint8_t *a, const uint8_t *b) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                 _mm_loadu_si128((const __m128i *)b), 1);
}

/* 32-bit sums [R G B 0] to bytes [R G B 0] (clamped to 0..255). */
FY_AVX2 static inline __m256i finish(__m256i a, __m256i b) {
  a = _mm256_srai_epi32(a, FAST_BITS);
  b = _mm256_srai_epi32(b, FAST_BITS);
  __m256i w = _mm256_packs_epi32(a, b);
  return _mm256_packus_epi16(w, w); /* dwords: a.lo b.lo . . | a.hi b.hi . . */
}

/* Output pixels [x0, x1) of four rows r[0..3] into rows d[0..3] (a
 * repeated source row goes with a repeated output row: the same bytes are
 * written twice). `groups` and `whole` are constants where this is inlined,
 * so that the tap loop unrolls and the stores take one shape: 4 bytes (the
 * spare byte is overwritten by the next pixel) or, for the last pixel of a
 * row, 3. Rows (0, 1) and (2, 3) share the lanes of one register. */
FY_AVX2_INLINE void hquad(const uint8_t *const *r, const fy_coeffs *c, const int16_t *k16, int taps,
                          int groups, int x0, int x1, int whole, uint8_t *const *d) {
  const __m256i m01 = shuffle_mask(0), m23 = shuffle_mask(2);
  const __m256i bias = _mm256_set1_epi32(FAST_BIAS);
  const size_t n = whole ? 4 : 3;
  /* Local copies: a byte store could alias the arrays. */
  const uint8_t *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
  uint8_t *d0 = d[0], *d1 = d[1], *d2 = d[2], *d3 = d[3];
  for (int x = x0; x < x1; x++) {
    size_t off = (size_t)c->start[x] * 3;
    const int16_t *kp = k16 + (size_t)x * taps;
    __m256i a = bias, b = bias;
    for (int g = 0; g < groups; g++) {
      size_t o = off + (size_t)g * 12;
      __m256i k01 = _mm256_set1_epi32(pair_of(kp + 4 * g));
      __m256i k23 = _mm256_set1_epi32(pair_of(kp + 4 * g + 2));
      __m256i p = load2(r0 + o, r1 + o), q = load2(r2 + o, r3 + o);
      a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_shuffle_epi8(p, m01), k01));
      b = _mm256_add_epi32(b, _mm256_madd_epi16(_mm256_shuffle_epi8(q, m01), k01));
      a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_shuffle_epi8(p, m23), k23));
      b = _mm256_add_epi32(b, _mm256_madd_epi16(_mm256_shuffle_epi8(q, m23), k23));
    }
    __m256i v = finish(a, b);
    __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
    uint32_t p0 = (uint32_t)_mm_cvtsi128_si32(lo), p1 = (uint32_t)_mm_cvtsi128_si32(hi);
    uint32_t p2 = (uint32_t)_mm_extract_epi32(lo, 1), p3 = (uint32_t)_mm_extract_epi32(hi, 1);
    size_t dx = (size_t)x * 3;
    memcpy(d0 + dx, &p0, n);
    memcpy(d1 + dx, &p1, n);
    memcpy(d2 + dx, &p2, n);
    memcpy(d3 + dx, &p3, n);
  }
}

#define HQUAD(G, T)                                                                                \
  do {                                                                                             \
    hquad(r, c, k16, T, G, 0, c->out - 1, 1, d);                                                   \
    hquad(r, c, k16, T, G, c->out - 1, c->out, 0, d);                                              \
  } while (0)

FY_AVX2 static void hquad_any(const uint8_t *const *r, const fy_coeffs *c, const int16_t *k16,
                              int taps, uint8_t *const *d) {
  switch (taps) {
  case 4: HQUAD(1, 4); break;
  case 8: HQUAD(2, 8); break;
  case 12: HQUAD(3, 12); break;
  default: HQUAD(taps / 4, taps); break;
  }
}

FY_AVX2 static void horizontal(const uint8_t *src, size_t sstride, int rows, const fy_coeffs *c,
                               const int16_t *k16, int taps, uint8_t *dst, size_t dstride,
                               uint8_t *pad) {
  /* The loads read up to FY_FAST_OVERREAD bytes past a window's last
   * pixel: inside the rows below, except near the end of the image, where
   * rows are read from padded copies (4 slots). */
  size_t row = (size_t)c->last * 3, slot = row + FY_FAST_PAD;
  int safe = rows - 1 - (int)((FY_FAST_OVERREAD + sstride - 1) / sstride);
  int y = 0;
  for (; y + 4 <= safe; y += 4) {
    const uint8_t *r[4];
    uint8_t *d[4];
    for (int i = 0; i < 4; i++) {
      r[i] = src + (size_t)(y + i) * sstride;
      d[i] = dst + (size_t)(y + i) * dstride;
    }
    hquad_any(r, c, k16, taps, d);
  }
  for (; y < rows; y += 4) {
    const uint8_t *r[4];
    uint8_t *d[4];
    for (int i = 0; i < 4; i++) {
      int yi = y + i < rows ? y + i : rows - 1; /* past the end: the last row again */
      if (yi < safe) {
        r[i] = src + (size_t)yi * sstride;
      } else {
        uint8_t *copy = pad + (size_t)i * slot;
        memcpy(copy, src + (size_t)yi * sstride, row);
        memset(copy + row, 0, FY_FAST_PAD);
        r[i] = copy;
      }
      d[i] = dst + (size_t)yi * dstride;
    }
    hquad_any(r, c, k16, taps, d);
  }
}

/* One output row: `line` bytes from the taps' source rows rp[0..2 pairs).
 * `pairs` is a constant where this is inlined: the row pointers and the
 * weights then stay in registers (a store through `out` could alias the
 * arrays they come from). */
FY_AVX2_INLINE void vrow(const uint8_t *const *rp, const int16_t *kp, int pairs, size_t line,
                         uint8_t *out) {
  const uint8_t *q[FY_FAST_MAX_TAPS];
  __m256i k[FY_FAST_MAX_TAPS / 2];
  for (int t = 0; t < pairs; t++) {
    q[2 * t] = rp[2 * t];
    q[2 * t + 1] = rp[2 * t + 1];
    k[t] = _mm256_set1_epi32(pair_of(kp + 2 * t));
  }
  const __m256i z = _mm256_setzero_si256();
  size_t x = 0;
  for (; x + 32 <= line; x += 32) {
    __m256i a0 = _mm256_set1_epi32(FAST_BIAS), a1 = a0, a2 = a0, a3 = a0;
    for (int t = 0; t < pairs; t++) {
      __m256i p = _mm256_loadu_si256((const __m256i *)(q[2 * t] + x));
      __m256i r = _mm256_loadu_si256((const __m256i *)(q[2 * t + 1] + x));
      /* (p, r) byte pairs, then 16-bit pairs */
      __m256i lo = _mm256_unpacklo_epi8(p, r), hi = _mm256_unpackhi_epi8(p, r);
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, z), k[t]));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, z), k[t]));
      a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, z), k[t]));
      a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, z), k[t]));
    }
    __m256i lo =
        _mm256_packs_epi32(_mm256_srai_epi32(a0, FAST_BITS), _mm256_srai_epi32(a1, FAST_BITS));
    __m256i hi =
        _mm256_packs_epi32(_mm256_srai_epi32(a2, FAST_BITS), _mm256_srai_epi32(a3, FAST_BITS));
    /* bytes back in source order */
    _mm256_storeu_si256((__m256i *)(out + x), _mm256_packus_epi16(lo, hi));
  }
  for (; x < line; x++) {
    int32_t acc = FAST_BIAS;
    for (int t = 0; t < 2 * pairs; t++)
      acc += q[t][x] * kp[t];
    acc >>= FAST_BITS;
    out[x] = (uint8_t)(acc < 0 ? 0 : acc > 255 ? 255 : acc);
  }
}

FY_AVX2 static void vertical(const uint8_t *src, size_t sstride, size_t line, const fy_coeffs *c,
                             const int16_t *k16, int taps, uint8_t *dst, size_t dstride) {
  const uint8_t *rp[FY_FAST_MAX_TAPS];
  for (int y = 0; y < c->out; y++) {
    const uint8_t *in = src + (size_t)c->start[y] * sstride;
    const int16_t *k = k16 + (size_t)y * taps;
    uint8_t *out = dst + (size_t)y * dstride;
    /* A zero weight past the window reads the window's last row again. */
    for (int t = 0; t < taps; t++)
      rp[t] = in + (size_t)(t < c->taps ? t : c->taps - 1) * sstride;
    switch (taps / 2) {
    case 1: vrow(rp, k, 1, line, out); break;
    case 2: vrow(rp, k, 2, line, out); break;
    case 3: vrow(rp, k, 3, line, out); break;
    case 4: vrow(rp, k, 4, line, out); break;
    default: vrow(rp, k, taps / 2, line, out); break;
    }
  }
}

#endif /* FY_FAST */

void fy_fast_horizontal3(const uint8_t *src, size_t sstride, int rows, const fy_coeffs *c,
                         const int16_t *k16, uint8_t *dst, size_t dstride, uint8_t *pad) {
#if FY_FAST
  horizontal(src, sstride, rows, c, k16, fy_fast_taps(c, 1), dst, dstride, pad);
#else
  (void)src, (void)sstride, (void)rows, (void)c, (void)k16, (void)dst, (void)dstride, (void)pad;
#endif
}

void fy_fast_vertical(const uint8_t *src, size_t sstride, size_t line, const fy_coeffs *c,
                      const int16_t *k16, uint8_t *dst, size_t dstride) {
#if FY_FAST
  vertical(src, sstride, line, c, k16, fy_fast_taps(c, 0), dst, dstride);
#else
  (void)src, (void)sstride, (void)line, (void)c, (void)k16, (void)dst, (void)dstride;
#endif
}
