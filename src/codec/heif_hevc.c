/* heif_hevc.c — HEVC (HEIC) images decoded for libheif by libde265 through a
 * decoder plugin of ferry's own, registered by heif.c ahead of libheif's.
 *
 * libheif 1.15's libde265 plugin drops libde265's decoding errors and never
 * reads its warnings: a garbled HEIC decoded to wrong rows without a word
 * (issue 52: 50 flipped bytes, 376 of 696 rows wrong, exit 0). This plugin
 * runs the same decoder the same way (NAL units pushed as libheif hands
 * them, one picture out, its planes and colour description copied as they
 * are, so the pixels are libheif's own), but fails the image, with
 * libde265's words, on a decoding error, a missing picture or a warning of
 * damage: a slice whose data does not end where its last CTB does (what a
 * flipped byte in the coded data nearly always leads to), a CTB outside the
 * image, a header or parameter set out of range, and the like. What
 * libde265 cannot see is not seen: damage that still parses as valid HEVC
 * to the end of its slice (the last bytes of a slice, or a header field
 * changed to another valid value) decodes to wrong pixels, as it would in
 * any decoder without a checksum. AVIF (AV1) is libheif's own plugins'. */
#ifdef FERRY_HAVE_HEIF /* else heif_stub.c */
#include "codec/codec.h"

#include <libde265/de265.h>
#include <libheif/heif.h>
#include <libheif/heif_plugin.h>
#include <stdlib.h>
#include <string.h>

/* Above libde265's plugin (100), so that libheif picks this one. */
enum { PRIORITY = 200 };

typedef struct hevc {
  de265_decoder_context *ctx;
  const char *cut; /* set when the pushed data ended inside a NAL unit */
} hevc;

static struct heif_error ok(void) {
  return (struct heif_error){heif_error_Ok, heif_suberror_Unspecified, "Success"};
}

/* A failure; `why` must outlive the call (libheif copies it later): a
 * literal or libde265's own static text. */
static struct heif_error failed(enum heif_suberror_code sub, const char *why) {
  return (struct heif_error){heif_error_Decoder_plugin_error, sub, why};
}

static const char *plugin_name(void) { return "ferry: libde265 HEVC decoder, damage reported"; }

static int supports(enum heif_compression_format f) {
  return f == heif_compression_HEVC ? PRIORITY : 0;
}

static struct heif_error new_decoder(void **out) {
  hevc *d = calloc(1, sizeof *d);
  if (!d || !(d->ctx = de265_new_decoder())) {
    free(d);
    return (struct heif_error){heif_error_Memory_allocation_error, heif_suberror_Unspecified,
                               "out of memory for the HEVC decoder"};
  }
  *out = d; /* no worker threads: the loader's threads decode images side by side */
  return ok();
}

static void free_decoder(void *p) {
  hevc *d = p;
  de265_free_decoder(d->ctx);
  free(d);
}

/* libheif hands the parameter sets and then the image's data as NAL units,
 * each after its 4-byte big-endian length. */
static struct heif_error push_data(void *p, const void *data, size_t size) {
  hevc *d = p;
  const uint8_t *b = data;
  for (size_t i = 0; i < size;) {
    if (size - i < 4) {
      d->cut = "the HEVC data ends inside a NAL unit's length";
      return failed(heif_suberror_End_of_data, d->cut);
    }
    uint32_t n =
        (uint32_t)b[i] << 24 | (uint32_t)b[i + 1] << 16 | (uint32_t)b[i + 2] << 8 | b[i + 3];
    i += 4;
    if (n > size - i || n > INT32_MAX) {
      d->cut = "the HEVC data ends inside a NAL unit";
      return failed(heif_suberror_End_of_data, d->cut);
    }
    de265_error e = de265_push_NAL(d->ctx, b + i, (int)n, 0, NULL);
    if (e != DE265_OK)
      return failed(heif_suberror_Unspecified, de265_get_error_text(e));
    i += n;
  }
  return ok();
}

/* Warnings that say nothing about the data: about threads, which are not
 * used here, and entry points, which only threads follow (one thread
 * decodes the substreams in order whatever they say). */
static int harmless(de265_error w) {
  return w == DE265_WARNING_NO_WPP_CANNOT_USE_MULTITHREADING ||
         w == DE265_WARNING_NUMBER_OF_THREADS_LIMITED_TO_MAXIMUM ||
         w == DE265_WARNING_INCORRECT_ENTRY_POINT_OFFSET;
}

/* The first warning of damage libde265 queued, or DE265_OK. */
static de265_error damage(de265_decoder_context *ctx) {
  de265_error w, first = DE265_OK;
  while ((w = de265_get_warning(ctx)) != DE265_OK)
    if (first == DE265_OK && !harmless(w))
      first = w;
  return first;
}

