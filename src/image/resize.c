/* resize.c — fy_resize_u8 and ferry_resize: argument checks, the choice of
 * passes (as Pillow's ImagingResampleInner makes it), nearest neighbour and
 * plain crops. The weights live in coeffs.c, the inner loops in passes.c. */
#include "image/resample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void fy_resize_ctx_free(fy_resize_ctx *ctx) {
  if (!ctx)
    return;
  fy_buf_free(&ctx->coeffs);
  fy_buf_free(&ctx->temp);
}

/* The geometry of one call: Pillow reads the box as float, so does ferry. */
typedef struct plan {
  const uint8_t *src;
  int sw, sh, channels;
  size_t sstride;
  float box[4];
  uint8_t *dst;
  int dw, dh;
  size_t dstride;
  ferry_filter filter;
  int fast; /* the loader's 14-bit passes (passes_fast.c) where they apply */
} plan;

static int check_box(const fy_box *box, int sw, int sh, float out[4]) {
  if (!box) {
    out[0] = out[1] = 0.0f;
    out[2] = (float)sw;
    out[3] = (float)sh;
    return FERRY_OK;
  }
  /* Pillow's rules: inside the image, not inverted (an empty box is fine).
   * Written so that NaN fails too. */
  if (!(box->x0 >= 0 && box->x0 <= box->x1 && box->x1 <= sw && box->y0 >= 0 && box->y0 <= box->y1 &&
        box->y1 <= sh))
    return fy_error(FERRY_EINVAL, "resize: box (%g, %g)-(%g, %g) is not inside the %dx%d image",
                    box->x0, box->y0, box->x1, box->y1, sw, sh);
  /* Rounding to float is monotonic: the box stays inside and ordered. */
  out[0] = (float)box->x0;
  out[1] = (float)box->y0;
  out[2] = (float)box->x1;
  out[3] = (float)box->y1;
  return FERRY_OK;
}

static int check_args(const plan *p, const fy_resize_ctx *ctx) {
  size_t row;
  if (!p->src || !p->dst || !ctx)
    return fy_error(FERRY_EINVAL, "resize: NULL image or context");
  if (p->channels != 1 && p->channels != 3 && p->channels != 4)
    return fy_error(FERRY_EINVAL, "resize: %d channels (1, 3 or 4 supported)", p->channels);
  if (p->sw < 1 || p->sh < 1 || p->dw < 1 || p->dh < 1)
    return fy_error(FERRY_EINVAL, "resize: empty image (%dx%d to %dx%d)", p->sw, p->sh, p->dw,
                    p->dh);
  if ((unsigned)p->filter > FERRY_FILTER_NEAREST)
    return fy_error(FERRY_EINVAL, "resize: unknown filter %d", (int)p->filter);
  if (!fy_mul_size((size_t)p->sw, (size_t)p->channels, &row) || p->sstride < row)
    return fy_error(FERRY_EINVAL, "resize: source stride %zu < %d pixels", p->sstride, p->sw);
  if (!fy_mul_size((size_t)p->dw, (size_t)p->channels, &row) || p->dstride < row)
    return fy_error(FERRY_EINVAL, "resize: output stride %zu < %d pixels", p->dstride, p->dw);
  return FERRY_OK;
}

/* Pillow's shortcut: an integer box of the output's size is a crop. */
static int is_crop(const plan *p) {
  const float *b = p->box;
  return b[0] == floorf(b[0]) && b[1] == floorf(b[1]) && b[2] - b[0] == (float)p->dw &&
         b[3] - b[1] == (float)p->dh;
}

static void copy_crop(const plan *p) {
  size_t bytes = (size_t)p->dw * p->channels;
  const uint8_t *in =
      p->src + (size_t)(int)p->box[1] * p->sstride + (size_t)(int)p->box[0] * p->channels;
  for (int y = 0; y < p->dh; y++)
    memcpy(p->dst + (size_t)y * p->dstride, in + (size_t)y * p->sstride, bytes);
}

/* ------------------------------------------------------------- nearest */

