/* compat.c — imagehash's hashes from a full-resolution "L" image, bit for
 * bit: Pillow's Lanczos (fy_resize_u8) to each hash's grid, then numpy's
 * comparisons, scipy's DCT (dct.c) and pywt's Haar (wavelet.c). */
#include "hash/hash.h"

#include <string.h>

/* image.convert("L").resize((w, h), LANCZOS) into h->small. */
static int shrink(fy_hash_ctx *c, const fy_gray *img, int w, int h, uint8_t **out) {
  size_t n = (size_t)w * h;
  int rc = fy_buf_reserve(&c->small, n);
  if (rc)
    return fy_error(rc, "hash: out of memory");
  rc = fy_resize_u8(img->p, img->w, img->h, img->stride, 1, NULL, c->small.p, w, h, (size_t)w,
                    FERRY_FILTER_LANCZOS, &c->resize);
  *out = c->small.p;
  return rc;
}

static int ahash(fy_hash_ctx *c, const void *image, ferry_hash_kind kind, int s, ferry_hash *out) {
  const fy_gray *img = image;
  (void)kind;
  uint8_t *px;
  int rc = shrink(c, img, s, s, &px);
  if (rc)
    return rc;
  double v[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE];
  for (int i = 0; i < s * s; i++)
    v[i] = px[i];
  fy_bits_above(out, v, s * s, fy_mean(v, s * s)); /* numpy.mean: exact for these few integers */
  return FERRY_OK;
}

static int dhash(fy_hash_ctx *c, const void *image, ferry_hash_kind kind, int s, ferry_hash *out) {
  const fy_gray *img = image;
  int vertical = kind == FERRY_HASH_DHASH_V;
  uint8_t *px;
  int w = vertical ? s : s + 1, h = vertical ? s + 1 : s;
  int rc = shrink(c, img, w, h, &px);
  if (rc)
    return rc;
  fy_bits_clear(out, s * s);
  for (int y = 0; y < s; y++)
    for (int x = 0; x < s; x++) {
      int a = vertical ? px[(y + 1) * w + x] : px[y * w + x + 1];
      int b = px[y * w + x];
      if (a > b)
        fy_bits_set(out, y * s + x);
    }
  return FERRY_OK;
}

static int phash(fy_hash_ctx *c, const void *image, ferry_hash_kind kind, int s, ferry_hash *out) {
  const fy_gray *img = image;
  (void)kind;
  int n = 4 * s; /* highfreq_factor 4 */
  uint8_t *px;
  int rc = shrink(c, img, n, n, &px);
  if (rc)
    return rc;
  fy_dct_plan *plan = s == 8 ? &c->dct32 : &c->dct64;
  double low[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE], tmp[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE];
  fy_dct2_2d_low(plan, px, (size_t)n, s, low);
  fy_bits_above(out, low, s * s, fy_median(low, s * s, tmp));
  return FERRY_OK;
}

static int floor_log2(int v) {
  int l = 0;
  while (v >> (l + 1))
    l++;
  return l;
}

int fy_whash_scale(int width, int height, int s) {
  int m = width < height ? width : height;
  int natural = 1 << floor_log2(m); /* 2 ** int(numpy.log2(min(size))) */
  return natural > s ? natural : s;
}

static int whash(fy_hash_ctx *c, const void *image, ferry_hash_kind kind, int s, ferry_hash *out) {
  const fy_gray *img = image;
  (void)kind;
  int scale = fy_whash_scale(img->w, img->h, s);
  uint8_t *px;
  int rc = shrink(c, img, scale, scale, &px);
  if (rc)
    return rc;
  size_t n2 = (size_t)scale * scale, need;
  if (!fy_mul_size(n2 + fy_haar_scratch_doubles(scale), sizeof(double), &need))
    return fy_error(FERRY_ETOO_LARGE, "hash: wavelet of %dx%d too large", scale, scale);
  rc = fy_buf_reserve(&c->work, need);
  if (rc)
    return fy_error(rc, "hash: out of memory for a %dx%d wavelet", scale, scale);
  double *x = c->work.p, *scratch = x + n2;
  for (size_t i = 0; i < n2; i++)
    x[i] = px[i] / 255.; /* numpy.asarray(image) / 255. */
  fy_haar_remove_ll(x, scale, scratch);
  fy_haar_ll(x, scale, floor_log2(scale) - floor_log2(s), scratch);
  double tmp[FY_HASH_MAX_SIZE * FY_HASH_MAX_SIZE];
  fy_bits_above(out, x, s * s, fy_median(x, s * s, tmp));
  return FERRY_OK;
}

const fy_gray_hash_fn fy_compat_gray_fns[FERRY_HASH_KIND_COUNT] = {ahash, dhash, dhash,
                                                                   phash, whash, NULL};
