/* resample.h — private to the resizer (resize.c, coeffs.c, passes.c):
 * fixed-point filter tables and the two separable passes. */
#ifndef FY_RESAMPLE_H
#define FY_RESAMPLE_H

#include "image/image.h"

/* Pillow's fixed point: 32 bits minus 8 for the pixel minus 2 for the
 * overshoot of filters with negative lobes. */
#define FY_PRECISION_BITS 22
#define FY_ROUND_BIAS (1 << (FY_PRECISION_BITS - 1))

/* The weights of one pass along one axis. Every output pixel reads a window
 * of `taps` consecutive source pixels starting at start[i], with weights
 * k[i * taps ...]. Windows are padded with zero weights to a common length
 * (so loops have one trip count) and moved inside [first, last), the source
 * range that the pass reads at all. */
typedef struct fy_coeffs {
  int32_t *start;
  int32_t *k;
  int taps;
  int out;
  int first, last;
} fy_coeffs;

/* Upper bound of the window length of `filter` for in_span -> out pixels,
 * used to size the table before building it (0 for NEAREST). */
int fy_coeffs_max_taps(ferry_filter filter, double in_span, int out);

/* Bytes of scratch that fy_coeffs_build needs for (out, max_taps). 0 when
 * the size overflows. */
size_t fy_coeffs_bytes(int out, int max_taps);

/* Builds the table for resampling [in0, in1) of an axis of in_size pixels to
 * `out` pixels, in memory `mem` of fy_coeffs_bytes(out, max_taps) bytes
 * (8-byte aligned). The antialiased filters reproduce Pillow's weights bit
 * for bit; FERRY_FILTER_BILINEAR gives 2-tap interpolation. */
void fy_coeffs_build(ferry_filter filter, int in_size, float in0, float in1, int out, int max_taps,
                     void *mem, fy_coeffs *c);

/* Nearest-neighbour source index of every output pixel, as Pillow's
 * affine scaling computes it (a running sum); -1 where it falls outside the
 * image (Pillow writes 0 there). */
void fy_nearest_table(int in_size, float in0, float in1, int out, int32_t *index);

/* Subtracts `offset` from every window start (the pass reads an image that
 * begins at source pixel `offset`). */
void fy_coeffs_shift(fy_coeffs *c, int offset);

/* Bytes of scratch that fy_pass_horizontal needs for table c. */
size_t fy_pass_horizontal_scratch(int channels, const fy_coeffs *c);

/* Horizontal pass: `rows` rows of `channels`-channel pixels. Column 0 of
 * `src` is source pixel 0 of the table. */
void fy_pass_horizontal(const uint8_t *src, size_t sstride, int rows, int channels,
                        const fy_coeffs *c, uint8_t *dst, size_t dstride, uint8_t *scratch);

/* Vertical pass: every output row is a weighted sum of `taps` source rows of
 * `line` bytes (the channel count does not matter). Row 0 of `src` is source
 * row 0 of the table. */
void fy_pass_vertical(const uint8_t *src, size_t sstride, size_t line, const fy_coeffs *c,
                      uint8_t *dst, size_t dstride);

/* ------------------------------------------- the loader's fast passes */

/* passes_fast.c: 14-bit weights and AVX2 16-bit multiply-adds, 3-channel
 * horizontal and any-channel vertical passes, each value within 1 (rarely 2) of the
 * passes above. Only where fy_fast_supported() (AVX2), for windows of at
 * most FY_FAST_MAX_TAPS: the error of the weights grows with the taps. */
#define FY_FAST_OVERREAD 13 /* bytes past a window that the horizontal pass loads */
#define FY_FAST_PAD 32      /* >= FY_FAST_OVERREAD, rounded up */
#define FY_FAST_MAX_TAPS 32 /* longer windows use the exact passes (accuracy) */
int fy_fast_supported(void);
/* Window length of the 16-bit table for c: taps padded to a multiple of 4
 * (horizontal) or 2 (vertical). */
int fy_fast_taps(const fy_coeffs *c, int horizontal);
/* c's weights rounded to 14 bits, c->out rows of `taps` (padded with 0). */
void fy_fast_weights(const fy_coeffs *c, int taps, int16_t *k16);
/* As fy_pass_horizontal for 3 channels; `pad` holds 4 * (c->last * 3 +
 * FY_FAST_PAD) bytes of scratch. */
void fy_fast_horizontal3(const uint8_t *src, size_t sstride, int rows, const fy_coeffs *c,
                         const int16_t *k16, uint8_t *dst, size_t dstride, uint8_t *pad);
/* As fy_pass_vertical (c->taps <= FY_FAST_MAX_TAPS). */
void fy_fast_vertical(const uint8_t *src, size_t sstride, size_t line, const fy_coeffs *c,
                      const int16_t *k16, uint8_t *dst, size_t dstride);

#endif
