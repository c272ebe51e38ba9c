/* orient.c — EXIF orientation: size, crop mapping and the pixel transform.
 *
 * Orientations follow Pillow's ImageOps.exif_transpose: 2 FLIP_LEFT_RIGHT,
 * 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270 (90 degrees
 * clockwise), 7 TRANSVERSE, 8 ROTATE_90 (counter-clockwise). For an upright
 * pixel (x, y) of a stored w x h image, the stored pixel is:
 *   1 (x, y)           2 (w-1-x, y)        3 (w-1-x, h-1-y)    4 (x, h-1-y)
 *   5 (y, x)           6 (y, h-1-x)        7 (w-1-y, h-1-x)    8 (w-1-y, x)
 *
 * Also the decoders' planning (fy_codec_plan): the caller's crop and scale
 * hints, chosen in upright terms, mapped to stored ones. */
#include "codec/codec.h"

#include <string.h>

/* Output tile edge for the transposing orientations: a 64 x 64 tile reads
 * 64 source rows of 64 * c bytes, which stays in L1 while the tile's output
 * rows are written, so each source cache line is fetched once. */
#define TILE 64

static int valid(int o) { return o >= 1 && o <= 8; }

/* Orientations 5..8 swap width and height. */
static int swaps_axes(int o) { return o >= 5 && o <= 8; }

void fy_oriented_size(int w, int h, int orientation, int *ow, int *oh) {
  int swap = swaps_axes(orientation);
  *ow = swap ? h : w;
  *oh = swap ? w : h;
}

ferry_rect fy_rect_to_stored(ferry_rect r, int sw, int sh, int orientation) {
  if (r.width <= 0 || r.height <= 0)
    return (ferry_rect){0, 0, 0, 0}; /* width 0 means the whole image */
  /* The stored rectangle is spanned by the stored images of the upright
   * corners; the formulas are the table above applied to [x, x + width). */
  int x = r.x, y = r.y, w = r.width, h = r.height;
  switch (valid(orientation) ? orientation : 1) {
  case 2: return (ferry_rect){sw - x - w, y, w, h};
  case 3: return (ferry_rect){sw - x - w, sh - y - h, w, h};
  case 4: return (ferry_rect){x, sh - y - h, w, h};
  case 5: return (ferry_rect){y, x, h, w};
  case 6: return (ferry_rect){y, sh - x - w, h, w};
  case 7: return (ferry_rect){sw - y - h, sh - x - w, h, w};
  case 8: return (ferry_rect){sw - y - h, x, h, w};
  default: return r;
  }
}

void fy_clamp_rect(ferry_rect *r, int w, int h) {
  if (r->width <= 0 || r->height <= 0) {
    *r = (ferry_rect){0, 0, w, h};
    return;
  }
  if (r->x < 0) {
    r->width += r->x;
    r->x = 0;
  }
  if (r->y < 0) {
    r->height += r->y;
    r->y = 0;
  }
  if (r->x > w - 1)
    r->x = w - 1;
  if (r->y > h - 1)
    r->y = h - 1;
  if (r->width > w - r->x)
    r->width = w - r->x;
  if (r->height > h - r->y)
    r->height = h - r->y;
  if (r->width < 1)
    r->width = 1;
  if (r->height < 1)
    r->height = 1;
}

int fy_codec_plan(fy_codec_req *req, int sw, int sh) {
  int o = req->orientation;
  int uw, uh;
  fy_oriented_size(sw, sh, o, &uw, &uh);
  ferry_rect crop = req->crop; /* upright, as given */
  int min_w = req->min_w, min_h = req->min_h;
  if (req->plan) {
    int rc = req->plan(req->plan_user, uw, uh, &crop, &min_w, &min_h);
    if (rc)
      return rc;
  }
  fy_clamp_rect(&crop, uw, uh);
  req->crop = fy_rect_to_stored(crop, sw, sh, o);
  if (o >= 5) { /* transposed: the hint's axes swap too */
    req->min_w = min_h;
    req->min_h = min_w;
  } else {
    req->min_w = min_w;
    req->min_h = min_h;
  }
  req->planned = 1;
  return FERRY_OK;
}

/* Where upright pixel (x, y) lives in the source: base + x * xs + y * ys
 * bytes from the source pointer. */
typedef struct walk {
  ptrdiff_t base, xs, ys;
} walk;

