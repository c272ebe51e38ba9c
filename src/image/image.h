/* image.h — internal image transforms: resampling and the output store. */
#ifndef FY_IMAGE_H
#define FY_IMAGE_H

#include "core/internal.h"

/* Scratch memory of one resizing thread, reused from image to image.
 * Zero-initialise; release with fy_resize_ctx_free(). */
typedef struct fy_resize_ctx {
  fy_buf coeffs; /* filter weights and bounds, both passes */
  fy_buf temp;   /* intermediate image between the two passes */
} fy_resize_ctx;

void fy_resize_ctx_free(fy_resize_ctx *ctx);

/* A source box in (fractional) pixel coordinates of the source image. */
typedef struct fy_box {
  double x0, y0, x1, y1;
} fy_box;

/* Resamples the box of an 8-bit interleaved image (1, 3 or 4 channels) to
 * dw x dh. Separable: horizontal pass, then vertical, as Pillow does, with
 * Pillow's fixed-point arithmetic so that the antialiased filters match
 * Pillow's Image.resize(size, filter, box) exactly. FERRY_FILTER_BILINEAR
 * is the classic 2-tap interpolation (OpenCV INTER_LINEAR; no
 * antialiasing). When the box equals the whole image and the size is
 * unchanged, the pixels are copied. */
int fy_resize_u8(const uint8_t *src, int sw, int sh, size_t sstride, int channels,
                 const fy_box *box, uint8_t *dst, int dw, int dh, size_t dstride,
                 ferry_filter filter, fy_resize_ctx *ctx);

/* The loader's resampler: fy_resize_u8's geometry, filters and order of
 * passes, with 14-bit weights and AVX2 16-bit multiply-adds for 3-channel
 * images and the filters without negative lobes (triangle, area, bilinear):
 * each value within 1 of fy_resize_u8's (2 where rounding ties line up:
 * about 5 values in 10^7). Exactly fy_resize_u8 elsewhere
 * (bicubic, Lanczos, other channel counts, no AVX2). Not for results that
 * must match Pillow. */
int fy_resize_u8_fast(const uint8_t *src, int sw, int sh, size_t sstride, int channels,
                      const fy_box *box, uint8_t *dst, int dw, int dh, size_t dstride,
                      ferry_filter filter, fy_resize_ctx *ctx);

/* How the store stage turns 8-bit RGB pixels into the output tensor. */
typedef struct fy_store_params {
  ferry_layout layout;
  ferry_dtype dtype;
  int flip;      /* mirror horizontally */
  int normalize; /* out = (x / 255 - mean[c]) / std[c]; else out = x
                    (u8) or x / 255 (f16/f32) */
  float mean[3], std[3];
  int stream; /* plain copies use streaming stores (the destination is a
                 batch ring far larger than the caches) */
} fy_store_params;

/* Writes a w x h x c (c = 1 or 3) 8-bit interleaved image into `dst` as one
 * sample of the output tensor ([c,h,w] or [h,w,c] of dtype), applying flip
 * and normalisation in the same pass. For u8 with normalize, values are
 * rounded and clamped to 0..255. */
void fy_store(const uint8_t *src, int w, int h, int c, size_t sstride,
              const fy_store_params *params, void *dst);

/* One axis of resampling as the GPU kernels read it: out window starts,
 * then out * taps fixed-point weights (22 fractional bits), the same
 * numbers the CPU passes use. */
typedef struct fy_axis_table {
  int taps;
  int first, last; /* source range read: [first, last) */
  int entries;     /* int32 entries written */
} fy_axis_table;

/* Builds the table for [in0, in1) of an axis of in_size pixels to `out`
 * pixels into dst (at most `capacity` entries). FERRY_EUNSUPPORTED for
 * NEAREST; FERRY_ETOO_LARGE when it does not fit. No error message. */
int fy_resize_axis_table(ferry_filter filter, int in_size, double in0, double in1, int out,
                         int32_t *dst, int capacity, fy_axis_table *t, fy_buf *scratch);

/* IEEE half from float, round to nearest even (as numpy's astype). */
uint16_t fy_f32_to_f16(float f);
float fy_f16_to_f32(uint16_t h);

#endif
