/* bmp.c — BMP header probe and decode with stb_image (Debian's libstb):
 * 1, 4, 8-bit palette, 16, 24 and 32-bit bottom-up or top-down files,
 * uncompressed or with bit fields (RLE-compressed BMPs are refused).
 *
 * The size is read from the header (stbi_info) and checked against the
 * pixel limit before anything is decoded. stb_image keeps its last error in
 * a global, so its calls here run one at a time (BMPs are rare and quick
 * to decode). Alpha is dropped as Pillow's convert("RGB") does. The pixels
 * are Pillow's for palette, 24- and 32-bit files; 16-bit and bit-field
 * files may be scaled otherwise (fy_bmp_pillow_exact). */
#include "codec/codec.h"

#include <pthread.h>
#include <stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *nm(const char *name) { return name ? name : "<memory>"; }

static pthread_mutex_t stb_mu = PTHREAD_MUTEX_INITIALIZER;

/* What a BMP's header says of its pixels (bitmap version 1 of OS/2, 12
 * bytes, or Windows' 40 bytes and up): the fields are 0 where the header is
 * cut short. */
typedef struct bmp_layout {
  uint32_t offset, hsz; /* pixels' offset in the file, info header's size */
  int64_t w, h;         /* h < 0: rows stored top down */
  int bpp, compression;
} bmp_layout;

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }

static void layout(const uint8_t *d, size_t n, bmp_layout *L) {
  memset(L, 0, sizeof *L);
  if (n < 26)
    return;
  L->offset = le32(d + 10);
  L->hsz = le32(d + 14);
  if (L->hsz == 12) {
    L->w = le16(d + 18);
    L->h = le16(d + 20);
    L->bpp = (int)le16(d + 24);
  } else if (n >= 34) {
    L->w = (int32_t)le32(d + 18);
    L->h = (int32_t)le32(d + 22);
    L->bpp = (int)le16(d + 28);
    L->compression = (int)le32(d + 30);
  }
}

/* stb_image reads what the file lacks as zeros (a cut file decoded to black
 * rows, 54 bytes declaring 13000 x 13000 pixels to half a gigabyte of them)
 * and takes the pixels' offset as it comes: every row the header declares,
 * with its padding (Pillow wants the last row's padding too), must be in
 * the file, after the headers; checked before stb_image allocates. */
static int pixels_present(const bmp_layout *L, size_t n, const char *name) {
  /* BI_BITFIELDS' three masks follow a 40- or 56-byte header */
  uint64_t head = 14 + (uint64_t)L->hsz + (L->compression == 3 && L->hsz < 108 ? 12 : 0);
  if (L->offset < head)
    return fy_error(FERRY_ECORRUPT,
                    "%s: BMP: its pixels would start at byte %u, inside its headers", name,
                    L->offset);
  uint64_t w = (uint64_t)L->w, h = (uint64_t)(L->h < 0 ? -L->h : L->h), bits = w * (uint64_t)L->bpp;
  uint64_t need = L->offset + (bits + 31) / 32 * 4 * h;
  if (need > n)
    return fy_error(FERRY_ECORRUPT,
                    "%s: BMP: truncated: its %llu x %llu pixels of %d bits need %llu bytes, the "
                    "file has %zu",
                    name, (unsigned long long)w, (unsigned long long)h, L->bpp,
                    (unsigned long long)need, n);
  return FERRY_OK;
}

static int info(const uint8_t *data, size_t size, const char *name, int *w, int *h, int *comp) {
  if (size > INT32_MAX)
    return fy_error(FERRY_ETOO_LARGE, "%s: BMP: a file over 2 GiB", name);
  pthread_mutex_lock(&stb_mu);
  int ok = stbi_info_from_memory(data, (int)size, w, h, comp);
  const char *why = ok ? NULL : stbi_failure_reason();
  int rc = ok ? FERRY_OK
              : fy_error(FERRY_ECORRUPT, "%s: BMP: %s", name, why ? why : "not a readable BMP");
  pthread_mutex_unlock(&stb_mu);
  if (!rc && *h < 0 && *h > INT32_MIN) /* top down: stb_image gives the height as stored */
    *h = -*h;
  if (!rc && (*w <= 0 || *h <= 0)) /* found by fuzz_decode: a header of width 0 */
    rc = fy_error(FERRY_ECORRUPT, "%s: BMP: an image of %d x %d pixels", name, *w, *h);
  return rc;
}

int fy_bmp_probe(const uint8_t *data, size_t size, const char *name, ferry_info *out) {
  name = nm(name);
  int w, h, comp, rc = info(data, size, name, &w, &h, &comp);
  if (rc)
    return rc;
  bmp_layout L;
  layout(data, size, &L);
  int bpp = L.bpp;
  memset(out, 0, sizeof *out);
  out->format = FERRY_FORMAT_BMP;
  out->width = w;
  out->height = h;
  out->channels = comp;
  out->bit_depth = bpp > 0 && bpp <= 8 ? bpp : 8;
  out->orientation = 1;
  out->has_alpha = comp == 4 || comp == 2;
  snprintf(out->colorspace, sizeof out->colorspace, "%s%s", bpp && bpp <= 8 ? "Palette" : "RGB",
           out->has_alpha ? "+alpha" : "");
  return FERRY_OK;
}

int fy_bmp_pillow_exact(const uint8_t *data, size_t size) {
  bmp_layout L;
  layout(data, size, &L);
  /* palette, 24- and 32-bit (BI_RGB) pixels are stored as they are shown */
  return (L.bpp <= 8 || L.bpp == 24 || L.bpp == 32) && L.compression == 0;
}

int fy_bmp_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out) {
  name = nm(name);
  if (req->channels != 1 && req->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: BMP: channels must be 1 or 3, not %d", name, req->channels);
  bmp_layout L;
  layout(data, size, &L);
  if (L.compression == 1 || L.compression == 2) /* BI_RLE8, BI_RLE4 */
    return fy_error(FERRY_EUNSUPPORTED, "%s: BMP: run-length compressed BMPs are not read", name);
  int w, h, comp, rc = info(data, size, name, &w, &h, &comp);
  if (rc)
    return rc;
  if ((unsigned)w > FY_MAX_SIDE || (unsigned)h > FY_MAX_SIDE ||
      fy_over_pixel_limit((uint64_t)w, (uint64_t)h, req->max_pixels))
    return fy_pixel_limit_error(name, "BMP", (uint64_t)w, (uint64_t)h, req->max_pixels);
  if ((rc = pixels_present(&L, size, name)) != FERRY_OK)
    return rc;
  pthread_mutex_lock(&stb_mu);
  int dw = 0, dh = 0, dc = 0;
  uint8_t *px = stbi_load_from_memory(data, (int)size, &dw, &dh, &dc, 3); /* RGB, top row first */
  const char *why = px ? NULL : stbi_failure_reason();
  if (!px)
    rc = fy_error(FERRY_ECORRUPT, "%s: BMP: %s", name, why ? why : "damaged image data");
  pthread_mutex_unlock(&stb_mu);
  if (!rc && (dw != w || dh != h))
    rc = fy_error(FERRY_ECORRUPT, "%s: BMP: the image is %dx%d, its header says %dx%d", name, dw,
                  dh, w, h);
  if (!rc)
    rc = fy_decoded_from_rgb(dec, px, w, h, (size_t)w * 3, req->channels, name, out);
  stbi_image_free(px);
  return rc;
}
