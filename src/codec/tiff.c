/* tiff.c — TIFF header probe and decode with libtiff (the first image of
 * the file).
 *
 * The bytes are read in memory through TIFFClientOpenExt; libtiff's
 * messages go to a per-call handler (never to stderr): the first error
 * becomes ferry's message. Pixels come from libtiff's RGBA interface,
 * which reads every photometric interpretation, bit depth and compression
 * libtiff knows, top row first with the orientation tag applied by libtiff
 * (Pillow's TIFF reader gives the picture so too: ignore_orientation does
 * not undo it); alpha is dropped as Pillow's convert("RGB") does. Where the RGBA interface cannot
 * give Pillow's pixels (depths other than 8 bits, alpha, CMYK and the like) the probe says so:
 * fy_tiff_pillow_exact. */
#include "codec/codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <tiffio.h>

static const char *nm(const char *name) { return name ? name : "<memory>"; }

/* The bytes libtiff reads, and its first error. */
typedef struct mem_file {
  const uint8_t *data;
  size_t size, pos;
  const char *name;
  char err[256];
} mem_file;

static tmsize_t mem_read(thandle_t h, void *buf, tmsize_t n) {
  mem_file *m = (mem_file *)h;
  if (n <= 0 || m->pos >= m->size)
    return 0;
  size_t k = (size_t)n < m->size - m->pos ? (size_t)n : m->size - m->pos;
  memcpy(buf, m->data + m->pos, k);
  m->pos += k;
  return (tmsize_t)k;
}

static tmsize_t mem_write(thandle_t h, void *buf, tmsize_t n) {
  (void)h, (void)buf, (void)n;
  return -1; /* read only */
}

static toff_t mem_seek(thandle_t h, toff_t off, int whence) {
  mem_file *m = (mem_file *)h;
  uint64_t base = whence == SEEK_CUR ? m->pos : whence == SEEK_END ? m->size : 0;
  if (off > UINT64_MAX - base)
    return (toff_t)-1;
  m->pos = (size_t)(base + off > m->size ? m->size : base + off);
  return (toff_t)(base + off);
}

static int mem_close(thandle_t h) {
  (void)h;
  return 0;
}

static toff_t mem_size(thandle_t h) { return ((mem_file *)h)->size; }

static int mem_map(thandle_t h, void **base, toff_t *size) {
  mem_file *m = (mem_file *)h;
  *base = (void *)m->data;
  *size = m->size;
  return 1;
}

static void mem_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  (void)tif, (void)module;
  mem_file *m = user;
  if (!m || m->err[0])
    return 1; /* handled: nothing printed */
  char msg[sizeof m->err];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t k = strlen(m->name); /* many of libtiff's messages start with the file's name */
  const char *text = !strncmp(msg, m->name, k) && !strncmp(msg + k, ": ", 2) ? msg + k + 2 : msg;
  snprintf(m->err, sizeof m->err, "%s", text);
  return 1;
}

/* What libtiff's words for a failed read mean. A strip or tile that ends
 * past the data ("Read error on strip 0; got 3226 bytes, expected 3600") is
 * a truncated file; one without data ("Invalid strip byte count 0, strip
 * 1": StripOffsets and StripByteCounts hold fewer entries than ImageLength
 * and RowsPerStrip need, libtiff ignored them) a TIFF whose strips do not
 * cover its rows. NULL: libtiff's message says it. */
static const char *meaning(const char *err) {
  if (strstr(err, "Read error"))
    return "truncated: the file ends before its image data does";
  if (strstr(err, "Can not read TIFF directory"))
    return "truncated: the file ends before its directory (IFD) does";
  if (strstr(err, "Invalid strip byte count") || strstr(err, "Invalid tile byte count"))
    return "its strips (or tiles) do not cover its rows: ImageLength, RowsPerStrip, "
           "StripOffsets and StripByteCounts disagree";
  return NULL;
}

