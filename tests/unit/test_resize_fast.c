/* test_resize_fast.c — the loader's 14-bit resampler (fy_resize_u8_fast)
 * against the Pillow-exact one (fy_resize_u8): every value of photographs
 * within 1, of synthetic images within 2 (an exact gradient puts many
 * pre-rounding values on a tie, which the two pass-intermediate roundings
 * can break the same way: 2 comes out for about 3 values in 10^7), few
 * values off at all, flat areas exact, other channel counts and filters with
 * negative lobes identical (they take the exact path), and
 * no read past the source (images are allocated to the byte, so
 * AddressSanitizer builds catch an over-read of the last row). */
#include "check.h"
#include "ferry.h"
#include "image/image.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

static int below(int n) { return (int)(next() % (uint32_t)n); }

/* Smooth gradients, noise and hard edges, like photographs and worse. */
static uint8_t *make_image(int w, int h, int c, size_t stride, int kind) {
  size_t bytes = stride * (size_t)(h - 1) + (size_t)w * c; /* no slack after the last row */
  uint8_t *p = malloc(bytes);
  for (size_t i = 0; i < bytes; i++) /* row padding: garbage that must not matter */
    p[i] = (uint8_t)(next() | 0x80);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int ch = 0; ch < c; ch++) {
        int v;
        if (kind == 0)
          v = (x * 255 / (w > 1 ? w - 1 : 1) + y * 3 + ch * 40) & 255;
        else if (kind == 1)
          v = (int)(next() & 255);
        else
          v = ((x / 3 + y / 5) & 1) ? 255 : 0;
        p[(size_t)y * stride + (size_t)x * c + ch] = (uint8_t)v;
      }
  return p;
}

typedef struct stats {
  long values, off_by_one, worse;
  int max;
} stats;

static void compare_one(int sw, int sh, int c, int dw, int dh, const fy_box *box,
                        ferry_filter filter, int kind, size_t pad, stats *st) {
  size_t sstride = (size_t)sw * c + pad, dstride = (size_t)dw * c;
  uint8_t *src = make_image(sw, sh, c, sstride, kind);
  uint8_t *a = malloc(dstride * dh), *b = malloc(dstride * dh);
  fy_resize_ctx ctx = {{0}, {0}};
  int ra = fy_resize_u8(src, sw, sh, sstride, c, box, a, dw, dh, dstride, filter, &ctx);
  int rb = fy_resize_u8_fast(src, sw, sh, sstride, c, box, b, dw, dh, dstride, filter, &ctx);
  CHECK(ra == FERRY_OK && rb == FERRY_OK);
  long worse = 0, off = 0;
  for (size_t i = 0; i < dstride * dh; i++) {
    int d = abs(a[i] - b[i]);
    off += d == 1;
    worse += d > 1;
    st->max = d > st->max ? d : st->max;
  }
  if (c != 3 || filter == FERRY_FILTER_BICUBIC || filter == FERRY_FILTER_LANCZOS)
    CHECK_MSG(off == 0 && worse == 0, "%d channels, filter %d: the exact path", c, (int)filter);
  CHECK_MSG(worse * 10000 <= (long)(dstride * dh),
            "%dx%dx%d -> %dx%d filter %d kind %d: %ld values off by more than 1", sw, sh, c, dw, dh,
            (int)filter, kind, worse);
  st->values += (long)(dstride * dh);
  st->off_by_one += off;
  st->worse += worse;
  fy_resize_ctx_free(&ctx);
  free(src);
  free(a);
  free(b);
}

static void test_random_geometries(void) {
  static const ferry_filter filters[] = {FERRY_FILTER_TRIANGLE, FERRY_FILTER_BILINEAR,
                                         FERRY_FILTER_AREA, FERRY_FILTER_BICUBIC,
                                         FERRY_FILTER_LANCZOS};
  stats st = {0, 0, 0, 0};
  for (int i = 0; i < 1000; i++) {
    int big = i % 10 == 5; /* reductions up to 12x: windows up to 25 taps */
    int sw = 1 + below(i < 40 ? 8
                       : big  ? 2400
                              : 700),
        sh = 1 + below(i < 40 ? 8
                       : big  ? 1800
                              : 500);
    int dw = 1 + below(i % 4 == 0 ? 600 : 240), dh = 1 + below(i % 4 == 0 ? 400 : 240);
    int c = i % 10 == 9 ? 1 + 3 * (i % 20 == 19) : 3; /* some 1- and 4-channel cases */
    fy_box box = {0, 0, sw, sh};
    if (i % 3 == 1) { /* a crop, fractional edges */
      box.x0 = below(sw) * 0.7;
      box.y0 = below(sh) * 0.7;
      box.x1 = box.x0 + (sw - box.x0) * (0.2 + 0.8 * (next() % 1000) / 1000.0);
      box.y1 = box.y0 + (sh - box.y0) * (0.2 + 0.8 * (next() % 1000) / 1000.0);
    }
    compare_one(sw, sh, c, dw, dh, &box, filters[i % 5], i % 3, (size_t)(i % 7 == 0) * 5, &st);
  }
  printf("fast vs exact resampler: %ld values, %.3f%% off by one, %ld off by more (max %d)\n",
         st.values, 100.0 * st.off_by_one / (double)st.values, st.worse, st.max);
  CHECK(st.off_by_one < st.values / 50); /* rounding ties only: well under 2 % */
  CHECK(st.worse < st.values / 100000 + 1);
  CHECK(st.max <= 2);
}

