/* png.c — PNG header probe and decode with libpng, from a memory buffer.
 *
 * libpng reports errors by longjmp. Every libpng call runs inside png_run(),
 * whose only locals live across setjmp unchanged (the libpng handles), and
 * the decoding itself is a separate function that allocates nothing but
 * the decoder's grow-only buffers, so a longjmp out of it leaks nothing.
 *
 * Pixels match Pillow's Image.open(f).convert("RGB"/"L") for 8-bit and
 * smaller depths. 16-bit samples are rounded to 8 bits as codec.h says,
 * (v * 255 + 32895) >> 16, i.e. round(v / 257) (libpng's png_set_scale_16).
 * Pillow differs there: 16-bit RGB(A)/LA keep the high byte (v >> 8, at most
 * 1 lower), and 16-bit gray (with or without tRNS) opens as "I;16", which
 * convert("L"/"RGB") clips to 255 (min(v, 255)) — an overflow, not a
 * scaling, that turns almost every 16-bit gray photo white. Loading keeps
 * the rounding; compatible hashing (dec->pillow_16bit) copies Pillow, so
 * its hashes equal imagehash's there too. */
#include "codec/codec.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The byte source and the error report of one libpng session. */
typedef struct png_src {
  const uint8_t *data;
  size_t size, pos;
  int truncated;    /* the read function ran out of data */
  int rc;           /* an error of ferry's own, reported before a longjmp */
  int oom;          /* an allocation of libpng's or zlib's failed */
  char damage[160]; /* a warning that means the image data is incomplete */
  char msg[160];    /* libpng's error message */
} png_src;

/* Work done inside the setjmp scope. */
typedef int (*png_body_fn)(png_structp png, png_infop info, void *arg);

static const char *nm(const char *name) { return name ? name : "<memory>"; }

static void on_read(png_structp png, png_bytep out, size_t n) {
  png_src *s = png_get_io_ptr(png);
  if (n > s->size - s->pos) {
    s->truncated = 1;
    png_error(png, "truncated data");
  }
  memcpy(out, s->data + s->pos, n);
  s->pos += n;
}

static void on_error(png_structp png, png_const_charp msg) {
  png_src *s = png_get_error_ptr(png);
  snprintf(s->msg, sizeof s->msg, "%s", msg ? msg : "error");
  png_longjmp(png, 1);
}

/* Warnings (known-incorrect sRGB profiles and the like) are not failures
 * and must not print from a worker thread. Those about the image data
 * itself are kept: the progressive reader only warns when its stream
 * breaks before the last row (libpng's "IDAT: ADLER32 checksum mismatch",
 * a benign error), and the rows it did not deliver must not pass as
 * pixels. Compressed data left over once the image is complete ("Extra
 * compressed data", "Truncated compressed data") is no damage to it. */
static void on_warning(png_structp png, png_const_charp msg) {
  png_src *s = png_get_error_ptr(png);
  if (s && msg && strstr(msg, "IDAT") && !strstr(msg, "Extra compressed data") &&
      !strstr(msg, "Truncated compressed data") && !s->damage[0])
    snprintf(s->damage, sizeof s->damage, "%s", msg);
}

/* libpng's allocations go through fy_malloc, so that the tests' injected
 * allocation failures (buf.c) reach inside libpng too. */
static png_voidp png_alloc(png_structp png, png_alloc_size_t n) {
  png_voidp p = fy_malloc(n);
  png_src *s = png && !p ? png_get_error_ptr(png) : NULL;
  if (s)
    s->oom = 1; /* zlib's failures reach libpng's messages as other errors */
  return p;
}

static void png_dealloc(png_structp png, png_voidp p) {
  (void)png;
  free(p);
}

/* libpng's words for a failed allocation: "Out of memory", "insufficient
 * memory to read chunk", zlib's "insufficient memory". */
static int is_oom(const char *msg) { return strcasestr(msg, "memory") != NULL; }

/* The status and message for a libpng error. */
static int png_failure(const png_src *s, const char *name) {
  if (s->rc)
    return s->rc;
  if (s->truncated)
    return fy_error(FERRY_ECORRUPT, "%s: truncated PNG data", name);
  if (s->oom || is_oom(s->msg))
    return fy_error(FERRY_ENOMEM, "%s: PNG: out of memory (libpng: %s)", name, s->msg);
  return fy_error(FERRY_ECORRUPT, "%s: PNG: %s", name, s->msg);
}

/* Reader settings shared by probe and decode. */
static void png_configure(png_structp png) {
  /* A bad CRC anywhere means a damaged file: fail instead of libpng's
   * default of warning about ancillary chunks and dropping them. */
  png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  /* Size limits are ferry's (max_pixels), not libpng's 1e6 x 1e6 default. */
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  /* Skip every ancillary chunk but tRNS: text, iCCP, gAMA... do not change
   * Pillow's pixels, and skipping them avoids decompressing zTXt/iCCP. The
   * skipped chunks' CRCs are still checked. EXIF is read by exif.c. */
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
}

