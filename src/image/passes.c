/* passes.c — the two separable resampling passes over 8-bit pixels, in
 * Pillow's 22-bit fixed point. Integer sums are exact, so the loops may add
 * the taps in any order and still give Pillow's bytes.
 *
 * Both passes reduce to one kernel: out[i] = clip(sum_t row_t[i] * k[t])
 * over a fixed number of bytes, which the compiler vectorises. The vertical
 * pass runs it along the rows; the horizontal pass first transposes a block
 * of rows so that each source column is a short contiguous row. */
#include "image/resample.h"

#include <string.h>

#if defined(__GNUC__)
#define FY_INLINE inline __attribute__((always_inline))
#define FY_UNROLL _Pragma("GCC unroll 8")
#else
#define FY_INLINE inline
#define FY_UNROLL
#endif

/* On x86-64 the passes are compiled twice, for AVX2 and for the baseline
 * (SSE2), and picked at run time. AVX2 has the 8-lane 32-bit multiply that
 * SSE2 lacks: the passes run two to three times as fast with it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(FERRY_NO_AVX2)
#define FY_DISPATCH 1
#define FY_AVX2 __attribute__((target("avx2")))
#else
#define FY_DISPATCH 0
#endif

/* Pillow's clip8 (where a negative sum gives 0), as max, shift, min so
 * that it vectorises. */
static FY_INLINE uint8_t clip8(int32_t acc) {
  acc = acc < 0 ? 0 : acc;
  acc >>= FY_PRECISION_BITS;
  return (uint8_t)(acc > 255 ? 255 : acc);
}

/* ---------------------------------------------------------------- kernel */

/* dst[i] = clip(bias + sum_t src[t * stride + i] * k[t]) for i < len. The
 * trip counts are constants so that GCC's -O2 vectoriser (which gives up on
 * unknown counts) takes the loops; taps go in pairs to halve the loads and
 * stores of acc. No partial sum overflows, in any order: each lies within
 * 255 * (sum of the positive weights) + bias, and the positive weights of
 * these filters sum to at most about 1.3 (Pillow relies on the same). */
#define DEFINE_MAC(len)                                                                            \
  static FY_INLINE void mac_##len(const uint8_t *src, size_t stride, const int32_t *k, int taps,   \
                                  uint8_t *restrict dst) {                                         \
    int32_t acc[len];                                                                              \
    int t = 0, i;                                                                                  \
    for (i = 0; i < len; i++)                                                                      \
      acc[i] = FY_ROUND_BIAS;                                                                      \
    for (; t + 1 < taps; t += 2) {                                                                 \
      const uint8_t *restrict r0 = src + (size_t)t * stride;                                       \
      const uint8_t *restrict r1 = r0 + stride;                                                    \
      int32_t k0 = k[t], k1 = k[t + 1];                                                            \
      for (i = 0; i < len; i++)                                                                    \
        acc[i] += r0[i] * k0 + r1[i] * k1;                                                         \
    }                                                                                              \
    if (t < taps) {                                                                                \
      const uint8_t *restrict r0 = src + (size_t)t * stride;                                       \
      int32_t k0 = k[t];                                                                           \
      for (i = 0; i < len; i++)                                                                    \
        acc[i] += r0[i] * k0;                                                                      \
    }                                                                                              \
    for (i = 0; i < len; i++)                                                                      \
      dst[i] = clip8(acc[i]);                                                                      \
  }

DEFINE_MAC(16)
DEFINE_MAC(64)
DEFINE_MAC(96)
DEFINE_MAC(128)

/* The same for a few bytes, without the vectoriser. */
static void mac_tail(const uint8_t *src, size_t stride, const int32_t *k, int taps, size_t len,
                     uint8_t *dst) {
  for (size_t i = 0; i < len; i++) {
    int32_t acc = FY_ROUND_BIAS;
    for (int t = 0; t < taps; t++)
      acc += src[(size_t)t * stride + i] * k[t];
    dst[i] = clip8(acc);
  }
}

/* ------------------------------------------------------------ vertical */

