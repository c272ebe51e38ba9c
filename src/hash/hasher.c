/* hasher.c — the public hashing calls: options, the per-thread context,
 * and the two pipelines from file bytes to hashes (compatible: full
 * decode, Pillow's L; fast: JPEG DC coefficients or a reduced decode). */
#include "hash/hash.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const kind_names[FERRY_HASH_KIND_COUNT] = {"ahash", "dhash", "dhash_v",
                                                              "phash", "whash", "colorhash"};

const char *ferry_hash_kind_name(ferry_hash_kind kind) {
  return (unsigned)kind < FERRY_HASH_KIND_COUNT ? kind_names[kind] : "unknown";
}

int ferry_hash_kind_parse(const char *name, ferry_hash_kind *kind) {
  static const struct {
    const char *name;
    ferry_hash_kind kind;
  } alias[] = {{"average", FERRY_HASH_AHASH},          {"average_hash", FERRY_HASH_AHASH},
               {"dhash_vertical", FERRY_HASH_DHASH_V}, {"dhashv", FERRY_HASH_DHASH_V},
               {"wavelet", FERRY_HASH_WHASH},          {"color", FERRY_HASH_COLORHASH},
               {"perceptual", FERRY_HASH_PHASH}};
  if (!name || !kind)
    return fy_error(FERRY_EINVAL, "hash kind: NULL argument");
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
    if (!strcasecmp(name, kind_names[k])) {
      *kind = (ferry_hash_kind)k;
      return FERRY_OK;
    }
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
    if (!strcasecmp(name, alias[i].name)) {
      *kind = alias[i].kind;
      return FERRY_OK;
    }
  return fy_error(FERRY_EINVAL,
                  "unknown hash '%s' (ahash, dhash, dhash_v, phash, whash, colorhash)", name);
}

void ferry_hash_options_default(ferry_hash_options *o) {
  memset(o, 0, sizeof *o);
  o->mode = FERRY_HASH_FAST;
  o->kinds = FERRY_HASH_ALL;
  o->hash_size = 8;
  o->colorhash_bits = 3;
  o->max_pixels = FERRY_DEFAULT_MAX_PIXELS;
  o->max_bytes = 1ull << 30;
}

int fy_hash_options_take(const ferry_hash_options *in, ferry_hash_options *out) {
  if (in)
    *out = *in;
  else
    ferry_hash_options_default(out);
  return fy_hash_options_check(out);
}

int fy_hash_options_check(const ferry_hash_options *o) {
  if (!o)
    return fy_error(FERRY_EINVAL, "hash options: NULL");
  if (o->mode != FERRY_HASH_FAST && o->mode != FERRY_HASH_COMPATIBLE)
    return fy_error(FERRY_EINVAL, "hash options: unknown mode %d", (int)o->mode);
  if (o->hash_size != 8 && o->hash_size != 16)
    return fy_error(FERRY_EINVAL, "hash options: hash size must be 8 or 16, not %d", o->hash_size);
  if (!o->kinds || (o->kinds & ~(FERRY_HASH_ALL | FERRY_HASH_SIGNATURE)))
    return fy_error(FERRY_EINVAL, "hash options: no hash selected (kinds 0x%x)", o->kinds);
  if (o->colorhash_bits < 1 || o->colorhash_bits > 18)
    return fy_error(FERRY_EINVAL, "hash options: colorhash bits must be 1..18, not %d",
                    o->colorhash_bits);
  return FERRY_OK;
}

int fy_hash_ctx_init(fy_hash_ctx *c) {
  memset(c, 0, sizeof *c);
  if (fy_dct_plan_init(&c->dct32, 32) || fy_dct_plan_init(&c->dct64, 64))
    return fy_error(FERRY_EINTERNAL, "hash: DCT plan");
  return FERRY_OK;
}

