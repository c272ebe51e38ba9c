/* jpeg_gray.c — compatible mode's decode of colour JPEGs straight to
 * Pillow's "L": libjpeg with Pillow's settings (RGB output, ISLOW IDCT,
 * fancy upsampling: the pixels the codec and Pillow produce) read a few rows
 * at a time, each strip converted to L while it is still in cache. A 12 MP
 * photo then never exists as a 36 MB RGB image, which saves a pass over
 * memory. Anything unusual (not YCbCr, a warning, an error) returns
 * FY_DC_FALLBACK and the codec decodes it, with its messages. */
#include "hash/hash.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>

typedef struct gray_err {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
} gray_err;

static void err_exit(j_common_ptr c) { longjmp(((gray_err *)c->err)->jump, 1); }

static void err_emit(j_common_ptr c, int level) {
  if (level < 0) /* a warning (damaged data): let the codec report it */
    longjmp(((gray_err *)c->err)->jump, 1);
}

static void err_silent(j_common_ptr c) { (void)c; }

enum { STRIP = 16 };

/* The body; any libjpeg problem longjmps out of it. */
static int decode(struct jpeg_decompress_struct *c, const uint8_t *data, size_t size,
                  uint64_t max_pixels, fy_buf *gray, fy_buf *strip, const fy_color_tables *t,
                  fy_color_counts *counts, fy_gray *out) {
  jpeg_mem_src(c, data, (unsigned long)size);
  jpeg_read_header(c, TRUE);
  if (c->jpeg_color_space != JCS_YCbCr || c->num_components != 3 || c->image_width == 0 ||
      c->image_height == 0 || fy_over_pixel_limit(c->image_width, c->image_height, max_pixels))
    return FY_DC_FALLBACK; /* the codec: CMYK, RGB, gray, limits, messages */
  c->out_color_space = JCS_RGB;
  c->dct_method = JDCT_ISLOW;
  jpeg_start_decompress(c);
  size_t w = c->output_width, h = c->output_height;
  if (fy_buf_reserve(gray, w * h) || fy_buf_reserve(strip, w * 3 * STRIP))
    return FY_DC_FALLBACK;
  JSAMPROW rows[STRIP];
  for (int i = 0; i < STRIP; i++)
    rows[i] = (uint8_t *)strip->p + (size_t)i * w * 3;
  while (c->output_scanline < h) {
    size_t y = c->output_scanline;
    JDIMENSION got = jpeg_read_scanlines(c, rows, STRIP);
    if (got == 0)
      return FY_DC_FALLBACK;
    uint8_t *g = (uint8_t *)gray->p + y * w;
    if (counts) /* colorhash's counts from the same strip */
      fy_color_count_rgb(t, strip->p, (int)w, (int)got, w * 3, g, w, counts);
    else
      fy_rgb_to_l(strip->p, (int)w, (int)got, w * 3, g, w);
  }
  jpeg_finish_decompress(c);
  *out = (fy_gray){gray->p, (int)w, (int)h, w};
  return FERRY_OK;
}

int fy_jpeg_gray(const uint8_t *data, size_t size, uint64_t max_pixels, fy_buf *gray, fy_buf *strip,
                 const fy_color_tables *t, fy_color_counts *counts, fy_gray *out) {
  struct jpeg_decompress_struct c;
  gray_err e;
  c.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = err_exit;
  e.pub.emit_message = err_emit;
  e.pub.output_message = err_silent;
  if (fy_jpeg_scan_budget(data, size, "<memory>") != FERRY_OK)
    return FY_DC_FALLBACK; /* a scan bomb: the codec refuses it, naming the file */
  jpeg_create_decompress(&c);
  int rc;
  if (setjmp(e.jump))
    rc = FY_DC_FALLBACK;
  else
    rc = decode(&c, data, size, max_pixels, gray, strip, t, counts, out);
  jpeg_destroy_decompress(&c);
  return rc;
}