static walk make_walk(int w, int h, int c, size_t stride, int o) {
  ptrdiff_t s = (ptrdiff_t)stride, last_row = (ptrdiff_t)(h - 1) * s;
  ptrdiff_t last_col = (ptrdiff_t)(w - 1) * c;
  switch (o) {
  case 2: return (walk){last_col, -c, s};
  case 3: return (walk){last_row + last_col, -c, -s};
  case 4: return (walk){last_row, c, -s};
  case 5: return (walk){0, s, c};
  case 6: return (walk){last_row, -s, c};
  case 7: return (walk){last_row + last_col, -s, -c};
  case 8: return (walk){last_col, s, -c};
  default: return (walk){0, c, s};
  }
}

/* Copies n pixels, stepping the source by xs bytes, one kernel per pixel
 * size: spelled out byte by byte because GCC turns a generic inner loop
 * over the channels into a call to memmove per pixel. */
static void run1(uint8_t *restrict d, const uint8_t *restrict p, int n, ptrdiff_t xs) {
  for (int i = 0; i < n; i++, p += xs)
    d[i] = p[0];
}

static void run3(uint8_t *restrict d, const uint8_t *restrict p, int n, ptrdiff_t xs) {
  for (int i = 0; i < n; i++, d += 3, p += xs) {
    uint8_t a = p[0], b = p[1], c = p[2];
    d[0] = a;
    d[1] = b;
    d[2] = c;
  }
}

static void run4(uint8_t *restrict d, const uint8_t *restrict p, int n, ptrdiff_t xs) {
  for (int i = 0; i < n; i++, d += 4, p += xs) {
    uint32_t v;
    memcpy(&v, p, 4);
    memcpy(d, &v, 4);
  }
}

static void run_any(uint8_t *restrict d, const uint8_t *restrict p, int n, ptrdiff_t xs, int c) {
  for (int i = 0; i < n; i++, d += c, p += xs)
    memcpy(d, p, (size_t)c);
}

static void copy_run_c(uint8_t *d, const uint8_t *p, int n, ptrdiff_t xs, int c) {
  switch (c) {
  case 1: run1(d, p, n, xs); break;
  case 3: run3(d, p, n, xs); break;
  case 4: run4(d, p, n, xs); break;
  default: run_any(d, p, n, xs, c); break;
  }
}

/* Orientations 1..4 keep rows as rows: each output row is one source row,
 * copied as is (1, 4) or reversed (2, 3). */
static void orient_rows(const uint8_t *src, int ow, int oh, int c, walk wk, uint8_t *dst) {
  size_t row = (size_t)ow * c;
  for (int y = 0; y < oh; y++) {
    const uint8_t *p = src + wk.base + (ptrdiff_t)y * wk.ys;
    uint8_t *d = dst + (size_t)y * row;
    if (wk.xs > 0)
      memcpy(d, p, row);
    else
      copy_run_c(d, p, ow, wk.xs, c);
  }
}

/* Orientations 5..8 turn source columns into output rows: tiled so that the
 * source lines a tile touches are reused from cache across its rows. */
static void orient_tiled(const uint8_t *src, int ow, int oh, int c, walk wk, uint8_t *dst) {
  size_t row = (size_t)ow * c;
  for (int ty = 0; ty < oh; ty += TILE) {
    int y1 = oh - ty < TILE ? oh : ty + TILE;
    for (int tx = 0; tx < ow; tx += TILE) {
      int n = ow - tx < TILE ? ow - tx : TILE;
      for (int y = ty; y < y1; y++) {
        const uint8_t *p = src + wk.base + (ptrdiff_t)y * wk.ys + (ptrdiff_t)tx * wk.xs;
        copy_run_c(dst + (size_t)y * row + (size_t)tx * c, p, n, wk.xs, c);
      }
    }
  }
}

void fy_orient(const uint8_t *src, int w, int h, int c, size_t sstride, int orientation,
               uint8_t *dst, int *ow, int *oh) {
  int o = valid(orientation) ? orientation : 1;
  fy_oriented_size(w, h, o, ow, oh);
  if (w <= 0 || h <= 0)
    return;
  walk wk = make_walk(w, h, c, sstride, o);
  if (swaps_axes(o))
    orient_tiled(src, *ow, *oh, c, wk, dst);
  else
    orient_rows(src, *ow, *oh, c, wk, dst);
}