void fy_hash_ctx_free(fy_hash_ctx *c) {
  fy_decoder_free(&c->dec);
  fy_buf *bufs[] = {&c->file,     &c->gray,  &c->small, &c->work,   &c->fgray, &c->fsmall,
                    &c->fscratch, &c->cells, &c->strip, &c->dc.mem, &c->sig,   &c->sig_in};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    fy_buf_free(bufs[i]);
  fy_resize_ctx_free(&c->resize);
  fy_color_tables_free(&c->colors);
}

int ferry_hasher_new(const ferry_hash_options *options, ferry_hasher **hasher) {
  ferry_hash_options o;
  if (!hasher)
    return fy_error(FERRY_EINVAL, "ferry_hasher_new: NULL argument");
  *hasher = NULL;
  int rc = fy_hash_options_take(options, &o);
  if (rc)
    return rc;
  ferry_hasher *h = calloc(1, sizeof *h);
  if (!h)
    return fy_error(FERRY_ENOMEM, "ferry_hasher_new: out of memory");
  h->o = o;
  rc = fy_hash_ctx_init(&h->c);
  if (rc) {
    free(h);
    return rc;
  }
  *hasher = h;
  return FERRY_OK;
}

void ferry_hasher_free(ferry_hasher *h) {
  if (!h)
    return;
  fy_hash_ctx_free(&h->c);
  free(h);
}

/* ---------------------------------------------------------- compatible */

static int want(const ferry_hasher *h, ferry_hash_kind k) {
  return (h->o.kinds & FERRY_HASH_MASK(k)) != 0;
}

/* Colorhash's counts of 8-bit pixels (1 or 3 channels) when counts is not
 * NULL and, with to_l, Pillow's L of RGB ones (into c->gray). */
static int compat_prepare(fy_hash_ctx *c, const uint8_t *px, int w, int h, size_t stride,
                          int channels, int to_l, fy_color_counts *counts, fy_compat_image *out) {
  *out = (fy_compat_image){px, w, h, channels, stride};
  if (channels != 3) {
    if (counts)
      fy_color_count_gray(px, w, h, stride, counts);
    return FERRY_OK;
  }
  int rc;
  if (counts && (rc = fy_color_tables_init(&c->colors)) != FERRY_OK)
    return rc;
  uint8_t *gray = NULL;
  if (to_l) {
    rc = fy_buf_reserve(&c->gray, (size_t)w * h);
    if (rc)
      return fy_error(rc, "hash: out of memory for a %dx%d image", w, h);
    gray = c->gray.p;
    *out = (fy_compat_image){gray, w, h, 1, (size_t)w};
  }
  if (counts)
    fy_color_count_rgb(&c->colors, px, w, h, stride, gray, (size_t)w, counts);
  else if (to_l)
    fy_rgb_to_l(px, w, h, stride, gray, (size_t)w);
  return FERRY_OK;
}

static void colorhash_into(const ferry_hash_options *o, const fy_color_counts *counts,
                           ferry_hash_result *r) {
  fy_colorhash_bits(counts, o->colorhash_bits, &r->hash[FERRY_HASH_COLORHASH]);
  r->kinds |= FERRY_HASH_MASK(FERRY_HASH_COLORHASH);
}

/* The hashes of an L image with imagehash's arithmetic (colorhash from
 * counts, when not NULL). */
static int compat_hashes(ferry_hasher *h, const fy_compat_image *im, const fy_color_counts *counts,
                         ferry_hash_result *r) {
  fy_gray gray = {im->p, im->w, im->h, im->stride};
  int rc = fy_gray_hashes_with(&h->c, &gray, h->o.kinds, h->o.hash_size, fy_compat_gray_fns, r);
  if (!rc && (h->o.kinds & FERRY_HASH_SIGNATURE))
    rc = fy_signature_u8(&h->c, im->p, im->w, im->h, im->stride, 1, &r->signature);
  if (rc)
    return rc;
  if (counts)
    colorhash_into(&h->o, counts, r);
  r->width = im->w;
  r->height = im->h;
  r->kinds = h->o.kinds;
  return FERRY_OK;
}

