/* heif_stub.c — HEIF when ferry is built without libheif (FERRY_HEIF=OFF,
 * as the GPU machine's bundles are): HEIC and AVIF files are recognised and
 * refused with that reason. */
#ifndef FERRY_HAVE_HEIF
#include "codec/codec.h"

static int no_heif(const char *name) {
  return fy_error(FERRY_EUNSUPPORTED,
                  "%s: HEIF (HEIC, AVIF): this ferry was built without libheif (FERRY_HEIF=OFF)",
                  name ? name : "<memory>");
}

int fy_heif_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info) {
  (void)data, (void)size, (void)info;
  return no_heif(name);
}

int fy_heif_pillow_exact(const uint8_t *data, size_t size) {
  (void)data, (void)size;
  return 0;
}

int fy_heif_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req, fy_decoded *out) {
  (void)dec, (void)data, (void)size, (void)req, (void)out;
  return no_heif(name);
}
#endif