/* Copies pixel xi[x] of `in` to pixel x of `out`; constant sizes so that
 * the copies compile to plain moves. Pillow leaves 0 where xi[x] < 0. */
#define NEAREST_ROW(C)                                                                             \
  static void nearest_row_##C(const uint8_t *in, const int32_t *xi, int dw,                        \
                              uint8_t *restrict out) {                                             \
    static const uint8_t zero[4];                                                                  \
    for (int x = 0; x < dw; x++)                                                                   \
      memcpy(out + (size_t)x * C, xi[x] < 0 ? zero : in + (size_t)xi[x] * C, C);                   \
  }
NEAREST_ROW(1)
NEAREST_ROW(3)
NEAREST_ROW(4)

static void nearest_row(const uint8_t *in, const int32_t *xi, int dw, int channels,
                        uint8_t *restrict out) {
  if (!in) /* the row falls outside the image */
    memset(out, 0, (size_t)dw * channels);
  else if (channels == 1)
    nearest_row_1(in, xi, dw, out);
  else if (channels == 3)
    nearest_row_3(in, xi, dw, out);
  else
    nearest_row_4(in, xi, dw, out);
}

static int resize_nearest(const plan *p, fy_resize_ctx *ctx) {
  size_t bytes;
  if (!fy_mul_size((size_t)p->dw + (size_t)p->dh, sizeof(int32_t), &bytes))
    return fy_error(FERRY_ETOO_LARGE, "resize: %dx%d output overflows", p->dw, p->dh);
  int rc = fy_buf_reserve(&ctx->coeffs, bytes);
  if (rc)
    return rc;
  int32_t *xi = ctx->coeffs.p, *yi = xi + p->dw;
  fy_nearest_table(p->sw, p->box[0], p->box[2], p->dw, xi);
  fy_nearest_table(p->sh, p->box[1], p->box[3], p->dh, yi);
  for (int y = 0; y < p->dh; y++) {
    const uint8_t *in = yi[y] < 0 ? NULL : p->src + (size_t)yi[y] * p->sstride;
    nearest_row(in, xi, p->dw, p->channels, p->dst + (size_t)y * p->dstride);
  }
  return FERRY_OK;
}

/* ----------------------------------------------------------- separable */

/* Table scratch for one axis, rounded up to keep the next one aligned. */
static size_t axis_bytes(const plan *p, int horizontal, int *max_taps) {
  int in = horizontal ? p->sw : p->sh, out = horizontal ? p->dw : p->dh;
  float span = horizontal ? p->box[2] - p->box[0] : p->box[3] - p->box[1];
  int taps = fy_coeffs_max_taps(p->filter, (double)span, out);
  *max_taps = taps < in ? taps : in;
  size_t bytes = fy_coeffs_bytes(out, *max_taps);
  return bytes && bytes <= SIZE_MAX - 8 ? (bytes + 7) & ~(size_t)7 : 0;
}

/* The 16-bit tables of the fast passes, after the 32-bit ones: bytes
 * needed for an axis of `out` pixels and at most max_taps taps. */
static size_t fast_bytes(int out, int max_taps) {
  size_t taps = ((size_t)max_taps + 3) & ~(size_t)3, n;
  return fy_mul_size((size_t)out, taps * 2, &n) && n <= SIZE_MAX - 32 ? (n + 31) & ~(size_t)31 : 0;
}