int fy_compat_decode(fy_hash_ctx *c, const ferry_hash_options *o, const uint8_t *data, size_t size,
                     const char *name, ferry_format f, int to_l, ferry_hash_result *r,
                     fy_compat_image *out) {
  int color = (o->kinds & FERRY_HASH_MASK(FERRY_HASH_COLORHASH)) != 0, rc;
  fy_color_counts counts = {0};
  r->exact = 1;
  if (f == FERRY_FORMAT_JPEG) { /* colour JPEGs, the common case, streamed to L */
    if (color && (rc = fy_color_tables_init(&c->colors)) != FERRY_OK)
      return rc;
    fy_gray g;
    rc = fy_jpeg_gray(data, size, o->max_pixels, &c->gray, &c->strip, &c->colors,
                      color ? &counts : NULL, &g);
    if (rc != FY_DC_FALLBACK) {
      if (rc)
        return rc;
      *out = (fy_compat_image){g.p, g.w, g.h, 1, g.stride};
      goto done;
    }
  }
  ferry_decode_options d;
  ferry_decode_options_default(&d);
  /* Colour pictures are decoded to RGB and converted by the caller or
   * compat_prepare (faster than the codec's row-by-row conversion); gray
   * ones are already Pillow's L. */
  d.channels = color || !fy_source_is_gray(data, size, f) ? 3 : 1;
  d.ignore_orientation = 1; /* imagehash never applies EXIF orientation */
  d.allow_dct_scaling = 0;
  d.max_pixels = o->max_pixels;
  d.max_bytes = o->max_bytes;
  fy_decoded dec;
  c->dec.pillow_16bit = 1; /* 16-bit PNGs as Pillow makes them 8-bit */
  rc = fy_decode(&c->dec, data, size, name, &d, NULL, NULL, &dec);
  c->dec.pillow_16bit = 0;
  if (rc)
    return rc;
  const ferry_image *p = &dec.image;
  rc = compat_prepare(c, p->data, p->width, p->height, p->stride, p->channels, to_l,
                      color ? &counts : NULL, out);
  if (rc)
    return rc;
  r->exact = fy_pillow_exact(f, data, size);
done:
  r->width = out->w;
  r->height = out->h;
  if (color)
    colorhash_into(o, &counts, r);
  return FERRY_OK;
}

static int hash_compat(ferry_hasher *h, const uint8_t *data, size_t size, const char *name,
                       ferry_format f, ferry_hash_result *r) {
  fy_compat_image im;
  int rc = fy_compat_decode(&h->c, &h->o, data, size, name, f, 1, r, &im);
  return rc ? rc : compat_hashes(h, &im, NULL, r);
}

/* ---------------------------------------------------------------- fast */

/* The largest grid a fast hash resamples to (pHash's 4s x 4s), whatever
 * hashes are asked for: the reduced image keeps twice that on its short
 * side, so that every hash is a downscale, and a file's dHash is the same
 * whether pHash is computed beside it or not. */
static int fast_target(const ferry_hasher *h) { return 2 * 4 * h->o.hash_size; }