static void set_colour(struct heif_image *img, const struct de265_image *pic) {
  struct heif_color_profile_nclx *nclx = heif_nclx_color_profile_alloc();
  if (!nclx)
    return;
  /* values libheif does not know are left at its defaults, as its plugin does */
  heif_nclx_color_profile_set_color_primaries(nclx,
                                              (uint16_t)de265_get_image_colour_primaries(pic));
  heif_nclx_color_profile_set_transfer_characteristics(
      nclx, (uint16_t)de265_get_image_transfer_characteristics(pic));
  heif_nclx_color_profile_set_matrix_coefficients(
      nclx, (uint16_t)de265_get_image_matrix_coefficients(pic));
  nclx->full_range_flag = (uint8_t)(de265_get_image_full_range_flag(pic) != 0);
  heif_image_set_nclx_color_profile(img, nclx);
  heif_nclx_color_profile_free(nclx);
}

/* The picture's planes, as they are, into a new heif_image. */
static struct heif_error to_heif(const struct de265_image *pic, struct heif_image **out) {
  enum de265_chroma chroma = de265_get_chroma_format(pic);
  int mono = chroma == de265_chroma_mono, planes = mono ? 1 : 3;
  enum heif_chroma hc = mono                         ? heif_chroma_monochrome
                        : chroma == de265_chroma_420 ? heif_chroma_420
                        : chroma == de265_chroma_422 ? heif_chroma_422
                                                     : heif_chroma_444;
  int bits = de265_get_bits_per_pixel(pic, 0);
  struct heif_error e =
      heif_image_create(de265_get_image_width(pic, 0), de265_get_image_height(pic, 0),
                        mono ? heif_colorspace_monochrome : heif_colorspace_YCbCr, hc, out);
  if (e.code != heif_error_Ok)
    return e;
  static const enum heif_channel channel[3] = {heif_channel_Y, heif_channel_Cb, heif_channel_Cr};
  for (int c = 0; c < planes; c++) {
    int w = de265_get_image_width(pic, c), h = de265_get_image_height(pic, c), stride = 0;
    const uint8_t *src = de265_get_image_plane(pic, c, &stride);
    if (de265_get_bits_per_pixel(pic, c) != bits)
      e = (struct heif_error){heif_error_Unsupported_feature, heif_suberror_Unsupported_bit_depth,
                              "HEVC planes of different bit depths"};
    else if (w <= 0 || h <= 0 || !src)
      e = failed(heif_suberror_Invalid_image_size, "an HEVC plane without pixels");
    else
      e = heif_image_add_plane(*out, channel[c], w, h, bits);
    int dstride = 0;
    uint8_t *dst =
        e.code == heif_error_Ok ? heif_image_get_plane(*out, channel[c], &dstride) : NULL;
    if (e.code == heif_error_Ok && !dst)
      e = failed(heif_suberror_Unspecified, "no memory for an HEVC plane");
    if (e.code != heif_error_Ok) {
      heif_image_release(*out);
      *out = NULL;
      return e;
    }
    size_t row = (size_t)w * (size_t)((bits + 7) / 8);
    for (int y = 0; y < h; y++)
      memcpy(dst + (size_t)y * (size_t)dstride, src + (size_t)y * (size_t)stride, row);
  }
  set_colour(*out, pic);
  return ok();
}

static struct heif_error decode_image(void *p, struct heif_image **out) {
  hevc *d = p;
  *out = NULL;
  if (d->cut)
    return failed(heif_suberror_End_of_data, d->cut);
  de265_error e = de265_flush_data(d->ctx);
  struct heif_error r = ok();
  int more = 1;
  while (r.code == heif_error_Ok && more) {
    more = 0;
    e = de265_decode(d->ctx, &more);
    if (e != DE265_OK && e != DE265_ERROR_WAITING_FOR_INPUT_DATA)
      break;
    const struct de265_image *pic = de265_get_next_picture(d->ctx);
    if (pic) { /* one picture per image item: a later one replaces it, as in libheif */
      if (*out)
        heif_image_release(*out);
      r = to_heif(pic, out);
      de265_release_next_picture(d->ctx);
    }
  }
  de265_error w = damage(d->ctx);
  if (r.code == heif_error_Ok && (e == DE265_OK || e == DE265_ERROR_WAITING_FOR_INPUT_DATA) &&
      w == DE265_OK && *out)
    return ok();
  if (*out)
    heif_image_release(*out);
  *out = NULL;
  if (r.code != heif_error_Ok)
    return r;
  if (e != DE265_OK && e != DE265_ERROR_WAITING_FOR_INPUT_DATA)
    return failed(heif_suberror_Unspecified, de265_get_error_text(e));
  if (w != DE265_OK)
    return failed(heif_suberror_Unspecified, de265_get_error_text(w));
  return failed(heif_suberror_End_of_data, "the HEVC data holds no picture");
}

static void set_strict(void *p, int flag) { (void)p, (void)flag; /* always strict */ }

static const struct heif_decoder_plugin plugin = {
    .plugin_api_version = 3,
    .get_plugin_name = plugin_name,
    .does_support_format = supports,
    .new_decoder = new_decoder,
    .free_decoder = free_decoder,
    .push_data = push_data,
    .decode_image = decode_image,
    .set_strict_decoding = set_strict,
    .id_name = "ferry-libde265",
};

int fy_heif_hevc_register(void) {
  return heif_register_decoder_plugin(&plugin).code == heif_error_Ok ? FERRY_OK : FERRY_EINTERNAL;
}
#endif
