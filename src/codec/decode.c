/* decode.c — format dispatch, orientation, and the public decode/probe
 * calls (planning, fy_codec_plan, is orient.c's). */
#include "codec/codec.h"

#include <stdlib.h>
#include <string.h>

void ferry_decode_options_default(ferry_decode_options *o) {
  memset(o, 0, sizeof *o);
  o->channels = 3;
  o->max_pixels = FERRY_DEFAULT_MAX_PIXELS;
  o->max_bytes = 1ull << 30;
  o->allow_dct_scaling = 1;
}

void ferry_image_free(ferry_image *image) {
  if (!image)
    return;
  free(image->data);
  memset(image, 0, sizeof *image);
}

void fy_decoder_free(fy_decoder *dec) {
  fy_buf_free(&dec->pixels);
  fy_buf_free(&dec->temp);
  fy_buf_free(&dec->temp2);
}

static int unsupported(ferry_format f, const char *name) {
  if (f == FERRY_FORMAT_UNKNOWN)
    return fy_error(
        FERRY_EUNSUPPORTED,
        "%s: unsupported format: not a JPEG, PNG, WebP, TIFF, GIF, HEIF, BMP or camera raw image",
        name);
  return fy_error(FERRY_EUNSUPPORTED, "%s: unsupported format: %s", name, ferry_format_name(f));
}

static int orientation_of(ferry_format f, const uint8_t *d, size_t n) {
  int o = 1;
  if (f == FERRY_FORMAT_JPEG)
    o = fy_jpeg_orientation(d, n);
  else if (f == FERRY_FORMAT_PNG)
    o = fy_png_orientation(d, n);
  else if (f == FERRY_FORMAT_WEBP)
    o = fy_webp_orientation(d, n);
  else if (f == FERRY_FORMAT_RAW)
    o = fy_raw_orientation(d, n);
  return o >= 1 && o <= 8 ? o : 1;
}

/* Maps the stored region that the decoded pixels cover to upright terms. */
static void orient_region(fy_decoded *d, int o) {
  double sw = d->src_w, sh = d->src_h; /* stored size at this point */
  double x0 = d->x0, y0 = d->y0;
  double x1 = x0 + d->image.width / d->sx, y1 = y0 + d->image.height / d->sy;
  double ux0 = x0, uy0 = y0;
  switch (o) {
  case 2: ux0 = sw - x1; break;
  case 3:
    ux0 = sw - x1;
    uy0 = sh - y1;
    break;
  case 4: uy0 = sh - y1; break;
  case 5:
    ux0 = y0;
    uy0 = x0;
    break;
  case 6:
    ux0 = sh - y1;
    uy0 = x0;
    break;
  case 7:
    ux0 = sh - y1;
    uy0 = sw - x1;
    break;
  case 8:
    ux0 = y0;
    uy0 = sw - x1;
    break;
  default: break;
  }
  d->x0 = ux0;
  d->y0 = uy0;
  if (o >= 5) {
    double t = d->sx;
    d->sx = d->sy;
    d->sy = t;
    int ti = d->src_w;
    d->src_w = d->src_h;
    d->src_h = ti;
  }
}

static int apply_orientation(fy_decoder *dec, fy_decoded *d, int o, const char *name) {
  if (o == 1)
    return FERRY_OK;
  ferry_image *im = &d->image;
  size_t n = (size_t)im->width * im->height * im->channels;
  int rc = fy_buf_reserve(&dec->temp2, n);
  if (rc)
    return fy_error(rc, "%s: out of memory applying orientation", name);
  int ow, oh;
  fy_orient(im->data, im->width, im->height, im->channels, im->stride, o, dec->temp2.p, &ow, &oh);
  /* The upright pixels become the decoder's output buffer. */
  fy_buf t = dec->pixels;
  dec->pixels = dec->temp2;
  dec->temp2 = t;
  orient_region(d, o);
  im->data = dec->pixels.p;
  im->width = ow;
  im->height = oh;
  im->stride = (size_t)ow * im->channels;
  return FERRY_OK;
}