static int fast_from_dc(ferry_hasher *h, int target, ferry_hash_result *r, fy_fimage *img,
                        fy_color_counts *counts) {
  fy_hash_ctx *c = &h->c;
  const fy_jpeg_dc *dc = &c->dc;
  const fy_dc_comp *l = &dc->comp[0];
  /* Blocks are averaged f x f first when there are far more than the
   * hashes resample from: the Lanczos then runs on a few thousand cells. */
  int m = l->bw < l->bh ? l->bw : l->bh, f = m / target > 1 ? m / target : 1;
  int ow = (l->bw + f - 1) / f, oh = (l->bh + f - 1) / f;
  int rc = fy_buf_reserve(&c->fgray, (size_t)ow * oh * sizeof(float));
  if (!rc && counts)
    rc = fy_buf_reserve(&c->cells, (size_t)l->bw * l->bh * 3);
  if (rc)
    return fy_error(rc, "hash: out of memory");
  fy_jpeg_dc_luma(dc, f, c->fgray.p);
  double sx = 8.0 * dc->hmax / l->h * f, sy = 8.0 * dc->vmax / l->v * f;
  *img = (fy_fimage){c->fgray.p, ow, oh, {0, 0, dc->width / sx, dc->height / sy}};
  if (counts) {
    fy_jpeg_dc_rgb(dc, c->cells.p);
    fy_color_count_rgb(&c->colors, c->cells.p, l->bw, l->bh, (size_t)l->bw * 3, NULL, 0, counts);
  }
  r->width = dc->width;
  r->height = dc->height;
  return FERRY_OK;
}

static int fast_from_decode(ferry_hasher *h, const uint8_t *data, size_t size, const char *name,
                            int target, ferry_hash_result *r, fy_fimage *img,
                            fy_color_counts *counts) {
  fy_hash_ctx *c = &h->c;
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  o.channels = 3; /* luma from RGB, colorhash or not: the same hashes either way */
  o.ignore_orientation = 1;
  o.min_width = o.min_height = target; /* JPEG: the smallest DCT scale that keeps it */
  o.max_pixels = h->o.max_pixels;
  o.max_bytes = h->o.max_bytes;
  fy_decoded d;
  int rc = fy_decode(&c->dec, data, size, name, &o, NULL, NULL, &d);
  if (rc)
    return rc;
  const ferry_image *im = &d.image;
  int m = im->width < im->height ? im->width : im->height;
  int f = m / target > 1 ? m / target : 1;
  int ow = (im->width + f - 1) / f, oh = (im->height + f - 1) / f;
  size_t cells = (size_t)ow * oh;
  rc = fy_buf_reserve(&c->fgray, cells * sizeof(float));
  if (!rc && counts)
    rc = fy_buf_reserve(&c->cells, cells * 3);
  if (rc)
    return fy_error(rc, "hash: out of memory");
  fy_reduce_u8(im->data, im->width, im->height, im->stride, im->channels, f, c->fgray.p,
               counts ? c->cells.p : NULL);
  *img = (fy_fimage){c->fgray.p, ow, oh, {0, 0, (double)im->width / f, (double)im->height / f}};
  if (counts)
    fy_color_count_rgb(&c->colors, c->cells.p, ow, oh, (size_t)ow * 3, NULL, 0, counts);
  r->width = d.src_w;
  r->height = d.src_h;
  return FERRY_OK;
}

static int hash_fast(ferry_hasher *h, const uint8_t *data, size_t size, const char *name,
                     ferry_format f, ferry_hash_result *r) {
  fy_hash_ctx *c = &h->c;
  int color = want(h, FERRY_HASH_COLORHASH), target = fast_target(h), rc;
  if (color && (rc = fy_color_tables_init(&c->colors)) != FERRY_OK)
    return rc;
  fy_color_counts counts = {0};
  fy_fimage img;
  int done = 0;
  if (f == FERRY_FORMAT_JPEG &&
      fy_jpeg_dc_read(&c->dc, data, size, color, h->o.max_pixels) == FERRY_OK &&
      c->dc.comp[0].bw >= target && c->dc.comp[0].bh >= target) {
    rc = fast_from_dc(h, target, r, &img, color ? &counts : NULL);
    if (rc)
      return rc;
    done = 1;
  }
  if (!done) {
    rc = fast_from_decode(h, data, size, name, target, r, &img, color ? &counts : NULL);
    if (rc)
      return rc;
  }
  rc = fy_gray_hashes_with(c, &img, h->o.kinds, h->o.hash_size, fy_fast_gray_fns, r);
  if (!rc && (h->o.kinds & FERRY_HASH_SIGNATURE))
    rc = fy_signature(c, &img, &r->signature);
  if (rc)
    return rc;
  if (color)
    fy_colorhash_bits(&counts, h->o.colorhash_bits, &r->hash[FERRY_HASH_COLORHASH]);
  r->kinds = h->o.kinds;
  r->exact = 0;
  return FERRY_OK;
}