static int png_setup_and_run(png_structp png, png_infop info, png_src *src, png_body_fn body,
                             void *arg) {
  png_set_read_fn(png, src, on_read);
  png_configure(png);
  return body(png, info, arg);
}

/* Runs `body` with a libpng reader over data[0, size). */
static int png_run(const uint8_t *data, size_t size, const char *name, png_body_fn body,
                   void *arg) {
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
    /* A short buffer that starts like a PNG is a cut-off PNG. */
    if (size < 8 && (size == 0 || png_sig_cmp(data, 0, size) == 0))
      return fy_error(FERRY_ECORRUPT, "%s: truncated PNG data", name);
    return fy_error(FERRY_ECORRUPT, "%s: not a PNG file", name);
  }
  png_src src = {.data = data, .size = size};
  png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &src, on_error, on_warning,
                                             NULL, png_alloc, png_dealloc);
  if (!png)
    return fy_error(FERRY_ENOMEM, "%s: PNG: out of memory", name);
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, NULL, NULL);
    return fy_error(FERRY_ENOMEM, "%s: PNG: out of memory", name);
  }
  /* Nothing local changes between here and a longjmp: `status` is only
   * assigned after setjmp returns, so no volatile is needed. The settings
   * are made inside too: png_set_keep_unknown_chunks allocates, and a
   * failure there must not find libpng without a jump target (abort()). */
  int status;
  if (setjmp(png_jmpbuf(png)))
    status = png_failure(&src, name);
  else
    status = png_setup_and_run(png, info, &src, body, arg);
  png_destroy_read_struct(&png, &info, NULL);
  return status;
}

/* ----------------------------------------------------------------- probe */

typedef struct probe_job {
  const uint8_t *data;
  size_t size;
  ferry_info *info;
} probe_job;

static const char *colorspace_name(int color_type) {
  switch (color_type) {
  case PNG_COLOR_TYPE_GRAY: return "Gray";
  case PNG_COLOR_TYPE_GRAY_ALPHA: return "GrayA";
  case PNG_COLOR_TYPE_PALETTE: return "Palette";
  case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA";
  default: return "RGB";
  }
}

static int probe_body(png_structp png, png_infop pinfo, void *arg) {
  probe_job *job = arg;
  ferry_info *info = job->info;
  png_read_info(png, pinfo);
  int color = png_get_color_type(png, pinfo);
  int has_alpha = (color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, pinfo, PNG_INFO_tRNS);
  memset(info, 0, sizeof *info);
  info->format = FERRY_FORMAT_PNG;
  info->width = (int)png_get_image_width(png, pinfo);
  info->height = (int)png_get_image_height(png, pinfo);
  /* Components after palette/tRNS expansion: a palette image is colour,
   * and a tRNS colour key counts as an alpha channel. */
  info->channels = ((color & PNG_COLOR_MASK_COLOR) ? 3 : 1) + (has_alpha ? 1 : 0);
  info->bit_depth = png_get_bit_depth(png, pinfo); /* 1, 2, 4, 8 or 16 */
  info->orientation = fy_png_orientation(job->data, job->size);
  info->progressive = png_get_interlace_type(png, pinfo) != PNG_INTERLACE_NONE;
  info->has_alpha = has_alpha;
  snprintf(info->colorspace, sizeof info->colorspace, "%s", colorspace_name(color));
  info->subsampling[0] = '\0';
  return FERRY_OK;
}

int fy_png_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info) {
  probe_job job = {data, size, info};
  return png_run(data, size, nm(name), probe_body, &job);
}

/* ---------------------------------------------------------------- decode */

typedef struct decode_job {
  fy_decoder *dec;
  const char *name;
  const fy_codec_req *req;
  fy_decoded *out;
  /* the progressive reader's state */
  uint32_t w, h;
  size_t row;
  int got, ended, clip16;
} decode_job;

static int check_limit(const char *name, uint32_t w, uint32_t h, uint64_t max_pixels) {
  if (fy_over_pixel_limit(w, h, max_pixels))
    return fy_pixel_limit_error(name, "PNG", w, h, max_pixels);
  if (max_pixels && (w > FY_MAX_SIDE || h > FY_MAX_SIDE))
    return fy_error(FERRY_ETOO_LARGE, "%s: PNG image is %ux%u, a side over the limit of %u", name,
                    w, h, FY_MAX_SIDE);
  return FERRY_OK;
}

/* Pillow's 16-bit gray: libpng delivers 16-bit samples, clipped to 8 bits
 * after decoding (clip16). */
static int pillow_clips(const fy_decoder *dec, int color, int depth) {
  return dec->pillow_16bit && depth == 16 && color == PNG_COLOR_TYPE_GRAY;
}

/* libpng transforms to 8-bit gray or RGB without alpha (16-bit samples
 * where pillow_clips). Returns the number of channels libpng will deliver
 * (1 or 3). */