int fy_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
              const ferry_decode_options *opts, fy_plan_fn plan, void *plan_user, fy_decoded *out) {
  if (!name)
    name = "<memory>";
  if (size == 0)
    return fy_error(FERRY_ECORRUPT, "%s: empty file", name);
  if (opts->channels != 1 && opts->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: channels must be 1 or 3, not %d", name, opts->channels);
  ferry_format f = fy_sniff(data, size);
  int o = opts->ignore_orientation ? 1 : orientation_of(f, data, size);
  fy_codec_req req = {.channels = opts->channels,
                      .max_pixels = opts->max_pixels,
                      .crop = opts->crop,
                      .min_w = opts->min_width,
                      .min_h = opts->min_height,
                      .allow_dct_scaling = opts->allow_dct_scaling,
                      .fast_upsampling = opts->fast_upsampling,
                      .fast_decode = dec->fast_decode,
                      .plan = plan,
                      .plan_user = plan_user,
                      .orientation = o};
  memset(out, 0, sizeof *out);
  int rc;
  switch (f) {
  case FERRY_FORMAT_JPEG: rc = fy_jpeg_decode(dec, data, size, name, &req, out); break;
  case FERRY_FORMAT_PNG: rc = fy_png_decode(dec, data, size, name, &req, out); break;
  case FERRY_FORMAT_WEBP: rc = fy_webp_decode(dec, data, size, name, &req, out); break;
  case FERRY_FORMAT_TIFF: rc = fy_tiff_decode(dec, data, size, name, &req, out); break;
  case FERRY_FORMAT_GIF: rc = fy_gif_decode(dec, data, size, name, &req, out); break;
  case FERRY_FORMAT_HEIF: rc = fy_heif_decode(dec, data, size, name, &req, out); break;
  case FERRY_FORMAT_BMP: rc = fy_bmp_decode(dec, data, size, name, &req, out); break;
  case FERRY_FORMAT_RAW: rc = fy_raw_decode(dec, data, size, name, &req, out); break;
  default: return unsupported(f, name);
  }
  if (rc)
    return rc;
  if (!req.planned) {
    rc = fy_codec_plan(&req, out->src_w, out->src_h);
    if (rc)
      return rc;
  }
  return apply_orientation(dec, out, o, name);
}

int fy_pillow_exact(ferry_format f, const uint8_t *d, size_t n) {
  switch (f) {
  /* PNG: 16-bit ones too, decoded with fy_decoder.pillow_16bit set */
  case FERRY_FORMAT_TIFF: return fy_tiff_pillow_exact(d, n);
  case FERRY_FORMAT_GIF: return fy_gif_pillow_exact(d, n);
  case FERRY_FORMAT_HEIF: return fy_heif_pillow_exact(d, n);
  case FERRY_FORMAT_BMP: return fy_bmp_pillow_exact(d, n);
  case FERRY_FORMAT_RAW: return fy_raw_pillow_exact(d, n);
  default: return 1; /* JPEG (the same libjpeg-turbo settings), WebP */
  }
}

int fy_decoded_from_rgb(fy_decoder *dec, const uint8_t *rgb, int w, int h, size_t stride,
                        int channels, const char *name, fy_decoded *out) {
  size_t total = 0;
  if (!fy_mul_size((size_t)w * h, (size_t)channels, &total))
    return fy_error(FERRY_ETOO_LARGE, "%s: image %dx%d is too large", name, w, h);
  if (fy_buf_reserve(&dec->pixels, total))
    return fy_error(FERRY_ENOMEM, "%s: out of memory for a %dx%d image", name, w, h);
  uint8_t *dst = dec->pixels.p;
  for (int y = 0; y < h; y++) {
    const uint8_t *row = rgb + (size_t)y * stride;
    if (channels == 3)
      memcpy(dst + (size_t)y * w * 3, row, (size_t)w * 3);
    else
      for (int x = 0; x < w; x++)
        dst[(size_t)y * w + x] = fy_luma(row[3 * x], row[3 * x + 1], row[3 * x + 2]);
  }
  fy_decoded_whole(out, dec->pixels.p, w, h, channels);
  return FERRY_OK;
}

/* The header of bytes of format f (sniffed), or why they cannot be read. */
static int probe_format(ferry_format f, const uint8_t *d, size_t n, const char *name,
                        ferry_info *info) {
  switch (f) {
  case FERRY_FORMAT_JPEG: return fy_jpeg_probe(d, n, name, info);
  case FERRY_FORMAT_PNG: return fy_png_probe(d, n, name, info);
  case FERRY_FORMAT_WEBP: return fy_webp_probe(d, n, name, info);
  case FERRY_FORMAT_TIFF: return fy_tiff_probe(d, n, name, info);
  case FERRY_FORMAT_HEIF: return fy_heif_probe(d, n, name, info);
  case FERRY_FORMAT_BMP: return fy_bmp_probe(d, n, name, info);
  case FERRY_FORMAT_RAW: return fy_raw_probe(d, n, name, info);
  case FERRY_FORMAT_GIF: return fy_gif_probe(d, n, name, info);
  default: info->format = f; return unsupported(f, name);
  }
}

int ferry_probe(const void *data, size_t size, ferry_info *info) {
  const char *name = "<memory>";
  memset(info, 0, sizeof *info);
  if (!data && size)
    return fy_error(FERRY_EINVAL, "ferry_probe: data is NULL");
  if (size == 0)
    return fy_error(FERRY_ECORRUPT, "%s: empty file", name);
  return probe_format(fy_sniff(data, size), data, size, name, info);
}

int ferry_probe_file(const char *path, ferry_info *info) {
  fy_buf buf = {0};
  size_t n = 0;
  memset(info, 0, sizeof *info);
  int rc = fy_read_file(path, 1ull << 30, &buf, &n);
  if (rc == FERRY_OK)
    rc = n ? probe_format(fy_sniff(buf.p, n), buf.p, n, path, info)
           : fy_error(FERRY_ECORRUPT, "%s: empty file", path);
  fy_buf_free(&buf);
  return rc;
}

/* Cuts the decoded pixels down to exactly the requested crop (the decoder
 * may have produced a slightly larger, iMCU-aligned region). */
static void trim_to_crop(fy_decoded *d, const ferry_rect *want) {
  ferry_image *im = &d->image;
  if (want->width <= 0 || want->height <= 0)
    return;
  int x = (int)((want->x - d->x0) * d->sx + 0.5), y = (int)((want->y - d->y0) * d->sy + 0.5);
  int w = (int)(want->width * d->sx + 0.5), h = (int)(want->height * d->sy + 0.5);
  if (x < 0)
    x = 0;
  if (y < 0)
    y = 0;
  if (w > im->width - x)
    w = im->width - x;
  if (h > im->height - y)
    h = im->height - y;
  if (w < 1 || h < 1 || (x == 0 && y == 0 && w == im->width && h == im->height))
    return;
  size_t row = (size_t)w * im->channels;
  for (int r = 0; r < h; r++)
    memmove(im->data + (size_t)r * row,
            im->data + (size_t)(y + r) * im->stride + (size_t)x * im->channels, row);
  im->width = w;
  im->height = h;
  im->stride = row;
}

int ferry_decode(const void *data, size_t size, const char *name,
                 const ferry_decode_options *options, ferry_image *image) {
  ferry_decode_options def;
  if (!options) {
    ferry_decode_options_default(&def);
    options = &def;
  }
  if (!image || (!data && size))
    return fy_error(FERRY_EINVAL, "ferry_decode: NULL argument");
  memset(image, 0, sizeof *image);
  fy_decoder dec = {0};
  dec.pixels.heap_only = 1; /* handed to the caller, who free()s it */
  dec.temp2.heap_only = 1;  /* orientation swaps it with pixels */
  fy_decoded d;
  int rc = fy_decode(&dec, data, size, name, options, NULL, NULL, &d);
  if (rc == FERRY_OK) {
    ferry_rect want = options->crop;
    if (want.width > 0 && want.height > 0) {
      fy_clamp_rect(&want, d.src_w, d.src_h);
      trim_to_crop(&d, &want);
    }
    /* Hand the pixel buffer itself to the caller: no copy. */
    *image = d.image;
    if (image->stride != (size_t)image->width * image->channels) {
      size_t row = (size_t)image->width * image->channels;
      for (int r = 0; r < image->height; r++)
        memmove(image->data + r * row, image->data + r * image->stride, row);
      image->stride = row;
    }
    dec.pixels.p = NULL;
    dec.pixels.cap = 0;
  }
  fy_decoder_free(&dec);
  return rc;
}

int ferry_decode_file(const char *path, const ferry_decode_options *options, ferry_image *image) {
  if (!path || !image)
    return fy_error(FERRY_EINVAL, "ferry_decode_file: NULL argument");
  ferry_decode_options def;
  if (!options) {
    ferry_decode_options_default(&def);
    options = &def;
  }
  memset(image, 0, sizeof *image);
  fy_buf buf = {0};
  size_t n = 0;
  int rc = fy_read_file(path, options->max_bytes, &buf, &n);
  if (rc == FERRY_OK)
    rc = ferry_decode(buf.p, n, path, options, image);
  fy_buf_free(&buf);
  return rc;
}