/* -------------------------------------------------------------- public */

/* What every pipeline starts with: r->format, or the empty file refused. */
static int sniff(const uint8_t *data, size_t size, const char *name, ferry_hash_result *r) {
  if (size == 0)
    return fy_error(FERRY_ECORRUPT, "%s: empty file", name);
  r->format = fy_sniff(data, size);
  return FERRY_OK;
}

/* On failure r keeps only its format, as ferry_hash_memory leaves it. */
static int failed(int rc, ferry_hash_result *r) {
  if (rc) {
    ferry_format keep = r->format;
    memset(r, 0, sizeof *r);
    r->format = keep;
  }
  return rc;
}

int ferry_hash_memory(ferry_hasher *h, const void *data, size_t size, const char *name,
                      ferry_hash_result *r) {
  if (!h || !r || (!data && size))
    return fy_error(FERRY_EINVAL, "ferry_hash_memory: NULL argument");
  memset(r, 0, sizeof *r);
  if (!name)
    name = "<memory>";
  int rc = sniff(data, size, name, r);
  if (rc)
    return rc;
  ferry_format f = r->format;
  rc = h->o.mode == FERRY_HASH_COMPATIBLE ? hash_compat(h, data, size, name, f, r)
                                          : hash_fast(h, data, size, name, f, r);
  return failed(rc, r);
}

int ferry_hash_file(ferry_hasher *h, const char *path, ferry_hash_result *r) {
  if (!h || !path || !r)
    return fy_error(FERRY_EINVAL, "ferry_hash_file: NULL argument");
  memset(r, 0, sizeof *r);
  size_t n = 0;
  int rc = fy_read_file(path, h->o.max_bytes, &h->c.file, &n);
  if (rc)
    return rc;
  return ferry_hash_memory(h, h->c.file.p, n, path, r);
}

int ferry_hash_pixels(ferry_hasher *h, const ferry_image *im, ferry_hash_result *r) {
  if (!h || !im || !r || !im->data)
    return fy_error(FERRY_EINVAL, "ferry_hash_pixels: NULL argument");
  memset(r, 0, sizeof *r);
  if (im->width < 1 || im->height < 1 || (im->channels != 1 && im->channels != 3) ||
      im->stride < (size_t)im->width * im->channels)
    return fy_error(FERRY_EINVAL, "ferry_hash_pixels: need a 1- or 3-channel image, got %dx%dx%d",
                    im->width, im->height, im->channels);
  fy_color_counts counts = {0}, *cp = want(h, FERRY_HASH_COLORHASH) ? &counts : NULL;
  fy_compat_image gray;
  int rc = compat_prepare(&h->c, im->data, im->width, im->height, im->stride, im->channels, 1, cp,
                          &gray);
  if (!rc)
    rc = compat_hashes(h, &gray, cp, r);
  r->exact = rc == FERRY_OK;
  return rc;
}

int fy_compat_decode_file(fy_hash_ctx *c, const ferry_hash_options *o, const char *path,
                          ferry_hash_result *r, fy_compat_image *out) {
  size_t n = 0;
  memset(r, 0, sizeof *r);
  int rc = fy_read_file(path, o->max_bytes, &c->file, &n);
  if (!rc)
    rc = sniff(c->file.p, n, path, r);
  if (!rc)
    rc = fy_compat_decode(c, o, c->file.p, n, path, r->format, 0, r, out);
  return failed(rc, r);
}