/* FERRY_ECORRUPT: the file's name, what is wrong, libtiff's words. */
static int damaged(const mem_file *m, const char *fallback) {
  const char *err = m->err[0] ? m->err : fallback, *what = meaning(err);
  if (what)
    return fy_error(FERRY_ECORRUPT, "%s: TIFF: %s (libtiff: %s)", m->name, what, err);
  return fy_error(FERRY_ECORRUPT, "%s: TIFF: %s", m->name, err);
}

static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
  return 1; /* warnings (unknown tags and the like) are not errors */
}

static int tiff_open(mem_file *m, const uint8_t *data, size_t size, const char *name, TIFF **out) {
  memset(m, 0, sizeof *m);
  m->data = data;
  m->size = size;
  m->name = name;
  *out = NULL;
  TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
  if (!opts)
    return fy_error(FERRY_ENOMEM, "%s: TIFF: out of memory", name);
  TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, m);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, m);
  /* "r": libtiff reads the bytes as a mapped file (mem_map), where every
   * strip's extent is checked against them; through reads ("rm") an
   * uncompressed strip went straight into the raster whatever its offset
   * said (a strip missing from StripOffsets gave the file's first bytes as
   * pixels) and a short one was "Read error at scanline 4294967295". */
  TIFF *tif = TIFFClientOpenExt(name, "r", (thandle_t)m, mem_read, mem_write, mem_seek, mem_close,
                                mem_size, mem_map, mem_unmap, opts);
  TIFFOpenOptionsFree(opts);
  if (!tif)
    return damaged(m, "not a readable TIFF file");
  *out = tif;
  return FERRY_OK;
}

/* The first image's header fields. */
typedef struct tiff_head {
  uint32_t w, h;
  uint16_t spp, bps, photometric, orientation, extra, planar;
} tiff_head;

static int read_head(TIFF *tif, const mem_file *m, const char *name, tiff_head *t) {
  memset(t, 0, sizeof *t);
  uint16_t *extra_types = NULL;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &t->w) ||
      !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &t->h) || t->w == 0 || t->h == 0)
    return damaged(m, "no image size");
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &t->spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &t->bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_ORIENTATION, &t->orientation);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &t->planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &t->extra, &extra_types);
  if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &t->photometric))
    t->photometric = t->spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  return FERRY_OK;
}

/* Opens the bytes and reads the first image's header; on success *tif is
 * open (the caller closes it), on failure it is closed. */
static int open_head(mem_file *m, const uint8_t *data, size_t size, const char *name, TIFF **tif,
                     tiff_head *t) {
  int rc = tiff_open(m, data, size, name, tif);
  if (!rc && (rc = read_head(*tif, m, name, t)) != FERRY_OK) {
    TIFFClose(*tif);
    *tif = NULL;
  }
  return rc;
}

/* The first image's header alone (the file closed again). */
static int header_only(const uint8_t *data, size_t size, const char *name, tiff_head *t) {
  mem_file m;
  TIFF *tif;
  int rc = open_head(&m, data, size, name, &tif, t);
  if (!rc)
    TIFFClose(tif);
  return rc;
}

static const char *photometric_name(uint16_t p) {
  switch (p) {
  case PHOTOMETRIC_MINISWHITE:
  case PHOTOMETRIC_MINISBLACK: return "Gray";
  case PHOTOMETRIC_RGB: return "RGB";
  case PHOTOMETRIC_PALETTE: return "Palette";
  case PHOTOMETRIC_SEPARATED: return "CMYK";
  case PHOTOMETRIC_YCBCR: return "YCbCr";
  case PHOTOMETRIC_CIELAB: return "Lab";
  default: return "other";
  }
}