static FY_INLINE void vertical(const uint8_t *src, size_t sstride, size_t line, const fy_coeffs *c,
                               uint8_t *dst, size_t dstride) {
  for (int y = 0; y < c->out; y++) {
    const uint8_t *in = src + (size_t)c->start[y] * sstride;
    const int32_t *k = c->k + (size_t)y * c->taps;
    uint8_t *out = dst + (size_t)y * dstride;
    size_t x = 0;
    for (; x + 64 <= line; x += 64)
      mac_64(in + x, sstride, k, c->taps, out + x);
    for (; x + 16 <= line; x += 16)
      mac_16(in + x, sstride, k, c->taps, out + x);
    mac_tail(in + x, sstride, k, c->taps, line - x, out + x);
  }
}

/* ------------------------------------------- horizontal, row by row */

static void hrow_1(const uint8_t *in, const fy_coeffs *c, uint8_t *restrict out) {
  const int32_t *k = c->k;
  const int taps = c->taps;
  for (int x = 0; x < c->out; x++, k += taps) {
    const uint8_t *p = in + c->start[x];
    int32_t a = FY_ROUND_BIAS;
    for (int t = 0; t < taps; t++)
      a += p[t] * k[t];
    out[x] = clip8(a);
  }
}

static void hrow_3(const uint8_t *in, const fy_coeffs *c, uint8_t *restrict out) {
  const int32_t *k = c->k;
  const int taps = c->taps;
  for (int x = 0; x < c->out; x++, k += taps, out += 3) {
    const uint8_t *p = in + (size_t)c->start[x] * 3;
    int32_t a0 = FY_ROUND_BIAS, a1 = FY_ROUND_BIAS, a2 = FY_ROUND_BIAS;
    for (int t = 0; t < taps; t++, p += 3) {
      a0 += p[0] * k[t];
      a1 += p[1] * k[t];
      a2 += p[2] * k[t];
    }
    out[0] = clip8(a0);
    out[1] = clip8(a1);
    out[2] = clip8(a2);
  }
}

/* Any channel count. */
static void hrow_n(const uint8_t *in, int channels, const fy_coeffs *c, uint8_t *restrict out) {
  const int32_t *k = c->k;
  for (int x = 0; x < c->out; x++, k += c->taps) {
    const uint8_t *p = in + (size_t)c->start[x] * channels;
    for (int ch = 0; ch < channels; ch++) {
      int32_t a = FY_ROUND_BIAS;
      for (int t = 0; t < c->taps; t++)
        a += p[t * channels + ch] * k[t];
      *out++ = clip8(a);
    }
  }
}

static void hrows(const uint8_t *src, size_t sstride, int rows, int channels, const fy_coeffs *c,
                  uint8_t *dst, size_t dstride) {
  for (int y = 0; y < rows; y++) {
    const uint8_t *in = src + (size_t)y * sstride;
    uint8_t *out = dst + (size_t)y * dstride;
    if (channels == 1)
      hrow_1(in, c, out);
    else if (channels == 3)
      hrow_3(in, c, out);
    else
      hrow_n(in, channels, c, out);
  }
}

/* ------------------------------------- horizontal, a block of rows */

/* Rows per block: a transposed column is 64 to 128 bytes. */
static int block_rows(int channels) { return channels == 1 ? 64 : 32; }

size_t fy_pass_horizontal_scratch(int channels, const fy_coeffs *c) {
  /* +4: the 4-byte copies of 3-channel pixels spill one byte. */
  return (size_t)(c->last - c->first) * channels * block_rows(channels) + 4;
}

/* Copies columns [first, last) of `rows` rows so that column x becomes the
 * contiguous run T[(x - first) * rows * C ...], rows side by side. A
 * 3-channel pixel moves as 4 bytes (the spare byte is overwritten next),
 * except in the last column, which has no byte to spare. */
static FY_INLINE void transpose_in(const uint8_t *src, size_t sstride, int first, int last, int C,
                                   int rows, uint8_t *T) {
  const size_t len = (size_t)C * rows;
  for (int x = first; x < last; x++) {
    uint8_t *d = T + (size_t)(x - first) * len;
    const uint8_t *s = src + (size_t)x * C;
    if (C == 3 && x + 1 < last) {
      FY_UNROLL
      for (int r = 0; r < rows; r++)
        memcpy(d + 3 * r, s + r * sstride, 4);
    } else {
      FY_UNROLL
      for (int r = 0; r < rows; r++)
        memcpy(d + C * r, s + r * sstride, (size_t)C);
    }
  }
}

