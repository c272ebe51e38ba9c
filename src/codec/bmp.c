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

/* The header's bits per pixel and compression (0 when cut short). */
static void header(const uint8_t *d, size_t n, int *bpp, int *compression) {
  *bpp = *compression = 0;
  if (n >= 34) {
    *bpp = d[28] | d[29] << 8;
    *compression = (int)(d[30] | d[31] << 8 | (uint32_t)d[32] << 16 | (uint32_t)d[33] << 24);
  }
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
  if (!rc && (*w <= 0 || *h <= 0)) /* found by fuzz_decode: a header of width 0 */
    rc = fy_error(FERRY_ECORRUPT, "%s: BMP: an image of %d x %d pixels", name, *w, *h);
  return rc;
}

int fy_bmp_probe(const uint8_t *data, size_t size, const char *name, ferry_info *out) {
  name = nm(name);
  int w, h, comp, rc = info(data, size, name, &w, &h, &comp);
  if (rc)
    return rc;
  int bpp, compression;
  header(data, size, &bpp, &compression);
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
  int bpp, compression;
  header(data, size, &bpp, &compression);
  /* palette, 24- and 32-bit (BI_RGB) pixels are stored as they are shown */
  return (bpp <= 8 || bpp == 24 || bpp == 32) && compression == 0;
}

int fy_bmp_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out) {
  name = nm(name);
  if (req->channels != 1 && req->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: BMP: channels must be 1 or 3, not %d", name, req->channels);
  int bpp, compression;
  header(data, size, &bpp, &compression);
  if (compression == 1 || compression == 2) /* BI_RLE8, BI_RLE4 */
    return fy_error(FERRY_EUNSUPPORTED, "%s: BMP: run-length compressed BMPs are not read", name);
  int w, h, comp, rc = info(data, size, name, &w, &h, &comp);
  if (rc)
    return rc;
  if ((unsigned)w > FY_MAX_SIDE || (unsigned)h > FY_MAX_SIDE ||
      fy_over_pixel_limit((uint64_t)w, (uint64_t)h, req->max_pixels))
    return fy_pixel_limit_error(name, "BMP", (uint64_t)w, (uint64_t)h, req->max_pixels);
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
