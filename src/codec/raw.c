/* raw.c — camera raw files with LibRaw (libraw_r): what a camera or phone
 * wrote beside its sensor data is read, not the sensor data itself where
 * that can be avoided.
 *
 *   - the embedded preview, when there is one (a full-size JPEG in most
 *     cameras' files): decoded by the JPEG codec, or copied when LibRaw
 *     gives it as a bitmap;
 *   - otherwise (DNGs without a preview, as some phones and converters
 *     write them) the sensor data, demosaiced at half size with the
 *     camera's white balance (LibRaw's dcraw_process).
 *
 * The orientation LibRaw reads (its `flip`) is the file's EXIF orientation
 * for fy_decode (fy_raw_orientation). Sizes are checked against the pixel
 * limit before anything is decoded. Pillow does not read camera raw: its
 * hashes are never called exact. */
#include "codec/codec.h"

#include <libraw/libraw.h>
#include <stdio.h>
#include <string.h>

static const char *nm(const char *name) { return name ? name : "<memory>"; }

static int raw_fail(const char *name, int err, const char *what) {
  int st = err == LIBRAW_UNSUFFICIENT_MEMORY ? FERRY_ENOMEM
           : err == LIBRAW_FILE_UNSUPPORTED  ? FERRY_EUNSUPPORTED
                                             : FERRY_ECORRUPT;
  return fy_error(st, "%s: camera raw: %s: %s", name, what, libraw_strerror(err));
}

/* LibRaw prints damaged data and memory errors to stderr unless told
 * otherwise; its return codes carry them to ferry's message instead. */
static void quiet_data(void *user, const char *file, const int offset) {
  (void)user, (void)file, (void)offset;
}

static void quiet_memory(void *user, const char *file, const char *where) {
  (void)user, (void)file, (void)where;
}

static int raw_open(const uint8_t *data, size_t size, const char *name, libraw_data_t **out) {
  *out = NULL;
  int rc = fy_raw_check(data, size, name); /* before LibRaw: raw_check.c says why */
  if (rc)
    return rc;
  *out = libraw_init(0);
  if (!*out)
    return fy_error(FERRY_ENOMEM, "%s: camera raw: out of memory", name);
  libraw_set_dataerror_handler(*out, quiet_data, NULL);
  libraw_set_memerror_handler(*out, quiet_memory, NULL);
  (*out)->params.half_size = 1; /* a demosaic, if one is needed, at half size */
  (*out)->params.use_camera_wb = 1;
  int err = libraw_open_buffer(*out, (void *)data, size);
  if (err != LIBRAW_SUCCESS) {
    libraw_close(*out);
    *out = NULL;
    return raw_fail(name, err, "cannot read the file");
  }
  return FERRY_OK;
}

static int orientation_of_flip(int flip) {
  return flip == 3 ? 3 : flip == 5 ? 8 : flip == 6 ? 6 : 1;
}

int fy_raw_orientation(const uint8_t *data, size_t size) {
  libraw_data_t *lr;
  if (raw_open(data, size, "<memory>", &lr))
    return 1;
  /* the preview is stored as the sensor lies; a developed image comes
   * upright from LibRaw already */
  int preview = lr->thumbnail.twidth > 0 && lr->thumbnail.theight > 0;
  int o = preview ? orientation_of_flip(lr->sizes.flip) : 1;
  libraw_close(lr);
  return o;
}

int fy_raw_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info) {
  name = nm(name);
  libraw_data_t *lr;
  int rc = raw_open(data, size, name, &lr);
  if (rc)
    return rc;
  memset(info, 0, sizeof *info);
  info->format = FERRY_FORMAT_RAW;
  /* the picture ferry decodes: the preview's size, else the half-size image */
  int tw = lr->thumbnail.twidth, th = lr->thumbnail.theight;
  int jpeg = lr->thumbnail.tformat == LIBRAW_THUMBNAIL_JPEG;
  info->width = tw > 0 && th > 0 ? tw : lr->sizes.iwidth;
  info->height = tw > 0 && th > 0 ? th : lr->sizes.iheight;
  info->channels = 3;
  info->bit_depth = 8;
  info->orientation = orientation_of_flip(lr->sizes.flip);
  snprintf(info->colorspace, sizeof info->colorspace, "%s",
           tw > 0 && th > 0 ? (jpeg ? "JPEG preview" : "preview") : "sensor");
  libraw_close(lr);
  if (info->width <= 0 || info->height <= 0)
    return fy_error(FERRY_ECORRUPT, "%s: camera raw: no image size", name);
  return FERRY_OK;
}

