/* heif.c — HEIF (HEIC from phones, AVIF) header probe and decode with
 * libheif: the primary image.
 *
 * libheif applies the file's geometric transformations (rotation,
 * mirroring, cropping: HEIF's irot/imir/clap, the authority on how the
 * picture stands; an EXIF orientation inside is ignored, as Apple's and
 * pillow-heif's readers ignore it), so the pixels come upright whatever
 * ignore_orientation says. Deeper than 8 bits is converted to 8 by libheif;
 * alpha is dropped as Pillow's convert("RGB") does. The size is checked
 * against the pixel limit from the header before anything is decoded.
 * Pillow reads HEIF only through a plugin (pillow-heif) whose libheif and
 * colour conversion may differ from this one: compatible-mode hashes of
 * HEIF files are never called exact (fy_heif_pillow_exact). */
#ifdef FERRY_HAVE_HEIF /* else heif_stub.c */
#include "codec/codec.h"

#include <libheif/heif.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *nm(const char *name) { return name ? name : "<memory>"; }

static pthread_once_t heif_once = PTHREAD_ONCE_INIT;
/* plugins loaded once, for the process, and HEVC decoded by heif_hevc.c's,
 * which reports damage (libheif's own libde265 plugin does not) */
static void heif_start(void) {
  heif_init(NULL);
  if (fy_heif_hevc_register() != FERRY_OK)
    fy_log(FERRY_LOG_WARNING,
           "HEIF: ferry's HEVC decoder could not be registered: libheif's decodes "
           "HEIC files, and does not report damaged ones");
}

static const char *after(const char *s, const char *prefix) {
  size_t k = strlen(prefix);
  return strncmp(s, prefix, k) ? s : s + k;
}

static int heif_fail(const char *name, struct heif_error e, const char *what) {
  int st = e.code == heif_error_Memory_allocation_error ? FERRY_ENOMEM
           : e.code == heif_error_Unsupported_feature || e.code == heif_error_Unsupported_filetype
               ? FERRY_EUNSUPPORTED
               : FERRY_ECORRUPT;
  const char *msg = e.message && e.message[0] ? e.message : "damaged data";
  if (e.code == heif_error_Decoder_plugin_error) { /* libheif's prefixes to the decoder's words */
    msg = after(after(after(msg, "Decoder plugin generated an error: "), "Unspecified: "),
                "End of data: ");
    return fy_error(st, "%s: HEIF: damaged image data: %s", name, msg);
  }
  return fy_error(st, "%s: HEIF: %s: %s", name, what, msg);
}

/* The file's context and primary image (both freed by the caller). */
static int open_primary(const uint8_t *data, size_t size, const char *name,
                        struct heif_context **ctx, struct heif_image_handle **h) {
  pthread_once(&heif_once, heif_start);
  *h = NULL;
  if (!(*ctx = heif_context_alloc()))
    return fy_error(FERRY_ENOMEM, "%s: HEIF: out of memory", name);
  struct heif_error e = heif_context_read_from_memory_without_copy(*ctx, data, size, NULL);
  if (e.code == heif_error_Ok)
    e = heif_context_get_primary_image_handle(*ctx, h);
  if (e.code != heif_error_Ok) {
    int rc = heif_fail(name, e, "cannot read the file"); /* the message lives in the context */
    heif_context_free(*ctx);
    *ctx = NULL;
    return rc;
  }
  return FERRY_OK;
}

static void close_primary(struct heif_context *ctx, struct heif_image_handle *h) {
  if (h)
    heif_image_handle_release(h);
  if (ctx)
    heif_context_free(ctx);
}

int fy_heif_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info) {
  name = nm(name);
  struct heif_context *ctx;
  struct heif_image_handle *h;
  int rc = open_primary(data, size, name, &ctx, &h);
  if (rc)
    return rc;
  memset(info, 0, sizeof *info);
  info->format = FERRY_FORMAT_HEIF;
  info->width = heif_image_handle_get_width(h); /* as shown: transformations applied */
  info->height = heif_image_handle_get_height(h);
  info->has_alpha = heif_image_handle_has_alpha_channel(h) != 0;
  info->channels = 3 + info->has_alpha;
  int bits = heif_image_handle_get_luma_bits_per_pixel(h);
  info->bit_depth = bits > 0 ? bits : 8;
  info->orientation = 1;
  snprintf(info->colorspace, sizeof info->colorspace, "YCbCr%s", info->has_alpha ? "+alpha" : "");
  close_primary(ctx, h);
  if (info->width <= 0 || info->height <= 0)
    return fy_error(FERRY_ECORRUPT, "%s: HEIF: no image size", name);
  return FERRY_OK;
}

int fy_heif_pillow_exact(const uint8_t *data, size_t size) {
  (void)data, (void)size;
  return 0;
}

int fy_heif_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req, fy_decoded *out) {
  name = nm(name);
  if (req->channels != 1 && req->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: HEIF: channels must be 1 or 3, not %d", name, req->channels);
  struct heif_context *ctx;
  struct heif_image_handle *h;
  int rc = open_primary(data, size, name, &ctx, &h);
  if (rc)
    return rc;
  int w = heif_image_handle_get_width(h), ht = heif_image_handle_get_height(h);
  if (w <= 0 || ht <= 0)
    rc = fy_error(FERRY_ECORRUPT, "%s: HEIF: no image size", name);
  else if ((unsigned)w > FY_MAX_SIDE || (unsigned)ht > FY_MAX_SIDE ||
           fy_over_pixel_limit((uint64_t)w, (uint64_t)ht, req->max_pixels))
    rc = fy_pixel_limit_error(name, "HEIF", (uint64_t)w, (uint64_t)ht, req->max_pixels);
  struct heif_image *img = NULL;
  if (!rc) {
    struct heif_decoding_options *o = heif_decoding_options_alloc();
    if (o)
      o->convert_hdr_to_8bit = 1;
    struct heif_error e =
        heif_decode_image(h, &img, heif_colorspace_RGB, heif_chroma_interleaved_RGB, o);
    heif_decoding_options_free(o);
    if (e.code != heif_error_Ok)
      rc = heif_fail(name, e, "cannot decode the image");
  }
  int stride = 0;
  const uint8_t *px = NULL;
  if (!rc) {
    px = heif_image_get_plane_readonly(img, heif_channel_interleaved, &stride);
    /* the decoded picture is the handle's size; a file whose image says
     * otherwise is damaged */
    if (!px || heif_image_get_width(img, heif_channel_interleaved) != w ||
        heif_image_get_height(img, heif_channel_interleaved) != ht ||
        heif_image_get_bits_per_pixel(img, heif_channel_interleaved) != 24 || stride < 3 * w)
      rc = fy_error(FERRY_ECORRUPT, "%s: HEIF: the decoded image is not %dx%d RGB", name, w, ht);
  }
  if (!rc)
    rc = fy_decoded_from_rgb(dec, px, w, ht, (size_t)stride, req->channels, name, out);
  if (img)
    heif_image_release(img);
  close_primary(ctx, h);
  return rc;
}
#endif