static int build_tables(const plan *p, int need_h, int need_v, fy_resize_ctx *ctx, fy_coeffs *h,
                        fy_coeffs *v, int16_t **h16, int16_t **v16) {
  int mh = 0, mv = 0;
  size_t bh = need_h ? axis_bytes(p, 1, &mh) : 0, bv = need_v ? axis_bytes(p, 0, &mv) : 0;
  size_t fh = p->fast && need_h ? fast_bytes(p->dw, mh) : 0;
  size_t fv = p->fast && need_v ? fast_bytes(p->dh, mv) : 0;
  if ((need_h && !bh) || (need_v && !bv) || (p->fast && need_h && !fh) ||
      (p->fast && need_v && !fv) || bh > SIZE_MAX / 4 || bv > SIZE_MAX / 4 || fh > SIZE_MAX / 4 ||
      fv > SIZE_MAX / 4)
    return fy_error(FERRY_ETOO_LARGE, "resize: filter tables for %dx%d to %dx%d overflow", p->sw,
                    p->sh, p->dw, p->dh);
  int rc = fy_buf_reserve(&ctx->coeffs, bh + bv + fh + fv);
  if (rc)
    return rc;
  uint8_t *mem = ctx->coeffs.p;
  if (need_h)
    fy_coeffs_build(p->filter, p->sw, p->box[0], p->box[2], p->dw, mh, mem, h);
  if (need_v)
    fy_coeffs_build(p->filter, p->sh, p->box[1], p->box[3], p->dh, mv, mem + bh, v);
  /* Per axis: longer windows (big reductions without DCT scaling) take the
   * exact pass. */
  *h16 = fh && h->taps <= FY_FAST_MAX_TAPS ? (int16_t *)(mem + bh + bv) : NULL;
  *v16 = fv && v->taps <= FY_FAST_MAX_TAPS ? (int16_t *)(mem + bh + bv + fh) : NULL;
  if (*h16)
    fy_fast_weights(h, fy_fast_taps(h, 1), *h16);
  if (*v16)
    fy_fast_weights(v, fy_fast_taps(v, 0), *v16);
  return FERRY_OK;
}

/* The passes, fast (16-bit tables given) or exact. */
static void pass_h(const uint8_t *src, size_t sstride, int rows, int channels, const fy_coeffs *h,
                   const int16_t *h16, uint8_t *dst, size_t dstride, uint8_t *scratch) {
  if (h16)
    fy_fast_horizontal3(src, sstride, rows, h, h16, dst, dstride, scratch);
  else
    fy_pass_horizontal(src, sstride, rows, channels, h, dst, dstride, scratch);
}

static void pass_v(const uint8_t *src, size_t sstride, size_t line, const fy_coeffs *v,
                   const int16_t *v16, uint8_t *dst, size_t dstride) {
  if (v16)
    fy_fast_vertical(src, sstride, line, v, v16, dst, dstride);
  else
    fy_pass_vertical(src, sstride, line, v, dst, dstride);
}

/* ctx->temp holds the intermediate image (w x h) and, after it, the
 * horizontal pass's scratch; *stride gets the intermediate's row size. */
static int reserve_temp(fy_resize_ctx *ctx, size_t w, int h, int channels, const fy_coeffs *hc,
                        int fast, size_t *stride, uint8_t **scratch) {
  size_t bytes, extra = fy_pass_horizontal_scratch(channels, hc);
  size_t pad = ((size_t)hc->last * 3 + FY_FAST_PAD) * 4; /* fy_fast_horizontal3's */
  if (fast && pad > extra)
    extra = pad;
  if (!fy_mul_size(w, (size_t)channels, stride) || !fy_mul_size(*stride, (size_t)h, &bytes) ||
      bytes > SIZE_MAX - extra)
    return fy_error(FERRY_ETOO_LARGE, "resize: intermediate image %zux%d overflows", w, h);
  int rc = fy_buf_reserve(&ctx->temp, bytes + extra);
  if (rc)
    return rc;
  *scratch = (uint8_t *)ctx->temp.p + bytes;
  return FERRY_OK;
}

/* Horizontal then vertical, the horizontal pass over only the rows that
 * the vertical one reads. */
static int run_h_then_v(const plan *p, fy_coeffs *h, fy_coeffs *v, const int16_t *h16,
                        const int16_t *v16, fy_resize_ctx *ctx) {
  int rows = v->last - v->first;
  size_t tstride;
  uint8_t *scratch;
  int rc = reserve_temp(ctx, (size_t)p->dw, rows, p->channels, h, h16 != NULL, &tstride, &scratch);
  if (rc)
    return rc;
  pass_h(p->src + (size_t)v->first * p->sstride, p->sstride, rows, p->channels, h, h16, ctx->temp.p,
         tstride, scratch);
  fy_coeffs_shift(v, v->first);
  pass_v(ctx->temp.p, tstride, tstride, v, v16, p->dst, p->dstride);
  return FERRY_OK;
}