int fy_raw_pillow_exact(const uint8_t *data, size_t size) {
  (void)data, (void)size;
  return 0;
}

/* A LibRaw bitmap (8-bit RGB), checked, into dec->pixels. */
static int from_bitmap(fy_decoder *dec, const libraw_processed_image_t *img, const char *name,
                       const fy_codec_req *req, fy_decoded *out) {
  int w = img->width, h = img->height;
  if (img->colors != 3 || img->bits != 8 || img->data_size < (size_t)w * h * 3)
    return fy_error(FERRY_EUNSUPPORTED, "%s: camera raw: a %d-colour %d-bit image", name,
                    img->colors, img->bits);
  return fy_decoded_from_rgb(dec, img->data, w, h, (size_t)w * 3, req->channels, name, out);
}

int fy_raw_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out) {
  name = nm(name);
  if (req->channels != 1 && req->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: camera raw: channels must be 1 or 3, not %d", name,
                    req->channels);
  libraw_data_t *lr;
  int rc = raw_open(data, size, name, &lr);
  if (rc)
    return rc;
  int err = 0;
  libraw_processed_image_t *img = NULL;
  int tw = lr->thumbnail.twidth, th = lr->thumbnail.theight;
  char preview_why[512] = "";
  if (tw > 0 && th > 0) { /* the preview */
    if (fy_over_pixel_limit((uint64_t)tw, (uint64_t)th, req->max_pixels))
      rc = fy_pixel_limit_error(name, "camera raw preview", (uint64_t)tw, (uint64_t)th,
                                req->max_pixels);
    else if ((err = libraw_unpack_thumb(lr)) != LIBRAW_SUCCESS)
      rc = raw_fail(name, err, "cannot read the preview");
    else if (!(img = libraw_dcraw_make_mem_thumb(lr, &err)))
      rc = raw_fail(name, err, "cannot read the preview");
    if (!rc && img->type == LIBRAW_IMAGE_JPEG)
      rc = fy_jpeg_decode(dec, img->data, img->data_size, name, req, out);
    else if (!rc)
      rc = from_bitmap(dec, img, name, req, out);
    if (rc == FERRY_ECORRUPT || rc == FERRY_EUNSUPPORTED) { /* then the sensor data */
      snprintf(preview_why, sizeof preview_why, "%s", ferry_last_error());
      if (img)
        libraw_dcraw_clear_mem(img);
      img = NULL;
      rc = FERRY_OK;
      libraw_close(lr);
      if ((rc = raw_open(data, size, name, &lr)) != FERRY_OK)
        return rc;
    } else {
      goto done;
    }
  }
  /* no preview (or an unreadable one): the sensor data, demosaiced at half size */
  int w = lr->sizes.iwidth, h = lr->sizes.iheight;
  if (w <= 0 || h <= 0)
    rc = fy_error(FERRY_ECORRUPT, "%s: camera raw: no image size", name);
  else if (fy_over_pixel_limit((uint64_t)w, (uint64_t)h, req->max_pixels))
    rc = fy_pixel_limit_error(name, "camera raw", (uint64_t)w, (uint64_t)h, req->max_pixels);
  else if ((err = libraw_unpack(lr)) != LIBRAW_SUCCESS)
    rc = raw_fail(name, err, "cannot read the sensor data");
  else if ((err = libraw_dcraw_process(lr)) != LIBRAW_SUCCESS)
    rc = raw_fail(name, err, "cannot develop the sensor data");
  else if (!(img = libraw_dcraw_make_mem_image(lr, &err)))
    rc = raw_fail(name, err, "cannot develop the sensor data");
  if (!rc)
    rc = from_bitmap(dec, img, name, req, out);
  if (rc && preview_why[0]) { /* both failed: say both (the message copied first: fy_error
                                 writes where ferry_last_error reads) */
    char sensor_why[512];
    snprintf(sensor_why, sizeof sensor_why, "%s", ferry_last_error());
    rc = fy_error(rc, "%s; and the sensor data: %s", preview_why, sensor_why);
  }
done:
  if (img)
    libraw_dcraw_clear_mem(img);
  libraw_close(lr);
  return rc;
}
