/* jpeg_write.c — RGB pixels to a JPEG in memory (libjpeg-turbo's compress
 * API: YCbCr 4:2:0, baseline, islow DCT, no Huffman optimisation), for the
 * report's thumbnails and JPEG packs. */
#include "codec/codec.h"

#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>

#include <jpeglib.h>

typedef struct jerr {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
} jerr;

static void jerr_exit(j_common_ptr c) { longjmp(((jerr *)c->err)->jump, 1); }

int fy_jpeg_encode(const uint8_t *px, int w, int h, size_t stride, int quality, const char *name,
                   uint8_t **out, size_t *size) {
  struct jpeg_compress_struct c;
  jerr e;
  unsigned char *volatile mem = NULL;
  unsigned long len = 0;
  *out = NULL;
  *size = 0;
  c.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = jerr_exit;
  if (setjmp(e.jump)) {
    jpeg_destroy_compress(&c);
    free(mem);
    return fy_error(FERRY_EINTERNAL, "%s: JPEG encoding failed", name);
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, (unsigned char **)&mem, &len);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  c.optimize_coding = FALSE;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)c.next_scanline * stride);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  *out = mem;
  *size = len;
  return FERRY_OK;
}
