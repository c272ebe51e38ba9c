/* fast.c — fast-mode hashes from a small float luminance image that covers
 * the picture (JPEG DC coefficients or a box-reduced decode). The same
 * grids and thresholds as imagehash, computed in floating point:
 *   ahash, dhash, dhash_v  Lanczos to the grid, mean / neighbour compares
 *   phash                  Lanczos to 4s x 4s, scipy's DCT, median
 *   whash                  area means over an s x s grid, median: what
 *                          imagehash's remove-LL Haar reduces to (block
 *                          means minus the global mean, against their
 *                          median), without the 2^k x 2^k detour */
#include "hash/hash.h"

#include <math.h>
#include <string.h>

/* Resamples to w x h. Lanczos results are rounded to whole levels as
 * Pillow's 8-bit resize rounds them: compatible hashes compare those
 * integers, and equal neighbours (a tie, bit 0) are common in flat areas;
 * comparing unrounded floats there would disagree for no visible reason. */
static int small(fy_hash_ctx *c, const fy_fimage *img, int w, int h, int area, float **out) {
  int rc = fy_buf_reserve(&c->fsmall, (size_t)w * h * sizeof(float));
  if (rc)
    return fy_error(rc, "hash: out of memory");
  float *px = c->fsmall.p;
  *out = px;
  if (area)
    return fy_box_f(img->p, img->w, img->h, img->box, px, w, h, &c->fscratch);
  rc = fy_lanczos_f(img->p, img->w, img->h, img->box, px, w, h, &c->fscratch);
  for (int i = 0; i < w * h; i++) {
    float v = floorf(px[i] + 0.5f);
    px[i] = v < 0 ? 0 : v > 255 ? 255 : v;
  }
  return rc;
}

static int f_ahash(fy_hash_ctx *c, const void *image, ferry_hash_kind kind, int s,
                   ferry_hash *out) {
  const fy_fimage *img = image;
  (void)kind;
  float *px = NULL;
  int rc = small(c, img, s, s, 0, &px);
  if (rc)
    return rc;
  double v[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE];
  for (int i = 0; i < s * s; i++)
    v[i] = px[i];
  fy_bits_above(out, v, s * s, fy_mean(v, s * s));
  return FERRY_OK;
}

static int f_dhash(fy_hash_ctx *c, const void *image, ferry_hash_kind kind, int s,
                   ferry_hash *out) {
  const fy_fimage *img = image;
  int vertical = kind == FERRY_HASH_DHASH_V;
  int w = vertical ? s : s + 1, h = vertical ? s + 1 : s;
  float *px = NULL;
  int rc = small(c, img, w, h, 0, &px);
  if (rc)
    return rc;
  fy_bits_clear(out, s * s);
  for (int y = 0; y < s; y++)
    for (int x = 0; x < s; x++) {
      float a = vertical ? px[(y + 1) * w + x] : px[y * w + x + 1];
      if (a > px[y * w + x])
        fy_bits_set(out, y * s + x);
    }
  return FERRY_OK;
}

static int f_phash(fy_hash_ctx *c, const void *image, ferry_hash_kind kind, int s,
                   ferry_hash *out) {
  const fy_fimage *img = image;
  (void)kind;
  int n = 4 * s;
  float *px = NULL;
  int rc = small(c, img, n, n, 0, &px);
  if (rc)
    return rc;
  const fy_dct_plan *plan = s == 8 ? &c->dct32 : &c->dct64;
  double col[FY_DCT_MAX], tmp[FY_DCT_MAX * FY_DCT_MAX];
  for (int x = 0; x < n; x++) {
    for (int y = 0; y < n; y++)
      col[y] = px[y * n + x];
    fy_dct2(plan, col);
    for (int y = 0; y < s; y++) /* only the low rows are kept */
      tmp[y * n + x] = col[y];
  }
  double low[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE], med[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE];
  for (int y = 0; y < s; y++) {
    fy_dct2(plan, tmp + y * n);
    memcpy(low + y * s, tmp + y * n, (size_t)s * sizeof *low);
  }
  fy_bits_above(out, low, s * s, fy_median(low, s * s, med));
  return FERRY_OK;
}

static int f_whash(fy_hash_ctx *c, const void *image, ferry_hash_kind kind, int s,
                   ferry_hash *out) {
  const fy_fimage *img = image;
  (void)kind;
  float *px = NULL;
  int rc = small(c, img, s, s, 1, &px);
  if (rc)
    return rc;
  double v[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE], tmp[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE];
  for (int i = 0; i < s * s; i++)
    v[i] = px[i];
  fy_bits_above(out, v, s * s, fy_median(v, s * s, tmp));
  return FERRY_OK;
}

const fy_gray_hash_fn fy_fast_gray_fns[FERRY_HASH_KIND_COUNT] = {f_ahash, f_dhash, f_dhash,
                                                                 f_phash, f_whash, NULL};
