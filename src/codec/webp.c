/* webp.c — WebP header probe and decode with libwebp (still images).
 *
 * The whole image is decoded at full size straight into dec->pixels as RGB
 * (libwebp's MODE_RGB drops alpha without premultiplying, which is what
 * Pillow's convert("RGB") of the RGBA decode gives). libwebp's scaler is
 * not used for min_w/min_h: its output would not match a Pillow resize of
 * the full image, and the caller resamples anyway. */
#include "codec/codec.h"

#include <stdio.h>
#include <string.h>
#include <webp/decode.h>

static const char *nm(const char *name) { return name ? name : "<memory>"; }

/* The ferry status and message for a libwebp status. */
static int webp_failure(VP8StatusCode st, const char *name) {
  switch (st) {
  case VP8_STATUS_NOT_ENOUGH_DATA: return fy_error(FERRY_ECORRUPT, "%s: truncated WebP data", name);
  case VP8_STATUS_OUT_OF_MEMORY: return fy_error(FERRY_ENOMEM, "%s: WebP: out of memory", name);
  case VP8_STATUS_UNSUPPORTED_FEATURE:
    return fy_error(FERRY_EUNSUPPORTED, "%s: WebP: unsupported feature", name);
  case VP8_STATUS_BITSTREAM_ERROR:
    return fy_error(FERRY_ECORRUPT, "%s: WebP: corrupt bitstream", name);
  default:
    return fy_error(FERRY_ECORRUPT, "%s: WebP: invalid data (libwebp status %d)", name, (int)st);
  }
}

/* Header features; every failure is reported with the file name. */
static int get_features(const uint8_t *data, size_t size, const char *name,
                        WebPBitstreamFeatures *f) {
  if (size == 0)
    return fy_error(FERRY_ECORRUPT, "%s: truncated WebP data", name);
  VP8StatusCode st = WebPGetFeatures(data, size, f);
  return st == VP8_STATUS_OK ? FERRY_OK : webp_failure(st, name);
}

int fy_webp_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info) {
  WebPBitstreamFeatures f;
  int rc = get_features(data, size, nm(name), &f);
  if (rc)
    return rc;
  memset(info, 0, sizeof *info);
  info->format = FERRY_FORMAT_WEBP;
  info->width = f.width;
  info->height = f.height;
  info->channels = f.has_alpha ? 4 : 3;
  info->bit_depth = 8;
  info->orientation = fy_webp_orientation(data, size);
  info->has_alpha = f.has_alpha;
  info->lossless = f.format == 2; /* 0 mixed (animation), 1 lossy, 2 lossless */
  snprintf(info->colorspace, sizeof info->colorspace, "%s", f.has_alpha ? "RGBA" : "RGB");
  return FERRY_OK;
}

/* Refuses animations and images over the pixel limit, before allocating. */
static int check_decodable(const WebPBitstreamFeatures *f, const char *name, uint64_t max_pixels) {
  if (f->has_animation)
    return fy_error(FERRY_EUNSUPPORTED, "%s: animated WebP is not supported", name);
  if (fy_over_pixel_limit((uint64_t)f->width, (uint64_t)f->height, max_pixels))
    return fy_pixel_limit_error(name, "WebP", (uint64_t)f->width, (uint64_t)f->height, max_pixels);
  return FERRY_OK;
}

/* Decodes into the caller's RGB buffer of w*h*3 bytes. */
static int decode_rgb(const uint8_t *data, size_t size, const char *name, WebPDecoderConfig *config,
                      uint8_t *rgb, size_t total) {
  WebPRGBABuffer *buf = &config->output.u.RGBA;
  config->output.colorspace = MODE_RGB;
  config->output.is_external_memory = 1;
  buf->rgba = rgb;
  buf->stride = config->input.width * 3;
  buf->size = total;
  VP8StatusCode st = WebPDecode(data, size, config);
  WebPFreeDecBuffer(&config->output); /* frees nothing here: memory is ours */
  return st == VP8_STATUS_OK ? FERRY_OK : webp_failure(st, name);
}

int fy_webp_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req, fy_decoded *out) {
  name = nm(name);
  if (req->channels != 1 && req->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: WebP: channels must be 1 or 3, not %d", name, req->channels);
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config))
    return fy_error(FERRY_EINTERNAL, "%s: WebP: libwebp version mismatch", name);
  int rc = get_features(data, size, name, &config.input);
  if (!rc)
    rc = check_decodable(&config.input, name, req->max_pixels);
  if (rc)
    return rc;
  int w = config.input.width, h = config.input.height;
  size_t total;
  if (!fy_mul_size((size_t)w * 3, (size_t)h, &total))
    return fy_error(FERRY_ETOO_LARGE, "%s: WebP image %dx%d is too large", name, w, h);
  rc = fy_buf_reserve(&dec->pixels, total);
  if (rc)
    return fy_error(rc, "%s: out of memory for a %dx%d WebP image", name, w, h);
  rc = decode_rgb(data, size, name, &config, dec->pixels.p, total);
  if (rc)
    return rc;
  uint8_t *pixels = dec->pixels.p;
  if (req->channels == 1)
    fy_rgb_to_gray_inplace(pixels, (size_t)w * h);
  fy_decoded_whole(out, pixels, w, h, req->channels);
  return FERRY_OK;
}