/* Vertical then horizontal (Pillow's order when the height shrinks much
 * more than the width), the vertical pass over only the columns that the
 * horizontal one reads. */
static int run_v_then_h(const plan *p, fy_coeffs *h, fy_coeffs *v, const int16_t *h16,
                        const int16_t *v16, fy_resize_ctx *ctx) {
  int first = h->first, cols = h->last - h->first;
  size_t tstride;
  uint8_t *scratch;
  int rc = reserve_temp(ctx, (size_t)cols, p->dh, p->channels, h, h16 != NULL, &tstride, &scratch);
  if (rc)
    return rc;
  pass_v(p->src + (size_t)first * p->channels, p->sstride, tstride, v, v16, ctx->temp.p, tstride);
  fy_coeffs_shift(h, first);
  pass_h(ctx->temp.p, tstride, p->dh, p->channels, h, h16, p->dst, p->dstride, scratch);
  return FERRY_OK;
}

/* Only the horizontal pass: the box spans every row and dh == sh. */
static int run_h(const plan *p, fy_coeffs *h, const int16_t *h16, fy_resize_ctx *ctx) {
  size_t unused;
  uint8_t *scratch;
  int rc = reserve_temp(ctx, 0, 0, p->channels, h, h16 != NULL, &unused, &scratch);
  if (rc)
    return rc;
  pass_h(p->src, p->sstride, p->dh, p->channels, h, h16, p->dst, p->dstride, scratch);
  return FERRY_OK;
}

static int resize_separable(const plan *p, fy_resize_ctx *ctx) {
  const float *b = p->box;
  /* A pass is skipped when its axis is unchanged (Pillow's test). */
  int need_h = p->dw != p->sw || b[0] != 0 || b[2] != (float)p->dw;
  int need_v = p->dh != p->sh || b[1] != 0 || b[3] != (float)p->dh;
  /* Pillow 13 runs the vertical pass first when the height shrinks by more
   * than twice as many pixels as the width; the order changes the rounding
   * of the intermediate image, so it is followed exactly. */
  int64_t shrink_h = (int64_t)p->sh - p->dh, shrink_w = (int64_t)p->sw - p->dw;
  int h_first = !(shrink_h > 0 && shrink_h > shrink_w * 2);
  fy_coeffs h, v;
  int16_t *h16 = NULL, *v16 = NULL;
  int rc = build_tables(p, need_h, need_v, ctx, &h, &v, &h16, &v16);
  if (rc)
    return rc;
  if (need_h && need_v)
    return h_first ? run_h_then_v(p, &h, &v, h16, v16, ctx)
                   : run_v_then_h(p, &h, &v, h16, v16, ctx);
  if (need_h)
    return run_h(p, &h, h16, ctx);
  if (need_v)
    pass_v(p->src, p->sstride, (size_t)p->sw * p->channels, &v, v16, p->dst, p->dstride);
  else
    copy_crop(p);
  return FERRY_OK;
}

static int resize_u8(const uint8_t *src, int sw, int sh, size_t sstride, int channels,
                     const fy_box *box, uint8_t *dst, int dw, int dh, size_t dstride,
                     ferry_filter filter, fy_resize_ctx *ctx, int fast) {
  plan p = {src, sw, sh, channels, sstride, {0}, dst, dw, dh, dstride, filter, fast};
  int rc = check_args(&p, ctx);
  if (rc)
    return rc;
  rc = check_box(box, sw, sh, p.box);
  if (rc)
    return rc;
  if (is_crop(&p)) {
    copy_crop(&p);
    return FERRY_OK;
  }
  if (filter == FERRY_FILTER_NEAREST)
    return resize_nearest(&p, ctx);
  return resize_separable(&p, ctx);
}

int fy_resize_u8(const uint8_t *src, int sw, int sh, size_t sstride, int channels,
                 const fy_box *box, uint8_t *dst, int dw, int dh, size_t dstride,
                 ferry_filter filter, fy_resize_ctx *ctx) {
  return resize_u8(src, sw, sh, sstride, channels, box, dst, dw, dh, dstride, filter, ctx, 0);
}

