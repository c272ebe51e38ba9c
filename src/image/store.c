/* store.c — the last stage of a sample: 8-bit interleaved pixels into the
 * output tensor, in one pass: layout (HWC or CHW), dtype, horizontal flip
 * and normalisation. Every conversion is a lookup in a 256-entry table per
 * channel, built with the reference formula, so the results are exactly
 * (x / 255 - mean) / std in float, and the loop is one load per byte. */
#include "image/image.h"

#include <math.h>
#include <string.h>

size_t ferry_dtype_size(ferry_dtype dtype) {
  switch (dtype) {
  case FERRY_U8: return 1;
  case FERRY_F16: return 2;
  case FERRY_F32: return 4;
  default: return 0;
  }
}

/* The value a byte stands for: x / 255, normalised when asked. */
static float value_of(const fy_store_params *p, int ch, int x) {
  float v = (float)x / 255.0f;
  return p->normalize ? (v - p->mean[ch]) / p->std[ch] : v;
}

/* Rounded half to even and clamped; NaN (a zero std) gives 0. */
static uint8_t u8_of(float v) {
  float r = rintf(v);
  return !(r > 0.0f) ? 0 : r >= 255.0f ? 255 : (uint8_t)r;
}

typedef union lut {
  float f32[3][256];
  uint16_t f16[3][256];
  uint8_t u8[3][256];
} lut;

static void build_lut(const fy_store_params *p, int c, lut *t) {
  for (int ch = 0; ch < c; ch++)
    for (int x = 0; x < 256; x++) {
      if (p->dtype == FERRY_F32)
        t->f32[ch][x] = value_of(p, ch, x);
      else if (p->dtype == FERRY_F16)
        t->f16[ch][x] = fy_f32_to_f16(value_of(p, ch, x));
      else
        t->u8[ch][x] = p->normalize ? u8_of(value_of(p, ch, x)) : (uint8_t)x;
    }
}

/* One row through the tables, per element type T. Source pixel x is at
 * in + x * step: step is -c from the last pixel for a flip. The 3-channel loops are spelled out:
 * they are the common case and the compiler keeps the tables' rows apart. */
#define DEFINE_ROWS(T, name)                                                                       \
  static void name##_hwc(const uint8_t *in, ptrdiff_t step, int w, int c, T(*tab)[256],            \
                         T *restrict out) {                                                        \
    if (c == 3) {                                                                                  \
      for (int x = 0; x < w; x++, out += 3) {                                                      \
        const uint8_t *p = in + x * step;                                                          \
        out[0] = tab[0][p[0]];                                                                     \
        out[1] = tab[1][p[1]];                                                                     \
        out[2] = tab[2][p[2]];                                                                     \
      }                                                                                            \
      return;                                                                                      \
    }                                                                                              \
    for (int x = 0; x < w; x++)                                                                    \
      for (int ch = 0; ch < c; ch++)                                                               \
        *out++ = tab[ch][in[x * step + ch]];                                                       \
  }                                                                                                \
  static void name##_chw(const uint8_t *in, ptrdiff_t step, int w, int c, T(*tab)[256],            \
                         T *restrict out, size_t plane) {                                          \
    if (c == 3) {                                                                                  \
      T *restrict o1 = out + plane, *restrict o2 = out + 2 * plane;                                \
      for (int x = 0; x < w; x++) {                                                                \
        const uint8_t *p = in + x * step;                                                          \
        out[x] = tab[0][p[0]];                                                                     \
        o1[x] = tab[1][p[1]];                                                                      \
        o2[x] = tab[2][p[2]];                                                                      \
      }                                                                                            \
      return;                                                                                      \
    }                                                                                              \
    for (int ch = 0; ch < c; ch++)                                                                 \
      for (int x = 0; x < w; x++)                                                                  \
        out[ch * plane + x] = tab[ch][in[x * step + ch]];                                          \
  }                                                                                                \
  static void name##_image(const uint8_t *src, int w, int h, int c, size_t sstride, int flip,      \
                           ferry_layout layout, T(*tab)[256], T *dst) {                            \
    size_t plane = (size_t)w * h, row = (size_t)w * c;                                             \
    ptrdiff_t step = flip ? -(ptrdiff_t)c : (ptrdiff_t)c;                                          \
    for (int y = 0; y < h; y++) {                                                                  \
      const uint8_t *in = src + (size_t)y * sstride + (flip ? (size_t)(w - 1) * c : 0);            \
      if (layout == FERRY_LAYOUT_CHW)                                                              \
        name##_chw(in, step, w, c, tab, dst + (size_t)y * w, plane);                               \
      else                                                                                         \
        name##_hwc(in, step, w, c, tab, dst + (size_t)y * row);                                    \
    }                                                                                              \
  }

DEFINE_ROWS(uint8_t, rows_u8)
DEFINE_ROWS(uint16_t, rows_f16)
DEFINE_ROWS(float, rows_f32)

void fy_store(const uint8_t *src, int w, int h, int c, size_t sstride,
              const fy_store_params *params, void *dst) {
  if (c < 1 || c > 3 || w < 1 || h < 1) /* the contract: c is 1 or 3 */
    return;
  /* Plain bytes in the same layout: rows are copied as they are. */
  if (params->dtype == FERRY_U8 && !params->normalize && !params->flip &&
      (params->layout == FERRY_LAYOUT_HWC || c == 1)) {
    size_t row = (size_t)w * c;
    if (sstride == row) { /* one block: e.g. a pack's sample */
      if (params->stream)
        fy_copy_stream(dst, src, row * h);
      else
        memcpy(dst, src, row * h);
      return;
    }
    for (int y = 0; y < h; y++)
      memcpy((uint8_t *)dst + (size_t)y * row, src + (size_t)y * sstride, row);
    return;
  }
  lut t;
  build_lut(params, c, &t);
  if (params->dtype == FERRY_F32)
    rows_f32_image(src, w, h, c, sstride, params->flip, params->layout, t.f32, dst);
  else if (params->dtype == FERRY_F16)
    rows_f16_image(src, w, h, c, sstride, params->flip, params->layout, t.f16, dst);
  else
    rows_u8_image(src, w, h, c, sstride, params->flip, params->layout, t.u8, dst);
}