int fy_tiff_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info) {
  name = nm(name);
  tiff_head t;
  int rc = header_only(data, size, name, &t);
  if (rc)
    return rc;
  memset(info, 0, sizeof *info);
  info->format = FERRY_FORMAT_TIFF;
  info->width = (int)(t.w > INT32_MAX ? INT32_MAX : t.w);
  info->height = (int)(t.h > INT32_MAX ? INT32_MAX : t.h);
  info->channels = t.spp;
  info->bit_depth = t.bps;
  info->orientation = t.orientation >= 1 && t.orientation <= 8 ? t.orientation : 1;
  info->has_alpha = t.extra > 0;
  snprintf(info->colorspace, sizeof info->colorspace, "%s%s", photometric_name(t.photometric),
           t.extra ? "+alpha" : "");
  return FERRY_OK;
}

int fy_tiff_pillow_exact(const uint8_t *data, size_t size) {
  tiff_head t;
  if (header_only(data, size, "<memory>", &t))
    return 1; /* not decodable: no pixels to differ */
  /* 8-bit grey, RGB or palette without alpha: the RGBA interface gives the
   * samples as stored, which Pillow gives too */
  int plain = t.photometric == PHOTOMETRIC_MINISBLACK || t.photometric == PHOTOMETRIC_RGB ||
              t.photometric == PHOTOMETRIC_PALETTE;
  return plain && t.bps == 8 && t.extra == 0;
}

int fy_tiff_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req, fy_decoded *out) {
  name = nm(name);
  if (req->channels != 1 && req->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: TIFF: channels must be 1 or 3, not %d", name, req->channels);
  mem_file m;
  TIFF *tif;
  tiff_head t;
  int rc = open_head(&m, data, size, name, &tif, &t);
  if (rc)
    return rc;
  if ((t.w > FY_MAX_SIDE || t.h > FY_MAX_SIDE || fy_over_pixel_limit(t.w, t.h, req->max_pixels)))
    rc = fy_pixel_limit_error(name, "TIFF", t.w, t.h, req->max_pixels);
  char why[1024] = "";
  if (!rc && !TIFFRGBAImageOK(tif, why))
    rc = fy_error(FERRY_EUNSUPPORTED, "%s: TIFF: %s", name, why[0] ? why : "not readable");
  size_t n = (size_t)t.w * t.h, raster_bytes = 0, total = 0;
  if (!rc && (!fy_mul_size(n, 4, &raster_bytes) || !fy_mul_size(n, (size_t)req->channels, &total)))
    rc = fy_error(FERRY_ETOO_LARGE, "%s: TIFF image %ux%u is too large", name, t.w, t.h);
  if (!rc && (fy_buf_reserve(&dec->temp, raster_bytes) || fy_buf_reserve(&dec->pixels, total)))
    rc = fy_error(FERRY_ENOMEM, "%s: out of memory for a %ux%u TIFF image", name, t.w, t.h);
  if (!rc) {
    /* top row first, the orientation tag applied by libtiff, as Pillow's
     * TIFF reader gives the picture (fy_decode does not apply it again) */
    uint32_t *raster = (uint32_t *)dec->temp.p;
    if (!TIFFReadRGBAImageOriented(tif, t.w, t.h, raster, ORIENTATION_TOPLEFT, 1))
      rc = damaged(&m, "damaged or truncated image data");
    uint8_t *px = dec->pixels.p;
    for (size_t i = 0; !rc && i < n; i++) {
      uint32_t v = raster[i];
      if (req->channels == 1) {
        px[i] = fy_luma(TIFFGetR(v), TIFFGetG(v), TIFFGetB(v));
      } else {
        px[3 * i] = (uint8_t)TIFFGetR(v);
        px[3 * i + 1] = (uint8_t)TIFFGetG(v);
        px[3 * i + 2] = (uint8_t)TIFFGetB(v);
      }
    }
  }
  TIFFClose(tif);
  if (rc)
    return rc;
  fy_decoded_whole(out, dec->pixels.p, (int)t.w, (int)t.h, req->channels);
  return FERRY_OK;
}