/* Writes output column x of every row of the block from res (rows side by
 * side), with the same 4-byte trick: pixel x + 1 is written after it. */
static FY_INLINE void transpose_out(const uint8_t *res, int x, int out, int C, int rows,
                                    uint8_t *dst, size_t dstride) {
  uint8_t *d = dst + (size_t)x * C;
  if (C == 3 && x + 1 < out) {
    FY_UNROLL
    for (int r = 0; r < rows; r++)
      memcpy(d + r * dstride, res + 3 * r, 4);
  } else {
    FY_UNROLL
    for (int r = 0; r < rows; r++)
      memcpy(d + r * dstride, res + C * r, (size_t)C);
  }
}

#define DEFINE_HBLOCK(C, ROWS)                                                                     \
  static FY_INLINE void hblock_##C(const uint8_t *src, size_t sstride, const fy_coeffs *c,         \
                                   uint8_t *T, uint8_t *dst, size_t dstride) {                     \
    uint8_t res[C * ROWS + 1] = {0};                                                               \
    const int32_t *k = c->k;                                                                       \
    transpose_in(src, sstride, c->first, c->last, C, ROWS, T);                                     \
    for (int x = 0; x < c->out; x++, k += c->taps) {                                               \
      mac_##ROWS##_##C(T + (size_t)(c->start[x] - c->first) * (C * ROWS), C * ROWS, k, c->taps,    \
                       res);                                                                       \
      transpose_out(res, x, c->out, C, ROWS, dst, dstride);                                        \
    }                                                                                              \
  }

#define mac_64_1 mac_64
#define mac_32_3 mac_96
#define mac_32_4 mac_128
DEFINE_HBLOCK(1, 64)
DEFINE_HBLOCK(3, 32)
DEFINE_HBLOCK(4, 32)

static FY_INLINE void horizontal(const uint8_t *src, size_t sstride, int rows, int channels,
                                 const fy_coeffs *c, uint8_t *dst, size_t dstride,
                                 uint8_t *scratch) {
  int block = block_rows(channels);
  if (channels == 2 || rows < block) {
    hrows(src, sstride, rows, channels, c, dst, dstride);
    return;
  }
  /* Whole blocks; the last one overlaps the one before rather than leave
   * a slow remainder (rows written twice get the same bytes). */
  for (int y = 0;; y += block) {
    if (y + block > rows)
      y = rows - block;
    const uint8_t *in = src + (size_t)y * sstride;
    uint8_t *out = dst + (size_t)y * dstride;
    if (channels == 1)
      hblock_1(in, sstride, c, scratch, out, dstride);
    else if (channels == 3)
      hblock_3(in, sstride, c, scratch, out, dstride);
    else
      hblock_4(in, sstride, c, scratch, out, dstride);
    if (y + block >= rows)
      break;
  }
}

/* ------------------------------------------------------------ dispatch */

#if FY_DISPATCH
FY_AVX2 static void vertical_avx2(const uint8_t *src, size_t sstride, size_t line,
                                  const fy_coeffs *c, uint8_t *dst, size_t dstride) {
  vertical(src, sstride, line, c, dst, dstride);
}

FY_AVX2 static void horizontal_avx2(const uint8_t *src, size_t sstride, int rows, int channels,
                                    const fy_coeffs *c, uint8_t *dst, size_t dstride,
                                    uint8_t *scratch) {
  horizontal(src, sstride, rows, channels, c, dst, dstride, scratch);
}
#endif

void fy_pass_vertical(const uint8_t *src, size_t sstride, size_t line, const fy_coeffs *c,
                      uint8_t *dst, size_t dstride) {
#if FY_DISPATCH
  if (__builtin_cpu_supports("avx2")) {
    vertical_avx2(src, sstride, line, c, dst, dstride);
    return;
  }
#endif
  vertical(src, sstride, line, c, dst, dstride);
}

void fy_pass_horizontal(const uint8_t *src, size_t sstride, int rows, int channels,
                        const fy_coeffs *c, uint8_t *dst, size_t dstride, uint8_t *scratch) {
#if FY_DISPATCH
  if (__builtin_cpu_supports("avx2")) {
    horizontal_avx2(src, sstride, rows, channels, c, dst, dstride, scratch);
    return;
  }
#endif
  horizontal(src, sstride, rows, channels, c, dst, dstride, scratch);
}