/* The loader's usual case: a photo-sized image to 224 x 224. */
static void test_loader_sizes(void) {
  static const int sizes[][2] = {{500, 375}, {375, 500}, {448, 448},  {640, 427}, {300, 900},
                                 {225, 225}, {224, 300}, {1000, 230}, {120, 90}};
  stats st = {0, 0, 0, 0};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int kind = 0; kind < 3; kind++) {
      fy_box box = {0, 0, sizes[i][0], sizes[i][1]};
      compare_one(sizes[i][0], sizes[i][1], 3, 224, 224, &box, FERRY_FILTER_TRIANGLE, kind, 0, &st);
    }
  CHECK(st.worse == 0);
}

/* Photographs (corpus/photos, decoded by ferry_decode_file) to 224 x 224
 * and to a crop: within 1 but for a few ties (2 for about 5 values in
 * 10^7). */
static void test_photos(void) {
  const char *corpus = getenv("FERRY_CORPUS");
  char path[4096];
  int n = 0;
  stats st = {0, 0, 0, 0};
  /* the quick tier: 12 photographs; the full tier (make test-full): 60 */
  int step = check_full() ? 7 : 35;
  for (int i = 0; corpus && i < 418 && n < 60; i += step) {
    snprintf(path, sizeof path, "%s/photos/p%04d.jpg", corpus, i);
    ferry_image im;
    if (ferry_decode_file(path, NULL, &im) != FERRY_OK || im.channels != 3)
      continue;
    uint8_t *a = malloc(224 * 224 * 3), *b = malloc(224 * 224 * 3);
    fy_resize_ctx ctx = {{0}, {0}};
    fy_box boxes[2] = {{0, 0, im.width, im.height},
                       {im.width * 0.1, im.height * 0.2, im.width * 0.8, im.height * 0.9}};
    for (int k = 0; k < 2; k++) {
      CHECK(fy_resize_u8(im.data, im.width, im.height, im.stride, 3, &boxes[k], a, 224, 224, 672,
                         FERRY_FILTER_TRIANGLE, &ctx) == FERRY_OK);
      CHECK(fy_resize_u8_fast(im.data, im.width, im.height, im.stride, 3, &boxes[k], b, 224, 224,
                              672, FERRY_FILTER_TRIANGLE, &ctx) == FERRY_OK);
      for (int j = 0; j < 224 * 224 * 3; j++) {
        int d = abs(a[j] - b[j]);
        st.max = d > st.max ? d : st.max;
        st.off_by_one += d == 1;
        st.worse += d > 1;
      }
      st.values += 224 * 224 * 3;
    }
    fy_resize_ctx_free(&ctx);
    free(a);
    free(b);
    ferry_image_free(&im);
    n++;
  }
  if (n == 0) {
    SKIP("no corpus/photos (FERRY_CORPUS): fast resampler on photographs not checked");
    return;
  }
  printf("fast vs exact resampler, %d photos: %ld values, %.3f%% off by one, %ld off by 2+ (max "
         "%d)\n",
         n, st.values, 100.0 * st.off_by_one / (double)st.values, st.worse, st.max);
  CHECK(st.max <= 2);
  CHECK(st.worse < st.values / 100000 + 1);
}

/* A flat image stays flat, exactly: the 14-bit weights of every window
 * sum to one. */
static void test_flat(void) {
  for (int v = 0; v < 256; v += 17) {
    int sw = 333, sh = 251;
    uint8_t *src = malloc((size_t)sw * sh * 3), *dst = malloc(224 * 224 * 3);
    memset(src, v, (size_t)sw * sh * 3);
    fy_resize_ctx ctx = {{0}, {0}};
    fy_box box = {0.3, 0.6, 300.2, 250.9};
    for (int f = 0; f < 5; f++) {
      CHECK(fy_resize_u8_fast(src, sw, sh, (size_t)sw * 3, 3, &box, dst, 224, 224, 224 * 3,
                              (ferry_filter)f, &ctx) == FERRY_OK);
      int bad = 0;
      for (int i = 0; i < 224 * 224 * 3; i++)
        bad += dst[i] != v;
      CHECK_MSG(bad == 0, "flat %d, filter %d: %d values moved", v, f, bad);
    }
    fy_resize_ctx_free(&ctx);
    free(src);
    free(dst);
  }
}

int main(void) {
  check_part("random geometries");
  test_random_geometries();
  check_part("the loader's sizes");
  test_loader_sizes();
  check_part("photographs");
  test_photos();
  check_part("flat images");
  test_flat();
  return check_done();
}