static int set_transforms(png_structp png, const fy_decoder *dec, int color, int depth,
                          int channels) {
  if (color == PNG_COLOR_TYPE_PALETTE)
    png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
    png_set_expand_gray_1_2_4_to_8(png); /* bit replication, as Pillow */
  if (depth == 16 && dec->pillow_16bit && !pillow_clips(dec, color, depth))
    png_set_strip_16(png); /* v >> 8, Pillow's RGB;16B / LA;16B */
  else if (depth == 16 && !dec->pillow_16bit)
    png_set_scale_16(png); /* (v * 255 + 32895) >> 16 */
  /* Alpha (and the alpha palette expansion makes from tRNS) is dropped. */
  png_set_strip_alpha(png);
  int color_out = (color & PNG_COLOR_MASK_COLOR) != 0;
  if (!color_out && channels == 3)
    png_set_gray_to_rgb(png);
  /* Colour to gray is done afterwards with Pillow's weights: libpng's
   * png_set_rgb_to_gray rounds differently. */
  return color_out || channels == 3 ? 3 : 1;
}

/* A ferry error inside a libpng callback: recorded, then out by longjmp. */
static _Noreturn void fail(png_structp png, int rc) {
  png_src *s = png_get_error_ptr(png);
  s->rc = rc;
  png_longjmp(png, 1);
}

/* The header is in: limits, transforms, the pixel buffer. */
static void on_info(png_structp png, png_infop info) {
  decode_job *job = png_get_progressive_ptr(png);
  uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  int rc = check_limit(job->name, w, h, job->req->max_pixels);
  if (rc)
    fail(png, rc);
  int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  int got = set_transforms(png, job->dec, color, depth, job->req->channels);
  int bytes = pillow_clips(job->dec, color, depth) ? 2 : 1;
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  size_t row = 0, total = 0;
  if (!fy_mul_size(w, (size_t)got * bytes, &row) || !fy_mul_size(row, h, &total))
    fail(png, fy_error(FERRY_ETOO_LARGE, "%s: PNG image %ux%u is too large", job->name, w, h));
  if (png_get_bit_depth(png, info) != 8 * bytes || png_get_channels(png, info) != got ||
      png_get_rowbytes(png, info) != row)
    fail(png, fy_error(FERRY_EINTERNAL, "%s: PNG: unexpected libpng output format", job->name));
  rc = fy_buf_reserve(&job->dec->pixels, total);
  if (rc)
    fail(png, fy_error(rc, "%s: out of memory for a %ux%u PNG image", job->name, w, h));
  /* interlaced: each pass fills in its pixels and keeps the rest */
  if (png_get_interlace_type(png, info) != PNG_INTERLACE_NONE)
    memset(job->dec->pixels.p, 0, total);
  job->w = w, job->h = h, job->row = row, job->got = got, job->clip16 = bytes == 2;
}

/* Big-endian 16-bit samples to min(v, 255), in place (each output byte
 * lies at or before its input). */
static void clip16(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = p[2 * i] ? 255 : p[2 * i + 1];
}

/* A row of a pass: combined into the image (libpng fills in the pass's
 * pixels and keeps the rest). */
static void on_row(png_structp png, png_bytep new_row, png_uint_32 y, int pass) {
  (void)pass;
  decode_job *job = png_get_progressive_ptr(png);
  if (new_row && y < job->h)
    png_progressive_combine_row(png, job->dec->pixels.p + (size_t)y * job->row, new_row);
}

static void on_end(png_structp png, png_infop info) {
  (void)info;
  decode_job *job = png_get_progressive_ptr(png);
  job->ended = 1;
}

/* The progressive reader, fed the whole file at once: it inflates image
 * data only into the rows (compressed data left over once the image is
 * complete is skipped, its CRC still checked, as Pillow stops there),
 * so a small PNG carrying a stream of 1 GiB of zeros decodes at once
 * instead of inflating it all (the sequential reader's png_read_end did,
 * 2.3 s). Every chunk up to IEND is read, so a bad CRC or a cut after the
 * pixels is still reported. */
static int decode_body(png_structp png, png_infop info, void *arg) {
  decode_job *job = arg;
  png_src *src = png_get_error_ptr(png);
  png_set_progressive_read_fn(png, job, on_info, on_row, on_end);
  png_process_data(png, info, (png_bytep)src->data, src->size);
  if (src->damage[0])
    return fy_error(FERRY_ECORRUPT, "%s: PNG: damaged image data (libpng: %s)", job->name,
                    src->damage);
  if (!job->ended || !job->h)
    return fy_error(FERRY_ECORRUPT, "%s: truncated PNG data", job->name);
  uint32_t w = job->w, h = job->h;
  uint8_t *pixels = job->dec->pixels.p;
  if (job->clip16)
    clip16(pixels, (size_t)w * h * job->got);
  if (job->got == 3 && job->req->channels == 1)
    fy_rgb_to_gray_inplace(pixels, (size_t)w * h);
  fy_decoded_whole(job->out, pixels, (int)w, (int)h, job->req->channels);
  return FERRY_OK;
}

int fy_png_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out) {
  if (req->channels != 1 && req->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: PNG: channels must be 1 or 3, not %d", nm(name),
                    req->channels);
  decode_job job = {dec, nm(name), req, out, 0, 0, 0, 0, 0, 0};
  return png_run(data, size, nm(name), decode_body, &job);
}
