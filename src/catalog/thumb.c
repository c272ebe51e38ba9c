/* thumb.c — thumbnails for the HTML report: decoded small (JPEG DCT
 * scaling), upright, resized to fit the box, encoded as JPEG in memory. */
#include "catalog/dupes.h"
#include "codec/codec.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

typedef struct jerr {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
} jerr;

static void jerr_exit(j_common_ptr c) { longjmp(((jerr *)c->err)->jump, 1); }

/* Encodes RGB pixels as a quality-80 JPEG into a malloc'd buffer. */
static int encode(const ferry_image *im, uint8_t **out, size_t *size) {
  struct jpeg_compress_struct c;
  jerr e;
  unsigned char *mem = NULL;
  unsigned long len = 0;
  c.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = jerr_exit;
  if (setjmp(e.jump)) {
    jpeg_destroy_compress(&c);
    free(mem);
    return fy_error(FERRY_EINTERNAL, "thumbnail: JPEG encoding failed");
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &mem, &len);
  c.image_width = (JDIMENSION)im->width;
  c.image_height = (JDIMENSION)im->height;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 80, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = im->data + (size_t)c.next_scanline * im->stride;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  *out = mem;
  *size = len;
  return FERRY_OK;
}

int fy_thumbnail(const char *path, int box, uint8_t **jpeg, size_t *size) {
  *jpeg = NULL;
  *size = 0;
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  o.min_width = o.min_height = box; /* DCT scaling keeps at least the box */
  ferry_image full, small;
  int rc = ferry_decode_file(path, &o, &full);
  if (rc)
    return rc;
  double s = (double)box / (full.width > full.height ? full.width : full.height);
  if (s > 1)
    s = 1;
  int w = (int)(full.width * s + 0.5), h = (int)(full.height * s + 0.5);
  w = w < 1 ? 1 : w;
  h = h < 1 ? 1 : h;
  rc = ferry_resize(&full, NULL, &small, w, h, FERRY_FILTER_TRIANGLE);
  ferry_image_free(&full);
  if (rc)
    return rc;
  rc = encode(&small, jpeg, size);
  ferry_image_free(&small);
  return rc;
}