int fy_resize_u8_fast(const uint8_t *src, int sw, int sh, size_t sstride, int channels,
                      const fy_box *box, uint8_t *dst, int dw, int dh, size_t dstride,
                      ferry_filter filter, fy_resize_ctx *ctx) {
  /* Filters with negative lobes (bicubic, Lanczos) would carry a 1-level
   * difference of the intermediate image into more than 1 in the output. */
  int positive = filter == FERRY_FILTER_TRIANGLE || filter == FERRY_FILTER_AREA ||
                 filter == FERRY_FILTER_BILINEAR;
  int fast = channels == 3 && positive && fy_fast_supported();
  return resize_u8(src, sw, sh, sstride, channels, box, dst, dw, dh, dstride, filter, ctx, fast);
}

/* ---------------------------------------------------------- public API */

static int check_rect(const ferry_rect *r, const ferry_image *src) {
  if (r->x < 0 || r->y < 0 || r->width < 1 || r->height < 1 ||
      (int64_t)r->x + r->width > src->width || (int64_t)r->y + r->height > src->height)
    return fy_error(FERRY_EINVAL, "ferry_resize: box %dx%d+%d+%d is not inside the %dx%d image",
                    r->width, r->height, r->x, r->y, src->width, src->height);
  return FERRY_OK;
}

/* Checked before the output is allocated (fy_resize_u8 checks the rest). */
static int check_request(const ferry_image *src, const ferry_rect *box, int out_w, int out_h) {
  if (!src || !src->data)
    return fy_error(FERRY_EINVAL, "ferry_resize: NULL source image");
  if (src->channels != 1 && src->channels != 3 && src->channels != 4)
    return fy_error(FERRY_EINVAL, "ferry_resize: %d channels (1, 3 or 4 supported)", src->channels);
  if (src->width < 1 || src->height < 1 || out_w < 1 || out_h < 1)
    return fy_error(FERRY_EINVAL, "ferry_resize: empty image (%dx%d to %dx%d)", src->width,
                    src->height, out_w, out_h);
  return box ? check_rect(box, src) : FERRY_OK;
}

static int resize_alloc(const ferry_image *src, const ferry_rect *box, ferry_image *out, int out_w,
                        int out_h, ferry_filter filter) {
  size_t stride, bytes;
  int rc = check_request(src, box, out_w, out_h);
  if (rc)
    return rc;
  if (!fy_mul_size((size_t)out_w, (size_t)src->channels, &stride) ||
      !fy_mul_size(stride, (size_t)out_h, &bytes))
    return fy_error(FERRY_ETOO_LARGE, "ferry_resize: %dx%d output overflows", out_w, out_h);
  fy_box fbox = {0, 0, src->width, src->height};
  if (box)
    fbox = (fy_box){box->x, box->y, (double)box->x + box->width, (double)box->y + box->height};
  uint8_t *data = fy_malloc(bytes);
  if (!data)
    return fy_error(FERRY_ENOMEM, "ferry_resize: out of memory for %dx%d", out_w, out_h);
  fy_resize_ctx ctx = {{0}, {0}};
  rc = fy_resize_u8(src->data, src->width, src->height, src->stride, src->channels, &fbox, data,
                    out_w, out_h, stride, filter, &ctx);
  fy_resize_ctx_free(&ctx);
  if (rc) {
    free(data);
    return rc;
  }
  *out = (ferry_image){data, out_w, out_h, src->channels, stride};
  return FERRY_OK;
}

/* dst may be src itself: it is written only at the end. On failure it is
 * cleared, unless it is the source (which is left as it was). */
int ferry_resize(const ferry_image *src, const ferry_rect *box, ferry_image *dst, int out_w,
                 int out_h, ferry_filter filter) {
  ferry_image out = {NULL, 0, 0, 0, 0};
  if (!dst)
    return fy_error(FERRY_EINVAL, "ferry_resize: NULL output image");
  int rc = resize_alloc(src, box, &out, out_w, out_h, filter);
  if (rc == FERRY_OK || dst != src)
    *dst = out;
  return rc;
}
